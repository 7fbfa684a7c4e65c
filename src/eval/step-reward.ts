// The step reward of trajectories (docs/methods.md §5, "training curves"): the mean exact quality
// Q*_h(s,a) / V*_h(s) of the actions a policy itself chose, h = the turns left under the episode's own
// budget — 1 for an optimal action, lower for worse ones. Expert-prefix (forced) turns are not the
// policy's and are left out, and so are states with V*_h(s) = 0, where no action can still succeed.
import type { EnvView, Oracle, Task, Trajectory } from '../core/types.ts';

/**
 * Calls `fn(V*_h(s), Q*_h(s,a))` for every turn a policy itself chose (forced turns are not its own), h
 * the turns left under the episode's budget; an invalid action counts as Q* = 0. False when a task's env
 * has no oracle. `viewOf` gives the env (a view, never stepped) of a trajectory's task.
 */
function eachOwnTurn(
  trajectories: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
  fn: (v: number, q: number) => void,
): boolean {
  const oracles = new Map<Task, Oracle<unknown> | undefined>();
  for (const tr of trajectories) {
    let oracle = oracles.get(tr.task);
    if (!oracles.has(tr.task)) {
      oracle = viewOf(tr.task).oracle?.() as Oracle<unknown> | undefined;
      oracles.set(tr.task, oracle);
    }
    if (oracle === undefined) return false;
    for (const turn of tr.turns) {
      if (turn.forced === true) continue;
      const h = tr.budget - turn.t;
      const s = oracle.state(turn.observation);
      const a = turn.action;
      fn(oracle.v(h, s), typeof a === 'number' && a >= 0 && a < oracle.nA ? oracle.q(h, s)[a] : 0);
    }
  }
  return true;
}

/** The mean Q* ÷ V* of a policy's own actions over states with V* > 0; null when no turn qualifies or
 * the env has no oracle. */
export function stepReward(
  trajectories: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
): number | null {
  let sum = 0;
  let n = 0;
  const ok = eachOwnTurn(trajectories, viewOf, (v, q) => {
    if (!(v > 0)) return;
    sum += q / v;
    n++;
  });
  return ok && n > 0 ? sum / n : null;
}

/**
 * The mean regret V*_h(s) − Q*_h(s,a) of the actions a policy itself chose (same turns as stepReward,
 * states with V*_h(s) = 0 included: their regret is 0). Unlike the ratio Q* ÷ V*, which sits near 1 when
 * most actions are nearly as good as the best, the regret is not pinned to a ceiling: it halves or
 * doubles as the policy's steps get better or worse. null when no turn qualifies or there is no oracle.
 */
export function stepRegret(
  trajectories: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
): number | null {
  let sum = 0;
  let n = 0;
  const ok = eachOwnTurn(trajectories, viewOf, (v, q) => {
    sum += v - q;
    n++;
  });
  return ok && n > 0 ? sum / n : null;
}
