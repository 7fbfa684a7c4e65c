// Every estimator on groups worked out by hand, including the degenerate ones.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  anchorGroups,
  discounted,
  drgrpo,
  gae,
  gigpo,
  grpo,
  outcome,
  reverseTurn,
  rloo,
  turnLevel,
  valuesFromArrays,
} from '../../src/credit/index.ts';
import { close, traj } from './fixtures.ts';

// One success among four: mean 0.25, population std √0.1875 = 0.4330 (torch's n−1 std would be 0.5).
const oneOfFour = () => [traj([0, 0, 1]), traj([0, 0]), traj([0, 0, 0, 0]), traj([0])];

test('outcome: every turn gets R_i; one-turn and zero-turn trajectories keep their shape', () => {
  close(outcome(oneOfFour()), [[1, 1, 1], [0, 0], [0, 0, 0, 0], [0]]);
  close(outcome([traj([2.5]), traj([])]), [[2.5], []]);
});

test('discounted: G_t = Σ γ^{k−t} r_k', () => {
  close(discounted([traj([0, 0, 1]), traj([1, 0, 1])], { gamma: 0.5 }), [
    [0.25, 0.5, 1],
    [1.25, 0.5, 1],
  ]);
  close(discounted([traj([0, 0, 1])]), [[0.99 ** 2, 0.99, 1]], 1e-15);
});

test('grpo: population std (√3 and −1/√3, not torch 1.5), ε, std=false', () => {
  const g = oneOfFour();
  close(
    grpo(g, { eps: 0 }),
    [
      [Math.sqrt(3), Math.sqrt(3), Math.sqrt(3)],
      Array(2).fill(-1 / Math.sqrt(3)),
      Array(4).fill(-1 / Math.sqrt(3)),
      [-1 / Math.sqrt(3)],
    ],
    1e-12,
  );
  // Default ε = 1e-6 shrinks the advantage by the factor σ/(σ+ε).
  const sigma = Math.sqrt(0.1875);
  assert.equal(grpo(g)[0][0], 0.75 / (sigma + 1e-6));
  close(grpo(g, { std: false }), [[0.75, 0.75, 0.75], [-0.25, -0.25], Array(4).fill(-0.25), [-0.25]], 1e-15);
});

test('grpo, drgrpo, rloo: dead groups, G = 1 and equal non-binary outcomes give exact zeros', () => {
  const allFail = [traj([0, 0]), traj([0]), traj([0, 0, 0])];
  const allSucceed = [traj([1]), traj([0, 1])];
  const tenths = [traj([0.1]), traj([0.1]), traj([0.1])]; // mean 0.1 + 2e-17: must still give 0
  for (const f of [grpo, drgrpo, rloo]) {
    for (const g of [allFail, allSucceed, tenths, [traj([0, 1])]]) {
      for (const row of f(g)) for (const a of row) assert.equal(a, 0, `${f.name}: ${a}`);
    }
  }
});

test('drgrpo: R − mean; rloo: R − mean of the others = G/(G−1)(R − mean)', () => {
  close(drgrpo(oneOfFour()), [[0.75, 0.75, 0.75], [-0.25, -0.25], Array(4).fill(-0.25), [-0.25]], 1e-15);
  close(rloo(oneOfFour()), [[1, 1, 1], [-1 / 3, -1 / 3], Array(4).fill(-1 / 3), [-1 / 3]], 1e-15);
  close(rloo([traj([1]), traj([0, 0])]), [[1], [-1, -1]]);
});

