// Reverse-turn credit: walk each trajectory backwards so that turn t is tied to what followed it, then
// compare turns at the same index across the group:
//   G_{i,t} = r_{i,t} + γ·G_{i,t+1} (G_{i,T} = 0),   A_{i,t} = (G_{i,t} − mean_t G)/(std_t G + ε)
// RTPO spirit (reverse-turn policy optimisation; docs/methods.md §3). The cohort at turn index t is every
// trajectory of the group still running at t, so a turn is baselined by turns taken as late as itself;
// with γ = 1 and an outcome-only reward this compares the outcomes of the trajectories alive at t.
import type { Trajectory } from '../core/types.ts';
import {
  type Advantages,
  DEFAULT_EPS,
  discountedReturns,
  normalizePerTurnIndex,
  rewardsOf,
} from './common.ts';

export interface ReverseTurnOptions {
  /** γ of the backward walk (default 0.95, as GiGPO's step returns, so the two differ only in how they
   * group turns: by turn index here, by state there). */
  gamma?: number;
  /** Divide by the per-index std (+ε) (default true). */
  std?: boolean;
  eps?: number;
}

export const REVERSE_TURN_DEFAULTS = { gamma: 0.95, std: true, eps: DEFAULT_EPS } as const;

export function reverseTurn(group: readonly Trajectory[], options: ReverseTurnOptions = {}): Advantages {
  const gamma = options.gamma ?? REVERSE_TURN_DEFAULTS.gamma;
  return normalizePerTurnIndex(
    group.map((t) => discountedReturns(rewardsOf(t), gamma)),
    options.std ?? REVERSE_TURN_DEFAULTS.std,
    options.eps ?? REVERSE_TURN_DEFAULTS.eps,
  );
}
