import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Env, Policy, Task, Trajectory } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { exactSuccess } from '../../src/eval/exact.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { episodeSeeds, runEpisode } from '../../src/rollout/episode.ts';
import { summarize } from '../../src/rollout/summary.ts';

type AnyEnv = Env<unknown, unknown>;
type AnyPolicy = Policy<unknown, unknown>;
const slippery4 = envConfig('frozenlake', { map: '4x4', slippery: true });
const sync = (r: Trajectory[] | Promise<Trajectory[]>): Trajectory[] => {
  assert.ok(!(r instanceof Promise), 'sync env and policy must not pay for promises');
  return r as Trajectory[];
};

test('random policy success agrees with its exact value 0.01394 within binomial error', () => {
  const tasks = makeTasks(slippery4, 20_000, 1);
  const policy = makePolicy('random', makeEnv(tasks[0]).spec);
  const s = summarize(sync(rollout({ makeEnv, tasks, samples: 1, budget: 100, runSeed: 1, policy })));
  const exact = exactSuccess(makeEnv(tasks[0]), policy, 100)!;
  assert.equal(exact.toFixed(5), '0.01394');
  const se = Math.sqrt((exact * (1 - exact)) / s.episodes);
  assert.ok(Math.abs(s.success - exact) < 4 * se, `${s.success} vs ${exact} ± ${se}`);
  assert.equal(
    s.failures.irreversible! + s.failures.budget! + Math.round(s.success * s.episodes),
    s.episodes,
  );
});

test('budget-aware oracle success per T agrees with its exact value', () => {
  const tasks = makeTasks(slippery4, 4000, 7);
  const policy = makePolicy('oracle', makeEnv(tasks[0]).spec);
  for (const T of [10, 30]) {
    const s = summarize(sync(rollout({ makeEnv, tasks, samples: 1, budget: T, runSeed: 7, policy })));
    const exact = exactSuccess(makeEnv(tasks[0]), policy, T)!;
    const se = Math.sqrt((exact * (1 - exact)) / s.episodes);
    assert.ok(Math.abs(s.success - exact) < 4 * se, `T=${T}: ${s.success} vs ${exact}`);
  }
});

test('the budget truncates: kind budget, exactly T turns; success is 1-based', () => {
  const task: Task = { ...envConfig('frozenlake', { map: '4x4' }), seed: 0 };
  const left: AnyPolicy = { id: 'left', budgetAware: false, act: () => ({ action: 0, logp: 0 }) };
  const [t] = sync(rollout({ makeEnv, tasks: [task], samples: 1, budget: 7, runSeed: 0, policy: left }));
  assert.equal(t.turns.length, 7);
  assert.deepEqual(t.outcome, {
    success: false,
    return: 0,
    turns: 7,
    firstSuccessTurn: null,
    end: 'truncated',
    failure: 'budget',
  });
  const path = [2, 2, 1, 1, 1, 2];
  const walker: AnyPolicy = {
    id: 'walk',
    budgetAware: false,
    act: (c) => ({ action: path[c.turn], logp: 0 }),
  };
  const [w] = sync(rollout({ makeEnv, tasks: [task], samples: 1, budget: 6, runSeed: 0, policy: walker }));
  assert.deepEqual(w.outcome, {
    success: true,
    return: 1,
    turns: 6,
    firstSuccessTurn: 6,
    end: 'terminated',
    failure: null,
  });
  const [short] = sync(
    rollout({ makeEnv, tasks: [task], samples: 1, budget: 5, runSeed: 0, policy: walker }),
  );
  assert.equal(short.outcome.failure, 'budget');
  const [hole] = sync(
    rollout({
      makeEnv,
      tasks: [task],
      samples: 1,
      budget: 9,
      runSeed: 0,
      policy: { ...walker, act: () => ({ action: 1, logp: 0 }) },
    }),
  );
  assert.deepEqual(
    [hole.outcome.failure, hole.outcome.end, hole.outcome.turns],
    ['irreversible', 'terminated', 3],
  );
});

