// The openai: policy against a plain node:http server that answers like a misbehaving model: malformed
// output is an observation (valid: false, the reason told next turn), never a crash; the key goes in the
// header only; spec and endpoint errors are one-line InputErrors. Plus the chat encoding's round trip.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import {
  chat,
  envConfig,
  envs,
  InputError,
  makeOpenAIPolicy,
  makeTasks,
  Rng,
  rollout,
} from '../../src/index.ts';

const config = envConfig('frozenlake', { map: '4x4' });
const env = envs.make({ ...config, seed: 0 });
const view = (o: number) => env.text?.(o) ?? '';
const spec = env.spec;

interface Seen {
  body: { messages: chat.ChatMessage[]; seed: number; tools?: unknown };
  auth: string | undefined;
}

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.closeAllConnections();
  for (const s of servers) s.close();
});

/** A chat server that answers request i with replies[i] as the assistant message (then repeats the last). */
async function scripted(replies: Record<string, unknown>[]): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (d) => (s += d));
      req.on('end', () => resolve(s));
    });
  const server = createServer(async (req, res) => {
    const text = await read(req);
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/models') {
      res.end(JSON.stringify({ data: [{ id: 'm' }] }));
      return;
    }
    seen.push({ body: JSON.parse(text), auth: req.headers.authorization });
    const message = replies[Math.min(seen.length - 1, replies.length - 1)];
    res.end(JSON.stringify({ model: 'm', choices: [{ index: 0, message, finish_reason: 'stop' }] }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

const call = (name: string, args: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'c', type: 'function', function: { name, arguments: args } }],
});

test('malformed model output is an invalid turn with its reason, told to the model next turn', async () => {
  const { url, seen } = await scripted([
    { role: 'assistant', content: 'I think I will go right' }, // no tool call
    call('jump', '{}'), // unknown tool
    call('move', '{"direction":'), // arguments not JSON
    call('move', '{"direction":"North"}'), // fails the schema
    { role: 'assistant', content: '' }, // empty
    call('move', '{"direction":"Right"}'),
  ]);
  const policy = makeOpenAIPolicy(`openai:${url}#m`, spec);
  await policy.connect();
  const [t] = await rollout({
    tasks: makeTasks(config, 1, 0),
    samples: 1,
    budget: 6,
    runSeed: 0,
    policy,
    makeEnv: envs.make,
  });
  assert.deepEqual(
    t.turns.map((u) => [u.action, u.info.valid ?? true, u.observation, u.trace?.invalid]),
    [
      [-1, false, 0, 'no tool call'],
      [-1, false, 0, 'unknown tool "jump"; call move'],
      [-1, false, 0, 'the arguments are not JSON'],
      [-1, false, 0, 'direction must be one of Left, Down, Right, Up'],
      [-1, false, 0, 'empty message'],
      [2, true, 0, undefined],
    ],
  );
  assert.equal(t.outcome.failure, 'budget');
  assert.equal(t.turns[0].trace?.text, 'I think I will go right');
  // The sixth prompt: the fifth turn's reason, and the history replayed as the model said it.
  const last = seen[5].body.messages;
  assert.equal(
    last[last.length - 1].content,
    chat.turnMessage(5, undefined, { invalid: 'empty message' }, view(0)),
  );
  assert.equal(last[2].content, 'I think I will go right');
  assert.match(last[3].content ?? '', /^Turn 2\.\nLast action invalid: no tool call; nothing moved\./);
  // The seeds: one per turn, from the episode's policy stream.
  const rng = Rng.derive(0, 0, 0, 2);
  assert.deepEqual(
    seen.map((s) => s.body.seed),
    seen.map(() => rng.uniform53()),
  );
});

