// RTPO credit (reverse-turn policy optimisation in full; docs/methods.md §3, issue 29 item 5): the
// backward pass that ties each turn to the outcomes after it, corrected for the drift of the policy that
// will take those later turns.
//
//   G_{i,T_i} = 0,   G_{i,t} = r_{i,t} + γ · c_{i,t+1} · G_{i,t+1}
//   c_{i,k}   = min(c̄, π_θ(a_{i,k} | h_{i,k}) / μ(a_{i,k} | h_{i,k}))         (per-decision, truncated)
//   A_{i,t}   = (G_{i,t} − mean_t G) / (std_t G + ε)     over the cohort of trajectories alive at index t
//
// μ is the behaviour log-prob recorded when the turn was sampled (Turn.logp: the context it was really
// sampled with, never a re-built one — the context-mismatch fix), π_θ the policy the earlier turns are
// being updated towards. When the later turns' policy has drifted from μ (algo rtpo updates the latest
// turns first, train/rtpo.ts; a stale acting snapshot), c re-weights the return that followed a turn by
// how likely the current policy still is to take those later actions; truncating at c̄ (Retrace's c̄ = 1)
// bounds the variance of the product. Without a current policy (`ratio` absent, on-policy data) c ≡ 1 and
// this is exactly reverse-turn credit (reverse-turn.ts) with the same γ.
//
// The paper's text was not available to us (docs/methods.md says so); the drift correction and the
// recorded-context ratio are this lab's reading of "the backward pass with fixes for context mismatch and
// policy drift" (issue 29).
import type { Trajectory } from '../core/types.ts';
import { type Advantages, DEFAULT_EPS, normalizePerTurnIndex, rewardsOf } from './common.ts';

/** π_θ(a_t | h_t) / μ(a_t | h_t) of a trajectory's turn t (1 for a turn the policy did not choose). */
export type RatioFn = (trajectory: Trajectory, t: number) => number;

export interface RtpoOptions {
  /** γ of the backward walk (default 0.95, reverse-turn's). */
  gamma?: number;
  /** c̄: the truncation of each later turn's ratio (default 1, Retrace's). */
  cbar?: number;
  /** Divide by the per-index std (+ε) (default true). */
  std?: boolean;
  eps?: number;
  /** The current policy's ratio to the behaviour log-prob, per turn; absent: on-policy (c ≡ 1). */
  ratio?: RatioFn;
}

export const RTPO_DEFAULTS = { gamma: 0.95, cbar: 1, std: true, eps: DEFAULT_EPS } as const;

/** The backward pass: G_t = r_t + γ·c_{t+1}·G_{t+1} (G_T = 0), c the truncated ratios of the later turns. */
export function correctedReturns(rewards: readonly number[], c: readonly number[], gamma: number): number[] {
  if (c.length !== rewards.length)
    throw new RangeError(`correctedReturns: ${rewards.length} rewards, ${c.length} ratios`);
  const out = new Array<number>(rewards.length);
  let g = 0;
  for (let t = rewards.length - 1; t >= 0; t--) {
    g = rewards[t] + (t + 1 < rewards.length ? gamma * c[t + 1] * g : 0);
    out[t] = g;
  }
  return out;
}

/** The truncated ratios c_t = min(c̄, ratio(t)) of a trajectory's turns (1 without a ratio). */
export function truncatedRatios(traj: Trajectory, cbar: number, ratio?: RatioFn): number[] {
  return traj.turns.map((_, t) => {
    if (ratio === undefined) return 1;
    const r = ratio(traj, t);
    if (!(r >= 0)) throw new RangeError(`rtpo: ratio ${r} of trajectory ${traj.id} turn ${t}`);
    return Math.min(cbar, r);
  });
}

export function rtpo(group: readonly Trajectory[], options: RtpoOptions = {}): Advantages {
  const gamma = options.gamma ?? RTPO_DEFAULTS.gamma;
  const cbar = options.cbar ?? RTPO_DEFAULTS.cbar;
  return normalizePerTurnIndex(
    group.map((t) => correctedReturns(rewardsOf(t), truncatedRatios(t, cbar, options.ratio), gamma)),
    options.std ?? RTPO_DEFAULTS.std,
    options.eps ?? RTPO_DEFAULTS.eps,
  );
}
