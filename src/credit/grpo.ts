// GRPO: the group's outcomes are the baseline; every turn of trajectory i gets A_i.
//   A_i = (R_i − mean(R)) / (std(R) + ε),   std = population std (÷G, not torch's ÷(G−1))
// Shao et al. 2024, "DeepSeekMath", §4.1.2 (outcome supervision); docs/methods.md §2.
// A dead group (all R equal, std 0) and a group of one give exactly 0: no contrast, no gradient.
import type { Trajectory } from '../core/types.ts';
import {
  type Advantages,
  DEFAULT_EPS,
  normalize,
  type OutcomeFn,
  outcomeReward,
  perTrajectory,
} from './common.ts';

export interface GrpoOptions {
  /** ε added to the std (default 1e-6). */
  eps?: number;
  /** Divide by the std (default true); false gives Dr. GRPO's R_i − mean(R). */
  std?: boolean;
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export const GRPO_DEFAULTS = { eps: DEFAULT_EPS, std: true } as const;

/** The per-trajectory GRPO advantages A_i (shared with GiGPO's episode level and turn-level credit). */
export function grpoScores(group: readonly Trajectory[], options: GrpoOptions = {}): number[] {
  const R = options.outcome ?? outcomeReward;
  return normalize(
    group.map((t) => R(t)),
    options.std ?? GRPO_DEFAULTS.std,
    options.eps ?? GRPO_DEFAULTS.eps,
  );
}

export function grpo(group: readonly Trajectory[], options: GrpoOptions = {}): Advantages {
  return perTrajectory(group, grpoScores(group, options));
}
