// A judge measured against the env's own verifier (`turnwise judge audit`), on the trajectories where
// both exist: the judge's verdict is its score ≥ a threshold (½ by default), the truth outcome.success.
//
//   confusion   rows the verifier (success, failure), columns the judge (pass, fail): tp fn / fp tn
//   agreement   p_o = (tp + tn) / n
//   Cohen's κ   (p_o − p_e) / (1 − p_e), p_e = (P(judge pass)·P(success) + P(judge fail)·P(failure))
//               (Cohen 1960; METHODS.md §8); undefined (null) when p_e = 1
//   length bias within each verifier class, how the judge's score moves with the episode's turns: the
//               least-squares slope of score on turns and Spearman's ρ (average ranks for ties); a
//               judge that pays for length at equal verdict shows a slope the truth does not have
//   position    pairwise mode: P(the first shown is preferred) − ½ over the pairs asked both ways, the
//               pairs whose verdict flipped with the order, and on the pairs where exactly one
//               trajectory succeeded, how often the judge preferred it (½ for a flipped pair)
import type { Trajectory } from '../core/types.ts';
import { type PairAnswers, positionBias } from './judging.ts';
import type { Rubric } from './rubric.ts';
import type { RubricRun } from './score.ts';

/** Rows: the verifier; columns: the judge. */
export interface Confusion {
  tp: number;
  fn: number;
  fp: number;
  tn: number;
}

export function confusion(items: readonly { truth: boolean; verdict: boolean }[]): Confusion {
  const c: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
  for (const { truth, verdict } of items) {
    if (truth) verdict ? c.tp++ : c.fn++;
    else verdict ? c.fp++ : c.tn++;
  }
  return c;
}

const total = (c: Confusion) => c.tp + c.fn + c.fp + c.tn;

export function agreement(c: Confusion): number | null {
  const n = total(c);
  return n === 0 ? null : (c.tp + c.tn) / n;
}

/** Cohen's κ of the judge against the verifier; null when it is undefined (no items, or p_e = 1). */
export function cohenKappa(c: Confusion): number | null {
  const n = total(c);
  if (n === 0) return null;
  const po = (c.tp + c.tn) / n;
  const pe = ((c.tp + c.fp) * (c.tp + c.fn) + (c.fn + c.tn) * (c.fp + c.tn)) / (n * n);
  return pe === 1 ? null : (po - pe) / (1 - pe);
}

/** Ranks 1..n, ties given their average rank. */
export function ranks(xs: readonly number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const r = new Array<number>(xs.length);
  for (let k = 0; k < order.length; ) {
    let e = k;
    while (e + 1 < order.length && order[e + 1][0] === order[k][0]) e++;
    for (let m = k; m <= e; m++) r[order[m][1]] = (k + e) / 2 + 1;
    k = e + 1;
  }
  return r;
}

/** The centred sums of products Σ(x−x̄)(y−ȳ), Σ(x−x̄)², Σ(y−ȳ)². */
function moments(x: readonly number[], y: readonly number[]): { sxy: number; sxx: number; syy: number } {
  const n = x.length;
  const mx = x.reduce((s, v) => s + v, 0) / n;
  const my = y.reduce((s, v) => s + v, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
    syy += (y[i] - my) ** 2;
  }
  return { sxy, sxx, syy };
}

/** Pearson's r; null when either side is constant (or fewer than 2 points). */
export function pearson(x: readonly number[], y: readonly number[]): number | null {
  if (x.length < 2) return null;
  const { sxy, sxx, syy } = moments(x, y);
  return sxx === 0 || syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
}

/** Spearman's ρ: Pearson's r of the average ranks. */
export const spearman = (x: readonly number[], y: readonly number[]): number | null =>
  pearson(ranks(x), ranks(y));

/** The least-squares slope of y on x; null when x is constant (or fewer than 2 points). */
export function slope(x: readonly number[], y: readonly number[]): number | null {
  if (x.length < 2) return null;
  const { sxy, sxx } = moments(x, y);
  return sxx === 0 ? null : sxy / sxx;
}

export interface LengthBias {
  n: number;
  /** Score per turn (least squares), and Spearman's ρ of turns and score. */
  slope: number | null;
  spearman: number | null;
}

