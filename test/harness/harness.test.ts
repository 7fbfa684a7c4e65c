// turnwise harness run with a Python agent (test/fixtures/agent.py: urllib, no turnwise code) against a
// fixture upstream: one trajectory per (task, sample), turns = its model calls, rewards posted or scored,
// the budget refusal as `budget`, a crashing and a hanging agent as `error`, and resume after kill -9.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { makeTasks } from '../../src/core/tasks.ts';
import { runHarness } from '../../src/harness/run.ts';
import { startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';

const AGENT = resolve('test/fixtures/agent.py');
const BIN = resolve('bin/turnwise.js');
const root = mkdtempSync(join(tmpdir(), 'turnwise-harness-'));
let up: Upstream;
before(async () => {
  up = await startUpstream();
});
after(async () => {
  await up.close();
});

const tasks = makeTasks({ env: 'custom', params: {} }, 3, 10);
const run = (name: string, cmd: string, o: Partial<Parameters<typeof runHarness>[0]> = {}) =>
  runHarness({
    cmd,
    tasks,
    samples: 2,
    budget: 5,
    revealBudget: false,
    upstream: up.url,
    out: join(root, name),
    concurrency: 3,
    timeoutMs: 30_000,
    config: { name, cmd },
    ...o,
  });

test('a Python agent over plain HTTP: one trajectory per (task, sample), its calls as turns, its posted reward', async () => {
  const r = await run('chat', `AGENT_CALLS=3 python3 ${AGENT}`);
  assert.equal(r.ran, 6);
  assert.deepEqual(
    r.trajectories.map((t) => t.id),
    ['harness-10-0', 'harness-10-1', 'harness-11-0', 'harness-11-1', 'harness-12-0', 'harness-12-1'],
  );
  for (const t of r.trajectories) {
    assert.equal(t.turns.length, 3);
    assert.equal(t.budget, 5);
    const win = t.task.seed % 2 === 0;
    assert.deepEqual(t.outcome, {
      success: win,
      return: win ? 1 : 0,
      turns: 3,
      firstSuccessTurn: win ? 3 : null,
      end: 'terminated',
      failure: win ? null : 'wrong-answer',
    });
    // The observation of turn 1 is what the agent added after the first answer.
    assert.deepEqual(t.turns[1].observation, [{ role: 'user', content: 'go on 0' }]);
    assert.deepEqual(t.turns[0].trace?.logprobs, [-0.25, -0.5, -0.75]);
  }
  const lines = readFileSync(join(r.dir, 'trajectories.jsonl'), 'utf8').trim().split('\n');
  assert.deepEqual(
    lines.map((l) => JSON.parse(l).id),
    r.trajectories.map((t) => t.id),
  );
  // A finished run re-run does nothing.
  const again = await run('chat', `AGENT_CALLS=3 python3 ${AGENT}`);
  assert.deepEqual([again.ran, again.resumed], [0, 6]);
});

test('budget: the agent that calls past T is cut at T turns, truncated as budget (not error, though it exited 3)', async () => {
  const r = await run('loop', `AGENT_MODE=loop python3 ${AGENT}`, { budget: 2, samples: 1 });
  for (const t of r.trajectories) {
    assert.equal(t.turns.length, 2);
    assert.deepEqual(t.outcome, {
      success: false,
      return: 0,
      turns: 2,
      firstSuccessTurn: null,
      end: 'truncated',
      failure: 'budget',
    });
  }
});

test('a crashing agent ends as error with its stderr tail; a hanging one is stopped at the time limit', async () => {
  const crash = await run('crash', `AGENT_MODE=crash python3 ${AGENT}`, {
    samples: 1,
    tasks: tasks.slice(0, 1),
  });
  const c = crash.trajectories[0];
  assert.equal(c.outcome.end, 'error');
  assert.equal(c.outcome.failure, 'error');
  assert.equal(c.turns.length, 1);
  assert.match(c.outcome.error ?? '', /exited with 1; stderr: .*ValueError: boom in the agent/s);
  const t0 = Date.now();
  const hang = await run('hang', `AGENT_MODE=hang python3 ${AGENT}`, {
    samples: 1,
    tasks: tasks.slice(0, 1),
    timeoutMs: 1500,
  });
  const h = hang.trajectories[0];
  assert.equal(h.outcome.end, 'error');
  assert.match(h.outcome.error ?? '', /timed out after 1.5 s; stderr: about to hang/);
  assert.ok(Date.now() - t0 < 15_000, 'the hung agent was stopped');
});

test('--reward CMD scores the trajectory read on stdin', async () => {
  const scorer = `python3 -c "import json,sys; t=json.load(sys.stdin); print(len(t['turns'])/10)"`;
  const r = await run('scored', `AGENT_CALLS=2 python3 ${AGENT}`, {
    samples: 1,
    tasks: tasks.slice(0, 1),
    reward: scorer,
  });
  // The scorer's number replaces the posted reward (1 for an even seed).
  assert.equal(r.trajectories[0].outcome.return, 0.2);
  assert.deepEqual(
    r.trajectories[0].turns.map((u) => u.reward),
    [0, 0.2],
  );
  const bad = await run('bad-scorer', `AGENT_CALLS=1 python3 ${AGENT}`, {
    samples: 1,
    tasks: tasks.slice(0, 1),
    reward: 'echo many',
  });
  assert.match(bad.trajectories[0].outcome.error ?? '', /printed "many", not a number/);
});

test('resume after kill -9: finished episodes are not run again, the rest are, nothing is counted twice', async () => {
  const out = join(root, 'killed');
  const args = [
    'harness',
    'run',
    '--cmd',
    `AGENT_CALLS=2 AGENT_SLEEP=0.2 python3 ${AGENT}`,
    '--env',
    'frozenlake',
    '--tasks',
    '3',
    '--samples',
    '2',
    '--budget',
    '4',
    '--upstream',
    up.url,
    '--out',
    out,
    '--concurrency',
    '1',
    '--no-mcp',
    '--json',
  ];
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Wait (by polling the store, not by a sleep) until two episodes are recorded, then kill -9.
  const rows = () => {
    try {
      const db = new Database(join(out, 'run.sqlite'), { readonly: true, fileMustExist: true });
      const n = (db.prepare('SELECT COUNT(*) AS n FROM trajectories').get() as { n: number }).n;
      db.close();
      return n;
    } catch {
      return 0;
    }
  };
  const exited = new Promise((r) => child.on('exit', r));
  while (rows() < 2) await new Promise((r) => setTimeout(r, 25));
  child.kill('SIGKILL');
  await exited;
  const before = rows();
  assert.ok(before >= 2 && before < 6, `killed with ${before} episodes recorded`);
  const second = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  second.stdout.on('data', (d) => {
    stdout += d;
  });
  const code = await new Promise((r) => second.on('exit', r));
  assert.equal(code, 0);
  const result = JSON.parse(stdout);
  assert.equal(result.resumed, before);
  assert.equal(result.ran, 6 - before);
  assert.equal(result.episodes, 6);
  const lines = readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((t) => t.id),
    ['harness-0-0', 'harness-0-1', 'harness-1-0', 'harness-1-1', 'harness-2-0', 'harness-2-1'],
  );
  assert.ok(lines.every((t) => t.turns.length === 2));
  // Each finished episode had one session; only the interrupted one (if any) had a second attempt.
  const db = new Database(join(out, 'proxy.sqlite'), { readonly: true });
  const sessions = (db.prepare('SELECT id FROM sessions').all() as { id: string }[]).map((r) => r.id);
  db.close();
  for (let i = 0; i < before; i++) assert.ok(!sessions.includes(`e${i}-a1`), `episode ${i} ran once`);
});
