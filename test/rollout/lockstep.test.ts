// Lockstep rollouts (one actBatch per turn) give the same trajectories as the sequential path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Action, BatchedPolicy, Trajectory, TurnContext } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import type { NeuralPolicy } from '../../src/policies/neural.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';

const random4 = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
const tasks = makeTasks(random4, 23, 40);
const spec = makeEnv(tasks[0]).spec;
const sync = (r: Trajectory[] | Promise<Trajectory[]>) => {
  assert.ok(!(r instanceof Promise));
  return r as Trajectory[];
};

test('lockstep ≡ sequential, byte for byte: budget-blind and budget-aware, uneven waves', () => {
  // 69 episodes. Waves of 64 put the batched forward on the SIMD matmul path while single rows take
  // the scalar one (nn/gemm.ts); waves of 10 stay scalar.
  for (const [policySpec, budget, width] of [
    ['mlp:hidden=64x64,seed=1', 40, 64],
    ['mlp:hidden=16,seed=2,budgetAware=1', 25, 10],
  ] as const) {
    const policy = makePolicy(policySpec, spec) as NeuralPolicy;
    let calls = 0;
    const counted: BatchedPolicy<unknown, unknown> = {
      id: policy.id,
      budgetAware: policy.budgetAware,
      act: (ctx) => policy.act(ctx),
      actBatch: (ctxs: readonly TurnContext<unknown>[]): Action<unknown>[] => {
        calls++;
        return policy.actBatch(ctxs);
      },
    };
    const base = { tasks, samples: 3, budget, runSeed: 11 };
    const sequential = sync(rollout({ makeEnv, ...base, policy, lockstep: false }));
    const seen: number[] = [];
    const lockstep = sync(
      rollout({
        makeEnv,
        ...base,
        policy: counted,
        lockstepWidth: width,
        onTrajectory: (_, i) => seen.push(i),
      }),
    );
    assert.equal(JSON.stringify(lockstep), JSON.stringify(sequential), policySpec);
    assert.deepEqual(
      seen,
      sequential.map((_, i) => i),
    );
    const turns = sequential.reduce((n, t) => n + t.turns.length, 0);
    const waves = Math.ceil(sequential.length / width);
    assert.ok(calls <= waves * budget && calls < turns / 3, `${calls} actBatch calls for ${turns} turns`);
    assert.ok(sequential.some((t) => t.outcome.success) && sequential.some((t) => !t.outcome.success));
  }
});

test('lockstep with an asynchronous actBatch, and a failing one, matches what sequential would record', async () => {
  const policy = makePolicy('mlp:hidden=8,seed=3', spec) as NeuralPolicy;
  const slow: BatchedPolicy<unknown, unknown> = {
    id: policy.id,
    budgetAware: false,
    act: (ctx) => policy.act(ctx),
    actBatch: async (ctxs) => policy.actBatch(ctxs),
  };
  const base = { tasks: tasks.slice(0, 5), samples: 2, budget: 20, runSeed: 3 };
  const sequential = sync(rollout({ makeEnv, ...base, policy, lockstep: false }));
  const lockstep = await rollout({ makeEnv, ...base, policy: slow, lockstepWidth: 4 });
  assert.equal(JSON.stringify(lockstep), JSON.stringify(sequential));
  const broken: BatchedPolicy<unknown, unknown> = {
    id: 'broken',
    budgetAware: false,
    act: () => {
      throw new Error('boom');
    },
    actBatch: () => {
      throw new Error('boom');
    },
  };
  const a = sync(rollout({ makeEnv, ...base, policy: broken }));
  const b = sync(rollout({ makeEnv, ...base, policy: broken, lockstep: false }));
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  assert.equal(a[0].outcome.failure, 'error');
  assert.equal(a[0].outcome.error, 'boom');
});
