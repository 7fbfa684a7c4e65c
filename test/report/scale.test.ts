import assert from 'node:assert/strict';
import { test } from 'node:test';
import { axisTicks, formatTick, labelDecimals, logTicks, niceTicks } from '../../src/report/scale.ts';

// A tiny deterministic generator for ranges (the tests must not depend on Math.random).
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function isNiceStep(step: number): boolean {
  const mag = 10 ** Math.floor(Math.log10(step) + 1e-12);
  return [1, 2, 5, 10].some((m) => Math.abs(step / mag - m) < 1e-9);
}

test('nice ticks on familiar ranges', () => {
  assert.deepEqual(niceTicks(0, 1).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0.03, 0.97).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0, 199, 6).ticks, [0, 50, 100, 150, 200]);
  assert.deepEqual(niceTicks(-0.137, 0.137, 4).ticks, [-0.2, -0.1, 0, 0.1, 0.2]);
  assert.deepEqual(niceTicks(0.3, 0.6).ticks, [0.3, 0.4, 0.5, 0.6]);
  // Degenerate and broken input still gives an axis.
  assert.deepEqual(niceTicks(0, 0).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0.5, 0.5).ticks, [0.44, 0.46, 0.48, 0.5, 0.52, 0.54, 0.56]);
  assert.deepEqual(niceTicks(Number.NaN, 3).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(1, 0).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.equal(formatTick(-0.0000001, 2), '0.00');
  assert.deepEqual(
    niceTicks(0, 1).ticks.map((t) => formatTick(t, 1)),
    ['0.0', '0.2', '0.4', '0.6', '0.8', '1.0'],
  );
});

test('nice ticks cover any range with round, evenly spaced values and no float noise', () => {
  const rand = lcg(7);
  for (let i = 0; i < 2000; i++) {
    const scale = 10 ** Math.floor(rand() * 12 - 6);
    const a = (rand() - 0.5) * 10 * scale;
    const b = a + rand() * 10 * scale;
    const count = 2 + Math.floor(rand() * 8);
    const t = niceTicks(a, b, count);
    assert.ok(isNiceStep(t.step), `step ${t.step}`);
    assert.ok(t.ticks[0] <= a && t.ticks[t.ticks.length - 1] >= b, `[${a}, ${b}] not covered by ${t.ticks}`);
    assert.ok(t.ticks.length >= 2 && t.ticks.length <= 2 * count + 3, `${t.ticks.length} ticks for ${count}`);
    // Ticks do not overshoot by a whole step on either side.
    assert.ok(t.ticks[1] > a && t.ticks[t.ticks.length - 2] < b, `overshoot: [${a}, ${b}] ${t.ticks}`);
    t.ticks.forEach((v, k) => {
      assert.ok(Math.abs(v / t.step - Math.round(v / t.step)) < 1e-6, `${v} not a multiple of ${t.step}`);
      if (k > 0) assert.ok(Math.abs(v - t.ticks[k - 1] - t.step) < t.step * 1e-6);
      // Printed with the reported decimals, a tick reads back as itself.
      assert.equal(Number(formatTick(v, t.decimals)), v);
    });
  }
});

test('log ticks: 1-2-5 steps for budgets, powers of ten over wide ranges', () => {
  assert.deepEqual(logTicks(10, 100).ticks, [10, 20, 50, 100]);
  assert.deepEqual(logTicks(5, 100).domain, [5, 100]);
  const t = logTicks(3, 70);
  assert.deepEqual(
    [t.ticks, t.domain],
    [
      [2, 5, 10, 20, 50, 100],
      [2, 100],
    ],
  );
  assert.deepEqual(logTicks(0.05, 0.5).ticks, [0.05, 0.1, 0.2, 0.5]);
  assert.equal(logTicks(0.05, 0.5).decimals, 2);
  assert.deepEqual(logTicks(1, 1e6).ticks, [1, 10, 100, 1000, 10000, 100000, 1000000]);
  assert.deepEqual(logTicks(10, 10).domain, [10, 20]);
  assert.deepEqual(logTicks(-1, 0).domain, [1, 10]);
});

test('axisTicks honours a fixed domain and falls back to [0, 1] without data', () => {
  const fixed = axisTicks([5, 6], [0, 0.7]);
  assert.deepEqual(fixed.domain, [0, 0.7]);
  assert.ok(fixed.ticks.every((t) => t >= 0 && t <= 0.7));
  assert.deepEqual(axisTicks([]).domain, [0, 1]);
  assert.deepEqual(axisTicks([Number.NaN, Number.POSITIVE_INFINITY]).domain, [0, 1]);
  assert.deepEqual(axisTicks([0.31, 0.59, Number.NaN]).ticks, [0.3, 0.4, 0.5, 0.6]);
  assert.equal(labelDecimals([10, 20, 50]), 0);
  assert.equal(labelDecimals([0.5, 0.25]), 2);
});
