// Env lifecycle: every env the rollout makes is closed exactly once, on every path — sync loop, async
// pool, lockstep waves — also when the policy throws, when actBatch throws, when bad options are refused
// and when the factory itself fails for one task. The env is a custom one written against the public
// API (async reset/step, text actions, close), which also passes checkEnv.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Action, BatchedPolicy, Env, Policy, Task, Trajectory } from '../../src/core/types.ts';
import { checkEnv } from '../../src/envs/check.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { newLifecycle, SayEnv, sayFactory } from '../fixtures/say-env.ts';
import { BigramPolicy } from '../fixtures/text-policy.ts';

const tasks = makeTasks({ env: 'say', params: {} }, 6, 10);

test('the custom text env passes checkEnv, which closes every env it made', async () => {
  const life = newLifecycle();
  assert.deepEqual(await checkEnv(() => new SayEnv(life, 3), { episodes: 5, maxTurns: 6 }), []);
  assert.ok(life.made >= 6);
  assert.deepEqual([life.closed, life.double], [life.made, 0]);
  // checkEnv catches what it claims to: a text env that throws on a malformed action.
  const strict = () => {
    const env = new SayEnv(life, 3);
    const step = env.step.bind(env);
    env.step = async (a: string) => {
      if (!/^[a-z]{2}$/.test(a)) throw new Error('bad action');
      return step(a);
    };
    return env;
  };
  assert.match(
    (await checkEnv(strict, { episodes: 1, maxTurns: 2, action: () => 'zz' })).join(),
    /not an exception/,
  );
  assert.deepEqual([life.closed, life.double], [life.made, 0]);
});

test('every env is closed once, at any concurrency, and the trajectories do not depend on it', async () => {
  let first: string | undefined;
  for (const concurrency of [1, 2, 7]) {
    const life = newLifecycle();
    const r = await rollout({
      makeEnv: sayFactory(life).make,
      tasks,
      samples: 3,
      budget: 4,
      runSeed: 4,
      policy: new BigramPolicy(),
      concurrency,
    });
    assert.equal(r.length, 18);
    assert.deepEqual([life.made, life.closed, life.double], [18, 18, 0], `concurrency ${concurrency}`);
    first ??= JSON.stringify(r);
    assert.equal(JSON.stringify(r), first, `concurrency ${concurrency}`);
  }
});

test('a policy that throws (sync or async) ends each episode with kind error; every env is still closed', async () => {
  for (const act of [
    () => {
      throw new Error('sync boom');
    },
    async () => {
      throw new Error('async boom');
    },
  ]) {
    const life = newLifecycle();
    const policy: Policy<unknown, unknown> = { id: 'thrower', budgetAware: false, act: act as never };
    const r = await rollout({
      makeEnv: sayFactory(life).make,
      tasks,
      samples: 2,
      budget: 3,
      runSeed: 0,
      policy,
    });
    assert.deepEqual(
      [...new Set(r.map((t) => `${t.outcome.end}/${t.outcome.failure}/${t.outcome.error}`))],
      [`error/error/${act.constructor.name === 'AsyncFunction' ? 'async' : 'sync'} boom`],
    );
    assert.deepEqual([life.made, life.closed, life.double], [12, 12, 0]);
  }
});

test('the factory failing for one task rejects the batch after closing every env it had made', async () => {
  const life = newLifecycle();
  await assert.rejects(
    async () =>
      rollout({
        makeEnv: sayFactory(life, { failOn: 13 }).make,
        tasks,
        samples: 2,
        budget: 3,
        runSeed: 0,
        policy: new BigramPolicy(),
        concurrency: 3,
      }),
    /cannot make task 13/,
  );
  assert.ok(life.made >= 6, `${life.made} made`);
  assert.deepEqual([life.closed, life.double], [life.made, 0]);
});

test('lockstep: each wave closes its envs, also when actBatch throws', async () => {
  for (const broken of [false, true]) {
    const life = newLifecycle();
    const inner = new BigramPolicy();
    const policy: BatchedPolicy<unknown, unknown> = {
      id: 'bigram-batched',
      budgetAware: false,
      act: (ctx) => inner.act(ctx),
      actBatch: async (ctxs) => {
        if (broken) throw new Error('batch boom');
        return Promise.all(ctxs.map((c) => inner.act(c))) as Promise<Action<unknown>[]>;
      },
    };
    const r = await rollout({
      makeEnv: sayFactory(life).make,
      tasks,
      samples: 3,
      budget: 4,
      runSeed: 4,
      policy,
      lockstepWidth: 5,
    });
    assert.equal(r.length, 18);
    if (broken) assert.ok(r.every((t) => t.outcome.failure === 'error' && t.outcome.error === 'batch boom'));
    else {
      // Lockstep gives the sequential trajectories.
      const seq = await rollout({
        makeEnv: sayFactory(newLifecycle()).make,
        tasks,
        samples: 3,
        budget: 4,
        runSeed: 4,
        policy,
        lockstep: false,
      });
      assert.equal(JSON.stringify(r), JSON.stringify(seq));
    }
    assert.deepEqual([life.made, life.closed, life.double], [18, 18, 0], `broken ${broken}`);
  }
});

test('sync path: one env per task, closed after its last sample; closed too when the options are refused', () => {
  const fl = makeTasks(envConfig('frozenlake', { map: '4x4', slippery: true }), 4, 0);
  let made = 0;
  let closed = 0;
  const counting = (task: Task): Env<unknown, unknown> => {
    const env = makeEnv(task);
    made++;
    env.close = () => {
      closed++;
    };
    return env;
  };
  const policy = makePolicy('random', makeEnv(fl[0]).spec);
  const r = rollout({
    makeEnv: counting,
    tasks: fl,
    samples: 5,
    budget: 30,
    runSeed: 1,
    policy,
  }) as Trajectory[];
  assert.equal(r.length, 20);
  assert.deepEqual([made, closed], [4, 4]);
  // A budget-aware policy with the budget hidden is refused before the first step: the env is closed.
  const aware = makePolicy('oracle', makeEnv(fl[0]).spec);
  assert.throws(
    () =>
      rollout({
        makeEnv: counting,
        tasks: fl,
        samples: 1,
        budget: 30,
        runSeed: 1,
        policy: aware,
        revealBudget: false,
      }),
    /revealBudget/,
  );
  assert.deepEqual([made, closed], [5, 5]);
});
