// The contract of issue 15 end to end: an agent written in Python, speaking plain HTTP to
// $OPENAI_BASE_URL (turnwise serve with a FrozenLake oracle behind the proxy) and using the env's tools
// over $TURNWISE_MCP, run through `turnwise harness run`: one trajectory per (task, sample), turns = its
// model calls, the reward from the env's verifier, a budget overrun truncated as `budget`, a crash as
// `error`. Needs `turnwise mcp` (src/cli/commands/mcp.ts, issue 12): skipped, saying so, without it.
import assert from 'node:assert/strict';
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
import { harnessRun } from './run-cli.ts';

const AGENT = resolve('test/fixtures/agent.py');
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

/** The CLI on 2 FrozenLake tasks × 2 samples, its upstream the served oracle (in this process). */
const harness = (name: string, mode: string, budget: number, model = 'oracle'): Promise<Trajectory[]> =>
  harnessRun(join(root, name), [
    '--cmd',
    `AGENT_MODE=${mode} AGENT_MODEL=${model} python3 ${AGENT}`,
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
    '--timeout',
    '60',
  ]);

test('a Python MCP agent on FrozenLake: the env verifier decides, turns are its model calls', {
  skip,
}, async () => {
  const ts = await harness('solve', 'mcp', 30);
  assert.equal(ts.length, 4);
  const names = ['Left', 'Down', 'Right', 'Up'];
  for (const [idx, t] of ts.entries()) {
    // The env's own record of the same episode (the MCP server's line): one tool call per model call.
    const line = readFileSync(join(root, 'solve', 'episodes', `e${idx}-a0.mcp.jsonl`), 'utf8');
    const env = JSON.parse(line) as Trajectory;
    assert.equal(t.turns.length, env.turns.length);
    assert.deepEqual(
      t.turns.map((u) =>
        names.indexOf(
          JSON.parse(
            (u.action as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0].function
              .arguments,
          ).direction,
        ),
      ),
      env.turns.map((u) => u.action),
    );
    assert.equal(t.outcome.success, env.outcome.success);
    assert.equal(t.outcome.return, env.outcome.return);
    assert.equal(t.turns[t.turns.length - 1].reward, env.outcome.return);
    // The served oracle's log-prob of each move is in the trace (one token per action).
    assert.ok(t.turns.every((u) => u.trace?.tokens?.length === 1 && u.logp === u.trace?.logprobs?.[0]));
  }
  assert.ok(
    ts.some((t) => t.outcome.success),
    'the oracle reaches the goal within 30 turns',
  );
});

test('a Python MCP agent under budget 4: truncated as budget; a crashing one: error', { skip }, async () => {
  for (const t of await harness('short', 'mcp', 4)) {
    assert.equal(t.turns.length, 4);
    assert.equal(t.outcome.end, 'truncated');
    assert.equal(t.outcome.failure, 'budget');
  }
  for (const t of await harness('crash', 'crash', 4)) {
    assert.equal(t.outcome.end, 'error');
    assert.match(t.outcome.error ?? '', /the agent exited with 3; stderr: model call refused/);
  }
});

test('a Python MCP agent whose model calls are all refused (400): error, with the status and its stderr — not budget with 0 turns', {
  skip,
}, async () => {
  // The served model is `oracle`: `nosuch` is refused; the agent closes its MCP session and exits 0,
  // and the env's record of the episode is cut short (truncated, 0 turns).
  for (const [idx, t] of (await harness('refused', 'mcp', 4, 'nosuch')).entries()) {
    const env = JSON.parse(
      readFileSync(join(root, 'refused', 'episodes', `e${idx}-a0.mcp.jsonl`), 'utf8'),
    ) as Trajectory;
    assert.deepEqual([env.turns.length, env.outcome.end], [0, 'truncated']);
    assert.deepEqual([t.turns.length, t.outcome.end, t.outcome.failure], [0, 'error', 'error']);
    assert.match(
      t.outcome.error ?? '',
      /^no model call answered \(1 refused: 400\); the agent exited with 0; stderr: .*model call refused: .*model \\"nosuch\\" is not served/s,
    );
  }
});
