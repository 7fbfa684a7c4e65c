// How `harness run` ends an episode (episodeTrajectory): an agent that never had a model call answered
// is an error — never `budget` with 0 turns because its env's record was cut short when it left — with
// the refused calls' statuses and its stderr tail; a crash is an error whatever the env's record says;
// only the proxy's budget refusal, or the env's own budget spent, truncates.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { type Exit, episodeTrajectory } from '../../src/harness/run.ts';
import type { CallEvent, SessionMeta } from '../../src/serve/proxy-record.ts';

const task = { env: 'frozenlake', params: { map: '4x4' }, seed: 3 };
const meta = (truncated = false): SessionMeta => ({ id: 'e0-a0', budget: 4, task, ended: false, truncated });

let idx = 0;
const answered = (): CallEvent => ({
  idx: idx++,
  path: '/chat/completions',
  request: { model: 'm', messages: [{ role: 'user', content: `turn ${idx}` }] },
  stream: false,
  status: 200,
  response: { choices: [{ index: 0, message: { role: 'assistant', content: 'Left' } }] },
  latencyMs: 1,
  retries: 0,
});
const refused = (status: number, budget = false): CallEvent => ({
  idx: idx++,
  path: '/chat/completions',
  request: { model: 'm', messages: [{ role: 'user', content: 'go' }] },
  stream: false,
  status,
  latencyMs: 1,
  retries: 0,
  error: `status ${status}`,
  ...(budget ? { refused: 'turn_budget_exhausted' as const } : {}),
});
const exit = (code: number, stderr = 'model call refused: unknown model'): Exit => ({
  code,
  signal: null,
  timedOut: false,
  aborted: false,
  stderr,
  stdout: '',
});

/** The env's own record of the episode (the MCP server's line): `turns` tool calls, then `end`. */
function envLine(turns: number, end: 'terminated' | 'truncated', success = false): Trajectory {
  return {
    id: 'mcp',
    task,
    policy: 'mcp',
    budget: 4,
    revealBudget: false,
    turns: Array.from({ length: turns }, (_, t) => ({
      t,
      observation: t,
      action: 0,
      reward: 0,
      logp: 0,
      info: {},
    })),
    outcome: {
      success,
      return: success ? 1 : 0,
      turns,
      firstSuccessTurn: success ? turns : null,
      end,
      failure: success ? null : end === 'truncated' ? 'budget' : 'irreversible',
    },
  };
}

const episode = (m: SessionMeta, events: CallEvent[], e: Exit, env?: Trajectory) =>
  episodeTrajectory(m, events, { id: 'harness-3-0', exit: e, timeoutMs: 60_000, env });

test('every call refused with 400, the agent gone: error with the statuses and stderr, not budget with 0 turns', () => {
  // The MCP server's record of an episode its client left at once: 0 turns, cut short (truncated).
  const t = episode(meta(), [refused(400), refused(400), refused(429)], exit(0), envLine(0, 'truncated'));
  assert.equal(t.turns.length, 0);
  assert.equal(t.outcome.end, 'error');
  assert.equal(t.outcome.failure, 'error');
  assert.equal(
    t.outcome.error,
    'no model call answered (3 refused: 400 ×2, 429); the agent exited with 0; stderr: model call refused: unknown model',
  );
});

test('an agent that exits without a model call: error, saying so', () => {
  const t = episode(meta(), [], exit(0, 'nothing to do'));
  assert.equal(t.outcome.end, 'error');
  assert.equal(
    t.outcome.error,
    'the agent made no model call; the agent exited with 0; stderr: nothing to do',
  );
});

test('the env record truncated short of the budget is not a budget: the agent left, the verifier decides', () => {
  const t = episode(meta(), [answered(), answered()], exit(0), envLine(2, 'truncated'));
  assert.equal(t.turns.length, 2);
  // The agent ended it without success (the env's record says `budget` only by default).
  assert.deepEqual([t.outcome.end, t.outcome.failure], ['terminated', 'wrong-answer']);
  const spent = episode(meta(), [answered(), answered()], exit(0), envLine(4, 'truncated'));
  assert.deepEqual([spent.outcome.end, spent.outcome.failure], ['truncated', 'budget']);
});

test('a crash is an error whatever happened before it; after the proxy refused a call past the budget it is the budget', () => {
  const crash = episode(
    meta(),
    [answered(), answered()],
    exit(1, 'Traceback\nValueError: boom'),
    envLine(4, 'truncated'),
  );
  assert.equal(crash.outcome.end, 'error');
  assert.equal(crash.outcome.error, 'the agent exited with 1; stderr: Traceback\nValueError: boom');
  const refusedPast = episode(
    meta(true),
    [answered(), answered(), answered(), answered(), refused(400, true)],
    exit(3, 'model call refused: turn budget exhausted'),
  );
  assert.deepEqual(
    [refusedPast.turns.length, refusedPast.outcome.end, refusedPast.outcome.failure],
    [4, 'truncated', 'budget'],
  );
});
