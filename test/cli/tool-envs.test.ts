// eval, compare, credit, credit fidelity, bench env and env oracle on the tool envs (sql, tools):
// the library calls with checks against brute force and invariants, the CLI for the contracts.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { compare } from '../../src/eval/compare.ts';
import { evaluate } from '../../src/eval/evaluate.ts';
import { passAtK } from '../../src/eval/passkt.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-tool-envs-'));

for (const env of ['sql', 'tools']) {
  test(`eval on ${env}: Pass@(K,T) from prefix and separate runs agree, and equal pass@k of the rollouts`, async () => {
    const tasks = makeTasks(envConfig(env, {}), 6, 11);
    const policy = makePolicy('oracle:eps=0.3', envs.spec(tasks[0]));
    const K = [1, 2, 4];
    const T = [3, 5, 8, 20];
    const common = { envs, tasks, samples: 6, K, T, policy, runSeed: 11, resamples: 50 };
    const prefix = await evaluate({ ...common, mode: 'prefix' });
    const separate = await evaluate({ ...common, mode: 'separate' });
    // A budget-blind policy plays the same episodes under every budget: the two modes count alike.
    assert.deepEqual(separate.perTask, prefix.perTask);
    assert.deepEqual(separate.passKT, prefix.passKT);
    // Brute force: the same rollout at the largest T, successes within each T per task, unbiased pass@k.
    const trs = (await rollout({
      tasks,
      samples: 6,
      budget: 20,
      runSeed: 11,
      policy,
      makeEnv: envs.make,
    })) as Trajectory[];
    for (const [j, t] of T.entries()) {
      for (const [i, k] of K.entries()) {
        let sum = 0;
        for (let task = 0; task < tasks.length; task++) {
          const mine = trs.slice(task * 6, task * 6 + 6);
          const c = mine.filter(
            (x) => x.outcome.firstSuccessTurn !== null && x.outcome.firstSuccessTurn <= t,
          ).length;
          sum += passAtK(6, c, k);
        }
        assert.ok(Math.abs(prefix.passKT[i][j] - sum / tasks.length) < 1e-12);
      }
    }
    // Not degenerate: the eps-oracle fails some episodes, and T=3 is too short for most gold paths.
    const last = prefix.passKT[0][T.length - 1];
    assert.ok(last > 0 && last < 1, `pass@1 at T=20 is ${last}`);
    assert.ok(prefix.passKT[0][0] < last);
  });
}

test('compare on sql and tools: the step-quality proxy at the same states, and oracle vs itself', async () => {
  for (const env of ['sql', 'tools']) {
    const tasks = makeTasks(envConfig(env, {}), 4, 5);
    const spec = envs.spec(tasks[0]);
    const common = {
      envs,
      tasks,
      samples: 4,
      K: [1, 2],
      T: [10, 20],
      runSeed: 5,
      resamples: 50,
      states: 24,
      actions: 6,
    };
    const r = await compare({ ...common, a: makePolicy('oracle', spec), b: makePolicy('random', spec) });
    assert.equal(r.stepQuality, null);
    assert.equal(r.recovery, null);
    const q = r.stepProxy!;
    assert.equal(q.field, 'quality');
    assert.ok(q.states > 0 && q.scored > 0);
    assert.ok(Math.abs(q.aBetter! + q.ties! + q.bBetter! - 1) < 1e-12);
    // The gold path's steps beat uniform menu calls.
    assert.ok(q.score! > 0.5, `${env}: score ${q.score}`);
    assert.ok(q.meanA! > q.meanB!);
    assert.ok(q.own.a! > q.own.b!);
    if (env === 'sql') assert.equal(q.own.a, 1); // the oracle executes and submits the gold query: IoU 1
    assert.equal(r.failures.a.successes, 16);
    const self = await compare({ ...common, a: makePolicy('oracle', spec), b: makePolicy('oracle', spec) });
    assert.ok(self.passKT.diff.every((row) => row.every((x) => x === 0)));
    // A deterministic policy against itself: every scored pair ties.
    assert.equal(self.stepProxy!.ties, 1);
  }
});

test('credit on sql and tools from the CLI; credit fidelity and env oracle refuse, saying why', async () => {
  for (const env of ['sql', 'tools']) {
    const file = join(dir, `${env}.jsonl`);
    const r = await turnwise([
      'rollout',
      '--env',
      env,
      '--policy',
      'oracle:eps=0.3',
      '--tasks',
      '4',
      '--samples',
      '4',
      '--out',
      file,
      '--json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const trs = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Trajectory);
    const c = await turnwise(['credit', '--in', file, '--method', 'grpo', '--json']);
    assert.equal(c.code, 0, c.stderr);
    const adv = (JSON.parse(c.stdout) as { advantages: number[][] }).advantages;
    // GRPO: every turn of a trajectory gets (R − mean_group) / (std_group + ε).
    for (let g = 0; g < 4; g++) {
      const R = trs.slice(g * 4, g * 4 + 4).map((t) => t.outcome.return);
      const mean = R.reduce((s, x) => s + x, 0) / 4;
      const std = Math.sqrt(R.reduce((s, x) => s + (x - mean) ** 2, 0) / 4);
      for (let i = 0; i < 4; i++) {
        const a = adv[g * 4 + i];
        assert.equal(a.length, trs[g * 4 + i].turns.length);
        for (const x of a) assert.ok(Math.abs(x - (R[i] - mean) / (std + 1e-6)) < 1e-9);
      }
    }
    const gae = await turnwise(['credit', '--in', file, '--method', 'gae']);
    assert.equal(gae.code, 2);
    assert.match(
      gae.stderr,
      /^turnwise: --values: got "exact"; needs an exact oracle \(trajectory r0-0-0\): .*--values zero/,
    );
  }
  const f = await turnwise(['credit', 'fidelity', '--env', 'sql', '--policy', 'oracle']);
  assert.equal(f.code, 2);
  assert.match(
    f.stderr,
    /credit fidelity needs an env with an exact oracle, and sql has none: the exact advantage/,
  );
  const o = await turnwise(['env', 'oracle', 'sql']);
  assert.deepEqual([o.code, o.stderr], [2, 'turnwise: env: got "sql"; this env has no exact oracle\n']);
});

test('bench env on tool envs: the asked number of steps, whole JSON figures', async () => {
  const r = await turnwise(['bench', 'env', 'sql', '--steps', '300', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const b = JSON.parse(r.stdout) as Record<string, number>;
  assert.equal(b.steps, 300);
  assert.ok(b.episodes >= 300 / 20 && b.episodes <= 300);
  assert.equal(b.tasks, Math.min(64, b.episodes));
  assert.ok(
    b.stepsPerSecond > 0 && Math.abs(b.stepsPerSecond - b.steps / b.seconds) < 1e-6 * b.stepsPerSecond,
  );
});
