// What every estimator in credit/ shares: the advantage layout, the outcome reward R_i, group
// statistics (population std, stated once here) and discounted returns. docs/methods.md §2–3.
import type { Trajectory, Turn } from '../core/types.ts';

/** One row of per-turn advantages per trajectory, in the order of the input: (G, T_i). */
export type Advantages = number[][];

/** R_i: the outcome reward of a trajectory. */
export type OutcomeFn = (trajectory: Trajectory) => number;

/** A key that decides which turns are "the same state" (GiGPO anchor states). */
export type TurnKeyFn = (turn: Turn, trajectory: Trajectory) => string;

/** The default R_i: the trajectory's undiscounted return (FrozenLake: 1 on reaching G, else 0), so an
 * env that pays other rewards is taken at its word (docs/methods.md notation: "unless the env says otherwise"). */
export const outcomeReward: OutcomeFn = (t) => t.outcome.return;

/** ε added to a std before dividing (verl's default; TRL uses 1e-4). */
export const DEFAULT_EPS = 1e-6;

export function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return xs.length > 0 ? s / xs.length : 0;
}

/** Population std √(Σ(x−μ)²/n) — numpy's default, not torch's unbiased n−1 (docs/methods.md §2 asks us to say
 * which); two-pass for accuracy. */
export function populationStd(xs: ArrayLike<number>, mu = mean(xs)): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += (xs[i] - mu) * (xs[i] - mu);
  return xs.length > 0 ? Math.sqrt(s / xs.length) : 0;
}

/** True when every value is identical (a dead group: no contrast, no gradient). */
export function allEqual(xs: ArrayLike<number>): boolean {
  for (let i = 1; i < xs.length; i++) if (xs[i] !== xs[0]) return false;
  return true;
}

/**
 * Group normalisation: (x − μ)/(σ + ε) with `std`, x − μ without. A set with fewer than two members or
 * identical values gives exact zeros (x − μ alone can leave rounding dust such as 1e-17 there).
 */
export function normalize(xs: readonly number[], std: boolean, eps: number): number[] {
  if (xs.length < 2 || allEqual(xs)) return new Array(xs.length).fill(0);
  const mu = mean(xs);
  const scale = std ? populationStd(xs, mu) + eps : 1;
  return xs.map((x) => (x - mu) / scale);
}

/** G_t = Σ_{k≥t} γ^{k−t} r_k, computed backwards (G_t = r_t + γ G_{t+1}, G_T = 0). */
export function discountedReturns(rewards: readonly number[], gamma: number): number[] {
  const out = new Array<number>(rewards.length);
  let g = 0;
  for (let t = rewards.length - 1; t >= 0; t--) {
    g = rewards[t] + gamma * g;
    out[t] = g;
  }
  return out;
}

export function rewardsOf(trajectory: Trajectory): number[] {
  return trajectory.turns.map((turn) => turn.reward);
}

/** Each trajectory's single value repeated over its turns (outcome-level methods). */
export function perTrajectory(group: readonly Trajectory[], values: readonly number[]): Advantages {
  return group.map((t, i) => new Array<number>(t.turns.length).fill(values[i]));
}

/**
 * Per-turn-index normalisation within a group: at turn index t the cohort is every trajectory that has a
 * turn t; each value is normalised over its cohort (a cohort of one, or of equal values, gives 0).
 * Used by turn-level rewards and reverse-turn credit.
 */
export function normalizePerTurnIndex(values: Advantages, std: boolean, eps: number): Advantages {
  const out: Advantages = values.map((row) => new Array<number>(row.length).fill(0));
  let maxT = 0;
  for (const row of values) maxT = Math.max(maxT, row.length);
  const cohort: number[] = [];
  const members: number[] = [];
  for (let t = 0; t < maxT; t++) {
    cohort.length = 0;
    members.length = 0;
    for (let i = 0; i < values.length; i++) {
      if (t < values[i].length) {
        cohort.push(values[i][t]);
        members.push(i);
      }
    }
    const z = normalize(cohort, std, eps);
    for (let k = 0; k < members.length; k++) out[members[k]][t] = z[k];
  }
  return out;
}
