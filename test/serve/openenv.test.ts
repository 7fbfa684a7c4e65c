// serve/openenv.ts against OpenEnv's protocol as the reference server (http_server.py, types.py of
// meta-pytorch/OpenEnv at 685de41) answers it: routes, bodies, FastAPI's 404/405/422 and 500, the
// WebSocket messages and their error codes, sessions (independent, counted against max_concurrent_envs),
// and turnwise's part — the task seed and env stream of a reset, the budget as truncation. FrozenLake's
// expected values are Gymnasium's 4x4 map (SFFF FHFH FFFH HFFG), not our env's code. The WebSocket
// client is the `ws` package when node_modules has it (another implementation than ours), else ours.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, test } from 'node:test';
import { connectWebSocket } from '../../src/core/websocket.ts';
import { envConfig, envs, makeEnv } from '../../src/envs/index.ts';
import { episodeSeeds } from '../../src/rollout/episode.ts';
import { type RunningOpenEnv, startOpenEnvServer } from '../../src/serve/openenv.ts';

const wsPackage = await import('ws').catch(() => undefined);

const running: RunningOpenEnv[] = [];
after(async () => {
  for (const s of running) await s.close();
});

async function serve(
  env: string,
  params: Record<string, unknown>,
  o: { budget?: number; maxSessions?: number } = {},
): Promise<RunningOpenEnv> {
  const config = envConfig(env, params);
  const s = await startOpenEnvServer({
    envs,
    config,
    budget: o.budget ?? 100,
    seed: 0,
    maxSessions: o.maxSessions ?? 8,
    metadata: { name: env, description: `${env} for the tests`, version: '0.1.0' },
    onInternalError: () => {},
  });
  running.push(s);
  return s;
}

type Msg = { type: string; data: Record<string, unknown> };

/** A WebSocket session: send a JSON message, read the next answer, and the close code at the end. */
interface Peer {
  send(m: unknown): void;
  sendRaw(text: string): void;
  next(): Promise<Msg>;
  closed: Promise<number>;
  close(): void;
}

async function peer(base: string): Promise<Peer> {
  const inbox: Msg[] = [];
  const waiting: ((m: Msg) => void)[] = [];
  const push = (text: string) => {
    const m = JSON.parse(text) as Msg;
    const w = waiting.shift();
    if (w !== undefined) w(m);
    else inbox.push(m);
  };
  const next = () => {
    const m = inbox.shift();
    return m !== undefined ? Promise.resolve(m) : new Promise<Msg>((r) => waiting.push(r));
  };
  const url = `${base.replace('http:', 'ws:')}/ws`;
  // Either client as {send, close} with its messages pushed and its close code.
  let c: { send(t: string): void; close(): void };
  let closed: Promise<number>;
  if (wsPackage !== undefined) {
    const w = new wsPackage.WebSocket(url);
    w.on('message', (d) => push(d.toString()));
    closed = new Promise<number>((r) => w.on('close', (code) => r(code)));
    await new Promise((r, j) => {
      w.once('open', r);
      w.once('error', j);
    });
    c = w;
  } else {
    const w = await connectWebSocket(url);
    w.on('message', (d: string) => push(d));
    closed = new Promise<number>((r) => w.on('close', (code: number) => r(code)));
    c = w;
  }
  return {
    send: (m) => c.send(JSON.stringify(m)),
    sendRaw: (t) => c.send(t),
    next,
    closed,
    close: () => c.close(),
  };
}

const ask = async (p: Peer, m: unknown): Promise<Msg> => {
  p.send(m);
  return p.next();
};

async function http(base: string, method: string, path: string, body?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    body,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return {
    status: res.status,
    text,
    json,
    type: res.headers.get('content-type'),
    allow: res.headers.get('allow'),
  };
}

const LAKE = { map: '4x4' };

