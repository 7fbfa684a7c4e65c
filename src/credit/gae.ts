// Generalized advantage estimation over turns (one turn = one step), CleanRL's loop and names.
//   δ_t = r_t + γ·V(s_{t+1})·nextnonterminal − V(s_t),   A_t = Σ_l (γλ)^l δ_{t+l}
// Schulman et al. 2016, "High-Dimensional Continuous Control Using GAE", §3 eq. 16; docs/methods.md §3.
// After the last turn: V = 0 when the episode terminated (and when it ended in an error: the state
// after a fault has no value to speak of); V(s_T) is bootstrapped when the budget truncated it —
// truncation is a limit of the rollout, not the end of the task (Pardo et al. 2018, "Time Limits in RL").
import type { Trajectory } from '../core/types.ts';
import type { Advantages } from './common.ts';

/**
 * V(s_t) of turn t of a trajectory; t = T (the number of turns) asks for the state after the last turn,
 * and is only asked when the trajectory was truncated. Values that depend on the turns left (finite
 * horizon, like the exact V^π_{T−t}) may read `trajectory.budget − t`.
 */
export type ValueFn = (trajectory: Trajectory, t: number) => number;

export interface GaeOptions {
  /** Per-turn values; there is no default on purpose — a silent V = 0 turns GAE into a λ-return. */
  values: ValueFn;
  /** Discount γ ∈ [0, 1] (default 0.99, CleanRL). */
  gamma?: number;
  /** λ ∈ [0, 1] (default 0.95, CleanRL): 0 is the one-step TD error, 1 the Monte-Carlo return − V(s_t). */
  lambda?: number;
}

export const GAE_DEFAULTS = { gamma: 0.99, lambda: 0.95 } as const;

export function gae(group: readonly Trajectory[], options: GaeOptions): Advantages {
  const gamma = options.gamma ?? GAE_DEFAULTS.gamma;
  const lambda = options.lambda ?? GAE_DEFAULTS.lambda;
  const V = options.values;
  return group.map((traj) => {
    const T = traj.turns.length;
    const advantages = new Array<number>(T);
    // The value after the last turn: bootstrap on truncation only.
    let nextvalues = T > 0 && traj.outcome.end === 'truncated' ? V(traj, T) : 0;
    let lastgaelam = 0;
    for (let t = T - 1; t >= 0; t--) {
      const values = V(traj, t);
      const delta = traj.turns[t].reward + gamma * nextvalues - values;
      lastgaelam = delta + gamma * lambda * lastgaelam;
      advantages[t] = lastgaelam;
      nextvalues = values;
    }
    return advantages;
  });
}

/** A ValueFn from arrays laid out like the batch: values[i][t] for t = 0..T_i (the last entry, V(s_T),
 * is read on truncation only). Trajectories are matched by identity, so any grouping of the batch works. */
export function valuesFromArrays(
  batch: readonly Trajectory[],
  values: readonly (readonly number[])[],
): ValueFn {
  if (values.length !== batch.length)
    throw new RangeError(`values has ${values.length} rows for ${batch.length} trajectories`);
  const rows = new Map<Trajectory, readonly number[]>();
  batch.forEach((t, i) => {
    if (values[i].length < t.turns.length + (t.outcome.end === 'truncated' ? 1 : 0)) {
      throw new RangeError(`values[${i}] has ${values[i].length} entries for ${t.turns.length} turns`);
    }
    rows.set(t, values[i]);
  });
  return (traj, t) => {
    const row = rows.get(traj);
    if (row === undefined) throw new RangeError(`no values for trajectory ${traj.id}`);
    return row[t];
  };
}
