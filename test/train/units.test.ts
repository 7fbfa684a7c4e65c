// Learning on units: a learner returns one unit per categorical choice — a turn for discrete policies,
// a token for a text policy — and the mask (`own`) says which enter the loss. Also: training accepts
// asynchronous envs and policies, a custom env through its own factory, and a text policy through
// the unit-level loss.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Env, EnvFactory, Task, Trajectory, Turn } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { nn } from '../../src/index.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { type Learner, turnUnits, type Unit } from '../../src/train/learner.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { setup } from '../../src/train/setup.ts';
import { policyUpdate } from '../../src/train/update.ts';
import { newLifecycle, sayFactory } from '../fixtures/say-env.ts';
import { BigramLearner, VOCAB } from '../fixtures/text-policy.ts';

const task: Task = { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 };
const turn = (t: number, observation: number, action: unknown, forced?: boolean): Turn => ({
  t,
  observation,
  action,
  reward: 0,
  logp: -1.25,
  info: {},
  ...(forced ? { forced } : {}),
});
const traj = (turns: Turn[]): Trajectory => ({
  id: 'x',
  task,
  policy: 'p',
  budget: 10,
  revealBudget: false,
  turns,
  outcome: {
    success: false,
    return: 0,
    turns: turns.length,
    firstSuccessTurn: null,
    end: 'truncated',
    failure: 'budget',
  },
});

test('discrete units: one per turn, the action as target, forced turns masked out', () => {
  const tr = traj([turn(0, 0, 1, true), turn(1, 4, 2), turn(2, 8, 3, true), turn(3, 9, 0)]);
  const units = turnUnits([tr, tr], makeEnv, 4);
  assert.deepEqual(
    units.map((u) => [u.traj, u.t, u.target, u.own, u.logpOld, u.ctx.observation]),
    [
      [0, 0, 1, false, -1.25, 0],
      [0, 1, 2, true, -1.25, 4],
      [0, 2, 3, false, -1.25, 8],
      [0, 3, 0, true, -1.25, 9],
      [1, 0, 1, false, -1.25, 0],
      [1, 1, 2, true, -1.25, 4],
      [1, 2, 3, false, -1.25, 8],
      [1, 3, 0, true, -1.25, 9],
    ],
  );
  // The unit's context is contextAt's: the turns before it.
  assert.deepEqual(units[3].ctx.history, tr.turns.slice(0, 3));
  // A non-discrete action is refused by name, not cast.
  for (const bad of ['left', 4, 1.5]) {
    assert.throws(
      () => turnUnits([traj([turn(0, 0, bad)])], makeEnv, 4),
      (e: unknown) => e instanceof InputError && /trajectory x turn 0 action/.test(e.message),
    );
  }
});

/** A bigram learner whose mask is overridden: `drop` removes masked units, `flip` makes them own. */
class Remasked extends BigramLearner {
  constructor(readonly mode: 'as-is' | 'drop' | 'flip') {
    super();
  }
  override units(batch: readonly Trajectory[], viewOf: Parameters<Learner['units']>[1]): Unit[] {
    const u = super.units(batch, viewOf);
    if (this.mode === 'drop') return u.filter((x) => x.own);
    if (this.mode === 'flip') return u.map((x) => (x.own ? x : { ...x, own: true }));
    return u;
  }
}

test('text units: prompt tokens are masked, action tokens are the policy’s own; masked units add nothing', async () => {
  const life = newLifecycle();
  const factory = sayFactory(life);
  const config = parseTrainConfig({
    env: { env: 'say', params: {} },
    iters: 1,
    groups: 2,
    groupSize: 3,
    budget: { kind: 'fixed', budget: 3 },
  });
  const { rollout } = await import('../../src/rollout/batch.ts');
  const learner = new Remasked('as-is');
  const batch = await rollout({
    makeEnv: factory.make,
    tasks: makeTasks(config.env, 2, 0),
    samples: 3,
    budget: 3,
    runSeed: 1,
    policy: learner.policy,
  });
  const view = await factory.make(batch[0].task);
  const units = learner.units(batch, () => view);
  const prompt = 'say a'.length - 1; // observation tokens predicted from the one before
  const turns = batch.reduce((n, t) => n + t.turns.length, 0);
  assert.equal(units.length, turns * (prompt + 2));
  assert.equal(units.filter((u) => u.own).length, turns * 2);
  assert.ok(
    units.filter((u) => !u.own).every((u) => u.k < 0),
    'only prompt units are masked',
  );
  // Each action unit's target is the recorded token; a turn's logp is the sum of its units'.
  const t0 = batch[0].turns[0];
  const own0 = units.filter((u) => u.own && u.traj === 0 && u.t === 0);
  assert.deepEqual(own0.map((u) => VOCAB[u.target]).join(''), t0.action);
  assert.ok(Math.abs(own0.reduce((s, u) => s + u.logpOld, 0) - t0.logp) < 1e-12);

  // One policy update from the same batch and advantages: dropping the masked units changes nothing,
  // making them own changes the parameters.
  const adv = batch.map((t) => t.turns.map((_, k) => (t.outcome.success ? 1 : -0.5) + 0.1 * k));
  const after = async (mode: Remasked['mode']) => {
    const l = new Remasked(mode);
    const s = setup(config, factory, undefined, l);
    policyUpdate(s, config, batch, adv, () => view, Rng.derive(3), 0);
    return Array.from(l.policy.table.data);
  };
  const asIs = await after('as-is');
  assert.deepEqual(await after('drop'), asIs);
  assert.notDeepEqual(await after('flip'), asIs);
  assert.notDeepEqual(asIs, Array.from(new Float32Array(VOCAB.length ** 2)));
});

