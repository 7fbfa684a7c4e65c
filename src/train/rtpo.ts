// Algo rtpo — reverse-turn policy optimisation in full (docs/methods.md §4, issue 29 item 5). The update
// of one iteration walks the batch backwards: its own units are ordered by turn index, latest first, and
// cut into S stages (S = ppo.minibatches, so the run takes as many optimizer steps as GRPO's epochs ×
// minibatches); each epoch updates stage S−1 (the latest turns) first and stage 0 (the first turns) last.
// Before each stage's step the credit is recomputed under the current parameters θ:
//   c_{i,k} = min(c̄, exp(log π_θ(a_{i,k} | h_{i,k}) − μ_{i,k}))              (policy-drift correction)
//   G_{i,t} = r_{i,t} + γ · c_{i,t+1} · G_{i,t+1},  A_{i,t} = G normalised per turn index (credit/rtpo.ts)
// so an earlier turn is credited with the return that followed it re-weighted by how likely the policy
// that will now take the later turns — already updated on them — still is to take them. μ is the
// behaviour log-prob recorded at sampling time (Turn.logp), the context the turn was really sampled with:
// it is both the denominator of c and the π_old of the clipped ratio ρ = π_θ/μ (context-mismatch fix),
// so the drift a stage inherits from the stages updated before it counts against its own clip (a trust
// region per turn measured from the behaviour policy, not from the partly-updated one).
// At the first stage of the first epoch θ is the behaviour policy and c = 1 up to the rounding of the
// re-computed log-probs: the iteration's metric rtpo/context_mismatch is that gap, mean |log π_θold − μ|.
import type { Trajectory } from '../core/types.ts';
import { creditBatch, RTPO_DEFAULTS, type RtpoOptions } from '../credit/index.ts';
import type { TrainConfig } from './config.ts';
import type { ViewOf } from './learner.ts';
import { emptyStats, meanStats, type PgStats, type PgUnits, pgStep, pgUnits } from './pg-step.ts';
import type { Setup } from './setup.ts';

/** The stages of the backward update: unit indices ordered by turn index, latest first (ties in batch
 * order), cut into `stages` contiguous parts of ⌈N/S⌉; the first part is updated first. */
export function backwardStages(turnOf: readonly number[], stages: number): number[][] {
  const order = Array.from(turnOf, (_, i) => i).sort((a, b) => turnOf[b] - turnOf[a] || a - b);
  const size = Math.ceil(order.length / Math.max(1, stages));
  const out: number[][] = [];
  for (let start = 0; start < order.length; start += size) out.push(order.slice(start, start + size));
  return out;
}

/** Per trajectory and turn, Σ over the turn's own units of log π_θ − μ (0 for a turn with none: forced). */
export function logRatios(
  u: PgUnits,
  logpNow: ArrayLike<number>,
  batch: readonly Trajectory[],
): Float64Array[] {
  const out = batch.map((t) => new Float64Array(t.turns.length));
  u.units.forEach((x, k) => {
    out[x.traj][x.t] += logpNow[k] - u.logpOld[k];
  });
  return out;
}

export interface RtpoStats {
  /** Mean |log π_θold − μ| over own units before any step (the re-built context's gap). */
  contextMismatch: number;
  /** Over the stages' recomputations after the first: the mean truncated ratio c of the turns, and the
   * share truncated at c̄. */
  ratioMean: number;
  truncated: number;
}

/**
 * The backward update. `credited` is the batch the credit reads (the learner's rewards: shaped, scored),
 * `batch` the one the loss reads — the same trajectories, turn for turn.
 */
export function rtpoUpdate(
  s: Setup,
  config: TrainConfig,
  batch: readonly Trajectory[],
  credited: readonly Trajectory[],
  options: RtpoOptions,
  viewOf: ViewOf,
  entCoef: number,
): PgStats | null {
  const u = pgUnits(s, config, batch, viewOf, entCoef);
  if (u === null) return null;
  const N = u.units.length;
  const index = new Map<Trajectory, number>(credited.map((t, i) => [t, i]));
  const stages = backwardStages(
    u.units.map((x) => x.t),
    config.ppo.minibatches,
  );
  const cbar = options.cbar ?? RTPO_DEFAULTS.cbar;
  const stats = emptyStats(N);
  const rs: RtpoStats = { contextMismatch: 0, ratioMean: 0, truncated: 0 };
  let recomputed = 0;
  let steps = 0;
  const advantages = new Float64Array(N);
  for (let epoch = 0; epoch < config.ppo.epochs; epoch++) {
    for (const stage of stages) {
      const logpNow = s.learner.logProbs(u.units);
      const lr = logRatios(u, logpNow, batch);
      if (steps === 0) {
        for (let k = 0; k < N; k++) rs.contextMismatch += Math.abs(logpNow[k] - u.logpOld[k]) / N;
      } else {
        let n = 0;
        let sum = 0;
        let cut = 0;
        for (const row of lr)
          for (const x of row) {
            const r = Math.exp(x);
            sum += Math.min(cbar, r);
            if (r > cbar) cut++;
            n++;
          }
        rs.ratioMean += sum / n;
        rs.truncated += cut / n;
        recomputed++;
      }
      const adv = creditBatch(credited, 'rtpo', {
        ...options,
        ratio: (traj, t) => Math.exp(lr[index.get(traj)!][t]),
      });
      u.units.forEach((x, k) => {
        advantages[k] = adv[x.traj][x.t];
      });
      pgStep(s, config, u, stage, advantages, stats);
      steps++;
    }
  }
  if (recomputed > 0) {
    rs.ratioMean /= recomputed;
    rs.truncated /= recomputed;
  }
  return {
    ...meanStats(stats, steps),
    extra: {
      'rtpo/context_mismatch': rs.contextMismatch,
      'rtpo/ratio_mean': recomputed > 0 ? rs.ratioMean : Number.NaN,
      'rtpo/truncated': recomputed > 0 ? rs.truncated : Number.NaN,
    },
  };
}