test('revealBudget: turnsLeft counts down; a budget-aware policy is refused without it', () => {
  const task: Task = { ...slippery4, seed: 0 };
  const seen: (number | undefined)[] = [];
  const spy: AnyPolicy = {
    id: 'spy',
    budgetAware: false,
    act: (c) => {
      seen.push(c.turnsLeft);
      return { action: 0, logp: 0 };
    },
  };
  sync(
    rollout({ makeEnv, tasks: [task], samples: 1, budget: 4, runSeed: 0, policy: spy, revealBudget: true }),
  );
  assert.deepEqual(seen, [4, 3, 2, 1]);
  seen.length = 0;
  sync(rollout({ makeEnv, tasks: [task], samples: 1, budget: 3, runSeed: 0, policy: spy }));
  assert.deepEqual(seen, [undefined, undefined, undefined]);
  const oracle = makePolicy('oracle', makeEnv(task).spec);
  assert.throws(
    () =>
      rollout({
        makeEnv,
        tasks: [task],
        samples: 1,
        budget: 3,
        runSeed: 0,
        policy: oracle,
        revealBudget: false,
      }),
    /reveal the budget/,
  );
  assert.throws(
    () => rollout({ makeEnv, tasks: [task], samples: 1, budget: 0, runSeed: 0, policy: oracle }),
    /--budget: got 0/,
  );
});

test('an exception in the policy or env ends that episode with kind error, not the batch', async () => {
  const task: Task = { ...slippery4, seed: 0 };
  const flaky: AnyPolicy = {
    id: 'flaky',
    budgetAware: false,
    act: (c) => {
      if (c.turn === 2) throw new Error('boom');
      return { action: 2, logp: 0 };
    },
  };
  const [t] = sync(rollout({ makeEnv, tasks: [task], samples: 1, budget: 10, runSeed: 0, policy: flaky }));
  assert.equal(t.outcome.end, 'error');
  assert.equal(t.outcome.failure, 'error');
  assert.equal(t.outcome.error, 'boom');
  assert.ok(t.turns.length <= 2);
  const rejecting: AnyPolicy = {
    id: 'rej',
    budgetAware: false,
    act: async () => Promise.reject(new Error('endpoint down')),
  };
  const [r] = await rollout({
    makeEnv,
    tasks: [task],
    samples: 1,
    budget: 10,
    runSeed: 0,
    policy: rejecting,
  });
  assert.deepEqual([r.outcome.failure, r.outcome.error, r.turns.length], ['error', 'endpoint down', 0]);
});

/** Async wrappers with random delays: completions arrive out of order. */
function asyncEnv(env: AnyEnv, delay: () => number): AnyEnv {
  const wait = <T>(x: T) => new Promise<T>((res) => setTimeout(() => res(x), delay()));
  return {
    spec: env.spec,
    oracle: env.oracle?.bind(env),
    reset: (seed) => wait(env.reset(seed) as unknown),
    step: (a) => wait(env.step(a) as never),
  };
}

test('same seed, same trajectories, byte for byte, at any concurrency (sync and async)', async () => {
  const config = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(config, 6, 100);
  const policy = makePolicy('oracle:eps=0.3,horizon=20', makeEnv(tasks[0]).spec);
  const base = JSON.stringify(sync(rollout({ makeEnv, tasks, samples: 4, budget: 12, runSeed: 5, policy })));
  assert.equal(
    JSON.stringify(sync(rollout({ makeEnv, tasks, samples: 4, budget: 12, runSeed: 5, policy }))),
    base,
  );
  assert.notEqual(
    JSON.stringify(sync(rollout({ makeEnv, tasks, samples: 4, budget: 12, runSeed: 6, policy }))),
    base,
  );
  let k = 0;
  const delay = () => (k++ * 7) % 5;
  const asyncPolicy: AnyPolicy = { id: policy.id, budgetAware: false, act: async (c) => policy.act(c) };
  for (const concurrency of [1, 3, 16]) {
    const order: number[] = [];
    const r = await rollout({
      tasks,
      samples: 4,
      budget: 12,
      runSeed: 5,
      policy: asyncPolicy,
      concurrency,
      makeEnv: (t) => asyncEnv(makeEnv(t), delay),
      onTrajectory: (_t, i) => order.push(i),
    });
    assert.equal(JSON.stringify(r), base, `concurrency ${concurrency}`);
    assert.deepEqual(order, [...Array(24).keys()]);
  }
});

