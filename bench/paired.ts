// The comparison every issue-29 bench prints: a paired difference over seeds (method − baseline, the same
// seeds on both arms), its mean and 95% Student t interval. Shared by the bench/ scripts of
// docs/methods-measured.md so that each section's interval is computed the same way.

/** Two-sided 95% Student t quantiles by degrees of freedom (1–10), then the normal's. */
const T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];

/** Rounded to 4 decimals (the benches' printed precision). */
export const r4 = (x: number): number => Number(x.toFixed(4));

/** Mean and 95% t-interval of paired differences (NaN bounds below 2 seeds). */
export function paired(xs: readonly number[]): { mean: number; lo: number; hi: number } {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, lo: Number.NaN, hi: Number.NaN };
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const half = (T95[n - 2] ?? 1.96) * (sd / Math.sqrt(n));
  return { mean: r4(mean), lo: r4(mean - half), hi: r4(mean + half) };
}

/** One seed of an adaptation bench: held-out success before, and of each arm at every `at` point. */
export interface AdaptRow {
  before: number;
  adapted: number[];
  control: number[];
}

/** What bench/adapt.ts and bench/adapt-language.ts print of their rows: the mean before, the curve
 * (each arm's mean and the paired differences at every point), the rows themselves. */
export function adaptCurve(at: readonly number[], seeds: readonly number[], rows: readonly AdaptRow[]) {
  const mean = (xs: number[]) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
  return {
    before: mean(rows.map((r) => r.before)),
    curve: at.map((n, j) => ({
      episodes: n,
      adapted: mean(rows.map((r) => r.adapted[j])),
      control: mean(rows.map((r) => r.control[j])),
      adaptedMinusBefore: paired(rows.map((r) => r.adapted[j] - r.before)),
      adaptedMinusControl: paired(rows.map((r) => r.adapted[j] - r.control[j])),
    })),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      before: r4(rows[i].before),
      adapted: rows[i].adapted.map(r4),
      control: rows[i].control.map(r4),
    })),
  };
}
