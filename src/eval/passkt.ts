// Pass@(K,T): the unbiased pass@k estimator per task, read at every turn budget T (docs/methods.md §5).
//   pass@k(n, c) = 1 − C(n−c, k) / C(n, k)                      (Chen et al. 2021, "Evaluating Large
//                = 1 − Π_{i=n−c+1..n} (1 − k/i),  1 when n−c < k    Language Models Trained on Code", §2.1)
// The product form never forms a binomial coefficient, so it neither overflows nor cancels.
// Pass@(K,T) = mean over tasks of pass@K(n, c(T)), c(T) = #{samples whose firstSuccessTurn ≤ T}.
// pass@k depends on a task only through (n, c): the bootstrap (bootstrap.ts) works on histograms of
// (n, c) codes rather than on tasks, which is what makes 10 000 tasks × 2000 resamples cheap.
import { InputError } from '../core/errors.ts';

/** The unbiased pass@k of one task with n samples of which c succeeded (Chen et al. 2021, Fig. 3). */
export function passAtK(n: number, c: number, k: number): number {
  if (!(Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k)) || c < 0 || c > n || k < 1) {
    throw new RangeError(`pass@k needs integers 0 ≤ c ≤ n and k ≥ 1; got n=${n}, c=${c}, k=${k}`);
  }
  if (k > n) throw new RangeError(`pass@k needs k ≤ n; got n=${n}, k=${k}`);
  if (n - c < k) return 1;
  // pass@1 = c/n exactly; the product would carry rounding into the most-read figure.
  if (k === 1) return c / n;
  // (i − k) / i rather than 1 − k/i: one rounding per factor instead of two.
  let prod = 1;
  for (let i = n - c + 1; i <= n; i++) prod *= (i - k) / i;
  return 1 - prod;
}

/** pass@k(n, c) for c = 0..n. */
export function passAtKTable(n: number, k: number): Float64Array {
  const table = new Float64Array(n + 1);
  for (let c = 0; c <= n; c++) table[c] = passAtK(n, c, k);
  return table;
}

/** Success counts of a batch of tasks at each budget: the input of every Pass@(K,T) figure. */
export interface PassCounts {
  /** The budgets, increasing. */
  T: readonly number[];
  /** Samples per task. */
  n: Int32Array;
  /** c[task · T.length + j] = samples of the task that succeeded within T[j] turns. */
  c: Int32Array;
}

/**
 * Prefix-mode counts from first-success turns laid out task-major (`firstSuccess[task·n + sample]`,
 * 1-based, 0 when the sample never succeeded): c(T) = #{firstSuccessTurn ≤ T}. Valid only for runs at
 * T_max of a policy that does not see its budget (docs/methods.md §5).
 */
export function countsFromFirstSuccess(
  firstSuccess: ArrayLike<number>,
  samples: number,
  T: readonly number[],
): PassCounts {
  const tasks = firstSuccess.length / samples;
  if (!Number.isInteger(tasks)) throw new RangeError('firstSuccess must hold tasks × samples entries');
  const nT = T.length;
  const c = new Int32Array(tasks * nT);
  for (let i = 0; i < tasks; i++) {
    for (let s = 0; s < samples; s++) {
      const f = firstSuccess[i * samples + s];
      if (f <= 0) continue;
      // T is increasing: the sample counts for every budget from the first T ≥ f on.
      let j = 0;
      while (j < nT && T[j] < f) j++;
      for (; j < nT; j++) c[i * nT + j]++;
    }
  }
  return { T, n: new Int32Array(tasks).fill(samples), c };
}

/** The budgets and K values must be increasing integers ≥ 1, each K ≤ every task's n. */
export function checkKT(K: readonly number[], counts: PassCounts, field = '--K'): void {
  let minN = Number.POSITIVE_INFINITY;
  for (const n of counts.n) if (n < minN) minN = n;
  for (const k of K) {
    if (!Number.isInteger(k) || k < 1 || k > minN) {
      throw new InputError(field, k, `each K must be an integer from 1 to the samples per task (${minN})`);
    }
  }
}

/**
 * The (n, c) pairs of a batch coded as one integer each, code = offset(n) + c, with the pass@K value
 * of every code: the tables the histogram bootstrap multiplies by.
 */
export interface PassCodebook {
  /** Number of distinct codes. */
  size: number;
  /** codes[task · T.length + j] = offset(n_task) + c. */
  codes: Uint16Array | Int32Array;
  /** values[kIndex][code] = pass@K[kIndex](n, c). */
  values: Float64Array[];
}

/** One codebook for several policies on the same tasks (the paired bootstrap needs shared codes). */
export function codebooks(batches: readonly PassCounts[], K: readonly number[]): PassCodebook[] {
  const ns = [...new Set(batches.flatMap((b) => [...b.n]))].sort((x, y) => x - y);
  const offset = new Map<number, number>();
  let size = 0;
  for (const n of ns) {
    offset.set(n, size);
    size += n + 1;
  }
  const values = K.map((k) => {
    const v = new Float64Array(size);
    for (const n of ns) v.set(passAtKTable(n, k), offset.get(n)!);
    return v;
  });
  return batches.map((b) => {
    const nT = b.T.length;
    const codes = size <= 65536 ? new Uint16Array(b.c.length) : new Int32Array(b.c.length);
    for (let i = 0; i < b.n.length; i++) {
      const off = offset.get(b.n[i])!;
      for (let j = 0; j < nT; j++) codes[i * nT + j] = off + b.c[i * nT + j];
    }
    return { size, codes, values };
  });
}

/**
 * Pass@(K,T) of the tasks given by `weights` (multiplicity of each task; all ones = the batch itself):
 * out[k][j] for K[k], T[j]. `hist` is scratch of length T.length · size.
 */
export function passKTFromCodes(
  book: PassCodebook,
  nT: number,
  tasks: number,
  hist: Int32Array,
  out: Float64Array,
): void {
  const { size, values } = book;
  for (let k = 0; k < values.length; k++) {
    const v = values[k];
    for (let j = 0; j < nT; j++) {
      let sum = 0;
      const base = j * size;
      for (let code = 0; code < size; code++) sum += hist[base + code] * v[code];
      out[k * nT + j] = sum / tasks;
    }
  }
}

/** Histogram of codes per budget column over all tasks (each task once). */
export function histogram(book: PassCodebook, nT: number, hist: Int32Array): void {
  hist.fill(0);
  const { codes, size } = book;
  const tasks = codes.length / nT;
  for (let i = 0; i < tasks; i++) for (let j = 0; j < nT; j++) hist[j * size + codes[i * nT + j]]++;
}

/** Pass@(K,T) as rows K, columns T. */
export function passKT(counts: PassCounts, K: readonly number[]): number[][] {
  checkKT(K, counts);
  const nT = counts.T.length;
  const tasks = counts.n.length;
  if (tasks === 0) throw new RangeError('Pass@(K,T) needs at least one task');
  const [book] = codebooks([counts], K);
  const hist = new Int32Array(nT * book.size);
  const out = new Float64Array(K.length * nT);
  histogram(book, nT, hist);
  passKTFromCodes(book, nT, tasks, hist, out);
  return K.map((_, k) => Array.from(out.subarray(k * nT, (k + 1) * nT)));
}
