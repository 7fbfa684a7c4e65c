// Interval arithmetic the study needs beyond eval/bootstrap: several per-map series resampled with one
// set of map indices (so differences and contrasts between them are paired), ratio estimators over
// maps (a mean over trajectories whose number varies by map), and the trend of a training curve.
// All intervals are 95% percentile intervals (Efron & Tibshirani 1993, §13.3), like eval's. Resample r
// draws from Rng.derive(seed, STREAM.eval, key, r): reproducible, and independent of eval's own keys.
import { Rng, STREAM } from '../../core/rng.ts';
import { type Interval, percentileInterval } from '../../eval/bootstrap.ts';

/**
 * The stream keys of the study's bootstraps, above eval's EVAL_KEY range: one name per set of
 * resamples, so two figures share resampled clusters exactly when they are meant to be paired. The
 * numbers are the ones the study has always drawn with (a new number is a new draw: other figures).
 */
export const STUDY_KEY = {
  /** Exact Pass@(K,T) of every policy, the contrasts between them and the shrink contrast (paired). */
  maps: 101,
  /** Every ratio estimator over maps (bootstrapRatios). */
  ratio: 102,
  /** Training-curve trends (windowTrend; each curve has its own key under it). */
  trend: 103,
  /** Step quality over the normal states, the error states and their pre-error states. */
  normalStates: 104,
  errorStates: 114,
  preErrorStates: 124,
  /** The temperature control: RL − the base at its best τ, over maps. */
  temperature: 108,
  /** Exact continuation values at the error states (recovery). */
  recovery: 109,
} as const;

export interface BootstrapSettings {
  resamples: number;
  seed: number;
}

/** A run's bootstrap settings: its config's resamples and seed. */
export function bootSettings(config: { eval: { resamples: number }; seed: number }): BootstrapSettings {
  return { resamples: config.eval.resamples, seed: config.seed };
}

/** Coefficients of the contrast plus − minus over the series `names` (for bootstrapSeries). */
export function contrastCoefficients<N extends string>(names: readonly N[], plus: N, minus: N): number[] {
  return names.map((n) => (n === plus ? 1 : n === minus ? -1 : 0));
}

/** Draws one resample of m clusters as multiplicities w (Σ w = m). */
function draw(rng: Rng, m: number, w: Int32Array): void {
  w.fill(0);
  for (let i = 0; i < m; i++) w[rng.int(m)]++;
}

export interface SeriesIntervals {
  /** mean[s][c]: the mean over clusters of series s, column c. */
  mean: number[][];
  ci: Interval[][];
  /** For each requested contrast: the mean and the interval of Σ_s coef_s · series_s, per column, and
   * the one-sided bootstrap p-value of "the contrast is < 0": (1 + #{resamples ≥ 0}) / (R + 1). */
  contrasts: { mean: number[]; ci: Interval[]; pNonNeg: number[] }[];
}

/**
 * Means over m clusters of `series` (each laid out [cluster · width + column]) with bootstrap intervals
 * from one shared set of resampled clusters, plus the intervals of linear contrasts between series
 * (e.g. RL − base: coefficients {rl: 1, base: −1}), which are therefore paired.
 */
export function bootstrapSeries(
  series: readonly Float64Array[],
  m: number,
  width: number,
  contrasts: readonly (readonly number[])[],
  o: BootstrapSettings & { key: number },
): SeriesIntervals {
  const R = o.resamples;
  const S = series.length;
  const mean = series.map((v) => {
    const out = new Array<number>(width).fill(0);
    for (let i = 0; i < m; i++) for (let c = 0; c < width; c++) out[c] += v[i * width + c];
    return out.map((x) => (m > 0 ? x / m : Number.NaN));
  });
  const contrastMean = contrasts.map((coef) =>
    Array.from({ length: width }, (_, c) => coef.reduce((acc, k, s) => acc + k * mean[s][c], 0)),
  );
  if (m === 0) {
    const none = (): Interval[] => Array.from({ length: width }, (): Interval => [Number.NaN, Number.NaN]);
    return {
      mean,
      ci: series.map(none),
      contrasts: contrasts.map((_, j) => ({
        mean: contrastMean[j],
        ci: none(),
        pNonNeg: new Array<number>(width).fill(Number.NaN),
      })),
    };
  }
  // est[s][c · R + r]
  const est = series.map(() => new Float64Array(width * R));
  const w = new Int32Array(m);
  const acc = new Float64Array(width);
  for (let r = 0; r < R; r++) {
    draw(Rng.derive(o.seed, STREAM.eval, o.key, r), m, w);
    for (let s = 0; s < S; s++) {
      const v = series[s];
      acc.fill(0);
      for (let i = 0; i < m; i++) {
        const wi = w[i];
        if (wi === 0) continue;
        const base = i * width;
        for (let c = 0; c < width; c++) acc[c] += wi * v[base + c];
      }
      for (let c = 0; c < width; c++) est[s][c * R + r] = acc[c] / m;
    }
  }
  // Contrasts first: percentileInterval sorts the per-series resamples in place.
  const contrastP = contrasts.map(() => new Array<number>(width).fill(Number.NaN));
  const contrastCi = contrasts.map((coef, j) =>
    Array.from({ length: width }, (_, c) => {
      const d = new Float64Array(R);
      let nonNeg = 0;
      for (let r = 0; r < R; r++) {
        let x = 0;
        for (let s = 0; s < S; s++) if (coef[s] !== 0) x += coef[s] * est[s][c * R + r];
        d[r] = x;
        if (x >= 0) nonNeg++;
      }
      contrastP[j][c] = (1 + nonNeg) / (R + 1);
      return percentileInterval(d);
    }),
  );
  const ci = est.map((e) =>
    Array.from({ length: width }, (_, c) => percentileInterval(e.subarray(c * R, (c + 1) * R))),
  );
  return {
    mean,
    ci,
    contrasts: contrasts.map((_, j) => ({ mean: contrastMean[j], ci: contrastCi[j], pNonNeg: contrastP[j] })),
  };
}