test('GET routes: health, metadata (EnvironmentMetadata), schema (action, observation, State), state of a fresh env', async () => {
  const s = await serve('frozenlake', LAKE, { budget: 7 });
  assert.deepEqual((await http(s.url, 'GET', '/health')).json, { status: 'healthy' });
  const meta = await http(s.url, 'GET', '/metadata');
  assert.deepEqual(Object.keys(meta.json as object), [
    'name',
    'description',
    'readme_content',
    'version',
    'author',
    'documentation_url',
  ]);
  assert.equal((meta.json as { name: string }).name, 'frozenlake');
  const schema = (await http(s.url, 'GET', '/schema')).json as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(schema), ['action', 'observation', 'state']);
  // Discrete with a chat encoding: one required enum field, Gymnasium's action order.
  assert.deepEqual(schema.action.required, ['direction']);
  assert.deepEqual((schema.action.properties as Record<string, { enum: string[] }>).direction.enum, [
    'Left',
    'Down',
    'Right',
    'Up',
  ]);
  assert.equal(schema.action.additionalProperties, false);
  // The observation: 16 cells.
  const own = (schema.observation.properties as Record<string, Record<string, unknown>>).observation;
  assert.deepEqual([own.type, own.minimum, own.maximum], ['integer', 0, 15]);
  assert.equal(schema.state.title, 'State');
  assert.deepEqual(Object.keys(schema.state.properties as object), ['episode_id', 'step_count']);
  const state = (await http(s.url, 'GET', '/state')).json as Record<string, unknown>;
  assert.equal(state.episode_id, null);
  assert.equal(state.step_count, 0);
  assert.equal(state.budget, 7);
});

test('HTTP errors as FastAPI gives them: 404, 405 with Allow, 422 {detail: [pydantic errors]}, 500 when the env raises', async () => {
  const s = await serve('frozenlake', LAKE);
  assert.deepEqual(await http(s.url, 'GET', '/nope').then((r) => [r.status, r.json]), [
    404,
    { detail: 'Not Found' },
  ]);
  const m = await http(s.url, 'POST', '/health');
  assert.deepEqual([m.status, m.json, m.allow], [405, { detail: 'Method Not Allowed' }, 'GET']);
  const seed = await http(s.url, 'POST', '/reset', '{"seed": -1}');
  assert.equal(seed.status, 422);
  assert.deepEqual(seed.json, {
    detail: [
      {
        type: 'greater_than_equal',
        loc: ['body', 'seed'],
        msg: 'Input should be greater than or equal to 0',
        input: -1,
        ctx: { ge: 0 },
      },
    ],
  });
  // turnwise's seeds are doubles: above 2^53 − 1 (which JSON.parse would round) a 422 naming the field,
  // as for any bound; the env stream's `env_seed` is checked the same way; the largest exact seed plays.
  const big = await http(s.url, 'POST', '/reset', '{"seed": 9007199254740993}');
  assert.equal(big.status, 422);
  assert.deepEqual(
    (big.json as { detail: { type: string; loc: string[]; ctx: unknown }[] }).detail.map((e) => [
      e.type,
      e.loc,
      e.ctx,
    ]),
    [['less_than_equal', ['body', 'seed'], { le: 9007199254740991 }]],
  );
  const stream = await http(s.url, 'POST', '/reset', '{"seed": 1, "env_seed": "x"}');
  assert.equal(stream.status, 422);
  assert.deepEqual(
    (stream.json as { detail: { type: string; loc: string[] }[] }).detail.map((e) => [e.type, e.loc]),
    [['int_parsing', ['body', 'env_seed']]],
  );
  const edge = await http(
    s.url,
    'POST',
    '/reset',
    '{"seed": 9007199254740991, "env_seed": 9007199254740991}',
  );
  assert.equal(edge.status, 200);
  const missing = await http(s.url, 'POST', '/step');
  assert.deepEqual(
    [missing.status, missing.json],
    [422, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] }],
  );
  const bad = await http(s.url, 'POST', '/step', '{"action": {"direction": "North", "speed": 2}}');
  assert.equal(bad.status, 422);
  assert.deepEqual(
    (bad.json as { detail: { type: string; loc: string[] }[] }).detail.map((e) => [e.type, e.loc]),
    [
      ['literal_error', ['direction']],
      ['extra_forbidden', ['speed']],
    ],
  );
  // /step is stateless in the reference: a fresh env, never reset — FrozenLake refuses to step then.
  const fresh = await http(s.url, 'POST', '/step', '{"action": {"direction": "Right"}}');
  assert.deepEqual(
    [fresh.status, fresh.text, fresh.type],
    [500, 'Internal Server Error', 'text/plain; charset=utf-8'],
  );
  // /reset is stateless too: each call a fresh env of the task seed, S at cell 0 of the 4x4 map.
  const r = await http(s.url, 'POST', '/reset', '{"seed": 3, "episode_id": "e1"}');
  assert.equal(r.status, 200);
  const body = r.json as { observation: Record<string, unknown>; reward: unknown; done: boolean };
  assert.deepEqual([body.observation.observation, body.reward, body.done], [0, null, false]);
  assert.equal(body.observation.text, 'P___\n_O_O\n___O\nO__G');
});

