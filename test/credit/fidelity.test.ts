// Credit fidelity: the correlation statistics on hand values, the exact advantage's invariants, and the
// two anchors of the scale — the truth scores 1, the truth shuffled across turns scores ≈ 0.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import {
  averageRanks,
  exactAdvantages,
  exactValueFn,
  fidelity,
  flatten,
  pearson,
  signAgreement,
  spearman,
} from '../../src/credit/fidelity.ts';
import { creditBatch, parseMethodSpec, splitMethodList } from '../../src/credit/index.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { CONTROL_METHODS, creditFidelity, exactValueSource } from '../../src/studies/credit-fidelity.ts';

test('pearson, spearman (average ranks for ties) and sign agreement on hand values', () => {
  assert.equal(pearson([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]), 0.8);
  assert.equal(pearson([1, 2, 3], [6, 4, 2]), -1);
  assert.equal(pearson([1, 2, 3], [7, 7, 7]), null, 'constant credit: correlation undefined');
  assert.deepEqual(Array.from(averageRanks([10, 20, 20, 30, 5])), [2, 3.5, 3.5, 5, 1]);
  assert.ok(Math.abs(spearman([1, 2, 2, 3], [1, 2, 3, 4])! - 4.5 / Math.sqrt(22.5)) < 1e-15);
  assert.equal(spearman([1, 4, 9, 16], [1, 2, 3, 4]), 1, 'monotone but not linear');
  // Signs (+,+) agree, (−,+) not, (0,0) agree, (+, 1e-13 ≈ 0) not: zeros are a sign of their own.
  assert.equal(signAgreement([1, -1, 0, 0.5], [2, 1, 0, 1e-13]), 0.5);
  assert.equal(signAgreement([], []), null);
  assert.throws(() => fidelity([[1, 2]], [[1]]), /row 0 has 2 turns against 1/);
});

const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const spec = makeEnv(makeTasks(config, 1, 0)[0]).spec;

test('fidelity: exact scores 1 by construction, shuffled credit ≈ 0 (64 groups × 8, 4x4 slippery)', async () => {
  const methods = splitMethodList('exact,shuffled,grpo').map((m) =>
    parseMethodSpec(m, '--methods', CONTROL_METHODS),
  );
  const r = await creditFidelity({
    config,
    policy: makePolicy('oracle:eps=0.3', spec),
    budget: 30,
    groups: 64,
    groupSize: 8,
    seed: 2,
    methods,
  });
  assert.deepEqual(r.methods.exact, { pearson: 1, spearman: 1, signAgreement: 1 });
  assert.ok(r.turns > 5000, `${r.turns} turns`);
  // With ~7.6k turns one standard error of r is ~0.011.
  assert.ok(Math.abs(r.methods.shuffled.pearson!) < 0.05, `shuffled pearson ${r.methods.shuffled.pearson}`);
  assert.ok(
    Math.abs(r.methods.shuffled.spearman!) < 0.05,
    `shuffled spearman ${r.methods.shuffled.spearman}`,
  );
  assert.ok(r.methods.grpo.pearson! > 0, 'outcome credit is weakly but positively related to the truth');
  assert.equal(r.trajectories, 512);
});

test('exact advantages: 0 everywhere for the optimal policy; mean 0 under an ε-greedy one', () => {
  const tasks = makeTasks(config, 32, 0);
  for (const [policySpec, zeroShare] of [
    ['oracle', 1],
    ['oracle:eps=0.3', undefined],
  ] as const) {
    const policy = makePolicy(policySpec, spec);
    const batch = rollout({ makeEnv, tasks, samples: 8, budget: 30, runSeed: 1, policy }) as Trajectory[];
    const A = flatten(
      exactAdvantages(
        batch,
        exactValueSource(() => policy, 'test'),
      ),
    );
    const zeros = A.filter((x) => x === 0).length;
    if (zeroShare !== undefined) assert.equal(zeros / A.length, zeroShare);
    else {
      // E_π[A^π(s, ·)] = 0 in every state, so the batch mean is 0 up to sampling noise.
      let m = 0;
      for (const x of A) m += x;
      m /= A.length;
      let v = 0;
      for (const x of A) v += (x - m) ** 2;
      const se = Math.sqrt(v / A.length / A.length);
      assert.ok(Math.abs(m) < 4 * se, `mean ${m}, se ${se}`);
      assert.ok(zeros / A.length < 0.5);
    }
  }
});

test('gae with the exact V^π, γ = 1: unbiased for the exact advantage at λ = 0 and λ = 1', () => {
  const policy = makePolicy('oracle:eps=0.3', spec);
  const batch = rollout({
    makeEnv,
    tasks: makeTasks(config, 64, 0),
    samples: 8,
    budget: 30,
    runSeed: 3,
    policy,
  }) as Trajectory[];
  const source = exactValueSource(() => policy, 'test');
  const truth = flatten(exactAdvantages(batch, source));
  for (const lambda of [0, 1]) {
    const est = flatten(creditBatch(batch, 'gae', { gamma: 1, lambda, values: exactValueFn(source) }));
    let m = 0;
    for (let i = 0; i < est.length; i++) m += est[i] - truth[i];
    m /= est.length;
    let v = 0;
    for (let i = 0; i < est.length; i++) v += (est[i] - truth[i] - m) ** 2;
    const se = Math.sqrt(v / est.length / est.length);
    // Residuals within a trajectory are correlated at λ = 1; 5 se leaves room for that.
    assert.ok(Math.abs(m) < 5 * se, `λ=${lambda}: mean residual ${m}, se ${se}`);
  }
  // A truncated trajectory has no turns left at t = T: its bootstrap value is V^π_0 = 0.
  const truncated = batch.find((t) => t.outcome.end === 'truncated')!;
  assert.equal(exactValueFn(source)(truncated, truncated.turns.length), 0);
});

test('exact advantages: on a deterministic map the one-step TD error with V^π is the advantage itself', () => {
  // No slip: r + V^π_{h−1}(s') = Q^π_h(s, a) exactly, so GAE(γ=1, λ=0) must equal A^π turn by turn —
  // any off-by-one between the turns left of the two lookups shows up here.
  const det = envConfig('frozenlake', { map: '4x4' });
  const env = makeEnv(makeTasks(det, 1, 0)[0]);
  const policy = makePolicy('oracle:eps=0.5', env.spec);
  const batch = rollout({
    makeEnv,
    tasks: makeTasks(det, 16, 0),
    samples: 8,
    budget: 12,
    runSeed: 4,
    policy,
  }) as Trajectory[];
  const source = exactValueSource(() => policy, 'test');
  const truth = exactAdvantages(batch, source);
  const td = creditBatch(batch, 'gae', { gamma: 1, lambda: 0, values: exactValueFn(source) });
  truth.forEach((row, i) => {
    row.forEach((a, t) => {
      assert.ok(Math.abs(td[i][t] - a) < 1e-12, `trajectory ${i} turn ${t}: ${td[i][t]} vs ${a}`);
    });
  });
  assert.ok(flatten(truth).some((a) => a !== 0));
  // Turn 0 against Q^π_T(s0, a) − V^π_T(s0) read straight from the oracle's evaluation.
  const values = source(batch[0]).values;
  const { nS, nA, V, Q } = values;
  for (let i = 0; i < batch.length; i++) {
    const a = batch[i].turns[0].action as number;
    assert.ok(Math.abs(truth[i][0] - (Q[(12 * nS + 0) * nA + a] - V[12 * nS + 0])) <= 1e-12);
  }
});