test('gae: hand-worked terminated vs truncated (bootstrap V(s_T) only on truncation)', () => {
  // rewards [0, 1], V(s0) = 0.5, V(s1) = 0.8, V(s2) = 0.6; γ = 0.9, λ = 0.5.
  const calls: number[] = [];
  const V = [0.5, 0.8, 0.6];
  const values = (_t: unknown, t: number) => {
    calls.push(t);
    return V[t];
  };
  const terminated = traj([0, 1], { end: 'terminated' });
  const truncated = traj([0, 1], { end: 'truncated' });
  // terminated: δ1 = 1 − 0.8 = 0.2; δ0 = 0.9·0.8 − 0.5 = 0.22; A0 = 0.22 + 0.45·0.2 = 0.31
  close(gae([terminated], { gamma: 0.9, lambda: 0.5, values }), [[0.31, 0.2]], 1e-12);
  assert.deepEqual(calls, [1, 0], 'V(s_T) is not asked for a terminated trajectory');
  calls.length = 0;
  // truncated: δ1 = 1 + 0.9·0.6 − 0.8 = 0.74; A0 = 0.22 + 0.45·0.74 = 0.553
  close(gae([truncated], { gamma: 0.9, lambda: 0.5, values }), [[0.553, 0.74]], 1e-12);
  assert.deepEqual(calls, [2, 1, 0]);
  // An error ending is not bootstrapped either.
  close(gae([traj([0, 1], { end: 'error' })], { gamma: 0.9, lambda: 0.5, values }), [[0.31, 0.2]], 1e-12);
});

test('gae: λ = 0 is the TD error, λ = 1 with γ = 1 is G_t − V(s_t); values from arrays', () => {
  const a = traj([0, 0, 1]);
  const b = traj([0, 0], { end: 'truncated' });
  const values = valuesFromArrays(
    [a, b],
    [
      [0.2, 0.4, 0.7],
      [0.1, 0.3, 0.9],
    ],
  );
  close(
    gae([a, b], { gamma: 1, lambda: 0, values }),
    [
      [0.2, 0.3, 0.3],
      [0.2, 0.6],
    ],
    1e-12,
  );
  close(
    gae([a, b], { gamma: 1, lambda: 1, values }),
    [
      [0.8, 0.6, 0.3],
      [0.8, 0.6],
    ],
    1e-12,
  );
  // One-turn trajectory and V ≡ 0: GAE is the discounted λ-return.
  close(gae([traj([1])], { values: () => 0 }), [[1]]);
  assert.throws(() => valuesFromArrays([b], [[0.1, 0.3]]), /values\[0\] has 2 entries/);
});

test('gigpo: anchor states cluster across trajectories and time steps; singletons get A^S = 0', () => {
  // A visits 0,1,0,2 and succeeds; B visits 0,1,3 and fails. γ = 0.5.
  const A = traj([{ obs: 0 }, { obs: 1 }, { obs: 0 }, { obs: 2, reward: 1 }]);
  const B = traj([{ obs: 0 }, { obs: 1 }, { obs: 3 }]);
  const clusters = anchorGroups([A, B]);
  assert.deepEqual(clusters.get('0'), [
    [0, 0],
    [0, 2],
    [1, 0],
  ]);
  assert.deepEqual(clusters.get('1'), [
    [0, 1],
    [1, 1],
  ]);
  // F = 1: returns A [0.125, 0.25, 0.5, 1], B [0, 0, 0]; cluster "0" mean 0.625/3, cluster "1" mean 0.125.
  const m0 = 0.625 / 3;
  close(gigpo([A, B], { gamma: 0.5, std: false }), [
    [0.5 + 0.125 - m0, 0.5 + 0.125, 0.5 + 0.5 - m0, 0.5],
    [-0.5 - m0, -0.5 - 0.125, -0.5],
  ]);
  // ω scales only the step part.
  close(gigpo([A, B], { gamma: 0.5, std: false, omega: 0 }), [Array(4).fill(0.5), Array(3).fill(-0.5)]);
  // F = std (ε = 0): cluster "1" is {0.25, 0} → ±1; the episode level is ±1 as well.
  const withStd = gigpo([A, B], { gamma: 0.5, eps: 0 });
  assert.equal(withStd[0][1], 2);
  assert.equal(withStd[1][1], -2);
  assert.equal(withStd[0][3], 1, 'singleton step group: A^S = 0');
  // A key that includes the time step splits (A,2) from the t = 0 cluster.
  const timed = gigpo([A, B], { gamma: 0.5, std: false, key: (turn) => `${turn.observation}@${turn.t}` });
  close(timed, [
    [0.5 + 0.0625, 0.5 + 0.125, 0.5, 0.5],
    [-0.5 - 0.0625, -0.5 - 0.125, -0.5],
  ]);
});

