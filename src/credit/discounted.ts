// Discounted return per turn, from the per-turn rewards (no baseline, no bootstrap).
//   A_{i,t} = G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k}   (Sutton & Barto 2018, §3.3 eq. 3.8; docs/methods.md §3)
// With reward only at the end this is γ^{T−1−t}·R_i: later turns of a success get more credit.
import type { Trajectory } from '../core/types.ts';
import { type Advantages, discountedReturns, rewardsOf } from './common.ts';

export interface DiscountedOptions {
  /** Discount γ ∈ [0, 1] (default 0.99, the usual PPO setting). */
  gamma?: number;
}

export const DISCOUNTED_DEFAULTS = { gamma: 0.99 } as const;

export function discounted(group: readonly Trajectory[], options: DiscountedOptions = {}): Advantages {
  const gamma = options.gamma ?? DISCOUNTED_DEFAULTS.gamma;
  return group.map((t) => discountedReturns(rewardsOf(t), gamma));
}
