// The trajectory format as a published contract: `turnwise schema trajectory` (JSON Schema, draft
// 2020-12, checked with Ajv — what a harness in another language would use) accepts every line
// `rollout --out` writes and what an LLM turn carries (trace), and refuses what `summary --in` refuses;
// files and the SQLite store round-trip trajectories exactly, traces and −∞ log-probs included.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import type { Trajectory } from '../../src/core/types.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { JsonlWriter, readTrajectories } from '../../src/store/jsonl.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { firstSpawned, inProcess, turnwise } from '../cli/run.ts';
import { newLifecycle, sayFactory } from '../fixtures/say-env.ts';
import { BigramPolicy } from '../fixtures/text-policy.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-schema-'));

async function validator() {
  const r = await turnwise(['schema', 'trajectory']);
  assert.equal(r.code, 0, r.stderr);
  const schema = JSON.parse(r.stdout);
  assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  const Ajv = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
  return new Ajv({ strict: false, allErrors: true }).compile(schema);
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));

test('every line rollout --out writes validates against `turnwise schema trajectory`', async () => {
  const validate = await validator();
  for (const [name, args] of [
    ['random', ['--map', '4x4', '--slippery', '--policy', 'random']],
    ['greedy', ['--map', '8x8', '--slippery', '--policy', 'oracle']],
    ['random-maps', ['--random', '--size', '5', '--slippery', '--policy', 'oracle:eps=0.2,horizon=30']],
  ] as const) {
    const file = join(dir, `${name}.jsonl`);
    const r = await turnwise([
      'rollout',
      ...args,
      '--tasks',
      '6',
      '--samples',
      '3',
      '--budget',
      '40',
      '--out',
      file,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const all = lines(file);
    assert.equal(all.length, 18);
    for (const [i, line] of all.entries())
      assert.ok(validate(line), `${name}:${i + 1} ${JSON.stringify(validate.errors)}`);
  }
  // A null logp (−∞: an action its policy gave probability 0, e.g. a forced one) is valid too.
  const withNull = { ...lines(join(dir, 'random.jsonl'))[0] };
  withNull.turns = withNull.turns.map((t: Record<string, unknown>) => ({ ...t, logp: null }));
  assert.ok(validate(withNull));
});

test('LLM turns: trace round-trips through JSONL and SQLite, and validates', async () => {
  const validate = await validator();
  const life = newLifecycle();
  const tasks = [0, 1, 2].map((seed) => ({ env: 'say', params: {}, seed }));
  const batch = await rollout({
    makeEnv: sayFactory(life).make,
    tasks,
    samples: 2,
    budget: 3,
    runSeed: 7,
    policy: new BigramPolicy(),
  });
  // A −∞ token log-prob and the remote-model fields, as an endpoint policy records them.
  const first = batch[0].turns[0];
  first.trace = {
    ...first.trace!,
    logprobs: [Number.NEGATIVE_INFINITY, first.trace!.logprobs![1]],
    model: 'bigram',
    modelVersion: 'sha-1',
    usage: { prompt: 5, completion: 2, cached: 0 },
    latencyMs: 12.5,
    finishReason: 'stop',
    retries: 1,
  };
  first.logp = Number.NEGATIVE_INFINITY;
  const file = join(dir, 'say.jsonl');
  const w = new JsonlWriter(file);
  for (const t of batch) w.write(t);
  w.close();
  for (const line of lines(file)) assert.ok(validate(line), JSON.stringify(validate.errors));
  assert.equal(lines(file)[0].turns[0].trace.logprobs[0], null);
  const back = readTrajectories(file);
  assert.deepEqual(back, batch);
  assert.equal(back[0].turns[0].trace!.logprobs![0], Number.NEGATIVE_INFINITY);

  const store = new RunStore(join(dir, 'runs.sqlite'));
  store.createRun('say', 'rollout', {});
  store.addTrajectories('say', 0, batch);
  assert.deepEqual(store.trajectories('say'), batch);
  store.addTrajectories('say', batch.length, batch, null, false);
  assert.throws(() => store.trajectories('say'), /row 6: holds the outcome only/);
  store.close();
});

test('FrozenLake files stay byte-identical: no trace, no new fields', async () => {
  const file = join(dir, 'random.jsonl');
  const text = readFileSync(file, 'utf8');
  assert.ok(!text.includes('"trace"'));
  const keys = Object.keys(lines(file)[0]);
  assert.deepEqual(keys, ['id', 'task', 'policy', 'budget', 'revealBudget', 'turns', 'outcome']);
  assert.deepEqual(Object.keys(lines(file)[0].turns[0]), [
    't',
    'observation',
    'action',
    'reward',
    'logp',
    'info',
  ]);
});

test('a bad line is refused by `summary --in` with its line and field, and by the JSON Schema', async () => {
  const validate = await validator();
  const good = lines(join(dir, 'random.jsonl')).slice(0, 3) as Trajectory[];
  const cases: [string, (t: Record<string, unknown>) => void, RegExp][] = [
    ['missing budget', (t) => delete t.budget, /bad-0\.jsonl:2\.budget: /],
    [
      'reward a string',
      (t) => ((t.turns as Record<string, unknown>[])[0].reward = '0'),
      /bad-1\.jsonl:2\.turns\.0\.reward: /,
    ],
    [
      'unknown failure kind',
      (t) => ((t.outcome as Record<string, unknown>).failure = 'oops'),
      /bad-2\.jsonl:2\.outcome\.failure: /,
    ],
    [
      'trace with a float token',
      (t) => ((t.turns as Record<string, unknown>[])[0].trace = { tokens: [1.5] }),
      /bad-3\.jsonl:2\.turns\.0\.trace\.tokens\.0: /,
    ],
  ];
  // Valid JSON Schema, impossible for the env: refused by the reader (the schema cannot know the map).
  const spaces: [string, (t: Record<string, unknown>) => void, RegExp][] = [
    [
      'action 99 on FrozenLake',
      (t) => ((t.turns as Record<string, unknown>[])[0].action = 99),
      /:2\.turns\.0\.action: got 99; env frozenlake has actions 0\.\.3/,
    ],
    [
      'observation 1000 on 4x4',
      (t) => ((t.turns as Record<string, unknown>[])[0].observation = 1000),
      /:2\.turns\.0\.observation: got 1000; env frozenlake has observations 0\.\.15/,
    ],
  ];
  for (const [k, [what, spoil, message]] of cases.entries()) {
    const bad = structuredClone(good) as unknown as Record<string, unknown>[];
    spoil(bad[1]);
    assert.equal(validate(bad[1]), false, `${what}: the JSON Schema accepted it`);
    const file = join(dir, `bad-${k}.jsonl`);
    writeFileSync(file, `${bad.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const r = await firstSpawned(k, ['summary', '--in', file]);
    assert.equal(r.code, 2, `${what}: ${r.stderr}`);
    assert.match(r.stderr, message, what);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line`);
  }
  for (const [k, [what, spoil, message]] of spaces.entries()) {
    const bad = structuredClone(good) as unknown as Record<string, unknown>[];
    spoil(bad[1]);
    const file = join(dir, `space-${k}.jsonl`);
    writeFileSync(file, `${bad.map((t) => JSON.stringify(t)).join('\n')}\n`);
    for (const cmd of [
      ['summary', '--in', file],
      ['credit', '--in', file, '--method', 'grpo'],
    ]) {
      const r = await inProcess(cmd);
      assert.equal(r.code, 2, `${what} ${cmd[0]}: ${r.stderr}`);
      assert.match(r.stderr, message, `${what} ${cmd[0]}`);
    }
  }
  // An action the env refused is a legitimate record.
  const refused = structuredClone(good) as unknown as Record<string, unknown>[];
  const turn0 = (refused[1].turns as Record<string, unknown>[])[0];
  turn0.action = 99;
  turn0.info = { valid: false };
  const ok = join(dir, 'refused.jsonl');
  writeFileSync(ok, `${refused.map((t) => JSON.stringify(t)).join('\n')}\n`);
  assert.equal((await turnwise(['summary', '--in', ok])).code, 0);
});

test('`turnwise schema` lists its schemas and refuses an unknown name', async () => {
  const list = await turnwise(['schema', '--json']);
  assert.deepEqual(
    JSON.parse(list.stdout).map((s: { name: string }) => s.name),
    ['trajectory', 'train-config', 'study-config', 'study-summary', 'rubric'],
  );
  for (const name of ['train-config', 'study-config', 'study-summary', 'rubric']) {
    const r = await turnwise(['schema', name]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).type, 'object');
  }
  const bad = await turnwise(['schema', 'trajectories']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^turnwise: schema: got "trajectories"; expected one of: trajectory, /);
});