export interface PairwiseAudit {
  positionBias: number | null;
  answers: number;
  firstWins: number;
  pairs: number;
  flipped: number;
  /** Pairs where exactly one trajectory succeeded, and the mean preference for that one. */
  mixedPairs: number;
  mixedAccuracy: number | null;
}

export interface CriterionAudit {
  /** A judge criterion's id, or `rubric` for the combined score. */
  criterion: string;
  mode?: string;
  /** Trajectories with both a score and the verifier's verdict, and those without a score. */
  n: number;
  judgeErrors: number;
  missing: number;
  confusion: Confusion;
  agreement: number | null;
  kappa: number | null;
  lengthBias: { success: LengthBias; failure: LengthBias };
  pairwise?: PairwiseAudit;
}

export interface AuditReport {
  rubric: string;
  trajectories: number;
  threshold: number;
  envSuccess: number;
  audits: CriterionAudit[];
}

function lengthBias(items: readonly { turns: number; score: number }[]): LengthBias {
  const turns = items.map((x) => x.turns);
  const score = items.map((x) => x.score);
  return { n: items.length, slope: slope(turns, score), spearman: spearman(turns, score) };
}

/** Pairwise answers against the verifier. */
export function pairwiseAudit(p: PairAnswers, batch: readonly Trajectory[]): PairwiseAudit {
  let mixed = 0;
  let right = 0;
  for (const { i, j, first, second } of p.pairs) {
    const a = batch[i].outcome.success;
    const b = batch[j].outcome.success;
    if (a === b) continue;
    mixed++;
    const preferI = (first + 1 - second) / 2;
    right += a ? preferI : 1 - preferI;
  }
  return {
    positionBias: positionBias(p),
    answers: p.answers,
    firstWins: p.firstWins,
    pairs: p.pairs.length,
    flipped: p.flipped,
    mixedPairs: mixed,
    mixedAccuracy: mixed === 0 ? null : right / mixed,
  };
}

/** One score per trajectory (null: missing) against the verifier. */
function auditScores(
  criterion: string,
  scores: readonly (number | null)[],
  errors: readonly boolean[],
  batch: readonly Trajectory[],
  threshold: number,
): CriterionAudit {
  const both = batch
    .map((t, i) => ({ truth: t.outcome.success, turns: t.outcome.turns, score: scores[i] }))
    .filter((x): x is { truth: boolean; turns: number; score: number } => x.score !== null);
  const c = confusion(both.map((x) => ({ truth: x.truth, verdict: x.score >= threshold })));
  return {
    criterion,
    n: both.length,
    judgeErrors: errors.filter(Boolean).length,
    missing: scores.filter((s, i) => s === null && !errors[i]).length,
    confusion: c,
    agreement: agreement(c),
    kappa: cohenKappa(c),
    lengthBias: {
      success: lengthBias(both.filter((x) => x.truth)),
      failure: lengthBias(both.filter((x) => !x.truth)),
    },
  };
}

/** Every judge criterion of the rubric, and its combined score, against the verifier. */
export function audit(
  rubric: Rubric,
  batch: readonly Trajectory[],
  run: RubricRun,
  threshold = 0.5,
): AuditReport {
  const audits: CriterionAudit[] = [];
  rubric.criteria.forEach((c, k) => {
    if (c.kind !== 'judge') return;
    const xs = run.results.map((r) => r.criteria[k]);
    const a = auditScores(
      c.id,
      xs.map((x) => x.score),
      xs.map((x) => x.error !== undefined),
      batch,
      threshold,
    );
    a.mode = c.mode;
    const p = run.pairs.get(c.id);
    if (p !== undefined) a.pairwise = pairwiseAudit(p, batch);
    audits.push(a);
  });
  audits.push(
    auditScores(
      'rubric',
      run.results.map((r) => r.score),
      run.results.map((r) => r.score === null && r.judgeErrors > 0),
      batch,
      threshold,
    ),
  );
  return {
    rubric: rubric.file,
    trajectories: batch.length,
    threshold,
    envSuccess: batch.length === 0 ? 0 : batch.filter((t) => t.outcome.success).length / batch.length,
    audits,
  };
}
