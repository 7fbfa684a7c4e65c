// The contract of issue 15 end to end: an agent written in Python, speaking plain HTTP to
// $OPENAI_BASE_URL (turnwise serve with a FrozenLake oracle behind the proxy) and using the env's tools
// over $TURNWISE_MCP, run through `turnwise harness run`: one trajectory per (task, sample), turns = its
// model calls, the reward from the env's verifier, a budget overrun truncated as `budget`, a crash as
// `error`. Needs `turnwise mcp` (src/cli/commands/mcp.ts, issue 12): skipped, saying so, without it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import {
  envConfig,
  envs,
  makePolicy,
  type RunningServer,
  startServer,
  type Trajectory,
} from '../../src/index.ts';

const AGENT = resolve('test/fixtures/agent.py');
const BIN = resolve('bin/turnwise.js');
const skip = existsSync('src/cli/commands/mcp.ts') ? false : 'needs turnwise mcp (src/cli/commands/mcp.ts)';
const root = mkdtempSync(join(tmpdir(), 'turnwise-harness-mcp-'));
let server: RunningServer;
before(async () => {
  const env = envs.make({ ...envConfig('frozenlake', { map: '4x4' }), seed: 0 });
  server = await startServer({ policy: makePolicy('oracle:horizon=100', env.spec), env });
});
after(async () => {
  await server?.close();
});

function harness(name: string, mode: string, budget: number): Trajectory[] {
  const out = join(root, name);
  const r = spawnSync(
    process.execPath,
    [
      BIN,
      'harness',
      'run',
      '--cmd',
      `AGENT_MODE=${mode} AGENT_MODEL=oracle python3 ${AGENT}`,
      '--env',
      'frozenlake',
      '--map',
      '4x4',
      '--tasks',
      '2',
      '--samples',
      '2',
      '--budget',
      String(budget),
      '--upstream',
      server.url,
      '--out',
      out,
      '--timeout',
      '60',
      '--json',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);
}

test('a Python MCP agent on FrozenLake: the env verifier decides, turns are its model calls', {
  skip,
}, () => {
  const ts = harness('solve', 'mcp', 10);
  assert.equal(ts.length, 4);
  for (const t of ts) {
    // The budget-blind oracle on the fixed 4x4 map walks the 6-step shortest path.
    assert.equal(t.turns.length, 6);
    assert.deepEqual(t.outcome, {
      success: true,
      return: 1,
      turns: 6,
      firstSuccessTurn: 6,
      end: 'terminated',
      failure: null,
    });
    assert.deepEqual(
      t.turns.map((u) => u.reward),
      [0, 0, 0, 0, 0, 1],
    );
    assert.ok(t.turns.every((u) => u.logp === 0 && u.trace?.tokens?.length === 1));
  }
});

test('a Python MCP agent under budget 4: truncated as budget; a crashing one: error', { skip }, () => {
  for (const t of harness('short', 'mcp', 4)) {
    assert.equal(t.turns.length, 4);
    assert.equal(t.outcome.end, 'truncated');
    assert.equal(t.outcome.failure, 'budget');
  }
  for (const t of harness('crash', 'crash', 4)) {
    assert.equal(t.outcome.end, 'error');
    assert.match(t.outcome.error ?? '', /the agent exited with 3; stderr: model call refused/);
  }
});
