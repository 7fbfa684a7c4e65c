// Central finite differences against the tape's gradients (a helper for the gradient tests).
//
// The op's output y is reduced to L = Σ w ⊙ y with fixed random weights w (so every output element
// matters, with a different weight), L is accumulated in double, and each input element x is moved to
// the float32 neighbours x ± h actually stored; the difference quotient divides by their true distance.
// With h = 1e-2 on inputs of order 1 the quotient's error is ~1e-5 (float32 rounding of y) plus
// h²·f'''/6 ≈ 2e-5 (truncation), well inside the tolerance (2e-4 + 2e-3·|numeric| per element; the
// worst op uses a quarter of it); a gradient off by 1% or in the wrong element is outside it
// (test/nn/grad.test.ts checks that the checker catches both).
import { Rng } from '../../src/core/rng.ts';
import { backward, noGrad, type Tensor } from '../../src/nn/tensor.ts';

export interface GradCheck {
  /** max over elements of |analytic − numeric| / (atol + rtol·|numeric|); ≤ 1 passes. */
  worst: number;
  /** ‖analytic − numeric‖ / ‖numeric‖ over all inputs. */
  relative: number;
  where: string;
}

export const H = 1e-2;
export const ATOL = 2e-4;
export const RTOL = 2e-3;

export function gradCheck(
  f: () => Tensor,
  inputs: readonly Tensor[],
  opts: { h?: number; seed?: number; corrupt?: (g: Float32Array, k: number) => void } = {},
): GradCheck {
  const h = opts.h ?? H;
  const y = f();
  const rng = Rng.derive(opts.seed ?? 7, 0x9c);
  const w = new Float32Array(y.size);
  for (let i = 0; i < w.length; i++) w[i] = 2 * rng.float() - 1;
  for (const x of inputs) x.grad = null;
  backward(y, w);
  const L = () =>
    noGrad(() => {
      const out = f().data;
      let s = 0;
      for (let i = 0; i < out.length; i++) s += w[i] * out[i];
      return s;
    });
  let worst = 0;
  let where = '';
  let diff2 = 0;
  let num2 = 0;
  inputs.forEach((x, k) => {
    const g = x.grad ?? new Float32Array(x.size);
    opts.corrupt?.(g, k);
    for (let i = 0; i < x.size; i++) {
      const x0 = x.data[i];
      x.data[i] = x0 + h;
      const xp = x.data[i];
      const lp = L();
      x.data[i] = x0 - h;
      const xm = x.data[i];
      const lm = L();
      x.data[i] = x0;
      const fd = (lp - lm) / (xp - xm);
      const e = Math.abs(g[i] - fd) / (ATOL + RTOL * Math.abs(fd));
      diff2 += (g[i] - fd) ** 2;
      num2 += fd * fd;
      if (e > worst) {
        worst = e;
        where = `input ${k}[${i}]: analytic ${g[i]}, numeric ${fd}`;
      }
    }
  });
  return { worst, relative: Math.sqrt(diff2 / Math.max(num2, 1e-30)), where };
}

/** Values uniform in ±scale, kept at least `gap` away from 0 (kinks of relu sit there). */
export function randomData(n: number, seed: number, scale = 1, gap = 0): Float32Array {
  const rng = Rng.derive(seed, 0x5eed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let v = 0;
    do v = (2 * rng.float() - 1) * scale;
    while (Math.abs(v) < gap);
    out[i] = v;
  }
  return out;
}
