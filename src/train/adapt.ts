// Test-time adaptation (`turnwise adapt`, issue 29 item 2, CoAdapt's spirit; docs/methods-measured.md): a
// trained policy meets tasks of a distribution it was not trained on and adapts from its own rollouts and
// the env's rewards alone — no demonstration, no oracle in the loop. The adaptation is the policy-gradient
// loop itself (train/loop.ts) started from a copy of the policy, on the new distribution's tasks; the
// policy is measured on held-out tasks of that distribution before any episode and after every
// `at` episodes: success against the episodes spent. The measure is exact where the env has an oracle
// (the policy's own success within the budget by DP on each held-out task, eval/exact.ts), else the
// success rate of one sampled episode per held-out task. The oracle only measures; it never acts.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { EnvFactory, Policy, Task } from '../core/types.ts';
import { meanExactSuccess, meanOptimalSuccess } from '../eval/exact.ts';
import { rollout } from '../rollout/batch.ts';
import type { TrainConfig } from './config.ts';
import { trainPolicyGradient } from './loop.ts';
import { trainable } from './setup.ts';

type AnyPolicy = Policy<unknown, unknown>;

/** The stream of the sampled measure (envs without an oracle). */
const ADAPT_EVAL_STREAM = 0xada;

export interface AdaptOptions {
  /** The adaptation run: the new distribution (env), groups × groupSize episodes per iteration, iters,
   * budget, optimiser, seed. Its final evaluation is skipped (eval.episodes is the caller's). */
  config: TrainConfig;
  envs: EnvFactory;
  /** The trained policy; adapted on a copy, never in place. */
  policy: AnyPolicy;
  /** Episode counts at which the policy is measured (each a multiple of groups × groupSize, ≤ the run's). */
  at: readonly number[];
  /** Held-out tasks of the new distribution. */
  evalTasks: readonly Task[];
  evalBudget: number;
  /** A run directory for the adaptation (the adapted policy, metrics, checkpoints; `turnwise train`'s). */
  out?: string;
  onIter?: (iter: number, iters: number, metrics: Record<string, number>) => void;
}

export interface AdaptPoint {
  /** Episodes of the new distribution spent so far (0: before adaptation). */
  episodes: number;
  /** Their env steps. */
  steps: number;
  /** Held-out success (exact, or sampled: see AdaptResult.measure). */
  success: number;
}

export interface AdaptResult {
  measure: 'exact' | 'sampled';
  points: AdaptPoint[];
  /** The best success any policy has within the budget on the held-out tasks (null without an oracle). */
  optimal: number | null;
  policy: AnyPolicy;
  seconds: number;
}

/** The held-out success of a policy: exact where every task has an oracle, else one episode per task. */
export async function heldOutSuccess(
  envs: EnvFactory,
  tasks: readonly Task[],
  policy: AnyPolicy,
  budget: number,
  seed: number,
): Promise<{ success: number; measure: 'exact' | 'sampled' }> {
  const exact = await meanExactSuccess(envs, tasks, policy, budget, policy.budgetAware);
  if (exact !== null) return { success: exact, measure: 'exact' };
  const ts = await rollout({
    tasks,
    samples: 1,
    budget,
    runSeed: Rng.derive(seed, ADAPT_EVAL_STREAM).uint32(),
    policy,
    makeEnv: envs.make,
    idPrefix: 'adapt-eval-',
  });
  return { success: ts.filter((t) => t.outcome.success).length / ts.length, measure: 'sampled' };
}

export async function adapt(o: AdaptOptions): Promise<AdaptResult> {
  const t0 = performance.now();
  const { config } = o;
  const perIter = config.groups * config.groupSize;
  for (const n of o.at)
    if (!(Number.isInteger(n) && n > 0 && n % perIter === 0 && n <= config.iters * perIter))
      throw new InputError(
        'at',
        n,
        `expected a multiple of groups × groupSize = ${perIter}, at most the ${config.iters * perIter} episodes of the run`,
      );
  const base = trainable(o.policy);
  if (base === undefined)
    throw new InputError(
      '--policy',
      o.policy.id,
      'cannot be adapted: a tabular, MLP or transformer policy has parameters to move',
    );
  const learner = base.clone();
  const copies: { episodes: number; steps: number; policy: AnyPolicy }[] = [];
  let steps = 0;
  const result = await trainPolicyGradient({
    config,
    envs: o.envs,
    learner,
    out: o.out,
    onIter: (iter, iters, m) => {
      steps += m['rollout/turns'] * m['rollout/episodes'];
      const episodes = (iter + 1) * perIter;
      if (o.at.includes(episodes)) copies.push({ episodes, steps, policy: learner.clone().policy });
      o.onIter?.(iter, iters, m);
    },
  });
  const points: AdaptPoint[] = [];
  let measure: 'exact' | 'sampled' = 'exact';
  for (const c of [{ episodes: 0, steps: 0, policy: o.policy }, ...copies]) {
    const m = await heldOutSuccess(o.envs, o.evalTasks, c.policy, o.evalBudget, config.seed);
    measure = m.measure;
    points.push({ episodes: c.episodes, steps: c.steps, success: m.success });
  }
  return {
    measure,
    points,
    optimal: await meanOptimalSuccess(o.envs, o.evalTasks, o.evalBudget),
    policy: result.policy,
    seconds: (performance.now() - t0) / 1000,
  };
}
