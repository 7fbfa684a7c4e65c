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