test('a text policy trains through the unit-level loss on an async custom env; every env is closed', async () => {
  const life = newLifecycle();
  const factory = sayFactory(life);
  const config = parseTrainConfig({
    env: { env: 'say', params: {} },
    trainSeeds: [0, 100],
    testSeeds: [100, 140],
    iters: 25,
    groups: 8,
    groupSize: 8,
    budget: { kind: 'fixed', budget: 4 },
    optim: { lr: 0.3 },
    eval: { episodes: 200 },
    seed: 5,
  });
  const learner = new BigramLearner();
  const r = await trainPolicyGradient({ config, envs: factory, learner });
  const success = r.metrics.map((m) => m.values['rollout/success']);
  // A uniform bigram says the right first letter with p = 1/27 per turn: ≈ 0.14 within 4 turns.
  assert.ok(success[0] < 0.35, `first iteration ${success[0]}`);
  assert.ok(r.final!.success > 0.9, `final ${r.final!.success}`);
  assert.equal(r.final!.exact, null); // no oracle
  // What it learned is the bigram the task needs: after "say c", the first token is c.
  for (const c of ['a', 'b']) {
    const i = VOCAB.indexOf(c);
    const z = Array.from(learner.policy.table.data.slice(i * VOCAB.length, (i + 1) * VOCAB.length));
    const max = Math.max(...z);
    const p = Math.exp(z[i] - max) / z.reduce((acc, x) => acc + Math.exp(x - max), 0);
    assert.ok(p > 0.5, `π(${c} | ${c}) = ${p} (uniform: 1/27)`);
  }
  assert.deepEqual([life.closed, life.double], [life.made, 0]);
  assert.ok(life.made > 25 * 8);
});

/** FrozenLake behind promises: async reset/step and an async factory. */
const asyncEnvs: EnvFactory = {
  ...envs,
  async make(t: Task) {
    const env = makeEnv(t);
    const wrapped: Env<unknown, unknown> = Object.create(env);
    wrapped.reset = async (seed) => env.reset(seed);
    wrapped.step = async (a) => env.step(a);
    wrapped.snapshot = () => env.snapshot?.();
    wrapped.restore = (snap, seed) => env.restore?.(snap, seed);
    return wrapped;
  },
};

test('training with async envs gives the sync run’s metrics and parameters exactly', async () => {
  const config = parseTrainConfig({
    env: envConfig('frozenlake', { map: '4x4', slippery: true }),
    iters: 6,
    groups: 4,
    eval: { episodes: 40 },
    seed: 3,
  });
  const a = await trainPolicyGradient({ config, envs });
  const b = await trainPolicyGradient({ config, envs: asyncEnvs });
  assert.deepEqual(b.metrics, a.metrics);
  assert.deepEqual(b.final, a.final);
  assert.deepEqual(Array.from(b.learner.params[0][1].data), Array.from(a.learner.params[0][1].data));
  assert.ok(a.metrics.some((m) => m.values['train/turns'] > 0));
  // "of optimal" is exact over optimal (sampled success over the exact optimum could pass 100%).
  assert.equal(a.final!.ratio, a.final!.exact! / a.final!.optimal!);
});

test('nn stays the engine under a custom learner (a table Tensor with gradients)', () => {
  const l = new BigramLearner();
  assert.ok(l.policy.table instanceof nn.Tensor);
  assert.equal(l.params[0][1].size, VOCAB.length ** 2);
});