test('an episode branched from a snapshot keeps its history and re-seeds the env', () => {
  const task: Task = { ...slippery4, seed: 0 };
  const env = makeEnv(task);
  const policy = makePolicy('oracle:horizon=100', env.spec);
  const { envSeed, rng } = episodeSeeds(0, 0, 0);
  const full = runEpisode(env, policy, {
    id: 'a',
    task,
    budget: 100,
    revealBudget: false,
    envSeed,
    rng,
  }) as Trajectory;
  assert.ok(full.turns.length > 3);
  // Replay the first 3 turns to get the state, then branch.
  const replay = makeEnv(task);
  replay.reset(envSeed);
  for (const turn of full.turns.slice(0, 3)) replay.step(turn.action);
  const from = {
    snapshot: replay.snapshot!(),
    observation: full.turns[3].observation,
    history: full.turns.slice(0, 3),
  };
  const branches = new Set<string>();
  for (let k = 0; k < 8; k++) {
    const b = episodeSeeds(0, 0, 100 + k);
    const t = runEpisode(makeEnv(task), policy, {
      id: 'b',
      task,
      budget: 100,
      revealBudget: false,
      envSeed: b.envSeed,
      rng: b.rng,
      from,
    }) as Trajectory;
    assert.deepEqual(t.turns.slice(0, 3), full.turns.slice(0, 3));
    assert.equal(t.turns[3].observation, full.turns[3].observation);
    assert.equal(t.outcome.turns, t.turns.length);
    branches.add(JSON.stringify(t.turns.map((x) => x.observation)));
  }
  assert.ok(branches.size > 1);
});

test('an expert prefix plays the first L turns, recorded as forced, in both rollout paths', () => {
  const task: Task = { ...envConfig('frozenlake', { map: '4x4' }), seed: 0 };
  const path = [2, 2, 1, 1, 1, 2];
  const expert: AnyPolicy = {
    id: 'expert',
    budgetAware: false,
    act: (c) => ({ action: path[c.turn], logp: 0 }),
  };
  const learner: AnyPolicy = {
    id: 'learner',
    budgetAware: false,
    act: (c) => ({ action: path[c.turn], logp: -1 }),
  };
  const run = (L: number) =>
    sync(
      rollout({
        makeEnv,
        tasks: [task],
        samples: 2,
        budget: 8,
        runSeed: 0,
        policy: learner,
        prefix: (_t, k) => (k === 0 ? undefined : { policy: expert, turns: L }),
      }),
    );
  const [none, some] = run(3);
  assert.deepEqual(
    none.turns.map((t) => t.logp),
    [-1, -1, -1, -1, -1, -1],
  );
  assert.ok(none.turns.every((t) => t.forced === undefined));
  assert.ok(!('forced' in JSON.parse(JSON.stringify(none.turns[0]))));
  assert.deepEqual(
    some.turns.map((t) => t.forced === true),
    [true, true, true, false, false, false],
  );
  assert.deepEqual(
    some.turns.map((t) => t.logp),
    [0, 0, 0, -1, -1, -1],
  );
  assert.equal(some.outcome.firstSuccessTurn, 6);
  // A prefix as long as the solution solves the task without the learner taking a turn.
  const [, solved] = run(6);
  assert.equal(solved.outcome.success, true);
  assert.ok(solved.turns.every((t) => t.forced));
});
