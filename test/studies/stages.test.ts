// The budget study's stages on their own (setup.ts, measure/): each one, called with explicit inputs,
// gives exactly the section the whole pipeline put in the summary; the env factory argument is where
// every env of a stage comes from; the training-curve trend on hand-built curves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Task } from '../../src/core/types.ts';
import { envs, makeEnv } from '../../src/envs/index.ts';
import { EVAL_KEY } from '../../src/eval/seeds.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { parseStudyConfig } from '../../src/studies/budget/config.ts';
import { measureTrainingCurves, TREND_KEY } from '../../src/studies/budget/measure/curves.ts';
import { sampleEpisodes } from '../../src/studies/budget/measure/episodes.ts';
import { measureExactPass } from '../../src/studies/budget/measure/exact-pass.ts';
import { measureLikelihood } from '../../src/studies/budget/measure/likelihood.ts';
import { measurePass } from '../../src/studies/budget/measure/pass.ts';
import { measureRecovery } from '../../src/studies/budget/measure/recovery.ts';
import { measureReference } from '../../src/studies/budget/measure/reference.ts';
import { diagnosticStates } from '../../src/studies/budget/measure/states.ts';
import { measureStepQuality } from '../../src/studies/budget/measure/step-quality.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { actingViews, makeStudyTasks, trainBase } from '../../src/studies/budget/setup.ts';
import { STUDY_KEY } from '../../src/studies/budget/stats.ts';
import { type CurvePoint, grpoTrainer } from '../../src/studies/budget/trainer.ts';
import type { MakeEnv } from '../../src/studies/budget/world.ts';
import { TINY } from './fixtures.ts';

const noop = () => {};

test('each stage on its own gives the section the pipeline put in the summary (tiny, real GRPO)', async () => {
  const { summary: s, policies } = await runBudgetStudy(TINY, { trainer: grpoTrainer });
  const config = parseStudyConfig(TINY);
  const tasks = makeStudyTasks(config);
  assert.deepEqual(
    tasks.test.map((t) => t.seed),
    Array.from({ length: TINY.seeds.test.count }, (_, i) => TINY.seeds.test.start + i),
  );
  const expert = makePolicy(config.base.expert, tasks.spec);

  // The base again from scratch: the same figures and the very same weights.
  const base = await trainBase(envs, config, tasks, expert, noop);
  assert.deepEqual(base.summary, s.base);
  const weights = (p: typeof base.policy) => p.net.namedParameters().map(([, t]) => Array.from(t.data));
  assert.deepEqual(weights(base.policy), weights(policies.base));

  // The measurements from the trained networks the pipeline returned.
  assert.ok(policies.rl !== policies.base);
  const views = actingViews(policies.base, {
    rl: { policy: policies.rl, curves: [] },
    budgetmix: { policy: policies.budgetmix, curves: [] },
  });
  const episodes = await sampleEpisodes(envs, views, tasks.test, config, noop);
  assert.equal(episodes.pools.rl.length, TINY.seeds.test.count * TINY.eval.diagnosticSamples);
  assert.deepEqual(episodes.failures, s.failures);
  assert.deepEqual(measurePass(episodes, tasks.test.length, config), s.passKT);
  assert.deepEqual(measureExactPass(views, tasks.test, config, envs), s.exactPassKT);
  assert.deepEqual(measureReference(tasks.test, expert, tasks.spec, config, envs), s.reference);
  const states = await diagnosticStates(envs, episodes.pools, config);
  let parts = 0;
  assert.deepEqual(await measureStepQuality(envs, states, views, config, () => parts++), s.stepQuality);
  assert.equal(parts, 2);
  assert.deepEqual(await measureRecovery(states.errors.states, views, config, envs), s.recovery);
  assert.deepEqual(
    await measureLikelihood(envs, episodes.pools, views, tasks.test.length, tasks.spec, config),
    s.likelihood,
  );
  // The base and RL pools are each policy's own: swapping them changes the likelihood figures.
  const swapped = await measureLikelihood(
    envs,
    { base: episodes.pools.rl, rl: episodes.pools.base },
    views,
    tasks.test.length,
    tasks.spec,
    config,
  );
  assert.notDeepEqual(swapped.nllRlUnderBase, s.likelihood.nllRlUnderBase);

  // Every env the exact stages make comes from their `envs` argument: one per (policy, map), one per
  // (reference policy, map); recovery steps one env per continuation (each closed after it) for both
  // policies of each variant's comparison, one view per distinct task (closed together), and reads
  // one view per (policy, error state).
  const made: Task[] = [];
  let closed = 0;
  const counting: MakeEnv = {
    ...envs,
    make: (task) => {
      made.push(task);
      const env = makeEnv(task);
      env.close = () => {
        closed++;
      };
      return env;
    },
  };
  const maps = tasks.test.length;
  measureExactPass(views, tasks.test, config, counting);
  assert.equal(made.length, 3 * maps);
  measureReference(tasks.test, expert, tasks.spec, config, counting);
  assert.equal(made.length, 6 * maps);
  made.length = 0;
  closed = 0;
  const S = states.errors.states.length;
  const distinct = new Set(states.errors.states.map((st) => JSON.stringify(st.task))).size;
  await measureRecovery(states.errors.states, views, config, counting);
  const stepped = 2 * (2 * TINY.eval.continuations * S + distinct);
  // Views (never stepped): one per policy and error state for the exact values, and one per state for
  // RL and for the base at its pre-error state (the recovery difference in differences).
  assert.equal(made.length, stepped + 3 * S + 2 * S);
  assert.equal(closed, stepped);
});

