import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';

const draw = (r: Rng, n: number) => Array.from({ length: n }, () => r.uint32());

test('derive is a pure function of its keys', () => {
  assert.deepEqual(draw(Rng.derive(1, 2, 3), 8), draw(Rng.derive(1, 2, 3), 8));
  assert.notDeepEqual(draw(Rng.derive(1, 2, 3), 8), draw(Rng.derive(1, 2, 4), 8));
  assert.notDeepEqual(draw(Rng.derive(1, 2, 3), 8), draw(Rng.derive(1, 3, 2), 8));
  // Keys above 2^32 are hashed whole, not truncated.
  assert.notDeepEqual(draw(Rng.derive(2 ** 32 + 5), 4), draw(Rng.derive(5), 4));
  assert.throws(() => Rng.derive(0.5), /safe integer/);
});

test('state round trip continues the same stream', () => {
  const a = Rng.derive(7);
  draw(a, 13);
  const b = Rng.fromState(a.state());
  assert.deepEqual(draw(a, 20), draw(b, 20));
  const c = a.clone();
  assert.deepEqual(draw(a, 5), draw(c, 5));
});

test('float is in [0,1) with the right mean and variance', () => {
  const r = Rng.derive(11);
  const n = 200_000;
  let sum = 0;
  let sq = 0;
  for (let i = 0; i < n; i++) {
    const x = r.float();
    assert.ok(x >= 0 && x < 1);
    sum += x;
    sq += x * x;
  }
  const mean = sum / n;
  const variance = sq / n - mean * mean;
  // Standard error of the mean is sqrt(1/12/n) ≈ 6.5e-4; 5 of them.
  assert.ok(Math.abs(mean - 0.5) < 0.0033, `mean ${mean}`);
  assert.ok(Math.abs(variance - 1 / 12) < 0.002, `variance ${variance}`);
});

test('int is uniform over [0, n) (chi-square)', () => {
  const r = Rng.derive(12);
  const k = 7;
  const n = 70_000;
  const counts = new Array(k).fill(0);
  for (let i = 0; i < n; i++) counts[r.int(k)]++;
  const expected = n / k;
  const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
  // 6 degrees of freedom: P(chi2 > 22.46) = 0.001.
  assert.ok(chi2 < 22.46, `chi2 ${chi2}`);
});

test('normal has mean 0 and variance 1', () => {
  const r = Rng.derive(13);
  const n = 100_000;
  let sum = 0;
  let sq = 0;
  for (let i = 0; i < n; i++) {
    const x = r.normal();
    sum += x;
    sq += x * x;
  }
  assert.ok(Math.abs(sum / n) < 0.016);
  assert.ok(Math.abs(sq / n - 1) < 0.03);
});

test('categorical follows its weights and never picks a zero weight', () => {
  const r = Rng.derive(14);
  const w = [0, 1, 3, 0];
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 40_000; i++) counts[r.categorical(w)]++;
  assert.equal(counts[0], 0);
  assert.equal(counts[3], 0);
  assert.ok(Math.abs(counts[2] / 40_000 - 0.75) < 0.01);
  assert.throws(() => r.categorical([0, 0]), /all weights are zero/);
});