export interface RatioIntervals {
  /** Σ sums / Σ counts per series (NaN when the counts are 0). */
  value: number[];
  ci: Interval[];
  /** value[0] − value[1] and its interval, paired over the same resampled clusters (two series only). */
  diff?: number;
  diffCi?: Interval;
  /** value[0] / value[1] and its interval, paired the same way (two series only). */
  ratio?: number;
  ratioCi?: Interval;
}

/**
 * Ratio estimators over clusters: a mean over items (actions, successful trajectories) whose number
 * varies by cluster (map), e.g. Σ_maps Σ_traj LLR / Σ_maps #traj. Resampling maps, not items, keeps
 * the correlation of one map's items in the interval.
 */
export function bootstrapRatios(
  series: readonly { sums: Float64Array; counts: Float64Array }[],
  o: BootstrapSettings,
): RatioIntervals {
  const m = series[0].sums.length;
  const ratio = (s: { sums: Float64Array; counts: Float64Array }, w?: Int32Array) => {
    let a = 0;
    let b = 0;
    for (let i = 0; i < m; i++) {
      const wi = w === undefined ? 1 : w[i];
      if (wi === 0) continue;
      a += wi * s.sums[i];
      b += wi * s.counts[i];
    }
    return b > 0 ? a / b : Number.NaN;
  };
  const value = series.map((s) => ratio(s));
  if (m === 0) {
    return { value, ci: series.map((): Interval => [Number.NaN, Number.NaN]) };
  }
  const R = o.resamples;
  const est = series.map(() => new Float64Array(R));
  const w = new Int32Array(m);
  for (let r = 0; r < R; r++) {
    draw(Rng.derive(o.seed, STREAM.eval, STUDY_KEY.ratio, r), m, w);
    series.forEach((s, j) => {
      est[j][r] = ratio(s, w);
    });
  }
  // A resample whose maps hold no item gives NaN; the interval is over the resamples that have one.
  const finite = (x: Float64Array) => x.filter(Number.isFinite);
  const out: RatioIntervals = { value, ci: [] };
  if (series.length === 2) {
    const d = new Float64Array(R);
    for (let r = 0; r < R; r++) d[r] = est[0][r] - est[1][r];
    out.diff = value[0] - value[1];
    const fd = finite(d);
    out.diffCi = fd.length > 0 ? percentileInterval(fd) : [Number.NaN, Number.NaN];
    const q = new Float64Array(R);
    for (let r = 0; r < R; r++) q[r] = est[0][r] / est[1][r];
    out.ratio = value[0] / value[1];
    const fq = finite(q);
    out.ratioCi = fq.length > 0 ? percentileInterval(fq) : [Number.NaN, Number.NaN];
  }
  out.ci = est.map((e) => {
    const f = finite(e);
    return f.length > 0 ? percentileInterval(f) : [Number.NaN, Number.NaN];
  });
  return out;
}

export interface TrendEstimate {
  first: number;
  last: number;
  /** last − first. */
  value: number;
  ci: Interval;
}

/**
 * Did a training curve go up or down? Mean of the last `window` iterations minus the mean of the first
 * `window`, with an interval from resampling the iterations within each window independently. The
 * points of a window are treated as exchangeable: honest when the window is short against the curve's
 * drift (a quarter of the run here); the interval is about the noise of the per-iteration batches.
 * Missing (non-finite) points are skipped.
 */
export function windowTrend(
  values: readonly number[],
  window: number,
  o: BootstrapSettings & { key: number },
): TrendEstimate {
  const head = values.slice(0, window).filter(Number.isFinite);
  const tail = values.slice(Math.max(0, values.length - window)).filter(Number.isFinite);
  const mean = (xs: readonly number[]) =>
    xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
  const first = mean(head);
  const last = mean(tail);
  if (head.length === 0 || tail.length === 0)
    return { first, last, value: Number.NaN, ci: [Number.NaN, Number.NaN] };
  const d = new Float64Array(o.resamples);
  for (let r = 0; r < o.resamples; r++) {
    const rng = Rng.derive(o.seed, STREAM.eval, STUDY_KEY.trend, o.key, r);
    let a = 0;
    for (let i = 0; i < head.length; i++) a += head[rng.int(head.length)];
    let b = 0;
    for (let i = 0; i < tail.length; i++) b += tail[rng.int(tail.length)];
    d[r] = b / tail.length - a / head.length;
  }
  return { first, last, value: last - first, ci: percentileInterval(d) };
}

/**
 * Holm's step-down adjusted p-values (Holm 1979): sort the m p-values ascending, multiply the i-th
 * (1-based) by m − i + 1, carry the running maximum, cap at 1; back in the input order. Rejecting where
 * the adjusted p ≤ α controls the family-wise error rate at α. Non-finite p-values stay NaN and do not
 * count towards m.
 */
export function holm(p: readonly number[]): number[] {
  const idx = p.map((_, i) => i).filter((i) => Number.isFinite(p[i]));
  idx.sort((a, b) => p[a] - p[b]);
  const m = idx.length;
  const out = p.map(() => Number.NaN);
  let run = 0;
  idx.forEach((i, r) => {
    run = Math.max(run, Math.min(1, (m - r) * p[i]));
    out[i] = run;
  });
  return out;
}

/** 1 − (1 − p)^K, accurate for small p (the chance that one of K independent tries succeeds). */
export function passFromSuccess(p: number, K: number): number {
  if (p >= 1) return 1;
  return -Math.expm1(K * Math.log1p(-p));
}
