import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { aggregationWeights, k3, type PgBatch, type PgCoefficients, pgLoss } from '../../src/train/ppo.ts';

const PPO: PgCoefficients = { clipLow: 0.2, clipHigh: 0.2, klCoef: 0, entCoef: 0 };
const DAPO: PgCoefficients = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, entCoef: 0 };
const one = (logits: number[], action: number, logpOld: number, A: number): PgBatch => ({
  n: 1,
  nA: logits.length,
  logits,
  actions: [action],
  logpOld: [logpOld],
  advantages: [A],
  weights: [1],
});

test('hand-worked case: ratio 1, two actions', () => {
  const r = pgLoss(one([0, 0], 0, Math.log(0.5), 2), PPO);
  assert.equal(r.loss, -2);
  // dL/dlogp = −ρA = −2; dlogp/dz = [1 − 0.5, −0.5]
  assert.deepEqual([...r.dlogits], [-1, 1]);
  assert.equal(r.clipfrac, 0);
  assert.equal(r.approxKl, 0);
  assert.equal(r.entropy.toFixed(12), Math.log(2).toFixed(12));
});

test('clipping at the upper bound (clip-higher 0.28) and the lower bound (0.2)', () => {
  // π(0) = 0.75 with logits [ln 3, 0]; choose logp_old so that ρ = 1.5 or 0.5.
  const logits = [Math.log(3), 0];
  const hi = Math.log(0.75 / 1.5);
  const lo = Math.log(0.75 / 0.5);
  // A > 0, ρ = 1.5 > 1.28: the clipped branch wins the min, no gradient.
  let r = pgLoss(one(logits, 0, hi, 1), DAPO);
  assert.ok(Math.abs(r.loss + 1.28) < 1e-12);
  assert.ok(r.dlogits.every((x) => x === 0));
  assert.equal(r.clipfrac, 1);
  // Same ρ under symmetric PPO clips at 1.2.
  assert.ok(Math.abs(pgLoss(one(logits, 0, hi, 1), PPO).loss + 1.2) < 1e-12);
  // A < 0, ρ = 1.5: the unclipped branch is smaller (−1.5 < −1.28) and keeps its gradient.
  r = pgLoss(one(logits, 0, hi, -1), DAPO);
  assert.ok(Math.abs(r.loss - 1.5) < 1e-12);
  assert.ok(Math.abs(r.dlogits[0] - 1.5 * 0.25) < 1e-12);
  // A < 0, ρ = 0.5 < 0.8: clipped, no gradient.
  r = pgLoss(one(logits, 0, lo, -1), DAPO);
  assert.ok(Math.abs(r.loss - 0.8) < 1e-12);
  assert.ok(r.dlogits.every((x) => x === 0));
  // A > 0, ρ = 0.5: unclipped branch (0.5 < 0.8) keeps the gradient −ρA·(1−p).
  r = pgLoss(one(logits, 0, lo, 1), DAPO);
  assert.ok(Math.abs(r.loss + 0.5) < 1e-12);
  assert.ok(Math.abs(r.dlogits[0] + 0.5 * 0.25) < 1e-12);
});

test('dual clip: a negative advantage with a huge ratio is bounded by c·A and carries no gradient', () => {
  const logits = [Math.log(3), 0];
  const old = Math.log(0.75 / 5); // ρ = 5
  const dual = { ...DAPO, dualClip: 3 };
  let r = pgLoss(one(logits, 0, old, -1), dual);
  assert.ok(Math.abs(r.loss - 3) < 1e-12); // max(min(−5, −1.28), −3) = −3
  assert.ok(r.dlogits.every((x) => x === 0));
  // Without it the unclipped branch wins: loss 5 and a gradient pushing the action down.
  r = pgLoss(one(logits, 0, old, -1), DAPO);
  assert.ok(Math.abs(r.loss - 5) < 1e-12);
  assert.ok(r.dlogits[0] > 0);
  // Below c the dual clip changes nothing; positive advantages are never affected.
  const two = Math.log(0.75 / 2);
  assert.deepEqual(pgLoss(one(logits, 0, two, -1), dual), pgLoss(one(logits, 0, two, -1), DAPO));
  assert.deepEqual(pgLoss(one(logits, 0, old, 1), dual), pgLoss(one(logits, 0, old, 1), DAPO));
});

test('gradient matches central finite differences with KL and entropy terms', () => {
  const rng = Rng.derive(3);
  const n = 7;
  const nA = 4;
  const logits = Array.from({ length: n * nA }, () => rng.normal());
  const batch: PgBatch = {
    n,
    nA,
    logits,
    actions: Array.from({ length: n }, () => rng.int(nA)),
    // Old log-probs near the current ones so that some turns are clipped and some are not.
    logpOld: Array.from({ length: n }, () => Math.log(0.25) + 0.4 * rng.normal()),
    advantages: Array.from({ length: n }, () => rng.normal()),
    weights: aggregationWeights([3, 4], 'sequence-mean'),
    logpRef: Array.from({ length: n }, () => Math.log(0.25) + 0.3 * rng.normal()),
  };
  const coef = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0.1, entCoef: 0.01, dualClip: 3 };
  const { dlogits } = pgLoss(batch, coef);
  const h = 1e-6;
  for (let i = 0; i < n * nA; i++) {
    const plus = [...logits];
    const minus = [...logits];
    plus[i] += h;
    minus[i] -= h;
    const fd =
      (pgLoss({ ...batch, logits: plus }, coef).loss - pgLoss({ ...batch, logits: minus }, coef).loss) /
      (2 * h);
    assert.ok(Math.abs(fd - dlogits[i]) < 1e-7, `logit ${i}: fd ${fd} vs ${dlogits[i]}`);
  }
});

test('k3 is non-negative and zero exactly at equality', () => {
  assert.equal(k3(-1.3, -1.3), 0);
  const rng = Rng.derive(4);
  for (let i = 0; i < 1000; i++) {
    const a = -5 * rng.float();
    const b = -5 * rng.float();
    assert.ok(k3(a, b) >= 0);
    if (a !== b) assert.ok(k3(a, b) > 0);
  }
  // Mean of k3 under π is KL(π‖π_ref): for π = (0.5, 0.5), π_ref = (0.9, 0.1).
  const kl = 0.5 * k3(Math.log(0.5), Math.log(0.9)) + 0.5 * k3(Math.log(0.5), Math.log(0.1));
  assert.ok(Math.abs(kl - (0.5 * Math.log(0.5 / 0.9) + 0.5 * Math.log(0.5 / 0.1))) < 1e-12);
});

test('aggregation weights', () => {
  assert.deepEqual([...aggregationWeights([1, 3], 'turn-mean')], [0.25, 0.25, 0.25, 0.25]);
  assert.deepEqual([...aggregationWeights([1, 0, 2], 'sequence-mean')], [0.5, 0.25, 0.25]);
  assert.deepEqual([...aggregationWeights([2, 1], 'constant-sum', 100)], [0.01, 0.01, 0.01]);
});
