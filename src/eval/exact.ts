// Exact success probabilities of a policy where the env has an oracle: V^π_T(start) by dynamic
// programming over (state, turns left), for policies whose action distribution depends only on the
// observation and, when revealed, the turns left (random, oracle, tabular, neural over the features).
import { hasProbsBatch, isDiscrete } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { EnvFactory, EnvView, Policy, PolicyValues, Task, TurnContext } from '../core/types.ts';
import { closeEnv } from '../rollout/lockstep.ts';

/** V^π and Q^π for every h ≤ budget; undefined when the env has no oracle or the policy no `probs`. */
export function exactPolicyValues<O>(
  env: EnvView<O>,
  policy: Policy<O, unknown>,
  budget: number,
  revealBudget = policy.budgetAware,
): PolicyValues | undefined {
  const oracle = env.oracle?.();
  if (oracle === undefined || !isDiscrete(policy)) return undefined;
  const probs = policy.probs.bind(policy);
  const rng = Rng.derive(0);
  if (hasProbsBatch(policy)) {
    // One batched call for every (turns left, state) the recursion will ask about; without turnsLeft
    // the policy sees the state only, so one row per state serves every h.
    const { nS } = oracle;
    const rows = revealBudget ? budget : 1;
    const ctxs: TurnContext<O>[] = [];
    for (let h = 1; h <= rows; h++) {
      for (let s = 0; s < nS; s++) {
        const turnsLeft = revealBudget ? h : undefined;
        ctxs.push({ observation: oracle.observation(s), history: [], turn: budget - h, turnsLeft, rng, env });
      }
    }
    const table = policy.probsBatch(ctxs);
    return oracle.evaluate((h, s) => table[(revealBudget ? h - 1 : 0) * nS + s], budget);
  }
  return oracle.evaluate((h, s) => {
    const ctx: TurnContext<O> = {
      observation: oracle.observation(s),
      history: [],
      turn: budget - h,
      turnsLeft: revealBudget ? h : undefined,
      rng,
      env,
    };
    return probs(ctx);
  }, budget);
}

/** P(success within `budget` turns) from the start distribution, for reward-1-on-success envs. */
export function exactSuccess<O>(
  env: EnvView<O>,
  policy: Policy<O, unknown>,
  budget: number,
  revealBudget = policy.budgetAware,
): number | undefined {
  const values = exactPolicyValues(env, policy, budget, revealBudget);
  const oracle = env.oracle?.();
  if (values === undefined || oracle === undefined) return undefined;
  let v = 0;
  for (const s of oracle.starts) v += values.V[budget * values.nS + s];
  return v / oracle.starts.length;
}

/**
 * Mean over tasks of the exact success probability within the budget, computed once per distinct
 * oracle (tasks on one map share it); null without an oracle, without `probs`, or beyond `maxMaps`
 * distinct maps. The envs come from `envs` and are closed before it returns.
 */
export async function meanExactSuccess(
  envs: EnvFactory,
  tasks: Iterable<Task>,
  policy: Policy<unknown, unknown>,
  budget: number,
  reveal: boolean = policy.budgetAware,
  maxMaps = Number.POSITIVE_INFINITY,
): Promise<number | null> {
  // One env at a time, closed before the next: a run over millions of tasks on one map must not hold
  // millions of envs (the oracle, shared by the map's tasks, is the cache).
  const byOracle = new Map<unknown, number>();
  let sum = 0;
  let n = 0;
  for (const task of tasks) {
    n++;
    const env = await envs.make(task);
    try {
      const key = env.oracle?.();
      if (key === undefined) return null;
      let v = byOracle.get(key);
      if (v === undefined) {
        if (byOracle.size >= maxMaps) return null;
        v = exactSuccess(env, policy, budget, reveal);
        if (v === undefined) return null;
        byOracle.set(key, v);
      }
      sum += v;
    } finally {
      await closeEnv(env);
    }
  }
  return sum / n;
}

/** Mean over tasks of V*_budget from the start (the best any policy can do); null without an oracle. */
export async function meanOptimalSuccess(
  envs: EnvFactory,
  tasks: readonly Task[],
  budget: number,
): Promise<number | null> {
  let sum = 0;
  for (const task of tasks) {
    const env = await envs.make(task);
    try {
      const oracle = env.oracle?.();
      if (oracle === undefined) return null;
      let v = 0;
      for (const s of oracle.starts) v += oracle.v(budget, s);
      sum += v / oracle.starts.length;
    } finally {
      await closeEnv(env);
    }
  }
  return sum / tasks.length;
}
