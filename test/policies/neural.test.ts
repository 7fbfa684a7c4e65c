// The neural policy: specs, its distribution, exact evaluation, save/load through safetensors.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Task, TurnContext } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { exactSuccess } from '../../src/eval/exact.ts';
import { encodeSafetensors } from '../../src/nn/safetensors.ts';
import { NeuralPolicy, POLICY_FILE } from '../../src/policies/neural.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';

const random4 = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
const task: Task = { ...random4, seed: 5 };
const env = makeEnv(task);
const ctx = (observation: number, turnsLeft?: number): TurnContext<unknown> => ({
  observation,
  history: [],
  turn: 0,
  turnsLeft,
  rng: Rng.derive(1),
  env,
});
const bits = (x: Float64Array) => [...new Uint32Array(x.buffer)];
const oneLine = (re: RegExp) => (e: unknown) =>
  e instanceof InputError && re.test(e.message) && !e.message.includes('\n');

test('mlp specs: canonical ids, PyTorch-sized parameter counts, one-line refusals', () => {
  const p = makePolicy('mlp:hidden=32x16,seed=3', env.spec) as NeuralPolicy;
  assert.ok(p instanceof NeuralPolicy);
  assert.equal(p.id, 'mlp:hidden=32x16,seed=3');
  assert.equal(p.budgetAware, false);
  assert.equal(p.parameterCount(), 48 * 32 + 32 + 32 * 16 + 16 + 16 * 4 + 4);
  const aware = makePolicy('mlp:budgetAware=1', env.spec) as NeuralPolicy;
  assert.equal(aware.budgetAware, true);
  assert.equal(aware.inputs, 48 + 2);
  assert.equal(aware.parameterCount(), 50 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4);
  // Same seed, same network; another seed, another one.
  const again = makePolicy('mlp:hidden=32x16,seed=3', env.spec) as NeuralPolicy;
  assert.deepEqual(bits(again.probs(ctx(0))), bits(p.probs(ctx(0))));
  const other = makePolicy('mlp:hidden=32x16,seed=4', env.spec) as NeuralPolicy;
  assert.notDeepEqual(bits(other.probs(ctx(0))), bits(p.probs(ctx(0))));
  for (const bad of [
    'mlp:hidden=0',
    'mlp:hidden=64xx',
    'mlp:seed=-1',
    'mlp:activation=sigmoid',
    'mlp:budgetAware=2',
    'mlp:depth=3',
  ]) {
    assert.throws(() => makePolicy(bad, env.spec), InputError, bad);
  }
});

test('probs, logProb and act agree; a budget-aware net needs turnsLeft', () => {
  const p = makePolicy('mlp:hidden=16,seed=1,activation=tanh', env.spec) as NeuralPolicy;
  for (const s of [0, 5, 10]) {
    const pr = p.probs(ctx(s));
    assert.ok(Math.abs(pr.reduce((a, b) => a + b, 0) - 1) < 1e-12);
    for (let a = 0; a < 4; a++) assert.ok(Math.abs(p.logProb(ctx(s), a) - Math.log(pr[a])) < 1e-12);
    const { action, logp } = p.act(ctx(s));
    assert.equal(logp, p.logProb(ctx(s), action));
  }
  assert.equal(p.logProb(ctx(0), 4), Number.NEGATIVE_INFINITY);
  const aware = makePolicy('mlp:budgetAware=1', env.spec) as NeuralPolicy;
  assert.throws(() => aware.probs(ctx(0)), /reveal the budget/);
  assert.notDeepEqual(bits(aware.probs(ctx(0, 3))), bits(aware.probs(ctx(0, 80))));
});

test('exact success: the batched table (probsBatch) gives the same value as one probs() call per (h, s)', () => {
  for (const spec of ['mlp:hidden=16x16,seed=2', 'mlp:hidden=16,seed=2,budgetAware=1']) {
    const p = makePolicy(spec, env.spec) as NeuralPolicy;
    const batched = exactSuccess(env, p, 30, p.budgetAware)!;
    const oneByOne = { id: p.id, budgetAware: p.budgetAware, act: p.act.bind(p), probs: p.probs.bind(p) };
    assert.equal(batched, exactSuccess(env, oneByOne, 30, p.budgetAware)!, spec);
    assert.ok(batched > 0 && batched < 1);
  }
});

test('save → load through --policy (file or run directory): bit-identical distributions and rollouts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-neural-'));
  const p = makePolicy('mlp:hidden=24x24,seed=9,activation=gelu,budgetAware=1', env.spec) as NeuralPolicy;
  const file = join(dir, POLICY_FILE);
  p.save(file);
  for (const path of [file, dir]) {
    const q = makePolicy(path, env.spec) as NeuralPolicy;
    assert.equal(q.id, path);
    assert.deepEqual(q.config, p.config);
    for (const [s, h] of [
      [0, 1],
      [6, 40],
    ]) {
      assert.deepEqual(bits(q.probs(ctx(s, h))), bits(p.probs(ctx(s, h))));
    }
    const tasks = makeTasks(random4, 6, 100);
    const strip = (ts: unknown[]) =>
      JSON.stringify(ts).replaceAll(JSON.stringify(path), '"P"').replaceAll(JSON.stringify(p.id), '"P"');
    const run = (policy: NeuralPolicy) =>
      rollout({ makeEnv, tasks, samples: 2, budget: 30, runSeed: 4, policy }) as unknown[];
    assert.equal(strip(run(q)), strip(run(p)));
  }
});

test('a mismatched or corrupted checkpoint is refused with one line; foreign files are not ours', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-neural-'));
  const file = join(dir, 'p.safetensors');
  (makePolicy('mlp:hidden=8', env.spec) as NeuralPolicy).save(file);
  const big = makeEnv({ ...envConfig('frozenlake', { map: '8x8' }), seed: 0 });
  assert.throws(
    () => makePolicy(file, big.spec),
    oneLine(/trained on features of length 48 \(frozenlake\); this env \(frozenlake\) has 192/),
  );
  const torn = join(dir, 'torn.safetensors');
  const bytes = (makePolicy('mlp:hidden=8', env.spec) as NeuralPolicy).checkpoint();
  writeFileSync(torn, bytes.subarray(0, bytes.length - 10));
  assert.throws(() => makePolicy(torn, env.spec), oneLine(/torn.safetensors: not a valid safetensors file/));
  const foreign = join(dir, 'foreign.safetensors');
  writeFileSync(foreign, encodeSafetensors([['w', { shape: [1], data: Float32Array.of(1) }]]));
  assert.throws(() => makePolicy(foreign, env.spec), oneLine(/not a policy checkpoint turnwise can read/));
  assert.throws(() => makePolicy(join(dir, 'nope'), env.spec), oneLine(/no such file/));
});
