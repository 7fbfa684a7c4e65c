// eval --in: Pass@(K,T) of a recorded trajectory file equals `evaluate` (prefix mode) run in-process on
// the same policy, tasks and seeds; revealed budgets refuse prefix mode; separate mode reads one run per T.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { passFromFile } from '../../src/cli/commands/eval.ts';
import { InputError } from '../../src/core/errors.ts';
import {
  envConfig,
  envs,
  evaluate,
  makePolicy,
  makeTasks,
  rollout,
  type Trajectory,
} from '../../src/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-eval-in-'));
const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const tasks = makeTasks(config, 5, 3);
const spec = envs.make({ ...config, seed: 0 }).spec;
const write = (name: string, ts: unknown[]) => {
  const path = join(dir, name);
  writeFileSync(path, ts.map((t) => `${JSON.stringify(t)}\n`).join(''));
  return path;
};

test('prefix mode from a file equals evaluate() on the same runs, intervals included', async () => {
  const policy = makePolicy('oracle:eps=0.3,horizon=100', spec);
  const K = [1, 2, 4];
  const T = [5, 10, 30];
  const ts = await rollout({
    tasks,
    samples: 6,
    budget: 30,
    revealBudget: false,
    runSeed: 7,
    policy,
    makeEnv: envs.make,
  });
  const fromFile = passFromFile(write('prefix.jsonl', ts), K, T, undefined, 500, 7);
  const direct = await evaluate({
    envs,
    tasks,
    samples: 6,
    K,
    T,
    policy,
    mode: 'prefix',
    runSeed: 7,
    resamples: 500,
  });
  assert.equal(fromFile.mode, 'prefix');
  assert.deepEqual(fromFile.passKT, direct.passKT);
  assert.deepEqual(fromFile.ci95, direct.ci95);
  assert.deepEqual(fromFile.perTask, direct.perTask);
  assert.equal(fromFile.failures.episodes, 30);
  assert.ok(fromFile.passKT[2][2] > fromFile.passKT[0][0], 'not a constant table');
});

test('revealed budgets: prefix refused with a message; separate mode reads one run per T', async () => {
  const policy = makePolicy('oracle:eps=0.2', spec);
  const runs: Trajectory[] = [];
  for (const T of [8, 16])
    runs.push(
      ...(await rollout({
        tasks,
        samples: 4,
        budget: T,
        revealBudget: true,
        runSeed: 2,
        policy,
        makeEnv: envs.make,
      })),
    );
  const path = write('separate.jsonl', runs);
  assert.throws(
    () => passFromFile(path, [1], [8, 16], 'prefix', 100, 0),
    (e: unknown) => e instanceof InputError && /budget revealed/.test(e.message),
  );
  const r = passFromFile(path, [1, 4], [8, 16], undefined, 100, 0);
  assert.equal(r.mode, 'separate');
  // pass@1 at T is the success rate of the runs at budget T.
  for (const [j, T] of [8, 16].entries()) {
    const atT = runs.filter((t) => t.budget === T);
    assert.equal(r.passKT[0][j], atT.filter((t) => t.outcome.success).length / atT.length);
  }
  assert.throws(() => passFromFile(path, [1], [8, 12], undefined, 100, 0), InputError);
});
