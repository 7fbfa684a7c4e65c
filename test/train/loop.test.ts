import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { stepReward } from '../../src/eval/step-reward.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { CrossPolicy } from '../../src/train/cross-policy.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { setup } from '../../src/train/setup.ts';
import { policyUpdate } from '../../src/train/update.ts';

const slippery4 = { env: 'frozenlake', params: { map: '4x4', slippery: true } };

test('forced (expert-prefix) turns are excluded from the policy loss', () => {
  const config = parseTrainConfig({ env: slippery4, ppo: { epochs: 1, minibatches: 1 } });
  const [task] = makeTasks(envConfig('frozenlake', slippery4.params), 1, 0);
  const turn = (t: number, observation: number, action: number, forced?: boolean) => ({
    t,
    observation,
    action,
    reward: 0,
    logp: Math.log(0.25),
    info: {},
    ...(forced ? { forced: true } : {}),
  });
  const traj = (turns: ReturnType<typeof turn>[]): Trajectory => ({
    id: 'x',
    task,
    policy: 'tabular',
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
  const withForced = traj([turn(0, 0, 1, true), turn(1, 4, 2, true), turn(2, 8, 1), turn(3, 9, 2)]);
  const without = traj([turn(2, 8, 1), turn(3, 9, 2)]);
  const unforced = traj([turn(0, 0, 1), turn(1, 4, 2), turn(2, 8, 1), turn(3, 9, 2)]);
  const update = (t: Trajectory, adv: number[]) => {
    const s = setup(config, envs);
    policyUpdate(s, config, [t], [adv], makeEnv, Rng.derive(0), 0);
    return Array.from(s.learner.params[0][1].data);
  };
  const a = update(withForced, [50, -50, 1, -1]);
  assert.deepEqual(a, update(without, [1, -1]));
  assert.notDeepEqual(a, update(unforced, [50, -50, 1, -1]));
  // The forced turns' states (0 and 4) keep their initial (zero) logits.
  assert.deepEqual(a.slice(0, 4), [0, 0, 0, 0]);
  assert.deepEqual(a.slice(16, 20), [0, 0, 0, 0]);
});

test('tabular GRPO learns slippery 4x4 (a short run beats random by far)', async () => {
  const config = parseTrainConfig({ env: slippery4, iters: 40, eval: { episodes: 500 }, seed: 3 });
  const r = await trainPolicyGradient({ config, envs });
  const f = r.final!;
  assert.equal(f.optimal!.toFixed(4), '0.7442');
  assert.ok(f.exact! > 0.3, `exact ${f.exact}`); // the random policy: 0.0139
  assert.ok(Math.abs(f.success - f.exact!) < 4 * Math.sqrt((f.exact! * (1 - f.exact!)) / f.episodes));
  assert.equal(r.metrics.length, 40);
  for (const m of r.metrics) {
    assert.ok(m.values['rollout/step_quality'] > 0 && m.values['rollout/step_quality'] <= 1 + 1e-9);
    assert.equal(m.values['rollout/episodes'], 128);
  }
});

test('the same config and seed train the same policy, bit for bit', async () => {
  const config = parseTrainConfig({
    env: slippery4,
    iters: 8,
    eval: { episodes: 50 },
    seed: 5,
    budget: { kind: 'mix', budgets: [10, 30] },
  });
  const [a, b] = [await trainPolicyGradient({ config, envs }), await trainPolicyGradient({ config, envs })];
  assert.deepEqual(a.learner.params[0][1].data, b.learner.params[0][1].data);
  assert.deepEqual(a.metrics, b.metrics);
  const budgets = a.metrics.map((m) => m.values['rollout/budget']);
  assert.ok(
    budgets.every((x) => x > 10 && x < 30),
    `mixed budgets average strictly between 10 and 30: ${budgets}`,
  );
});

test('guidance (gaussian, bread), cross-policy sampling and dynamic sampling run end to end', async () => {
  const base = { env: slippery4, iters: 6, eval: { episodes: 50 }, seed: 2 };
  const g = await trainPolicyGradient({
    envs,
    config: parseTrainConfig({ ...base, guidance: { mode: 'gaussian', maxPrefix: 6 } }),
  });
  assert.ok(g.metrics.some((m) => m.values['guidance/forced_turns'] > 0));
  const b = await trainPolicyGradient({
    envs,
    config: parseTrainConfig({ ...base, guidance: { mode: 'bread', maxPrefix: 6 } }),
  });
  // Random play on slippery 4x4 leaves most groups all-failure: BREAD replays them with a prefix.
  assert.ok(b.metrics[0].values['guidance/guided_groups'] > 0);
  assert.equal(b.metrics[0].values['guidance/guided_groups'], b.metrics[0].values['credit/all_fail_groups']);
  const c = await trainPolicyGradient({
    envs,
    config: parseTrainConfig({ ...base, crossPolicy: { q: 0.25, refreshEvery: 2 } }),
  });
  assert.equal(c.metrics.length, 6);
  const d = await trainPolicyGradient({
    envs,
    config: parseTrainConfig({ ...base, dynamicSampling: { enabled: true, maxRounds: 2 } }),
  });
  assert.ok(d.metrics[0].values['credit/refills'] > 0);
});

test('cross-policy sampling gives the same trajectories in lockstep and one by one', () => {
  const config = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(config, 4, 10);
  const spec = makeEnv(tasks[0]).spec;
  const current = new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [16], seed: 1 }));
  const stale = new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [16], seed: 2 }));
  const mixed = new CrossPolicy(current, stale, 0.5);
  const run = (lockstep: boolean) =>
    JSON.stringify(rollout({ makeEnv, tasks, samples: 3, budget: 20, runSeed: 1, policy: mixed, lockstep }));
  assert.equal(run(true), run(false));
  // Each recorded log-prob is the acting policy's: the current one's or the stale one's.
  const batch = rollout({
    makeEnv,
    tasks,
    samples: 3,
    budget: 20,
    runSeed: 1,
    policy: mixed,
  }) as Trajectory[];
  let fromStale = 0;
  for (const t of batch) {
    for (const u of t.turns) {
      const ctx = {
        observation: u.observation,
        history: [],
        turn: u.t,
        rng: Rng.derive(0),
        env: makeEnv(t.task),
      };
      const a = u.action as number;
      if (u.logp === stale.logProb(ctx, a) && u.logp !== current.logProb(ctx, a)) fromStale++;
      else assert.equal(u.logp, current.logProb(ctx, a));
    }
  }
  assert.ok(fromStale > 0);
});

test('step reward is 1 for the budget-aware oracle and below 1 for random play', () => {
  const tasks = makeTasks(envConfig('frozenlake', slippery4.params), 50, 0);
  const spec = makeEnv(tasks[0]).spec;
  const oracleBatch = rollout({
    makeEnv,
    tasks,
    samples: 1,
    budget: 30,
    runSeed: 0,
    policy: makePolicy('oracle', spec),
  }) as Trajectory[];
  assert.ok(Math.abs(stepReward(oracleBatch, makeEnv)! - 1) < 1e-12);
  const randomBatch = rollout({
    makeEnv,
    tasks,
    samples: 1,
    budget: 30,
    runSeed: 0,
    policy: makePolicy('random', spec),
  }) as Trajectory[];
  assert.ok(stepReward(randomBatch, makeEnv)! < 0.95);
});