test('gigpo: a dead group still gets step credit when its step returns differ; G = 1 gives 0', () => {
  // Both succeed (A^E = 0) but from state 5 one is faster: the step level tells them apart.
  const fast = traj([{ obs: 5 }, { obs: 6, reward: 1 }]);
  const slow = traj([{ obs: 5 }, { obs: 7 }, { obs: 6, reward: 1 }]);
  const a = gigpo([fast, slow], { gamma: 0.5, std: false });
  assert.equal(a[0][0], 0.125);
  assert.equal(a[1][0], -0.125);
  close(gigpo([fast]), [[0, 0]]);
});

test('turn-level: per-turn-index normalisation, λ, and the CrEST clip', () => {
  // Verifiable turn rewards: A [0, +1 (goal)], B [0, −1 (hole)], C [−1 (invalid), 0, 0].
  const A = traj([{}, { reward: 1, info: { success: true } }]);
  const B = traj([{}, { info: { success: false, failure: 'irreversible' } }]);
  const C = traj([{ info: { valid: false } }, {}, {}], { end: 'truncated' });
  const s2 = Math.SQRT2;
  const r6 = Math.sqrt(6) / 2; // 1/√(2/3)
  // A^O = [√2, −1/√2, −1/√2]; t=0 cohort [0,0,−1] → [1/√2, 1/√2, −√2]; t=1 [1,−1,0] → [±1.2247, 0]; t=2 alone → 0.
  const additive = turnLevel([A, B, C], { eps: 0, lambda: 2 });
  close(
    additive,
    [
      [s2 + s2, s2 + 2 * r6],
      [-1 / s2 + s2, -1 / s2 - 2 * r6],
      [-1 / s2 - 2 * s2, -1 / s2, -1 / s2],
    ],
    1e-12,
  );
  const crest = turnLevel([A, B, C], { eps: 0, lambda: 2, crest: true });
  // B's first turn would be +0.707 against a failed outcome: clipped to 0, never flipped.
  close(crest, [additive[0], [0, additive[1][1]], additive[2]], 1e-12);
  // A dead group: the additive variant still teaches from turn rewards, CrEST gives 0.
  const dead = [traj([{}, { info: { failure: 'irreversible' } }]), traj([{}, {}], { end: 'truncated' })];
  close(turnLevel(dead, { eps: 0 }), [
    [0, -1],
    [0, 1],
  ]);
  close(turnLevel(dead, { eps: 0, crest: true }), [
    [0, 0],
    [0, 0],
  ]);
  // A pluggable turn reward.
  close(turnLevel([traj([0, 0]), traj([0, 0])], { turnReward: (turn) => turn.t, eps: 0 }), [
    [0, 0],
    [0, 0],
  ]);
});

test('reverse-turn: backward discounted return baselined per turn index', () => {
  const g = [traj([0, 0, 1]), traj([0, 0, 0, 0], { end: 'truncated' }), traj([0, 1])];
  close(reverseTurn(g, { gamma: 0.5, std: false }), [
    [0, 0, 0.5],
    [-0.25, -0.5, -0.5, 0],
    [0.25, 0.5],
  ]);
  // With the std: every cohort of two or three distinct values is standardised.
  const z = reverseTurn(g, { gamma: 0.5, eps: 0 });
  assert.equal(z[0][2], 1);
  assert.equal(z[1][2], -1);
  close(reverseTurn([traj([1])]), [[0]]);
});
