// `turnwise mcp` driven by the MCP SDK's own client over stdio, as an agent harness would: the server is
// the real CLI in a child process.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Task, Trajectory } from '../../src/core/types.ts';
import { ACTION_NAMES } from '../../src/envs/frozenlake/index.ts';
import { envConfig, envs } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { turnwise } from '../cli/run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-mcp-'));

// A failed assertion must not leave a server (and this test process) waiting on an open pipe.
const open: Client[] = [];
after(() => Promise.all(open.map((c) => c.close())));

async function connect(args: string[]): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', ...args],
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d) => (err += d));
  const client = new Client({ name: 'turnwise-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  return { client, stderr: () => err };
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;
const status = (r: CallToolResult) => r.structuredContent as Record<string, unknown>;

/** The in-process rollout of one task under `spec`, with the episode seeds `turnwise mcp` uses. */
async function inProcess(task: Task, spec: string, budget: number): Promise<Trajectory> {
  const policy = makePolicy(spec, envs.spec(task));
  const [t] = (await rollout({
    tasks: [task],
    samples: 1,
    budget,
    runSeed: task.seed,
    policy,
    makeEnv: envs.make,
  })) as Trajectory[];
  return t;
}

const strip = (t: Trajectory) => ({
  ...t,
  id: '',
  policy: '',
  turns: t.turns.map((x) => ({ ...x, logp: 0 })),
});

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Trajectory);

test('mcp frozenlake: a whole episode with the oracle’s moves, then refusals, one stored line', async () => {
  const task: Task = { ...envConfig('frozenlake', { map: '8x8' }), seed: 2 };
  const oracle = await inProcess(task, 'oracle', 30); // budget-aware: the server reveals the budget too
  assert.equal(oracle.outcome.success, true);
  const store = join(dir, 'fl.jsonl');
  writeFileSync(store, '{"earlier":"line"}\n'); // appended to, never truncated
  const { client, stderr } = await connect([
    '--env',
    'frozenlake',
    '--map',
    '8x8',
    '--task-seed',
    '2',
    '--budget',
    '30',
    '--reveal-budget',
    '--store',
    store,
  ]);
  const tools = (await client.listTools()).tools;
  assert.deepEqual(
    tools.map((t) => t.name),
    ['move', 'observe'],
  );
  assert.deepEqual(tools[0].inputSchema, {
    type: 'object',
    properties: { direction: { type: 'string', enum: ['Left', 'Down', 'Right', 'Up'] } },
    required: ['direction'],
    additionalProperties: false,
  });
  const first = await call(client, 'observe');
  assert.deepEqual(status(first), {
    observation: 0,
    reward: 0,
    done: false,
    success: false,
    failure: null,
    turns: 0,
    return: 0,
    turnsLeft: 30,
  });
  assert.equal(text(first), `${envs.make(task).text!(0)}\n(30 turns left)`);
  let last: CallToolResult | undefined;
  for (const [i, turn] of oracle.turns.entries()) {
    last = await call(client, 'move', { direction: ACTION_NAMES[turn.action as number] });
    const s = status(last);
    const next = oracle.turns[i + 1]?.observation;
    if (next !== undefined) assert.equal(s.observation, next);
    assert.equal(s.turns, i + 1);
    assert.equal(s.turnsLeft, 30 - (i + 1));
    assert.equal(s.done, i === oracle.turns.length - 1);
    assert.equal(last.isError, undefined);
  }
  assert.deepEqual(
    { ...status(last!), info: undefined },
    {
      observation: 63,
      reward: 1,
      done: true,
      success: true,
      failure: null,
      turns: oracle.turns.length,
      return: 1,
      turnsLeft: 30 - oracle.turns.length,
      info: undefined,
    },
  );
  assert.match(text(last!), /Episode over: success after \d+ turn\(s\), return 1\.$/);
  const after = await call(client, 'move', { direction: 'Left' });
  assert.equal(after.isError, true);
  assert.equal(text(after), 'the episode is over (success); no more actions are taken');
  assert.equal(status(await call(client, 'observe')).observation, 63);
  await client.close();
  const stored = lines(store);
  assert.equal(stored.length, 2);
  assert.equal(stored[1].id, 'mcp2-2-0');
  assert.equal(stored[1].policy, 'mcp');
  assert.deepEqual(strip(stored[1]), strip(oracle));
  assert.doesNotMatch(stderr(), /internal error/);
});

test('mcp sql: the gold path with its step-quality info, a .sqlite run store, post-episode errors', async () => {
  const task: Task = { ...envConfig('sql', {}), seed: 3 };
  const oracle = await inProcess(task, 'oracle', 20);
  const store = join(dir, 'sql.sqlite');
  const { client } = await connect([
    '--env',
    'sql',
    '--task-seed',
    '3',
    '--store',
    store,
    '--run',
    'agent-1',
  ]);
  assert.deepEqual(
    (await client.listTools()).tools.map((t) => [t.name, t.inputSchema]),
    [
      ...envs.spec(task).tools!.map((t) => [t.name, t.parameters]),
      ['observe', { type: 'object', properties: {}, additionalProperties: false }],
    ],
  );
  const results: CallToolResult[] = [];
  for (const turn of oracle.turns) {
    const a = turn.action as { name: string; arguments: Record<string, unknown> };
    results.push(await call(client, a.name, a.arguments));
  }
  const execute = results.find(
    (_, i) => (oracle.turns[i].action as { name: string }).name === 'execute_sql',
  )!;
  assert.equal((status(execute).info as { quality: number }).quality, 1);
  const end = status(results[results.length - 1]);
  assert.deepEqual([end.done, end.success, end.failure, end.reward], [true, true, null, 1]);
  const again = await call(client, 'submit', { query: 'SELECT 1' });
  assert.equal(again.isError, true);
  assert.match(text(again), /^the episode is over \(success\)/);
  await client.close();
  const runs = new RunStore(store);
  assert.equal(runs.run('agent-1')?.kind, 'mcp');
  const [t] = runs.trajectories('agent-1');
  runs.close();
  assert.deepEqual(strip(t), strip(oracle));
});

test('mcp tools: calls beyond the budget are "turn budget exhausted" errors; the episode is truncated', async () => {
  const task: Task = { ...envConfig('tools', {}), seed: 1 };
  const store = join(dir, 'tools.jsonl');
  const { client } = await connect(['--env', 'tools', '--task-seed', '1', '--budget', '2', '--store', store]);
  const oracle = await inProcess(task, 'oracle', 20);
  const actions = oracle.turns
    .slice(0, 2)
    .map((t) => t.action as { name: string; arguments: Record<string, unknown> });
  const r1 = await call(client, actions[0].name, actions[0].arguments);
  assert.equal(status(r1).done, false);
  assert.equal(typeof (status(r1).info as { quality: unknown }).quality, 'number');
  const r2 = await call(client, actions[1].name, actions[1].arguments);
  assert.deepEqual([status(r2).done, status(r2).success, status(r2).failure], [true, false, 'budget']);
  assert.match(
    text(r2),
    /Episode over: turn budget exhausted \(2 turns\); the episode is truncated \(failure budget\)\.$/,
  );
  const r3 = await call(client, actions[1].name, actions[1].arguments);
  assert.equal(r3.isError, true);
  assert.equal(
    text(r3),
    'turn budget exhausted: the episode was truncated after 2 turns; no more actions are taken',
  );
  await client.close();
  const [t] = lines(store);
  assert.equal(lines(store).length, 1);
  assert.deepEqual([t.outcome.end, t.outcome.failure, t.outcome.turns], ['truncated', 'budget', 2]);
  const replay = join(dir, 'tools-replay.jsonl');
  writeFileSync(replay, JSON.stringify({ task: 1, sample: 0, actions }));
  assert.deepEqual(strip(t), strip(await inProcess(task, `replay:${replay}`, 2)));
});

test('mcp: a client that disconnects mid-episode leaves a truncated trajectory; bad flags exit 2', async () => {
  const store = join(dir, 'gone.jsonl');
  const { client } = await connect(['--env', 'frozenlake', '--task-seed', '0', '--store', store]);
  await call(client, 'move', { direction: 'Right' });
  const bad = await call(client, 'move', { direction: 'Sideways' });
  assert.match(
    text(bad),
    /Last action invalid: direction must be one of Left, Down, Right, Up; nothing moved\./,
  );
  assert.equal((status(bad).info as { valid: boolean }).valid, false);
  await client.close();
  const [t] = lines(store);
  assert.deepEqual(
    t.turns.map((x) => x.action),
    [2, -1],
  );
  assert.deepEqual([t.outcome.end, t.outcome.failure, t.outcome.turns], ['truncated', 'budget', 2]);
  const r = await turnwise(['mcp', '--env', 'frozenlake', '--task-seed', '0', '--store', join(dir, 'x.txt')]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /^turnwise: --store: got ".*x\.txt"; expected a FILE\.jsonl \(one line appended\) or FILE\.sqlite \(a run store\)\n$/,
  );
});