test("a WebSocket episode on Gymnasium's 4x4 map: Right Right Down Down Down Right reaches G (reward 1, success)", async () => {
  const s = await serve('frozenlake', LAKE);
  const p = await peer(s.url);
  const reset = await ask(p, { type: 'reset', data: { seed: 0 } });
  assert.deepEqual(reset.data, {
    observation: {
      observation: 0,
      text: 'P___\n_O_O\n___O\nO__G',
      info: {},
      terminated: false,
      truncated: false,
      turns_left: 100,
    },
    reward: null,
    done: false,
  });
  const cells: unknown[] = [];
  let last: Msg | undefined;
  for (const direction of ['Right', 'Right', 'Down', 'Down', 'Down', 'Right']) {
    last = await ask(p, { type: 'step', data: { direction } });
    cells.push((last.data.observation as Record<string, unknown>).observation);
  }
  assert.deepEqual(cells, [1, 2, 6, 10, 14, 15]);
  assert.equal(last!.data.reward, 1);
  assert.equal(last!.data.done, true);
  assert.deepEqual((last!.data.observation as Record<string, unknown>).info, { success: true });
  const state = await ask(p, { type: 'state' });
  assert.deepEqual([state.type, state.data.step_count, state.data.done], ['state', 6, true]);
  // The task ended: a further step is refused until the next reset.
  const over = await ask(p, { type: 'step', data: { direction: 'Left' } });
  assert.deepEqual([over.type, over.data.code], ['error', 'EXECUTION_ERROR']);
  // Into the hole at cell 5: Down, Right.
  await ask(p, { type: 'reset', data: { seed: 0 } });
  await ask(p, { type: 'step', data: { direction: 'Down' } });
  const hole = await ask(p, { type: 'step', data: { direction: 'Right' } });
  const o = hole.data.observation as Record<string, unknown>;
  assert.deepEqual([o.observation, o.terminated, hole.data.reward, hole.data.done], [5, true, 0, true]);
  assert.deepEqual(o.info, { success: false, failure: 'irreversible' });
  p.send({ type: 'close' });
  assert.equal(await p.closed, 1000);
});

test('the budget is truncation: after T steps without the task ending, truncated and done; then steps are refused', async () => {
  const s = await serve('frozenlake', LAKE, { budget: 3 });
  const p = await peer(s.url);
  await ask(p, { type: 'reset', data: { seed: 0 } });
  const seen: [unknown, unknown, unknown, unknown][] = [];
  for (let i = 0; i < 3; i++) {
    // Left at cell 0 stays there (moves clamp at the edge).
    const r = await ask(p, { type: 'step', data: { direction: 'Left' } });
    const o = r.data.observation as Record<string, unknown>;
    seen.push([o.terminated, o.truncated, o.turns_left, r.data.done]);
  }
  assert.deepEqual(seen, [
    [false, false, 2, false],
    [false, false, 1, false],
    [false, true, 0, true],
  ]);
  const refused = await ask(p, { type: 'step', data: { direction: 'Left' } });
  assert.equal(refused.data.code, 'EXECUTION_ERROR');
  assert.match(String(refused.data.message), /truncated at the turn budget of 3/);
  // A reset starts the count again.
  const again = await ask(p, { type: 'reset', data: { seed: 0 } });
  assert.equal((again.data.observation as Record<string, unknown>).turns_left, 3);
  p.close();
});

