// One optimizer step of the clipped policy gradient, shared by the PPO/GRPO epochs (train/update.ts) and
// the backward stages of algo rtpo (train/rtpo.ts): the batch's own units with what the loss reads of
// them, a step over any subset of them, and the step statistics.
import type { Trajectory } from '../core/types.ts';
import { clipGradNorm } from '../nn/optim.ts';
import { backward } from '../nn/tensor.ts';
import type { TrainConfig } from './config.ts';
import type { Unit, ViewOf } from './learner.ts';
import { aggregationWeights, type PgCoefficients, pgLoss } from './ppo.ts';
import type { Setup } from './setup.ts';

export interface PgStats {
  loss: number;
  clipfrac: number;
  approxKl: number;
  entropy: number;
  kl: number;
  gradNorm: number;
  /** Units (turns, tokens) in the loss. */
  turns: number;
  /** Metrics of an algorithm's own (algo rtpo: rtpo/…), merged into the iteration's. */
  extra?: Record<string, number>;
}

/** What every optimizer step of an update reads: the batch's own units with their targets, behaviour
 * log-probs (the recorded ones: the context each turn was sampled with), aggregation weights and the
 * reference's log-probs. */
export interface PgUnits {
  units: Unit[];
  targets: Int32Array;
  logpOld: Float64Array;
  weights: Float64Array;
  logpRef?: Float64Array;
  coef: PgCoefficients;
}

/** The own units of a batch (forced turns and observation tokens are masked out) and what the loss
 * reads of them; null when there are none. */
export function pgUnits(
  s: Setup,
  config: TrainConfig,
  batch: readonly Trajectory[],
  viewOf: ViewOf,
  entCoef: number,
): PgUnits | null {
  const units = s.learner.units(batch, viewOf).filter((u) => u.own);
  const N = units.length;
  if (N === 0) return null;
  const lengths = new Array<number>(batch.length).fill(0);
  const targets = new Int32Array(N);
  const logpOld = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const u = units[i];
    lengths[u.traj]++;
    targets[i] = u.target;
    logpOld[i] = u.logpOld;
  }
  const p = config.ppo;
  const constant = p.aggregationConstant ?? config.groups * config.groupSize * s.maxBudget;
  const coef = {
    clipLow: p.clipLow,
    clipHigh: p.clipHigh,
    klCoef: p.klCoef,
    entCoef,
    dualClip: p.dualClip > 1 ? p.dualClip : undefined,
  };
  return {
    units,
    targets,
    logpOld,
    weights: aggregationWeights(lengths, p.aggregation, constant),
    logpRef: s.reference?.logProbs(units),
    coef,
  };
}

export const emptyStats = (turns: number): PgStats => ({
  loss: 0,
  clipfrac: 0,
  approxKl: 0,
  entropy: 0,
  kl: 0,
  gradNorm: 0,
  turns,
});

/** One optimizer step on the units `idx` (a minibatch, or a stage of algo rtpo), each with its advantage;
 * the step's loss and rates are added to `stats`. */
export function pgStep(
  s: Setup,
  config: TrainConfig,
  u: PgUnits,
  idx: readonly number[],
  advantages: ArrayLike<number>,
  stats: PgStats,
): void {
  const { units, targets, logpOld, weights, logpRef, coef } = u;
  const V = s.learner.actions;
  // Each minibatch estimates the whole batch's loss: its weights are scaled by N / |minibatch|.
  const scale = units.length / idx.length;
  const mb = idx.map((i) => units[i]);
  // One forward and backward per group (the learner's, else the whole minibatch), the gradients
  // accumulated: the loss and its gradient are sums over units, the rates means over them.
  const groups = s.learner.forwardGroups?.(mb) ?? [mb.map((_, j) => j)];
  s.optimizer.zeroGrad();
  for (const g of groups) {
    const at = g.map((j) => idx[j]);
    const logits = s.learner.logits(g.map((j) => mb[j]));
    const part = pgLoss(
      {
        n: at.length,
        nA: V,
        logits: logits.data,
        actions: at.map((i) => targets[i]),
        logpOld: at.map((i) => logpOld[i]),
        advantages: at.map((i) => advantages[i]),
        weights: at.map((i) => weights[i] * scale),
        logpRef: logpRef === undefined ? undefined : at.map((i) => logpRef[i]),
      },
      coef,
    );
    backward(logits, Float32Array.from(part.dlogits));
    stats.loss += part.loss;
    const share = at.length / idx.length;
    stats.clipfrac += part.clipfrac * share;
    stats.approxKl += part.approxKl * share;
    stats.entropy += part.entropy * share;
    stats.kl += part.kl * share;
  }
  stats.gradNorm += clipGradNorm(
    s.learner.params.map(([, t]) => t),
    config.optim.maxGradNorm,
  );
  s.optimizer.step();
}

/** The means over the `steps` optimizer steps. */
export function meanStats(stats: PgStats, steps: number): PgStats {
  for (const k of ['loss', 'clipfrac', 'approxKl', 'entropy', 'kl', 'gradNorm'] as const) stats[k] /= steps;
  return stats;
}
