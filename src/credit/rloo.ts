// RLOO: each sample's baseline is the mean of the other G−1 samples (unbiased, unlike GRPO's).
//   A_i = R_i − (1/(G−1)) Σ_{j≠i} R_j = G/(G−1)·(R_i − mean(R))
// Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE-Style Optimization", §3.2 (after Kool
// et al. 2019, "Buy 4 REINFORCE Samples, Get a Baseline for Free!"); docs/methods.md §2.
// A group of one has no other sample to compare with and gets 0; a dead group gets exactly 0.
import type { Trajectory } from '../core/types.ts';
import { type Advantages, allEqual, type OutcomeFn, outcomeReward, perTrajectory } from './common.ts';

export interface RlooOptions {
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export function rloo(group: readonly Trajectory[], options: RlooOptions = {}): Advantages {
  const R = group.map((t) => (options.outcome ?? outcomeReward)(t));
  const G = R.length;
  if (G < 2 || allEqual(R)) return perTrajectory(group, new Array(G).fill(0));
  let sum = 0;
  for (const r of R) sum += r;
  return perTrajectory(
    group,
    R.map((r) => r - (sum - r) / (G - 1)),
  );
}
