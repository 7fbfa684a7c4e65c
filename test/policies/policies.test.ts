import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Task, TurnContext } from '../../src/core/types.ts';
import { makeEnv } from '../../src/envs/index.ts';
import { OraclePolicy } from '../../src/policies/oracle.ts';
import { makePolicy, parsePolicySpec } from '../../src/policies/spec.ts';
import { TabularPolicy } from '../../src/policies/tabular.ts';

const task: Task = { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 };
const env = makeEnv(task);
const ctx = (observation: number, turnsLeft?: number): TurnContext<unknown> => ({
  observation,
  history: [],
  turn: 0,
  turnsLeft,
  rng: Rng.derive(1),
  env,
});
const close = (a: ArrayLike<number>, b: number[], tol = 1e-12) => {
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) < tol, `${a[i]} vs ${b[i]}`);
};

test('random: log-prob ln(1/4) for every legal action, -inf otherwise', () => {
  const p = makePolicy('random', env.spec);
  assert.equal(p.budgetAware, false);
  for (let a = 0; a < 4; a++) assert.equal(p.logProb!(ctx(0), a), -Math.log(4));
  assert.equal(p.logProb!(ctx(0), 4), Number.NEGATIVE_INFINITY);
  const r = p.act(ctx(0)) as { action: number; logp: number };
  assert.equal(r.logp, -Math.log(4));
});

test('oracle: greedy on Q*_{turnsLeft}; ties share the mass; eps and temp mix as stated', () => {
  const oracle = env.oracle!();
  const q = oracle.q(100, 0);
  // At s=0, h=100 Left is strictly best (0.7442 vs Down/Up ≈ 0.7..): greedy puts all mass on it.
  const best = q.indexOf(Math.max(...q));
  const greedy = new OraclePolicy();
  assert.equal(greedy.budgetAware, true);
  const expected = [0, 0, 0, 0];
  expected[best] = 1;
  close(greedy.probs(ctx(0, 100)), expected);
  assert.throws(() => greedy.probs(ctx(0)), /reveal the budget/);
  // h=1 at s=0: no action can reach G, every Q is 0, all four tie.
  close(greedy.probs(ctx(0, 1)), [0.25, 0.25, 0.25, 0.25]);
  const eps = new OraclePolicy({ eps: 0.2, horizon: 100 });
  assert.equal(eps.budgetAware, false);
  close(
    eps.probs(ctx(0, 3)),
    expected.map((x) => 0.8 * x + 0.05),
  );
  const soft = new OraclePolicy({ temp: 0.1, horizon: 100 });
  const z = Array.from(q, (x) => Math.exp(x / 0.1));
  const sum = z.reduce((s, x) => s + x, 0);
  close(
    soft.probs(ctx(0)),
    z.map((x) => x / sum),
  );
  assert.equal(soft.logProb(ctx(0), 2), Math.log(soft.probs(ctx(0))[2]));
});

test('tabular: softmax of its logits, refuses observations outside the table', () => {
  const logits = new Float32Array(16 * 4);
  logits.set([0, Math.log(3), 0, 0], 4 * 4);
  const p = new TabularPolicy(16, 4, logits);
  close(p.probs(ctx(4)), [1 / 6, 1 / 2, 1 / 6, 1 / 6], 1e-7); // float32 logits
  close(p.probs(ctx(0)), [0.25, 0.25, 0.25, 0.25]);
  assert.throws(() => p.probs(ctx(16)), /not a state/);
  assert.throws(() => new TabularPolicy(2, 2, new Float32Array(3)), /expected 4 logits/);
});

test('policy specs: canonical ids and one-line refusals', () => {
  assert.equal(makePolicy('oracle:eps=0.2,horizon=100', env.spec).id, 'oracle:eps=0.2,horizon=100');
  assert.equal(makePolicy('oracle', env.spec).budgetAware, true);
  assert.equal(makePolicy('oracle:horizon=50', env.spec).budgetAware, false);
  assert.deepEqual(parsePolicySpec('oracle:temp=0.5'), { kind: 'oracle', params: { temp: '0.5' } });
  for (const bad of [
    'nope',
    'oracle:eps',
    'oracle:eps=1.5',
    'oracle:temp=0',
    'oracle:horizon=2.5',
    'random:x=1',
    'oracle:eps=0.1,eps=0.2',
    'runs/none.safetensors',
  ]) {
    assert.throws(() => makePolicy(bad, env.spec), InputError, bad);
  }
});