test('measureTrainingCurves on hand-built curves: quarter windows, exact trends, missing points skipped', () => {
  const config = parseStudyConfig(TINY); // 8 iterations: windows of 2
  const points = (traj: number[], step: number[]): CurvePoint[] =>
    traj.map((t, iter) => ({
      iter,
      trajectoryReward: t,
      stepReward: step[iter],
      stepRegret: 1 - step[iter],
    }));
  const rl = points([0.25, 0.25, 0.5, 0.9, 0.1, 0.5, 0.75, 0.75], [1, Number.NaN, 1, 0, 0, 1, 0.5, 0.5]);
  const flat = points([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0, 0, 0, 0, 0]);
  const c = measureTrainingCurves(
    {
      rl: { curves: rl },
      budgetmix: { curves: flat },
    },
    config,
  );
  assert.equal(c.window, 2);
  assert.deepEqual(Object.keys(c.trend), ['rl', 'budgetmix']);
  // Constant windows: every resample gives the same difference, so the interval is that point.
  assert.deepEqual(c.trend.rl.trajectoryReward, { first: 0.25, last: 0.75, value: 0.5, ci95: [0.5, 0.5] });
  // The NaN point is skipped in its window (first = 1, not NaN) and stored as null in the curve.
  assert.deepEqual(c.trend.rl.stepReward, { first: 1, last: 0.5, value: -0.5, ci95: [-0.5, -0.5] });
  assert.deepEqual(c.stepReward.rl[1], { iter: 1, value: null });
  // The regret curve has its own trend (here 1 − step reward: first 0, last 0.5).
  assert.deepEqual(c.trend.rl.stepRegret, { first: 0, last: 0.5, value: 0.5, ci95: [0.5, 0.5] });
  assert.deepEqual(c.trend.budgetmix.trajectoryReward, { first: 0.5, last: 0.5, value: 0, ci95: [0, 0] });
  assert.deepEqual(
    c.trajectoryReward.rl.map((p) => p.value),
    [0.25, 0.25, 0.5, 0.9, 0.1, 0.5, 0.75, 0.75],
  );
  assert.equal(c.trajectoryReward.gigpo, undefined);
});

test('stream keys: each bootstrap of the study draws from its own named key, none of eval’s', () => {
  const keys = Object.values(STUDY_KEY);
  assert.equal(new Set(keys).size, keys.length, 'STUDY_KEY values are distinct');
  const evalKeys = new Set<number>(Object.values(EVAL_KEY));
  for (const k of keys) assert.ok(!evalKeys.has(k), `${k} is one of eval's keys`);
  const trend = Object.values(TREND_KEY).flatMap((byCurve) => Object.values(byCurve));
  assert.equal(new Set(trend).size, trend.length, 'TREND_KEY values are distinct');
});
