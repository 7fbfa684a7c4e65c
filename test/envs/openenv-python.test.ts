// OpenEnv's protocol from the other side, in Python (3.11 standard library only): a client written from
// OpenEnv's own client code (test/fixtures/openenv/openenv_client.py) plays episodes against `turnwise
// serve-env --protocol openenv` for frozenlake, sql and web, and a server written from OpenEnv's
// http_server.py (test/fixtures/openenv/openenv_server.py, hosting OpenEnv's grid_world env) is run by
// `turnwise rollout --env openenv:URL` and `turnwise eval` — and killed mid-run: the episode in flight
// ends as `error`, the run completes, no episode lost or counted twice. Skipped with a notice where
// python3 is absent.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Trajectory } from '../../src/core/types.ts';
import { describeEnv, envConfig, envSpec, envs } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { turnwise } from '../cli/run.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/openenv/', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const skip = python.status === 0 ? false : 'python3 is not on PATH';
if (skip) process.stderr.write(`openenv-python.test.ts: skipped: ${skip}\n`);

const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'turnwise-openenv-py-'));
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

/** A server process; `ready` resolves with its base URL once it says where it listens (never a sleep). */
function start(command: string, args: string[], listening: RegExp) {
  const child = spawn(command, args, { env: { ...process.env, NO_COLOR: '1' } });
  children.push(child);
  let out = '';
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const ready = new Promise<string>((resolve, reject) => {
    const look = (d: Buffer) => {
      out += d;
      const m = listening.exec(out);
      if (m !== null) resolve(m[1]);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('close', () => reject(new Error(`exited before listening: ${out}`)));
  });
  return { child, ready, exited };
}

const serveEnv = (args: string[]) =>
  start(process.execPath, [BIN, 'serve-env', '--port', '0', ...args], /listening on (http:\/\/\S+)/);
const pythonServer = (args: string[]) =>
  start(
    'python3',
    [join(FIXTURES, 'openenv_server.py'), '--port', '0', ...args],
    /listening on (http:\/\/\S+)/,
  );

type Op = [client: string, op: string, arg: unknown];

/** Runs the Python client on a scenario; one parsed result per op. */
function client(baseUrl: string, ops: Op[]): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [join(FIXTURES, 'openenv_client.py')]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`client exited ${code}: ${stderr}`));
      resolve(
        stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      );
    });
    child.stdin.end(JSON.stringify({ base_url: baseUrl, ops }));
  });
}

const obs = (r: Record<string, unknown>) => r.observation as Record<string, unknown>;

