// Dr. GRPO: GRPO without the std division (and, in the loss, without the length normalisation).
//   A_i = R_i − mean(R)
// Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective", §3.1; docs/methods.md §2.
// The other half of the fix — summing the loss over turns and dividing by a constant, not by each
// trajectory's length — belongs to the loss aggregation in train/, not to credit.
import type { Trajectory } from '../core/types.ts';
import { type Advantages, normalize, type OutcomeFn, outcomeReward, perTrajectory } from './common.ts';

export interface DrGrpoOptions {
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export function drgrpo(group: readonly Trajectory[], options: DrGrpoOptions = {}): Advantages {
  const R = options.outcome ?? outcomeReward;
  return perTrajectory(
    group,
    normalize(
      group.map((t) => R(t)),
      false,
      0,
    ),
  );
}
