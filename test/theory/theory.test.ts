// The seeds' closed forms (docs/methods.md §1) and their Monte-Carlo checks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import {
  compound,
  deadGroupOdds,
  simulateCompound,
  simulateDeadGroups,
  tokenBudget,
} from '../../src/theory/index.ts';

const uniform = (seed: number) => {
  const rng = Rng.derive(seed, 99);
  return () => rng.float();
};

test('compound: 0.98^50 ≈ 0.364, 0.95^50 ≈ 0.077', () => {
  assert.equal(compound(0.98, 50).toFixed(3), '0.364');
  assert.equal(compound(0.95, 50).toFixed(4), '0.0769');
  assert.equal(compound(0.5, 0), 1);
  assert.throws(() => compound(1.2, 3), RangeError);
  assert.throws(() => compound(0.5, 1.5), RangeError);
});

test('dead groups: p = 0.05, G = 8, batch 64 (docs/methods.md §1)', () => {
  const d = deadGroupOdds(0.05, 8, 64);
  assert.equal(d.allFail.toFixed(4), '0.6634');
  assert.equal(d.allSucceed, 0.05 ** 8);
  assert.equal(d.poisson.toFixed(4), '0.6703');
  assert.equal(d.expectedSuccesses, 3.2);
  assert.equal(d.expectedLiveGroups.toFixed(2), '2.69');
  assert.equal(d.liveShare.toFixed(3), '0.337');
  assert.equal(d.expectedLiveGroups, 8 * d.liveShare);
  // Degenerate: a group of one is always dead; p = 0 and p = 1 leave no live group.
  assert.equal(deadGroupOdds(0.3, 1).liveShare, 0);
  assert.equal(deadGroupOdds(0, 8).allFail, 1);
  assert.equal(deadGroupOdds(1, 8).allSucceed, 1);
  assert.equal(deadGroupOdds(1, 8).liveShare, 0);
  assert.equal(deadGroupOdds(0.5, 4).expectedSuccesses, 2, 'batch defaults to one group');
  assert.throws(() => deadGroupOdds(0.5, 8, 20), /multiple of G/);
  assert.throws(() => deadGroupOdds(-0.1, 8), RangeError);
  assert.throws(() => deadGroupOdds(0.1, 0), RangeError);
});

test('tokens: the budget lines of docs/methods.md §1', () => {
  const lines: [number, number, number][] = [
    [500, 32e6, 1],
    [100_000, 6.4e9, 200],
    [131_000, 8.384e9, 262],
    [30_000, 1.92e9, 60],
  ];
  for (const [per, total, times] of lines) {
    const t = tokenBudget(per, 64, 1000);
    assert.equal(t.totalTokens, total);
    assert.equal(t.vsBaseline, times);
    assert.equal(t.baselineTokens, 32e6);
  }
  assert.equal(tokenBudget(1000, 8, 10, 250).vsBaseline, 4);
  assert.throws(() => tokenBudget(0, 64, 1000), RangeError);
});

test('simulate: Monte Carlo agrees with the closed forms within 4 standard errors', () => {
  const c = simulateCompound(0.95, 50, 100_000, uniform(1));
  assert.ok(Math.abs(c.value - 0.95 ** 50) < 4 * c.stdErr, `${c.value} ± ${c.stdErr}`);
  const d = simulateDeadGroups(0.05, 8, 64, 20_000, uniform(2));
  const exact = deadGroupOdds(0.05, 8, 64);
  for (const k of ['allFail', 'expectedSuccesses', 'expectedLiveGroups', 'liveShare'] as const) {
    assert.ok(
      Math.abs(d[k].value - exact[k]) < 4 * d[k].stdErr,
      `${k}: ${d[k].value} ± ${d[k].stdErr} vs ${exact[k]}`,
    );
  }
  // The same seed gives the same estimate.
  assert.deepEqual(simulateCompound(0.9, 10, 1000, uniform(5)), simulateCompound(0.9, 10, 1000, uniform(5)));
});
