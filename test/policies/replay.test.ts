import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Task, ToolCall, Trajectory } from '../../src/core/types.ts';
import { describeEnv, envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { checksEpisodes, ReplayPolicy } from '../../src/policies/replay.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-replay-'));
let files = 0;
function file(lines: unknown[] | string): string {
  const path = join(dir, `r${files++}.jsonl`);
  writeFileSync(path, typeof lines === 'string' ? lines : lines.map((l) => JSON.stringify(l)).join('\n'));
  return path;
}

async function run(tasks: Task[], samples: number, spec: string, budget = 20): Promise<Trajectory[]> {
  const policy = makePolicy(spec, envs.spec(tasks[0]));
  return rollout({ tasks, samples, budget, runSeed: 7, policy, makeEnv: envs.make }) as Promise<Trajectory[]>;
}

/** What a replay of the same actions must reproduce: everything but the policy's id and log-probs. */
const strip = (t: Trajectory) => ({ ...t, policy: '', turns: t.turns.map((x) => ({ ...x, logp: 0 })) });

for (const [env, spec] of [
  ['sql', 'oracle:eps=0.3'],
  ['tools', 'oracle:eps=0.3'],
  ['frozenlake', 'random'],
] as const) {
  test(`replay on ${env}: the actions of a ${spec} rollout replayed give the same trajectories`, async () => {
    const config = envConfig(env, env === 'frozenlake' ? { slippery: true } : {});
    const tasks = makeTasks(config, 4, 7);
    const original = await run(tasks, 2, spec);
    const path = file(
      original.map((t, i) => ({ task: t.task.seed, sample: i % 2, actions: t.turns.map((x) => x.action) })),
    );
    const replayed = await run(tasks, 2, `replay:${path}`);
    assert.equal(replayed[0].policy, `replay:${path}`);
    assert.deepEqual(replayed.map(strip), original.map(strip));
    // Not trivially so: eps-oracle and random spread over outcomes.
    assert.ok(new Set(original.map((t) => t.outcome.turns)).size > 1);
  });
}

test('replay: destructive SQL is refused, recorded in the trace, and leaves the database intact', async () => {
  const task: Task = { ...envConfig('sql', {}), seed: 3 };
  const gold = (describeEnv(task, { gold: true }).gold as { query: string }).query;
  const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });
  const destructive = [
    'DROP TABLE courses',
    "ATTACH DATABASE ':memory:' AS x",
    'PRAGMA writable_schema=1',
    'DELETE FROM courses',
  ];
  const path = file([
    {
      task: 3,
      sample: 0,
      actions: [
        ...destructive.map((q) => call('execute_sql', { query: q })),
        call('submit', { query: gold }),
      ],
    },
    { task: 3, sample: 1, actions: [call('submit', { query: 'DROP TABLE courses' })] },
  ]);
  const [contained, ended] = await run([task], 2, `replay:${path}`);
  for (const turn of contained.turns.slice(0, destructive.length)) {
    assert.equal(turn.info.valid, false);
    assert.equal(turn.info.error, 'refused');
  }
  const errors = contained.turns
    .slice(1, destructive.length + 1)
    .map((x) => (x.observation as { last: { ok: boolean; error: string } }).last);
  assert.ok(errors.every((e) => !e.ok && e.error.length > 0));
  assert.match(errors[1].error, /ATTACH/);
  assert.match(errors[2].error, /PRAGMA/);
  // The gold query after the attempts still scores 1: nothing was dropped, attached or deleted.
  assert.equal(contained.outcome.success, true);
  assert.equal(contained.outcome.turns, destructive.length + 1);
  // Submitting a destructive statement ends the episode as tool misuse (sql/env.ts: refused → invalid-action).
  assert.equal(ended.outcome.end, 'terminated');
  assert.equal(ended.outcome.failure, 'invalid-action');
  assert.equal(ended.turns[0].info.error, 'refused');
});

test('replay: an episode longer than its line ends with kind error, the message naming the turn', async () => {
  const task: Task = { ...envConfig('frozenlake', {}), seed: 0 };
  const [t] = await run([task], 1, `replay:${file([{ task: 0, sample: 0, actions: [2, 2] }])}`, 10);
  assert.equal(t.outcome.turns, 2);
  assert.equal(t.outcome.failure, 'error');
  assert.equal(t.outcome.error, 'replay: out of actions at turn 3 (the line has 2)');
});

test('replay: bad files are refused when the policy is made, naming file:line and the field', () => {
  const sql = envs.spec({ ...envConfig('sql', {}), seed: 0 });
  const fl = envs.spec({ ...envConfig('frozenlake', {}), seed: 0 });
  const refuse = (content: string, spec = sql) => {
    const path = file(content);
    try {
      new ReplayPolicy(path, spec);
    } catch (e) {
      assert.ok(e instanceof InputError);
      return e.message.replace(path, 'F');
    }
    assert.fail('accepted');
  };
  assert.match(refuse('{"task":0,"sample":0,"actions":[]}\n{nope'), /^F:2: not valid JSON/);
  assert.match(refuse('{"task":0,"sample":0,"actions":[{"name":"x"}]}'), /^F:1\.actions\.0\.arguments/);
  assert.match(refuse('{"task":-1,"sample":0,"actions":[]}'), /^F:1\.task/);
  assert.match(refuse('{"task":0,"actions":[]}'), /^F:1\.sample/);
  assert.match(refuse('{"task":0,"sample":0,"actions":[],"extra":1}'), /unknown field/);
  assert.match(
    refuse('{"task":0,"sample":0,"actions":[]}\n{"task":0,"sample":0,"actions":[]}'),
    /given twice/,
  );
  assert.match(refuse('{"task":0,"sample":0,"actions":[4]}', fl), /^F:1\.actions\.0/);
  assert.match(refuse('\n\n'), /no lines/);
  assert.throws(
    () => makePolicy(`replay:${join(dir, 'missing.jsonl')}`, sql),
    /cannot read the file \(ENOENT\)/,
  );
  const p = makePolicy(`replay:${file('{"task":5,"sample":0,"actions":[]}')}`, sql);
  assert.ok(checksEpisodes(p));
  p.checkEpisodes([5], 1);
  assert.throws(() => p.checkEpisodes([5], 2), /no line for task 5 sample 1/);
  assert.throws(() => p.checkEpisodes([5, 6], 1), /no line for task 6 sample 0/);
});

test('replay on the CLI: a missing episode is one line and exit 2 before any rollout', async () => {
  const path = file([{ task: 3, sample: 0, actions: [{ name: 'list_tables', arguments: {} }] }]);
  const r = await turnwise([
    'rollout',
    '--env',
    'sql',
    '--policy',
    `replay:${path}`,
    '--tasks',
    '2',
    '--seed',
    '3',
  ]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `turnwise: --policy: got "replay:${path}"; the file has no line for task 4 sample 0\n`,
  );
});
