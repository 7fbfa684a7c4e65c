// The figures summary.json is made of (summary.ts assembles them): an estimate with its 95% interval,
// a Pass@(K,T) grid, the step-quality, recovery, likelihood and training-curve figures, each as a zod
// schema with its TypeScript type inferred from it; and the two functions every stage stores numbers
// through (finiteOrNull, intervalOf), so that the object in memory is the object read back from JSON.
import { z } from 'zod';

/** A number, or null where it is not finite (JSON has no NaN or Infinity). */
export const Num = z.number().nullable();
export const Int = z.number().int();
export const IntervalSchema = z.tuple([Num, Num]);

export const EstimateSchema = z.object({ value: Num, ci95: IntervalSchema }).strict();

export const PassGridSchema = z
  .object({
    K: z.array(Int),
    T: z.array(Int),
    passKT: z.array(z.array(Num)),
    ci95: z.array(z.array(IntervalSchema)),
  })
  .strict();

export const perPolicySchema = <S extends z.ZodType>(s: S) =>
  z.object({ base: s, rl: s, budgetmix: s, gigpo: s.optional() }).strict();

export const StepQualitySideSchema = z
  .object({
    /** P(RL's action has the higher Q*) + ½ P(tie), exact expectation over both policies' distributions. */
    value: Num,
    ci95: IntervalSchema,
    rlBetter: Num,
    ties: Num,
    baseBetter: Num,
    /** Mean V*_h(s) − Q*_h(s,a) of each policy's actions. */
    regretRl: Num,
    regretBase: Num,
    states: Int,
    /** The same win rate from M actions drawn by each policy (M × M pairs per state). */
    sampled: EstimateSchema,
    /** The relative tie tolerance the comparisons used: |ΔQ*| ≤ relTie · V* is a tie. */
    relTie: z.number(),
    detail: z.lazy(() => StepQualityDetailSchema),
  })
  .strict();

/** Exact step-quality figures of one subset of states, intervals resampling maps. */
export const StepQualitySubsetSchema = z
  .object({
    states: Int,
    rlBetter: EstimateSchema,
    ties: EstimateSchema,
    /** P(RL better) + ½ P(tie). */
    score: EstimateSchema,
    /** P(RL better) / (P(RL better) + P(base better)): the win rate among pairs that are not ties. */
    tiesExcluded: EstimateSchema,
    /** E_π[Q*_h(s, ·)] of each policy's action distribution, and its mean regret V* − E_π[Q*]. */
    qRl: EstimateSchema,
    qBase: EstimateSchema,
    regretRl: EstimateSchema,
    regretBase: EstimateSchema,
  })
  .strict();

export const StepQualityDetailSchema = z
  .object({
    /** Consequential states: max − min of Q*_h(s, ·) ≥ this. */
    consequentialGap: z.number(),
    all: StepQualitySubsetSchema,
    consequential: StepQualitySubsetSchema,
    /** The states drawn from the base's trajectories, and from RL's. */
    fromBase: StepQualitySubsetSchema,
    fromRl: StepQualitySubsetSchema,
  })
  .strict();

export const RecoverySideSchema = z
  .object({
    /** Continuation success rate from sampled continuations. */
    value: Num,
    ci95: IntervalSchema,
    /** Exact continuation value V^π_h(s) at the same states, h = turns left. */
    exact: Num,
    exactCi95: IntervalSchema,
  })
  .strict();

export const LikelihoodFigureSchema = z
  .object({
    value: Num,
    ci95: IntervalSchema,
    /** Terms the mean is over (actions for NLL, successful trajectories for LLR). */
    n: Int,
    /** Terms left out because they were infinite (eval/likelihood's convention). */
    infinite: Int,
  })
  .strict();

export const RegretDistributionSchema = z
  .object({
    n: Int,
    mean: Num,
    p10: Num,
    median: Num,
    p90: Num,
    /** Histogram edges and counts (bins [e_i, e_{i+1}), the last one closed). */
    bins: z.array(z.number()),
    counts: z.array(Int),
  })
  .strict();

/** Δ = win(error) − win(pre-error), paired state by state, intervals resampling maps. */
export const ContrastSchema = z
  .object({
    delta: EstimateSchema,
    winError: EstimateSchema,
    winPreError: EstimateSchema,
    pairs: Int,
    maps: Int,
  })
  .strict();

export const DidSchema = z
  .object({ gainError: EstimateSchema, gainPreError: EstimateSchema, did: EstimateSchema, maps: Int })
  .strict();
export const DidOfMoveSchema = DidSchema.extend({ states: Int }).strict();

export const PointSchema = z.object({ iter: Int, value: Num }).strict();

export const TrendSchema = z
  .object({
    /** Mean over the first and the last `window` iterations, and last − first with its interval. */
    first: Num,
    last: Num,
    value: Num,
    ci95: IntervalSchema,
  })
  .strict();

export const FailuresSchema = z
  .object({
    episodes: Int,
    successes: Int,
    byKind: z.record(z.string(), Int),
    meanTurnsSuccess: Num,
    meanTurnsFailure: Num,
  })
  .strict();

/** An estimate with the one-sided bootstrap p-value of "it is < 0" (for Holm's correction). */
export const TestedSchema = z.object({ value: Num, ci95: IntervalSchema, pNonNeg: Num }).strict();

export const ByKSchema = z.array(z.object({ K: Int, value: Num, ci95: IntervalSchema }).strict());

/** A mean over seeds with its 95% interval across seeds (t over seeds; one seed: that run's own). */
export const AcrossSeedsSchema = z
  .object({ value: Num, ci95: IntervalSchema, perSeed: z.array(Num) })
  .strict();

export type Interval = z.infer<typeof IntervalSchema>;
export type Estimate = z.infer<typeof EstimateSchema>;
export type PassGrid = z.infer<typeof PassGridSchema>;
export type AcrossSeedsFigure = z.infer<typeof AcrossSeedsSchema>;
export type RecoveryFigure = z.infer<typeof RecoverySideSchema>;
export type StepQualityFigure = z.infer<typeof StepQualitySideSchema>;
export type StepQualityDetail = z.infer<typeof StepQualityDetailSchema>;
export type StepQualitySubset = z.infer<typeof StepQualitySubsetSchema>;
export type LikelihoodValue = z.infer<typeof LikelihoodFigureSchema>;
export type TrendFigure = z.infer<typeof TrendSchema>;

/** x when finite, else null (JSON has no NaN or Infinity). */
export function finiteOrNull(x: number | null | undefined): number | null {
  return x === null || x === undefined || !Number.isFinite(x) ? null : x;
}

export function intervalOf(ci: readonly [number, number] | readonly number[] | null | undefined): Interval {
  return ci === null || ci === undefined ? [null, null] : [finiteOrNull(ci[0]), finiteOrNull(ci[1])];
}