test("WebSocket errors with types.py's codes; a message that is no JSON object ends the session", async () => {
  const s = await serve('frozenlake', LAKE);
  const p = await peer(s.url);
  p.sendRaw('{not json');
  assert.deepEqual([(await p.next()).data.code], ['INVALID_JSON']);
  assert.deepEqual((await ask(p, { type: 'dance' })).data, {
    message: 'Unknown message type: dance',
    code: 'UNKNOWN_TYPE',
  });
  const invalid = await ask(p, { type: 'step', data: { direction: 'Sideways' } });
  assert.equal(invalid.data.code, 'VALIDATION_ERROR');
  assert.equal(invalid.data.message, 'Invalid message');
  assert.deepEqual(
    (invalid.data.errors as Record<string, unknown>[]).map((e) => [e.type, e.loc, e.msg]),
    [['literal_error', ['direction'], "Input should be 'Left', 'Down', 'Right' or 'Up'"]],
  );
  // A step before any reset steps a fresh env, as the reference's session env would: FrozenLake raises.
  assert.equal((await ask(p, { type: 'step', data: { direction: 'Left' } })).data.code, 'EXECUTION_ERROR');
  assert.equal((await ask(p, { type: 'reset', data: { seed: 'x' } })).data.code, 'EXECUTION_ERROR');
  const extra = await ask(p, { type: 'state', data: {} });
  assert.equal(extra.data.code, 'VALIDATION_ERROR');
  p.sendRaw('[1, 2]');
  assert.deepEqual((await p.next()).data, {
    message: "'list' object has no attribute 'get'",
    code: 'SESSION_ERROR',
  });
  await p.closed;
});

test('sessions: each its own env; at max_concurrent_envs the next is told CAPACITY_REACHED and closed', async () => {
  const s = await serve('frozenlake', { random: true, size: 5, slippery: true }, { maxSessions: 2 });
  const a = await peer(s.url);
  const b = await peer(s.url);
  // Interleaved: a plays task 11, b task 12, both slippery — each as in process with the same seeds.
  await ask(a, { type: 'reset', data: { seed: 11, env_seed: 5 } });
  await ask(b, { type: 'reset', data: { seed: 12, env_seed: 6 } });
  const moves = [1, 2, 1, 2, 2, 1];
  const remote: [unknown[], unknown[]] = [[], []];
  const done = [false, false];
  for (const m of moves)
    for (const [i, p] of [a, b].entries()) {
      if (done[i]) continue;
      const r = await ask(p, { type: 'step', data: { direction: ['Left', 'Down', 'Right', 'Up'][m] } });
      remote[i].push((r.data.observation as Record<string, unknown>).observation);
      done[i] = r.data.done === true;
    }
  for (const [i, [seed, envSeed]] of [
    [11, 5],
    [12, 6],
  ].entries()) {
    const env = makeEnv({
      env: 'frozenlake',
      params: envConfig('frozenlake', { random: true, size: 5, slippery: true }).params,
      seed,
    });
    env.reset(envSeed);
    const local: unknown[] = [];
    for (const m of moves) {
      const r = env.step(m) as { observation: unknown; terminated: boolean };
      local.push(r.observation);
      if (local.length === remote[i].length) break;
    }
    assert.deepEqual(remote[i], local, `session ${i}`);
  }
  const c = await peer(s.url);
  const refused = await c.next();
  assert.deepEqual(refused, {
    type: 'error',
    data: {
      message: 'Server at capacity: 2/2 sessions active. Cannot accept new connections.',
      code: 'CAPACITY_REACHED',
      active_sessions: 2,
      max_sessions: 2,
    },
  });
  await c.closed;
  a.send({ type: 'close' });
  await a.closed;
  assert.equal(s.sessions(), 1);
  const d = await peer(s.url);
  assert.equal((await ask(d, { type: 'reset', data: {} })).type, 'observation');
  d.close();
  b.close();
});

