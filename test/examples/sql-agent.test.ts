// The whole loop of issue 15 on sql, as the README shows it: `turnwise serve --env sql` (a scripted
// oracle, real CLI process) ← the recording proxy ← examples/sql-agent.ts (the openai SDK, tools over
// `turnwise mcp`) run by `turnwise harness run`. Turns are the agent's model calls, each played on the
// env by the MCP server; the reward is the env's verifier. The oracle (eps=0) solves every task along
// its gold path; with eps=0.2 some episodes fail, and every log-prob is one of the policy's two.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { Task, ToolCall, Trajectory } from '../../src/core/types.ts';
import { sqlScripted, sqlWorld } from '../../src/envs/sql/index.ts';
import { startServe } from '../fixtures/serve-process.ts';

const BIN = resolve('bin/turnwise.js');
const AGENT = 'npx tsx examples/sql-agent.ts';
const BUDGET = 8;
const root = mkdtempSync(join(tmpdir(), 'turnwise-sql-agent-'));

const readJsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

/** `turnwise harness run` of the example agent against `url`; its trajectories and the MCP episodes'. */
async function harness(name: string, url: string, tasks: number, samples: number, env = 'sql') {
  const out = join(root, name);
  const args = ['harness', 'run', '--cmd', AGENT, '--env', env, '--tasks', String(tasks)];
  args.push('--samples', String(samples), '--budget', String(BUDGET), '--upstream', url, '--out', out);
  const child = spawn(process.execPath, [BIN, ...args, '--timeout', '120', '--json'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((r) => child.on('exit', r));
  assert.equal(code, 0, stderr);
  const ts = readJsonl(join(out, 'trajectories.jsonl'));
  assert.equal(ts.length, tasks * samples);
  // Each episode's MCP line (the env's own trajectory): one per (task, sample), in run order.
  const envs = ts.map((_, i) => readJsonl(join(out, 'episodes', `e${i}-a0.mcp.jsonl`))[0]);
  return { ts, envs };
}

/** The tool calls of a harness trajectory's turns (one per model call). */
const calls = (t: Trajectory): ToolCall[] =>
  t.turns.map((x) => {
    const call = (x.action as { tool_calls: { function: { name: string; arguments: string } }[] })
      .tool_calls[0].function;
    return { name: call.name, arguments: JSON.parse(call.arguments) };
  });

/** The oracle's path on a task: list_tables, describe the gold's tables, execute the gold, submit it. */
function goldPath(task: Task): ToolCall[] {
  const view = sqlScripted(sqlWorld(task));
  const path: ToolCall[] = [];
  while (path.at(-1)?.name !== 'submit') {
    const history = path.map((action) => ({ action }) as never);
    path.push(view.goldAction(history));
  }
  return path;
}

/** What every run must satisfy: turns = model calls = the env's tool calls, the env's verdict. */
function consistent(ts: Trajectory[], envs: Trajectory[]) {
  for (const [i, t] of ts.entries()) {
    const env = envs[i];
    assert.equal(t.outcome.turns, t.turns.length);
    assert.deepEqual(
      calls(t),
      env.turns.map((x) => x.action),
      `${t.id}: every model call was played on the env`,
    );
    assert.equal(t.outcome.success, env.outcome.success, t.id);
    assert.equal(t.outcome.return, env.outcome.return, t.id);
    assert.equal(t.outcome.failure, env.outcome.failure, t.id);
  }
}

/** `turnwise serve` of the sql oracle (eps 0) on the first `tasks` tasks. */
const servedOracle = (tasks: number) =>
  startServe(['--policy', 'oracle', '--env', 'sql', '--tasks', String(tasks), '--budget', String(BUDGET)]);

test('the oracle served for sql solves every task along its gold path', async () => {
  const serve = servedOracle(2);
  try {
    const { ts, envs } = await harness('oracle', await serve.ready, 2, 1);
    consistent(ts, envs);
    for (const t of ts) {
      assert.equal(t.outcome.success, true, t.id);
      assert.equal(t.outcome.return, 1);
      assert.deepEqual(calls(t), goldPath(t.task), t.id);
      assert.ok(t.turns.every((x) => x.logp === 0));
    }
  } finally {
    assert.equal(await serve.stop(), 0);
  }
});

test('oracle:eps=0.2 served for sql: some episodes fail, the log-probs are the policy’s', async () => {
  const serve = startServe([
    '--policy',
    'oracle:eps=0.2',
    '--env',
    'sql',
    '--tasks',
    '3',
    '--budget',
    String(BUDGET),
  ]);
  try {
    const { ts, envs } = await harness('eps', await serve.ready, 3, 2);
    consistent(ts, envs);
    const wins = ts.filter((t) => t.outcome.success).length;
    assert.ok(wins > 0 && wins < ts.length, `${wins} of ${ts.length} solved`);
    for (const t of ts) {
      for (const x of t.turns) {
        // log(1 − ε) for the gold call, log(ε/|W|) (below log ε) for a detour.
        assert.ok(x.logp === Math.log(0.8) || x.logp < Math.log(0.2), `${t.id} turn ${x.t}: ${x.logp}`);
      }
      if (!t.outcome.success)
        assert.ok(['wrong-answer', 'budget', 'misperception'].includes(t.outcome.failure as string));
    }
  } finally {
    assert.equal(await serve.stop(), 0);
  }
});

test('the same harness run with the sql env behind OpenEnv (serve-env): the same gold paths, the same verdicts', async () => {
  const { startOpenEnvServer } = await import('../../src/serve/openenv.ts');
  const { envConfig, envs } = await import('../../src/envs/index.ts');
  const openenv = await startOpenEnvServer({
    envs,
    config: envConfig('sql', {}),
    budget: BUDGET,
    seed: 0,
    maxSessions: 8,
    metadata: { name: 'sql', description: 'sql served for the harness test' },
  });
  const serve = servedOracle(2);
  try {
    const url = await serve.ready;
    const { ts, envs: episodes } = await harness('openenv', url, 2, 1, `openenv:${openenv.url}`);
    consistent(ts, episodes);
    for (const t of ts) {
      assert.equal(t.task.env, 'openenv');
      assert.equal(t.outcome.success, true, t.id);
      assert.deepEqual(calls(t), goldPath({ ...envConfig('sql', {}), seed: t.task.seed }), t.id);
    }
  } finally {
    assert.equal(await serve.stop(), 0);
    await openenv.close();
  }
});