test("Python client vs serve-env frozenlake: Gymnasium's 4x4 map played over the WebSocket, two sessions interleaved, HTTP routes", {
  skip,
}, async () => {
  const server = serveEnv(['--env', 'frozenlake', '--budget', '10']);
  const url = await server.ready;
  const moves = ['Right', 'Right', 'Down', 'Down', 'Down', 'Right'];
  const r = await client(url, [
    ['h', 'http', ['GET', '/health', null]],
    ['h', 'http', ['GET', '/metadata', null]],
    ['h', 'http', ['POST', '/reset', { seed: 0 }]],
    ['h', 'http', ['POST', '/step', { action: { direction: 'Sideways' } }]],
    ['a', 'reset', { seed: 0 }],
    ['b', 'reset', { seed: 0 }],
    ...moves.flatMap((direction): Op[] => [
      ['a', 'step', { direction }],
      ['b', 'step', { direction: 'Down' }],
    ]),
    ['a', 'state', null],
    ['b', 'state', null],
    ['a', 'step', { direction: 'Left' }],
    ['a', 'close', null],
  ]);
  assert.deepEqual(r[0], { status: 200, body: { status: 'healthy' } });
  assert.equal((r[1].body as { name: string }).name, 'frozenlake');
  assert.equal((r[2].body as Record<string, unknown>).done, false);
  assert.equal(r[3].status, 422);
  assert.deepEqual(obs(r[4]).observation, 0);
  assert.equal(r[4].reward, null);
  const a = r.slice(6, 18).filter((_, i) => i % 2 === 0);
  const b = r.slice(6, 18).filter((_, i) => i % 2 === 1);
  // a: S → 1 → 2 → 6 → 10 → 14 → G (15), reward 1 on entering G.
  assert.deepEqual(
    a.map((x) => [obs(x).observation, x.reward, x.done]),
    [
      [1, 0, false],
      [2, 0, false],
      [6, 0, false],
      [10, 0, false],
      [14, 0, false],
      [15, 1, true],
    ],
  );
  assert.deepEqual(obs(a[5]).info, { success: true });
  // b, in its own session: Down, Down, Down from S — cells 4 and 8 are ice, 12 a hole.
  assert.deepEqual(
    b.slice(0, 3).map((x) => [obs(x).observation, x.done]),
    [
      [4, false],
      [8, false],
      [12, true],
    ],
  );
  assert.deepEqual(obs(b[2]).info, { success: false, failure: 'irreversible' });
  assert.match(String(b[3].error), /the episode is over/);
  assert.deepEqual([r[18].step_count, r[18].budget], [6, 10]);
  assert.equal(r[19].step_count, 3);
  assert.match(String(r[20].error), /^Server error: the episode is over.*\(code: EXECUTION_ERROR\)$/);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('Python client vs serve-env sql: list_tools, tool calls as CallToolAction, the gold query submitted scores 1', {
  skip,
}, async () => {
  const server = serveEnv(['--env', 'sql']);
  const url = await server.ready;
  const task = { ...envConfig('sql', {}), seed: 3 };
  const gold = (describeEnv(task, { gold: true }) as { gold: { query: string } }).gold.query;
  const call = (tool_name: string, args: Record<string, unknown>): Op => [
    'a',
    'step',
    { type: 'call_tool', tool_name, arguments: args },
  ];
  const r = await client(url, [
    ['a', 'reset', { seed: 3 }],
    ['a', 'step', { type: 'list_tools' }],
    call('list_tables', {}),
    call('execute_sql', { query: 'SELECT nonsense FROM nowhere' }),
    call('submit', { query: gold }),
    ['a', 'state', null],
    ['h', 'http', ['POST', '/mcp', { jsonrpc: '2.0', method: 'tools/list', params: {}, id: 1 }]],
  ]);
  const question = (obs(r[0]).observation as { question: string }).question;
  assert.equal(question, (describeEnv(task) as { question: string }).question);
  assert.deepEqual(
    (obs(r[1]).tools as { name: string }[]).map((t) => t.name),
    ['list_tables', 'describe_table', 'execute_sql', 'submit'],
  );
  const tables = (obs(r[2]).observation as { last: { output: { tables: string[] } } }).last.output.tables;
  assert.deepEqual(
    tables,
    (describeEnv(task) as { tables: { name: string }[] }).tables.map((t) => t.name),
  );
  assert.equal((obs(r[3]).info as { valid: boolean }).valid, false);
  assert.equal(r[3].done, false);
  assert.deepEqual(
    [r[4].reward, r[4].done, (obs(r[4]).info as { success: boolean }).success],
    [1, true, true],
  );
  assert.deepEqual([r[5].step_count, r[5].seed], [3, 3]);
  assert.equal(((r[6].body as { result: { tools: unknown[] } }).result.tools as unknown[]).length, 4);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test("Python client vs serve-env web: the oracle's clicks and typing, observation for observation as in process", {
  skip,
}, async () => {
  const server = serveEnv(['--env', 'web']);
  const url = await server.ready;
  const config = envConfig('web', {});
  const spec = envSpec({ ...config, seed: 0 });
  const [local] = await rollout({
    tasks: [{ ...config, seed: 2 }],
    samples: 1,
    budget: spec.maxTurns ?? 40,
    runSeed: 0,
    policy: makePolicy('oracle', spec),
    makeEnv: (t) => envs.make(t),
  });
  assert.equal(local.outcome.success, true);
  const calls = local.turns.map((t): Op => {
    const a = t.action as { name: string; arguments: Record<string, unknown> };
    return ['a', 'step', { type: 'call_tool', tool_name: a.name, arguments: a.arguments }];
  });
  const r = await client(url, [['a', 'reset', { seed: 2 }], ...calls]);
  assert.deepEqual(obs(r[0]).observation, local.turns[0].observation);
  local.turns.forEach((t, i) => {
    const step = r[i + 1];
    assert.equal(step.reward, t.reward, `turn ${i}`);
    assert.deepEqual(obs(step).info, t.info, `turn ${i}`);
    if (i + 1 < local.turns.length) assert.deepEqual(obs(step).observation, local.turns[i + 1].observation);
  });
  const last = r[r.length - 1];
  assert.deepEqual([last.done, (obs(last).info as { success: boolean }).success], [true, true]);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('Python client vs serve-env at --max-sessions 1: the second session is refused CAPACITY_REACHED', {
  skip,
}, async () => {
  const server = serveEnv(['--env', 'frozenlake', '--max-sessions', '1']);
  const url = await server.ready;
  const r = await client(url, [
    ['a', 'reset', { seed: 0 }],
    ['b', 'reset', { seed: 0 }],
    ['a', 'close', null],
    ['c', 'reset', { seed: 0 }],
  ]);
  assert.equal(obs(r[0]).observation, 0);
  assert.equal(
    r[1].error,
    'Server error: Server at capacity: 1/1 sessions active. Cannot accept new connections. (code: CAPACITY_REACHED)',
  );
  assert.equal(obs(r[3]).observation, 0);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

/** P(a uniformly random walk on OpenEnv's n×n grid world reaches the far corner within T moves), by DP. */
function randomWalkSuccess(n: number, T: number): number {
  let p = new Float64Array(n * n);
  p[0] = 1;
  let reached = 0;
  for (let t = 0; t < T; t++) {
    const next = new Float64Array(n * n);
    for (let x = 0; x < n; x++)
      for (let y = 0; y < n; y++) {
        const mass = p[x * n + y];
        if (mass === 0) continue;
        for (const [dx, dy] of [
          [-1, 0],
          [1, 0],
          [0, -1],
          [0, 1],
        ]) {
          const nx = Math.max(0, Math.min(n - 1, x + dx));
          const ny = Math.max(0, Math.min(n - 1, y + dy));
          if (nx === n - 1 && ny === n - 1) reached += mass / 4;
          else next[nx * n + ny] += mass / 4;
        }
      }
    p = next;
  }
  return reached;
}

/** The CLI on a command line of words without spaces (the temporary paths have none). */
const run = (line: string) => turnwise(line.split(' '));

const readTrajectories = (file: string): Trajectory[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

test("turnwise rollout and eval on the Python reference server: actions by the schema's enum, success as theory says", {
  skip,
}, async () => {
  const server = pythonServer(['--size', '3', '--max-sessions', '4']);
  const url = await server.ready;
  // The enum's order (UP, DOWN, LEFT, RIGHT) numbers the actions: DOWN DOWN RIGHT RIGHT reaches [2, 2].
  const replay = join(dir, 'grid.jsonl');
  writeFileSync(replay, `${JSON.stringify({ task: 0, sample: 0, actions: [1, 1, 3, 3] })}\n`);
  const out = join(dir, 'replayed.jsonl');
  const r = await run(
    `rollout --env openenv:${url}#GridWorldEnvironment --policy replay:${replay} --episodes 1 --budget 10 --out ${out}`,
  );
  assert.equal(r.code, 0, r.stderr);
  const [t] = readTrajectories(out);
  assert.deepEqual(
    t.turns.map((x) => [x.observation, x.reward]),
    [
      [{ x: 0, y: 0, message: 'Welcome to Grid World! Goal is at [2, 2].' }, -0.1],
      [{ x: 1, y: 0, message: 'Keep going...' }, -0.1],
      [{ x: 2, y: 0, message: 'Keep going...' }, -0.1],
      [{ x: 2, y: 1, message: 'Keep going...' }, 1],
    ],
  );
  assert.deepEqual(
    [t.outcome.success, t.outcome.end, t.outcome.firstSuccessTurn, t.turns[3].info],
    [true, 'terminated', 4, { success: true }],
  );
  // A random policy over 256 episodes: the success rate within T = 6 against the exact random walk.
  const T = 6;
  const many = join(dir, 'random.jsonl');
  const rr = await run(
    `rollout --env openenv:${url} --policy random --tasks 2 --samples 128 --budget ${T} --out ${many}`,
  );
  assert.equal(rr.code, 0, rr.stderr);
  const ts = readTrajectories(many);
  assert.equal(ts.length, 256);
  assert.ok(ts.every((x) => x.outcome.end !== 'error'));
  const rate = ts.filter((x) => x.outcome.success).length / ts.length;
  const exact = randomWalkSuccess(3, T);
  assert.ok(
    Math.abs(rate - exact) < 4 * Math.sqrt((exact * (1 - exact)) / ts.length),
    `${rate} vs exact ${exact}`,
  );
  // eval: Pass@(K,T) over the same server; its successes per task are those of the rollout above
  // (same run seed, tasks and samples: the same episodes), read within each T.
  const ev = await run(
    `eval --env openenv:${url} --policy random --tasks 2 --samples 128 --K 1,8 --T 4,${T} --json`,
  );
  assert.equal(ev.code, 0, ev.stderr);
  const report = JSON.parse(ev.stdout) as {
    perTask: { task: { seed: number }; successWithin: Record<string, number> }[];
  };
  for (const p of report.perTask) {
    const mine = ts.filter((x) => x.task.seed === p.task.seed);
    const within = (b: number) =>
      mine.filter((x) => x.outcome.firstSuccessTurn !== null && x.outcome.firstSuccessTurn <= b).length;
    assert.deepEqual(p.successWithin, { 4: within(4), [T]: within(T) });
  }
  const text = await run(`eval --env openenv:${url} --policy random --tasks 2 --samples 8 --K 1 --T 4,6`);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^random on openenv \{"url":"http:\/\/127\.0\.0\.1:\d+"\}: 2 tasks × 8 samples/);
  assert.match(text.stdout, /Pass@\(K,T\) with 95% bootstrap intervals over tasks/);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('the Python server dies mid-episode (at its 25th step): that episode ends as error, the run completes, none lost or counted twice', {
  skip,
}, async () => {
  const server = pythonServer(['--size', '5', '--die-after', '25']);
  const url = await server.ready;
  const out = join(dir, 'dying.jsonl');
  const r = await run(
    `rollout --env openenv:${url} --policy random --tasks 3 --samples 2 --budget 20 --concurrency 1 --out ${out}`,
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await server.exited, 1);
  const ts = readTrajectories(out);
  assert.deepEqual(
    ts.map((t) => t.id),
    ['r0-0-0', 'r0-0-1', 'r0-1-0', 'r0-1-1', 'r0-2-0', 'r0-2-1'],
  );
  // 24 steps were answered before the 25th killed the server; each is a turn of exactly one trajectory.
  assert.equal(
    ts.reduce((n, t) => n + t.turns.length, 0),
    24,
  );
  const dying = ts.findIndex((t) => t.outcome.end === 'error');
  assert.ok(dying >= 1, 'the first episode (20 turns at most) finished before the 25th step');
  assert.ok(ts.slice(0, dying).every((t) => t.outcome.end !== 'error'));
  assert.match(
    ts[dying].outcome.error ?? '',
    /closed the session \(WebSocket 1006: the connection dropped\)/,
  );
  for (const t of ts.slice(dying + 1)) {
    assert.deepEqual([t.outcome.failure, t.turns.length], ['error', 0]);
    // Refused, or reset if the dying process still held its listening socket when the client knocked.
    assert.match(
      t.outcome.error ?? '',
      /^cannot open a session at http:\/\/127\.0\.0\.1:\d+\/ws: .*(ECONNREFUSED|ECONNRESET|socket hang up)/,
    );
  }
  const errors = ts.length - dying;
  assert.match(r.stdout, new RegExp(`context 0, error ${errors}\\n`));
});
