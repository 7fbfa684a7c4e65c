import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { PrefixGuide } from '../../src/train/guidance.ts';

const opts = { maxPrefix: 10, sigma: 1.5, prior: 0, strength: 2 };

test('prefix mean tracks the logged difficulty of each task', () => {
  const g = new PrefixGuide(opts);
  assert.equal(g.meanPrefix('unseen'), 10);
  g.record('easy', 8, 8);
  g.record('hard', 0, 8);
  g.record('half', 3, 6);
  assert.equal(g.successRate('easy'), 0.8); // (8 + 0) / (8 + 2)
  assert.ok(Math.abs(g.meanPrefix('easy') - 2) < 1e-12);
  assert.equal(g.meanPrefix('hard'), 10);
  assert.ok(Math.abs(g.meanPrefix('half') - 10 * (1 - 3 / 8)) < 1e-12);
  g.record('half', 5, 2); // logs accumulate
  assert.equal(g.successRate('half'), 0.8);
});

test('sampled prefixes are Gaussian around the mean, rounded and clipped to [0, max]', () => {
  const g = new PrefixGuide(opts);
  g.record('mid', 4, 8); // ŝ = 0.4, μ = 6
  const rng = Rng.derive(1);
  let sum = 0;
  const n = 20_000;
  for (let i = 0; i < n; i++) {
    const L = g.samplePrefix('mid', rng);
    assert.ok(Number.isInteger(L) && L >= 0 && L <= 10);
    sum += L;
  }
  assert.ok(Math.abs(sum / n - 6) < 0.05, `mean ${sum / n}`);
  g.record('easy', 100, 100);
  for (let i = 0; i < 1000; i++) assert.ok(g.samplePrefix('easy', rng) <= 5);
});

test('state round trip (checkpoints)', () => {
  const g = new PrefixGuide(opts);
  g.record('b', 1, 4);
  g.record('a', 2, 3);
  const again = new PrefixGuide(opts, JSON.parse(JSON.stringify(g.state())));
  assert.deepEqual(again.state(), g.state());
  assert.deepEqual(Object.keys(g.state().log), ['a', 'b']);
  assert.equal(again.meanPrefix('b'), g.meanPrefix('b'));
});
