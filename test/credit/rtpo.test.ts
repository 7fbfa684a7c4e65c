// RTPO credit (credit/rtpo.ts): the drift-corrected backward pass on hand-made trajectories, every value
// computed by hand from G_t = r_t + γ·min(c̄, ρ_{t+1})·G_{t+1} and the per-turn-index baseline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { correctedReturns, creditBatch, reverseTurn, rtpo, truncatedRatios } from '../../src/credit/index.ts';
import { close, traj } from './fixtures.ts';

test('rtpo: the backward pass multiplies each later return by its truncated ratio', () => {
  // γ 0.9, c = [·, 0.5, 0.8]: G2 = 1, G1 = 0.9·0.8·1 = 0.72, G0 = 0.9·0.5·0.72 = 0.324 (c_0 is never read).
  close([correctedReturns([0, 0, 1], [7, 0.5, 0.8], 0.9)], [[0.324, 0.72, 1]], 1e-12);
  // c ≡ 1 is the discounted return: 0.9² = 0.81.
  close([correctedReturns([0, 0, 1], [1, 1, 1], 0.9)], [[0.81, 0.9, 1]], 1e-12);
  // Rewards on the way are not re-weighted by their own turn's ratio, only by the later turns'.
  close([correctedReturns([1, 1], [0.5, 0.5], 1)], [[1.5, 1]], 1e-12);
  assert.throws(() => correctedReturns([0, 1], [1], 1), RangeError);
});

test('rtpo: the ratios truncated at c̄, refused when not a ratio', () => {
  const a = traj([0, 0, 1]);
  const ratios = [4, 2, 0.5];
  const ratio = (_: Trajectory, t: number) => ratios[t];
  assert.deepEqual(truncatedRatios(a, 1, ratio), [1, 1, 0.5]);
  assert.deepEqual(truncatedRatios(a, 3, ratio), [3, 2, 0.5]);
  assert.deepEqual(truncatedRatios(a, 1), [1, 1, 1]);
  assert.throws(() => truncatedRatios(a, 1, () => Number.NaN), /ratio NaN/);
  assert.throws(() => truncatedRatios(a, 1, () => -1), RangeError);
});

test('rtpo: a group by hand, with and without drift', () => {
  // A succeeds at its third turn; the current policy takes A's turn 1 twice as often as μ did and its
  // turn 2 half as often. B fails in two turns (ratios 1).
  const A = traj([0, 0, 1]);
  const B = traj([0, 0]);
  const ratios = new Map([
    [A, [1, 2, 0.5]],
    [B, [1, 1]],
  ]);
  const ratio = (t: Trajectory, k: number) => ratios.get(t)![k];
  // c̄ = 1, γ = 1: c_A = [1, 1, 0.5] → G_A = [0.5, 0.5, 1]; G_B = [0, 0]. Cohorts t0 {0.5, 0}, t1 {0.5, 0}
  // (mean 0.25, population std 0.25), t2 {1} alone → 0.
  close(rtpo([A, B], { gamma: 1, ratio, std: false }), [
    [0.25, 0.25, 0],
    [-0.25, -0.25],
  ]);
  close(rtpo([A, B], { gamma: 1, ratio, eps: 0 }), [
    [1, 1, 0],
    [-1, -1],
  ]);
  // c̄ = 3 keeps the 2: G_A = [2·0.5·1, 0.5, 1] = [1, 0.5, 1]; t0 {1, 0} → ±0.5.
  close(rtpo([A, B], { gamma: 1, cbar: 3, ratio, std: false }), [
    [0.5, 0.25, 0],
    [-0.5, -0.25],
  ]);
  // On-policy (no ratio): G_A = [1, 1, 1], the undrifted outcome: ±0.5 at t0 and t1.
  close(rtpo([A, B], { gamma: 1, std: false }), [
    [0.5, 0.5, 0],
    [-0.5, -0.5],
  ]);
});

test('rtpo: on-policy it is reverse-turn credit, bit for bit; registered as a method', () => {
  const g = [traj([0, 0, 1]), traj([0, 0, 0, 0], { end: 'truncated' }), traj([0, 1]), traj([0])];
  assert.deepEqual(rtpo(g), reverseTurn(g));
  assert.deepEqual(rtpo(g, { gamma: 0.5, std: false }), reverseTurn(g, { gamma: 0.5, std: false }));
  assert.deepEqual(rtpo(g, { ratio: () => 1 }), reverseTurn(g));
  assert.deepEqual(creditBatch(g, 'rtpo', {}), reverseTurn(g));
});
