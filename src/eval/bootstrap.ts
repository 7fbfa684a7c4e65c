// Bootstrap confidence intervals over tasks (docs/methods.md §5): resample whole tasks with replacement,
// never samples within a task, so the interval carries both the within-task sampling noise and the
// spread between tasks; two policies evaluated on the same tasks are resampled with the same task
// indices and the interval of their difference is read off the paired resamples. Intervals are
// percentile intervals (Efron & Tibshirani 1993, §13.3) with the type-7 (linear) quantile.
//
// Resample r draws its indices from Rng.derive(seed, STREAM.eval, key, r) alone, so the result does not
// depend on the order in which resamples are computed (or on how they would be split across workers).
//
// Speed: pass@K of a task depends only on its (n, c) code (passkt.ts), so a resample needs, per budget
// column, the histogram of codes over the drawn tasks and then one dot product per K with the table
// of pass@K values — O(tasks · |T| + |K| · |T| · codes) instead of O(tasks · |T| · |K| · n).
import { Rng, STREAM } from '../core/rng.ts';
import { checkKT, codebooks, type PassCodebook, type PassCounts, passKTFromCodes } from './passkt.ts';
import { EVAL_KEY } from './seeds.ts';

export type Interval = [lo: number, hi: number];

export interface BootstrapOptions {
  /** Number of resamples (default 2000). */
  resamples?: number;
  seed?: number;
  /** Coverage of the interval (default 0.95). */
  level?: number;
}

export const DEFAULT_RESAMPLES = 2000;

/** The type-7 quantile (R's default, numpy's `linear`) of an ascending array. */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/** The percentile interval of resampled values (sorts `values` in place). */
export function percentileInterval(values: Float64Array, level = 0.95): Interval {
  values.sort();
  const a = (1 - level) / 2;
  return [quantileSorted(values, a), quantileSorted(values, 1 - a)];
}

/**
 * Tasks whose code rows are identical (across all policies) are interchangeable in every resample:
 * `group[task]` is the task's row group and `rows[p][g · nT + j]` = j · size + code of policy p's row
 * g, the histogram slot it increments. Real batches repeat rows often (all-fail, all-succeed tasks).
 */
function groupRows(books: readonly PassCodebook[], nT: number): { group: Int32Array; rows: Int32Array[] } {
  const tasks = books[0].codes.length / nT;
  const size = books[0].size;
  const group = new Int32Array(tasks);
  const ids = new Map<string, number>();
  const firstOf: number[] = [];
  for (let i = 0; i < tasks; i++) {
    let key = '';
    for (const b of books) {
      const row = b.codes.subarray(i * nT, (i + 1) * nT);
      // Uint16 codes fit one UTF-16 unit each; wider codes are joined as decimal text.
      key += row instanceof Uint16Array ? String.fromCharCode(...row) : `${row.join(',')};`;
    }
    let g = ids.get(key);
    if (g === undefined) {
      g = firstOf.length;
      ids.set(key, g);
      firstOf.push(i);
    }
    group[i] = g;
  }
  const rows = books.map((b) => {
    const out = new Int32Array(firstOf.length * nT);
    firstOf.forEach((i, g) => {
      for (let j = 0; j < nT; j++) out[g * nT + j] = j * size + b.codes[i * nT + j];
    });
    return out;
  });
  return { group, rows };
}

/** hist[slot] = Σ_g w[g] over the row groups whose row has that slot: the resample's histogram. */
function accumulate(rows: Int32Array, w: Int32Array, nT: number, hist: Int32Array): void {
  hist.fill(0);
  const G = w.length;
  for (let g = 0; g < G; g++) {
    const wg = w[g];
    if (wg === 0) continue;
    for (let b = g * nT, end = b + nT; b < end; b++) hist[rows[b]] += wg;
  }
}

export interface PassKTIntervals {
  /** Per policy: ci95[k][j] for K[k], T[j]. */
  ci: Interval[][][];
  /** With two policies: the interval of (first − second), paired over the same resampled tasks. */
  diffCi?: Interval[][];
}

/**
 * Percentile intervals of Pass@(K,T) for one policy, or for two policies on the same tasks together
 * with the interval of their difference.
 */