test('a reset with the seed alone plays the env stream of `rollout --seed 0`, sample 0, of that task', async () => {
  const params = { random: true, size: 4, slippery: true };
  const s = await serve('frozenlake', params);
  const p = await peer(s.url);
  await ask(p, { type: 'reset', data: { seed: 7 } });
  const remote: unknown[] = [];
  for (let i = 0; i < 12; i++) {
    const r = await ask(p, { type: 'step', data: { direction: 'Right' } });
    remote.push((r.data.observation as Record<string, unknown>).observation);
    if (r.data.done) break;
  }
  const env = makeEnv({ env: 'frozenlake', params: envConfig('frozenlake', params).params, seed: 7 });
  env.reset(episodeSeeds(0, 7, 0).envSeed);
  const local = remote.map(() => (env.step(2) as { observation: unknown }).observation);
  assert.deepEqual(remote, local);
  p.close();
});

test('a tool env: CallToolAction steps, a list_tools step, MCP tools/list over POST /mcp and the WebSocket', async () => {
  const s = await serve('sql', {}, { budget: 20 });
  const schema = (await http(s.url, 'GET', '/schema')).json as { action: Record<string, unknown> };
  assert.equal(schema.action.title, 'CallToolAction');
  assert.deepEqual(schema.action.required, ['tool_name']);
  const rpc = (
    await http(s.url, 'POST', '/mcp', '{"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 7}')
  ).json as { id: number; result: { tools: { name: string; inputSchema: unknown }[] } };
  assert.equal(rpc.id, 7);
  assert.deepEqual(
    rpc.result.tools.map((t) => t.name),
    ['list_tables', 'describe_table', 'execute_sql', 'submit'],
  );
  const p = await peer(s.url);
  const reset = await ask(p, { type: 'reset', data: { seed: 3 } });
  const question = (reset.data.observation as { observation: { question: string } }).observation.question;
  assert.ok(question.length > 0);
  const listed = await ask(p, { type: 'step', data: { type: 'list_tools' } });
  assert.deepEqual(
    (listed.data.observation as { tools: { name: string }[] }).tools.map((t) => t.name),
    ['list_tables', 'describe_table', 'execute_sql', 'submit'],
  );
  // list_tools takes no turn: the first tool call leaves 19 of 20.
  const tables = await ask(p, {
    type: 'step',
    data: { type: 'call_tool', tool_name: 'list_tables', arguments: {} },
  });
  const o = tables.data.observation as Record<string, unknown>;
  assert.equal(o.turns_left, 19);
  assert.match(String(o.text), /students|courses|books|orders|customers|members/);
  const viaWs = await ask(p, {
    type: 'mcp',
    data: { jsonrpc: '2.0', method: 'tools/call', params: {}, id: 'a' },
  });
  assert.deepEqual(viaWs.data, {
    jsonrpc: '2.0',
    id: 'a',
    error: { code: -32601, message: 'Method not found: tools/call', data: null },
  });
  p.close();
});

test('close() ends every session, a client that never answers the close frame included', async () => {
  const s = await serve('frozenlake', LAKE);
  const p = await peer(s.url);
  await ask(p, { type: 'reset', data: {} });
  // A raw socket that shakes hands and then reads nothing, answers nothing.
  const mute = connect(s.port, '127.0.0.1');
  const upgraded = new Promise<void>((r) => mute.once('data', () => r()));
  mute.write(
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  await upgraded;
  assert.equal(s.sessions(), 2);
  const muteGone = new Promise<void>((r) => mute.once('close', () => r()));
  mute.on('error', () => {});
  await s.close();
  running.splice(running.indexOf(s), 1);
  assert.equal(await p.closed, 1000);
  await muteGone;
  assert.equal(s.sessions(), 0);
});
