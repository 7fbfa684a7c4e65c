// GiGPO: an episode-level group advantage plus a step-level one computed among "anchor states".
//   A_{i,t} = A^E_i + ω·A^S_{i,t},  A^E_i = (R_i − mean R)/F,  A^S_{i,t} = (G_{i,t} − mean_{c} G)/F_c
// Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training", §4.1–4.2; docs/methods.md §3.
// A step group c gathers every turn of the group whose *current observation* is identical, across
// trajectories and across time steps (a trajectory that revisits a state contributes twice);
// G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k} is the discounted step return. F = std + ε (the paper's default)
// or 1 (its mean-normalised variant, at both levels). Singleton step groups get A^S = 0.
import type { Trajectory } from '../core/types.ts';
import {
  type Advantages,
  DEFAULT_EPS,
  discountedReturns,
  normalize,
  type OutcomeFn,
  rewardsOf,
  type TurnKeyFn,
} from './common.ts';
import { canonicalJson } from './groups.ts';
import { grpoScores } from './grpo.ts';

export interface GigpoOptions {
  /** γ of the step returns (default 0.95, the paper's). */
  gamma?: number;
  /** ω, weight of the step-level advantage (default 1, the paper's). */
  omega?: number;
  /** F = std + ε (default true) or 1 (false), at both levels. */
  std?: boolean;
  eps?: number;
  /** Which turns share an anchor state (default: JSON-equal observations). An env whose observation
   * holds more than the state (a chat history) plugs in a key of the state part here. */
  key?: TurnKeyFn;
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export const GIGPO_DEFAULTS = { gamma: 0.95, omega: 1, std: true, eps: DEFAULT_EPS } as const;

export const observationKey: TurnKeyFn = (turn) => canonicalJson(turn.observation);

/** The step groups of a group: anchor key → the (trajectory, turn) pairs that share it. */
export function anchorGroups(
  group: readonly Trajectory[],
  key: TurnKeyFn = observationKey,
): Map<string, [i: number, t: number][]> {
  const clusters = new Map<string, [number, number][]>();
  group.forEach((traj, i) => {
    traj.turns.forEach((turn, t) => {
      const k = key(turn, traj);
      let c = clusters.get(k);
      if (c === undefined) {
        c = [];
        clusters.set(k, c);
      }
      c.push([i, t]);
    });
  });
  return clusters;
}

export function gigpo(group: readonly Trajectory[], options: GigpoOptions = {}): Advantages {
  const gamma = options.gamma ?? GIGPO_DEFAULTS.gamma;
  const omega = options.omega ?? GIGPO_DEFAULTS.omega;
  const std = options.std ?? GIGPO_DEFAULTS.std;
  const eps = options.eps ?? GIGPO_DEFAULTS.eps;
  const episode = grpoScores(group, { std, eps, outcome: options.outcome });
  const returns = group.map((t) => discountedReturns(rewardsOf(t), gamma));
  const step: Advantages = group.map((t) => new Array<number>(t.turns.length).fill(0));
  for (const members of anchorGroups(group, options.key).values()) {
    const z = normalize(
      members.map(([i, t]) => returns[i][t]),
      std,
      eps,
    );
    members.forEach(([i, t], k) => {
      step[i][t] = z[k];
    });
  }
  return step.map((row, i) => row.map((aS) => episode[i] + omega * aS));
}