export function bootstrapPassKT(
  batches: readonly PassCounts[],
  K: readonly number[],
  options: BootstrapOptions = {},
): PassKTIntervals {
  const R = options.resamples ?? DEFAULT_RESAMPLES;
  const seed = options.seed ?? 0;
  const level = options.level ?? 0.95;
  if (batches.length < 1 || batches.length > 2) throw new RangeError('bootstrap takes one or two batches');
  const tasks = batches[0].n.length;
  const nT = batches[0].T.length;
  for (const b of batches) {
    checkKT(K, b);
    if (b.n.length !== tasks || b.T.length !== nT) throw new RangeError('paired batches need the same tasks');
  }
  if (!Number.isInteger(R) || R < 1) throw new RangeError(`resamples must be ≥ 1, got ${R}`);
  const books = codebooks(batches, K);
  const size = books[0].size;
  const nK = K.length;
  const cells = nK * nT;
  const { group, rows } = groupRows(books, nT);
  const G = rows[0].length / nT;
  // est[p][cell · R + r]: resample r of policy p at cell (k, j).
  const est = batches.map(() => new Float64Array(cells * R));
  const w = new Int32Array(G);
  const hist = new Int32Array(nT * size);
  const cell = new Float64Array(cells);
  for (let r = 0; r < R; r++) {
    // Draw `tasks` indices with replacement, counted straight into the weights of their row groups.
    const rng = Rng.derive(seed, STREAM.eval, EVAL_KEY.passKT, r);
    w.fill(0);
    for (let i = 0; i < tasks; i++) w[group[rng.int(tasks)]]++;
    for (let p = 0; p < books.length; p++) {
      accumulate(rows[p], w, nT, hist);
      passKTFromCodes(books[p], nT, tasks, hist, cell);
      const e = est[p];
      for (let q = 0; q < cells; q++) e[q * R + r] = cell[q];
    }
  }
  const intervals = (e: Float64Array): Interval[][] =>
    K.map((_, k) =>
      Array.from({ length: nT }, (_, j) => {
        const q = k * nT + j;
        return percentileInterval(e.subarray(q * R, (q + 1) * R), level);
      }),
    );
  let diffCi: Interval[][] | undefined;
  // The difference first: percentileInterval sorts the per-policy resamples in place.
  if (est.length === 2) {
    const d = new Float64Array(cells * R);
    for (let q = 0; q < d.length; q++) d[q] = est[0][q] - est[1][q];
    diffCi = intervals(d);
  }
  return { ci: est.map(intervals), diffCi };
}

export interface MeanIntervals {
  /** Per series: the mean over clusters and its interval. */
  mean: number[];
  ci: Interval[];
  /** With two series: mean and interval of (first − second), paired over the same resampled clusters. */
  diff?: number;
  diffCi?: Interval;
}

/**
 * Percentile intervals of the mean of per-cluster values (e.g. the continuation success rate of each
 * error state), resampling clusters; two series on the same clusters are resampled together.
 */
export function bootstrapMeans(
  series: readonly ArrayLike<number>[],
  options: BootstrapOptions = {},
): MeanIntervals {
  const R = options.resamples ?? DEFAULT_RESAMPLES;
  const seed = options.seed ?? 0;
  const level = options.level ?? 0.95;
  const m = series[0].length;
  for (const s of series) if (s.length !== m) throw new RangeError('paired series need the same clusters');
  const meanOf = (s: ArrayLike<number>) => {
    let sum = 0;
    for (let i = 0; i < m; i++) sum += s[i];
    return m > 0 ? sum / m : Number.NaN;
  };
  const mean = series.map(meanOf);
  if (m === 0) {
    return {
      mean,
      ci: series.map(() => [Number.NaN, Number.NaN] as Interval),
      ...(series.length === 2 ? { diff: Number.NaN, diffCi: [Number.NaN, Number.NaN] as Interval } : {}),
    };
  }
  const est = series.map(() => new Float64Array(R));
  const idx = new Int32Array(m);
  for (let r = 0; r < R; r++) {
    const rng = Rng.derive(seed, STREAM.eval, EVAL_KEY.means, r);
    for (let i = 0; i < m; i++) idx[i] = rng.int(m);
    for (let p = 0; p < series.length; p++) {
      const s = series[p];
      let sum = 0;
      for (let i = 0; i < m; i++) sum += s[idx[i]];
      est[p][r] = sum / m;
    }
  }
  const out: MeanIntervals = { mean, ci: [] };
  // The difference first: percentileInterval sorts the per-series resamples in place.
  if (series.length === 2) {
    const d = new Float64Array(R);
    for (let r = 0; r < R; r++) d[r] = est[0][r] - est[1][r];
    out.diff = mean[0] - mean[1];
    out.diffCi = percentileInterval(d, level);
  }
  out.ci = est.map((e) => percentileInterval(e, level));
  return out;
}
