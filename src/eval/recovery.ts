// Recovery from error states (docs/methods.md §5): from each error state (states.ts: a bad action forced at
// the previous turn), each policy continues under the remaining budget; the figure is its
// continuation success rate. Continuation k of state e uses the same env seed for both policies
// (common random numbers), and the interval of the difference resamples the same states for both
// (bootstrap over states, like the bootstrap over tasks of Pass@(K,T)). Where the policy exposes
// `probs`, the exact continuation value V^π_h(s) at the same states is reported beside it.
import { isDiscrete } from '../core/policy.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type { EnvFactory, Oracle, Policy, PolicyValues, Trajectory } from '../core/types.ts';
import { EnvCache } from '../rollout/env-cache.ts';
import { isPromise, runEpisode } from '../rollout/episode.ts';
import { closeEnv } from '../rollout/lockstep.ts';
import { bootstrapMeans, DEFAULT_RESAMPLES, type Interval } from './bootstrap.ts';
import { exactPolicyValues } from './exact.ts';
import { EVAL_KEY } from './seeds.ts';
import { type State, turnsLeft } from './states.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface Continuation {
  /** Fraction of continuations that succeeded, averaged over error states (null without states). */
  success: number | null;
  ci95: Interval | null;
  /** Mean over the same states of the exact V^π_h(s); null when it cannot be computed. */
  exact: number | null;
}

export interface Recovery {
  a: Continuation;
  b: Continuation;
  /** success(a) − success(b), paired. */
  diff: number | null;
  diffCi95: Interval | null;
  /** Error states continued from, and continuations per state and policy. */
  states: number;
  continuations: number;
}

export interface RecoveryOptions {
  /** Continuations per error state and policy (default 8). */
  continuations?: number;
  seed: number;
  resamples?: number;
}

export const DEFAULT_CONTINUATIONS = 8;

export async function recovery(
  envs: EnvFactory,
  states: readonly State[],
  a: AnyPolicy,
  b: AnyPolicy,
  options: RecoveryOptions,
): Promise<Recovery> {
  const R = options.continuations ?? DEFAULT_CONTINUATIONS;
  const policies = [a, b];
  const rates = [new Float64Array(states.length), new Float64Array(states.length)];
  const exact = [0, 0];
  const exactOk = [isDiscrete(a), isDiscrete(b)];
  // V^π per map (oracle) and policy, read at every error state of that map; Q^π is not kept (it is
  // nA times the size, and a run's error states span hundreds of maps).
  type Values = Pick<PolicyValues, 'V' | 'nS' | 'horizon'>;
  const values = [new Map<unknown, Values>(), new Map<unknown, Values>()];
  // Views for exact values (never stepped); each continuation steps an env of its own, closed after it.
  const views = new EnvCache(envs.make);
  try {
    for (let e = 0; e < states.length; e++) {
      const state = states[e];
      for (let p = 0; p < 2; p++) {
        const policy = policies[p];
        for (let k = 0; k < R; k++) {
          const env = await envs.make(state.task);
          let tr: Trajectory;
          try {
            const run = runEpisode(env, policy, {
              id: `recovery-${e}-${k}`,
              task: state.task,
              budget: state.budget,
              revealBudget: policy.budgetAware,
              envSeed: Rng.derive(options.seed, STREAM.eval, EVAL_KEY.continuations, e, k, 0).uint32(),
              rng: Rng.derive(options.seed, STREAM.eval, EVAL_KEY.continuations, e, k, 1),
              from: { snapshot: state.snapshot, observation: state.observation, history: state.history },
            });
            tr = isPromise(run) ? await run : run;
          } finally {
            await closeEnv(env);
          }
          if (tr.outcome.success) rates[p][e] += 1 / R;
        }
        if (exactOk[p]) {
          const env = await views.get(state.task);
          const oracle = env.oracle?.() as Oracle<unknown> | undefined;
          let v = oracle === undefined ? undefined : values[p].get(oracle);
          if (oracle !== undefined && (v === undefined || v.horizon < state.budget)) {
            const all = exactPolicyValues(env, policy, state.budget, policy.budgetAware);
            v = all && { V: all.V, nS: all.nS, horizon: all.horizon };
            if (v !== undefined) values[p].set(oracle, v);
          }
          if (oracle === undefined || v === undefined) exactOk[p] = false;
          else exact[p] += v.V[turnsLeft(state) * v.nS + oracle.state(state.observation)];
        }
      }
    }
  } finally {
    await views.close();
  }
  const n = states.length;
  if (n === 0) {
    const none: Continuation = { success: null, ci95: null, exact: null };
    return { a: none, b: none, diff: null, diffCi95: null, states: 0, continuations: R };
  }
  const boot = bootstrapMeans(rates, {
    resamples: options.resamples ?? DEFAULT_RESAMPLES,
    seed: options.seed,
  });
  const side = (p: number): Continuation => ({
    success: boot.mean[p],
    ci95: boot.ci[p],
    exact: exactOk[p] ? exact[p] / n : null,
  });
  return {
    a: side(0),
    b: side(1),
    diff: boot.diff ?? null,
    diffCi95: boot.diffCi ?? null,
    states: n,
    continuations: R,
  };
}