test('text mode reads the last <answer> tag; the API key goes in the header only, never in the trace', async () => {
  const { url, seen } = await scripted([
    { role: 'assistant', content: '<answer>Up</answer> no, <answer>down</answer>' },
  ]);
  const before = process.env.OPENAI_API_KEY;
  process.env.OPENAI_API_KEY = 'sk-test-secret';
  try {
    const policy = makeOpenAIPolicy(`openai:${url}#m,mode=text`, spec);
    const [t] = await rollout({
      tasks: makeTasks(config, 1, 0),
      samples: 1,
      budget: 2,
      runSeed: 0,
      policy,
      makeEnv: envs.make,
    });
    assert.deepEqual(
      t.turns.map((u) => u.action),
      [1, 1],
    );
    assert.equal(seen[0].auth, 'Bearer sk-test-secret');
    assert.equal(seen[0].body.tools, undefined);
    assert.ok(!JSON.stringify(t).includes('sk-test'));
    assert.ok(!JSON.stringify(policy).includes('sk-test'));
  } finally {
    if (before === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = before;
  }
});

test('the chat encoding round-trips: turn messages parse back to turn, turns left, feedback and view', () => {
  const board = view(5);
  for (const [turn, left, feedback] of [
    [0, undefined, undefined],
    [7, 1, { reward: 0 }],
    [99, 100, { invalid: 'unknown tool "x"; call move' }],
  ] as const) {
    const parsed = chat.parseTurnMessage(chat.turnMessage(turn, left, feedback, board));
    assert.deepEqual(parsed, { turn, turnsLeft: left, feedback, view: board });
  }
  assert.equal(chat.parseTurnMessage('hello'), undefined);
  const r = Rng.derive(1, 2, 3);
  const k = r.clone().uniform53();
  assert.equal(Rng.replay(k).float(), r.float(), 'replay reproduces the uniform');
});

test('buildMessages with a memo gives the same messages as without, turn by turn, whatever changes', () => {
  const c = spec.chat as NonNullable<typeof spec.chat>;
  const r = Rng.fromSeed(11);
  for (const mode of ['tools', 'text'] as const) {
    for (const budget of [undefined, 40]) {
      const memo: chat.MessagesMemo = new WeakMap();
      const history: Parameters<typeof chat.buildMessages>[0]['history'][number][] = [];
      for (let t = 0; t < 30; t++) {
        const p = {
          chat: c,
          mode,
          text: view as (o: unknown) => string,
          observation: r.int(16),
          history,
          turn: t,
          turnsLeft: budget === undefined ? undefined : budget - t,
        };
        assert.deepEqual(chat.buildMessages(p, memo), chat.buildMessages(p), `${mode} T=${budget} t=${t}`);
        // Asked again for the same turn, or with another budget (the memo's anchor differs): the same.
        assert.deepEqual(chat.buildMessages(p, memo), chat.buildMessages(p));
        const other = { ...p, turnsLeft: 100 - t };
        assert.deepEqual(chat.buildMessages(other, memo), chat.buildMessages(other));
        const invalid = r.int(5) === 0;
        history.push({
          t,
          observation: p.observation,
          action: invalid ? -1 : r.int(4),
          reward: r.int(3) === 0 ? 1 : 0,
          logp: 0,
          info: invalid ? { valid: false } : {},
          ...(invalid ? { trace: { invalid: 'no tool call', text: `junk ${t}` } } : {}),
        });
      }
      // A history rewritten in place (not the turns rendered): rendered afresh, not from the memo.
      history[history.length - 1] = { ...history[history.length - 1], action: 0, info: {} };
      const p = {
        chat: c,
        mode,
        text: view as (o: unknown) => string,
        observation: 3,
        history,
        turn: 30,
        turnsLeft: undefined,
      };
      assert.deepEqual(chat.buildMessages(p, memo), chat.buildMessages(p));
    }
  }
});

test('the request text is JSON.stringify(body) byte for byte, though it reuses the sent messages', () => {
  for (const options of ['', ',mode=text', ',logprobs=0', ',history=3']) {
    const policy = makeOpenAIPolicy(`openai:http://127.0.0.1:9/v1#m${options}`, spec);
    const r = Rng.fromSeed(5);
    const history: Parameters<typeof chat.buildMessages>[0]['history'][number][] = [];
    for (let t = 0; t < 12; t++) {
      const ctx = { observation: r.int(16), history, turn: t, turnsLeft: 12 - t, rng: r.clone(), env };
      const body = policy.requestBody(ctx);
      assert.equal(policy.bodyText(ctx, body), JSON.stringify(body), `${options} t=${t}`);
      history.push({ t, observation: ctx.observation, action: r.int(4), reward: 0, logp: 0, info: {} });
    }
  }
});

test('bad specs and endpoints are one-line InputErrors', async () => {
  const bad = (s: string, re: RegExp) =>
    assert.throws(
      () => makeOpenAIPolicy(s, spec),
      (e) => e instanceof InputError && re.test(e.message) && !e.message.includes('\n'),
    );
  bad('openai:http://x/v1', /expected openai:URL#MODEL/);
  bad('openai:http://x/v1#m,mode=chat', /openai\.mode: got "chat"; expected tools or text/);
  bad('openai:http://x/v1#m,temp=1', /openai takes mode, temperature/);
  bad('openai:ftp://x/v1#m', /expected an http\(s\) URL/);
  bad('openai:http://u:p@x/v1#m', /without credentials/);
  bad('openai:http://x/v1#m,timeout=soon', /expected a duration/);
  const { url } = await scripted([]);
  await assert.rejects(
    makeOpenAIPolicy(`openai:${url}#other`, spec).connect(),
    /does not list this model; it lists m/,
  );
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await assert.rejects(
    makeOpenAIPolicy(`openai:http://127.0.0.1:${port}/v1#m`, spec).connect(),
    (e) => e instanceof InputError && /cannot reach the server \(ECONNREFUSED\)/.test(e.message),
  );
});
