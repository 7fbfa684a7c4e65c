import assert from 'node:assert/strict';
import { test } from 'node:test';
import { esNoise, esStep, perturb, shapeFitness } from '../../src/train/es.ts';

test('noise is regenerated identically from (seed, iter, n) and differs across n', () => {
  const a = new Float64Array(16);
  const b = new Float64Array(16);
  esNoise(1, 2, 3, a);
  esNoise(1, 2, 3, b);
  assert.deepEqual(a, b);
  esNoise(1, 2, 4, b);
  assert.notDeepEqual(a, b);
  const out = new Float64Array(16);
  const theta = new Float64Array(16).fill(1);
  perturb(theta, 0.5, -1, 1, 2, 3, b, out);
  for (let i = 0; i < 16; i++) assert.equal(out[i], 1 - 0.5 * a[i]);
});

test('fitness shaping: centred ranks with ties, z-scores', () => {
  assert.deepEqual(shapeFitness([3, 1, 2], 'rank'), [0.5, -0.5, 0]);
  assert.deepEqual(shapeFitness([1, 1, 0, 2], 'rank'), [0, 0, -0.5, 0.5]);
  assert.deepEqual(shapeFitness([5, 5], 'zscore'), [0, 0]);
  const z = shapeFitness([1, 2, 3, 4], 'zscore');
  assert.ok(Math.abs(z.reduce((s, x) => s + x, 0)) < 1e-12);
  assert.ok(Math.abs(z.reduce((s, x) => s + x * x, 0) / 4 - 1) < 1e-12);
});

test('on a quadratic, the ES step points along the true gradient and converges', () => {
  // f(θ) = −|θ − θ*|²; ∇f = −2(θ − θ*).
  const dim = 20;
  const target = Float64Array.from({ length: dim }, (_, i) => Math.sin(i));
  const f = (x: ArrayLike<number>) => -Array.from(target).reduce((s, t, i) => s + (x[i] - t) ** 2, 0);
  const theta = new Float64Array(dim);
  const noise = new Float64Array(dim);
  const scratch = new Float64Array(dim);
  const o = { sigma: 0.1, lr: 0.05, shaping: 'zscore' as const, seed: 9 };
  const start = f(theta);
  for (let iter = 0; iter < 300; iter++) {
    const plus: number[] = [];
    const minus: number[] = [];
    for (let n = 0; n < 32; n++) {
      perturb(theta, o.sigma, 1, o.seed, iter, n, noise, scratch);
      plus.push(f(scratch));
      perturb(theta, o.sigma, -1, o.seed, iter, n, noise, scratch);
      minus.push(f(scratch));
    }
    const before = Float64Array.from(theta);
    esStep(theta, plus, minus, { ...o, iter }, noise);
    if (iter === 0) {
      // Cosine between the step and the true gradient: a random direction in 20 dimensions has |cos| ≈ 0.2.
      const step = theta.map((x, i) => x - before[i]);
      const grad = before.map((x, i) => -2 * (x - target[i]));
      const dot = step.reduce((s, x, i) => s + x * grad[i], 0);
      const cos = dot / Math.hypot(...step) / Math.hypot(...grad);
      assert.ok(cos > 0.7, `cos ${cos}`);
    }
  }
  // z-scored steps keep a constant size, so θ ends in a noise ball around θ*, not on it.
  assert.ok(-f(theta) < 0.02 * -start, `distance² ${-f(theta)} from ${-start}`);
});
