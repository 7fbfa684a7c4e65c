// The language study's measurements against brute force and theory: sampled Pass@(K,T) per task is the
// unbiased estimator (the average over every K-subset of the n samples), the paired differences of a
// policy with itself are exactly 0, the training-curve trend reads the first and last windows; recovery's
// continuations in lockstep are those played one at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isBatched } from '../../../src/core/policy.ts';
import type { Policy, Task, TurnContext } from '../../../src/core/types.ts';
import { envs } from '../../../src/envs/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import type { Sizes } from '../../../src/studies/language/design.ts';
import { measureCurves, measurePass, measureSteps } from '../../../src/studies/language/measure.ts';

/** Pass@K of one task from its n samples' first-success turns, by enumerating every K-subset. */
function bruteForce(first: number[], K: number, T: number): number {
  const n = first.length;
  let hit = 0;
  let all = 0;
  const pick = (start: number, left: number, any: boolean): void => {
    if (left === 0) {
      all++;
      if (any) hit++;
      return;
    }
    for (let i = start; i <= n - left; i++) pick(i + 1, left - 1, any || (first[i] > 0 && first[i] <= T));
  };
  pick(0, K, false);
  return hit / all;
}

const tasks: Task[] = Array.from({ length: 6 }, (_, i) => ({
  env: 'frozenlake',
  params: { random: true, size: 4, p: 0.8, slippery: true },
  seed: 1_000_000 + i,
}));

test('sampled Pass@(K,T) equals the average over every K-subset of the samples; a policy minus itself is 0', async () => {
  const spec = envs.spec(tasks[0]);
  const oracle = makePolicy('oracle:eps=0.3,horizon=30', spec) as Policy<unknown, unknown>;
  const random = makePolicy('random', spec) as Policy<unknown, unknown>;
  const K = [1, 2, 4];
  const T = [5, 10, 30];
  const { pass, runs } = await measurePass(
    envs,
    tasks,
    { base: random, rl: oracle, budgetmix: oracle, baseTau: random },
    { K, T, samples: 4, seed: 3, resamples: 300 },
    () => {},
  );
  // First-success turns of the kept RL run (prefix mode: one run at T_max per sample).
  for (let k = 0; k < K.length; k++) {
    for (let j = 0; j < T.length; j++) {
      let want = 0;
      for (let i = 0; i < tasks.length; i++) {
        const first = runs.rl.atTmax
          .slice(i * 4, (i + 1) * 4)
          .map((r) => r.trajectory.outcome.firstSuccessTurn ?? 0);
        want += bruteForce(first, K[k], T[j]);
      }
      assert.ok(Math.abs(pass.of.rl[k][j] - want / tasks.length) < 1e-12, `K=${K[k]} T=${T[j]}`);
    }
  }
  // BudgetMix is the same policy as RL here, with the same episode seeds: every difference is exactly 0.
  for (const row of pass.diff.mixRl)
    for (const c of row) {
      assert.equal(c.value, 0);
      assert.deepEqual(c.ci95, [0, 0]);
      assert.equal(c.pNonNeg, 1); // every resampled mean is ≥ 0: (1 + R) / (R + 1)
    }
  // The oracle beats random at T=30: the paired interval lies above 0 and the one-sided p is small.
  const lead = pass.diff.rlBase[0][2];
  assert.ok((lead.ci95[0] ?? -1) > 0, JSON.stringify(lead));
  assert.ok((lead.pNonNeg ?? 1) > 0.99, 'p of "mean < 0" is high when every resample is ≥ 0');
});

test('training curves: last window minus first, the step signal found among the metrics', () => {
  const metrics = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8].map((s, i) => ({
    'rollout/success': s,
    'rollout/step_proxy': 1 - i * 0.05,
    'rollout/step_quality': Number.NaN,
  }));
  const c = measureCurves(metrics, 200, 0);
  assert.equal(c.window, 2);
  assert.equal(c.signal, 'rollout/step_proxy');
  assert.ok(Math.abs((c.reward.first ?? 0) - 0.15) < 1e-12);
  assert.ok(Math.abs((c.reward.last ?? 0) - 0.75) < 1e-12);
  assert.ok(Math.abs((c.reward.value ?? 0) - 0.6) < 1e-12);
  assert.ok(Math.abs((c.step.value ?? 0) - -0.3) < 1e-12);
  assert.ok((c.step.ci95[1] ?? 0) < 0);
  assert.equal(measureCurves([{ 'rollout/success': 0 }], 10, 0).step.value, null);
});

test('recovery: continuations played in lockstep by a batched policy are those played one at a time', async () => {
  const spec = envs.spec(tasks[0]);
  const oracle = makePolicy('oracle:eps=0.3,horizon=30', spec) as Policy<unknown, unknown>;
  // The same policy, batched: actBatch answers each context as act() does (one draw from its stream).
  const batched = Object.assign(Object.create(oracle) as Policy<unknown, unknown>, {
    actBatch: (ctxs: readonly TurnContext<unknown>[]) => ctxs.map((c) => oracle.act(c)),
  });
  assert.ok(isBatched(batched) && !isBatched(oracle));
  const { runs } = await measurePass(
    envs,
    tasks,
    { base: oracle, rl: oracle, budgetmix: oracle, baseTau: oracle },
    { K: [1], T: [30], samples: 2, seed: 5, resamples: 20 },
    () => {},
  );
  const pools = { rl: runs.rl.atTmax, base: runs.base.atTmax };
  const sizes = { states: 8, actions: 2, continuations: 3, resamples: 50 } as Sizes;
  const one = await measureSteps(envs, pools, { rl: oracle, base: oracle }, sizes, 5, () => {});
  const lock = await measureSteps(envs, pools, { rl: batched, base: batched }, sizes, 5, () => {});
  assert.ok(one.recovery !== null && one.recovery.states > 0);
  assert.deepEqual(lock.recovery, one.recovery);
  // Something was recovered from (the comparison is not of zeros).
  assert.ok((one.recovery.rl.preError.value ?? 0) > 0, JSON.stringify(one.recovery));
});
