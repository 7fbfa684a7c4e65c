// Outcome credit: every turn of trajectory i gets its outcome reward.
//   A_{i,t} = R_i   (REINFORCE with the Monte-Carlo return and γ = 1: Williams 1992; docs/methods.md §1)
// The baseline every other method improves on: a wrong turn 3 and a right turn 47 get the same credit.
import type { Trajectory } from '../core/types.ts';
import { type Advantages, type OutcomeFn, outcomeReward, perTrajectory } from './common.ts';

export interface OutcomeOptions {
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export function outcome(group: readonly Trajectory[], options: OutcomeOptions = {}): Advantages {
  const R = options.outcome ?? outcomeReward;
  return perTrajectory(
    group,
    group.map((t) => R(t)),
  );
}
