// Evolution strategies without backprop (docs/methods.md §4; Salimans et al. 2017, "Evolution Strategies as
// a Scalable Alternative to RL", Alg. 2): N antithetic pairs ±ε_n ~ N(0, I), regenerated from
// (seed, iter, n) whenever needed and never stored; fitness F of θ ± σε_n; shaped fitness F̃ (z-score,
// or centred ranks in [−0.5, 0.5]); θ ← θ + α/(2Nσ) Σ_n (F̃_n⁺ − F̃_n⁻) ε_n. Memory: the parameters
// plus one noise vector.
import { Rng } from '../core/rng.ts';

export type Shaping = 'zscore' | 'rank';

const NOISE_STREAM = 0xe5;

/** Writes ε_n of iteration `iter` into `out` (deterministic in seed, iter, n). */
export function esNoise(seed: number, iter: number, n: number, out: Float32Array | Float64Array): void {
  const rng = Rng.derive(seed, NOISE_STREAM, iter, n);
  for (let i = 0; i < out.length; i++) out[i] = rng.normal();
}

/** θ ± σε_n into `out` (out may not alias theta); `noise` is scratch for ε_n. */
export function perturb(
  theta: ArrayLike<number>,
  sigma: number,
  sign: 1 | -1,
  seed: number,
  iter: number,
  n: number,
  noise: Float32Array | Float64Array,
  out: Float32Array | Float64Array,
): void {
  esNoise(seed, iter, n, noise);
  for (let i = 0; i < out.length; i++) out[i] = theta[i] + sign * sigma * noise[i];
}

/** Fitness shaping over all 2N evaluations. Centred ranks: rank/(M−1) − 0.5 (ties share the mean rank). */
export function shapeFitness(fitness: readonly number[], mode: Shaping): number[] {
  const m = fitness.length;
  if (m === 0) return [];
  if (mode === 'zscore') {
    const mean = fitness.reduce((s, x) => s + x, 0) / m;
    const std = Math.sqrt(fitness.reduce((s, x) => s + (x - mean) ** 2, 0) / m);
    return fitness.map((x) => (std > 0 ? (x - mean) / std : 0));
  }
  if (m === 1) return [0];
  const order = fitness.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const ranks = new Array<number>(m);
  for (let i = 0; i < m; ) {
    let j = i;
    while (j + 1 < m && order[j + 1][0] === order[i][0]) j++;
    const mean = (i + j) / 2;
    for (let k = i; k <= j; k++) ranks[order[k][1]] = mean;
    i = j + 1;
  }
  return ranks.map((r) => r / (m - 1) - 0.5);
}

/**
 * Applies one ES step to θ in place. `plus[n]`, `minus[n]` are the fitnesses of θ ± σε_n. Shaping runs
 * over all 2N values together so that ranks compare every evaluation. Each ε_n is regenerated into
 * `noise` and added straight into θ: no buffer beyond the one noise vector.
 */
export function esStep(
  theta: Float32Array | Float64Array,
  plus: readonly number[],
  minus: readonly number[],
  o: { sigma: number; lr: number; shaping: Shaping; seed: number; iter: number },
  noise: Float32Array | Float64Array,
): void {
  const N = plus.length;
  const shaped = shapeFitness([...plus, ...minus], o.shaping);
  const scale = o.lr / (2 * N * o.sigma);
  for (let n = 0; n < N; n++) {
    const w = scale * (shaped[n] - shaped[N + n]);
    if (w === 0) continue;
    esNoise(o.seed, o.iter, n, noise);
    for (let i = 0; i < theta.length; i++) theta[i] += w * noise[i];
  }
}
