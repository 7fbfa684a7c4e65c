// The two-agent setting (train/pair.ts) on a hand-made 2x2 map where every outcome is known, and on
// random maps for its invariants: replays share the episode's streams, the same seed gives the same bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EnvFactory, Task } from '../../src/core/types.ts';
import { pairCredit } from '../../src/credit/agents.ts';
import { DOWN, FrozenLakeEnv, FrozenLakeWorld, RIGHT } from '../../src/envs/frozenlake/index.ts';
import { envs } from '../../src/envs/index.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { TrajectorySchema } from '../../src/store/schema.ts';
import {
  freshAgents,
  PAIR_DEFAULTS,
  pairEpisodes,
  pairSpecs,
  pairTask,
  replayWaypoints,
  rolloutPair,
  trainPair,
} from '../../src/train/pair.ts';

// S H      cells 0 1
// F G            2 3
const world = new FrozenLakeWorld({ desc: ['SH', 'FG'], slippery: false, successRate: 1 / 3 });
const handMade: EnvFactory = { make: () => new FrozenLakeEnv(world), spec: () => world.spec };
const task: Task = { env: 'frozenlake', params: {}, seed: 0 };
const nS = 4;

/** A linear executor that looks only at its target: Right towards cells 1 and 3, Down towards cell 2
 * (logits 50 apart: the other moves have probability e^−50). From S: waypoint 2 goes Down, reaches it,
 * then Right onto G; waypoints 0 (S, reached at once), 1 and 3 go Right into the hole. */
function handExecutor(): NeuralPolicy {
  const p = new NeuralPolicy(mlpPolicyConfig(pairSpecs(nS).executor, { hidden: [] }), 'hand-executor');
  const [[, w], [, b]] = p.net.namedParameters();
  w.data.fill(0);
  b.data.fill(0);
  const target = (cell: number) => 3 * nS + cell; // (out, in) row-major, 16 inputs
  w.data[RIGHT * 4 * nS + target(1)] = 50;
  w.data[RIGHT * 4 * nS + target(3)] = 50;
  w.data[DOWN * 4 * nS + target(2)] = 50;
  return p;
}

/** A planner with every weight 0: uniform over the 4 cells. */
function uniformPlanner(): NeuralPolicy {
  const p = new NeuralPolicy(mlpPolicyConfig(pairSpecs(nS).planner, { hidden: [] }), 'uniform-planner');
  for (const [, t] of p.net.namedParameters()) t.data.fill(0);
  return p;
}

test('a hand-made two-agent episode: both turns recorded in the one trajectory format', () => {
  const records = rolloutPair(
    handMade,
    { planner: uniformPlanner(), executor: handExecutor() },
    [task],
    32,
    3,
    7,
  );
  const viaTwo = records.find((r) => r.waypoint === 2);
  assert.ok(viaTwo !== undefined, 'some sample picked waypoint 2');
  const t = TrajectorySchema.parse(JSON.parse(JSON.stringify(viaTwo.trajectory)));
  assert.deepEqual(
    t.turns.map((x) => [x.t, x.observation, x.action, x.reward, x.info.agent, x.info.target]),
    [
      [0, 0, 2, 0, 'planner', undefined],
      [1, 0, DOWN, 0, 'executor', 2],
      [2, 2, RIGHT, 1, 'executor', 3],
    ],
  );
  assert.equal(t.turns[0].logp, Math.log(1 / 4));
  assert.deepEqual(t.outcome, {
    success: true,
    return: 1,
    turns: 3,
    firstSuccessTurn: 3,
    end: 'terminated',
    failure: null,
  });
  for (const r of records) {
    assert.equal(r.trajectory.outcome.success, r.waypoint === 2);
    if (r.waypoint !== 2) assert.equal(r.trajectory.outcome.failure, 'irreversible');
  }
});

test('counterfactual credit on the hand-made map: R − ¼·Σ_w R(w) = 1 − ¼ = 0.75 via cell 2, 0 − ¼ = −0.25 otherwise', () => {
  const agents = { planner: uniformPlanner(), executor: handExecutor() };
  const records = rolloutPair(handMade, agents, [task], 32, 3, 7);
  assert.ok(records.some((r) => r.waypoint === 2) && records.some((r) => r.waypoint !== 2));
  const { replays, steps } = replayWaypoints(handMade, agents.executor, records, 3, 7);
  for (const r of replays) assert.deepEqual([...r], [0, 0, 1, 0]);
  // 32 episodes × (waypoints 0, 1, 3: one step into the hole; waypoint 2: two steps to G)
  assert.equal(steps, 32 * 5);
  const episodes = pairEpisodes(records, replays);
  const a = pairCredit(episodes, 'counterfactual');
  a.planner.forEach((x, i) => {
    assert.equal(x, records[i].waypoint === 2 ? 0.75 : -0.25);
  });
  // the executor's turns get the team's GRPO outcome: (R − mean)/(std + ε) over the 32 episodes
  const n2 = records.filter((r) => r.waypoint === 2).length;
  const mu = n2 / 32;
  const sd = Math.sqrt(mu * (1 - mu));
  a.executor.forEach((x, i) => {
    const expected = ((records[i].waypoint === 2 ? 1 : 0) - mu) / (sd + 1e-6);
    assert.ok(Math.abs(x - expected) < 1e-12, `${x} vs ${expected}`);
  });
  // per-agent: every episode with the same waypoint behaves the same, so the executor's own groups
  // have no contrast, and the planner gets R̄_w − R̄ over the std: (1 − μ)/σ via cell 2, −μ/σ otherwise
  const b = pairCredit(episodes, 'per-agent');
  assert.ok(b.executor.every((x) => x === 0));
  b.planner.forEach((x, i) => {
    const expected = ((records[i].waypoint === 2 ? 1 : 0) - mu) / (sd + 1e-6);
    assert.ok(Math.abs(x - expected) < 1e-12, `${x} vs ${expected}`);
  });
});

test('the planner alone over the hand executor learns waypoint 2 from the counterfactual credit', () => {
  const agents = {
    planner: uniformPlanner(),
    executor: handExecutor(),
    trainPlanner: true,
    trainExecutor: false,
  };
  const config = {
    ...PAIR_DEFAULTS,
    credit: 'counterfactual' as const,
    budget: 3,
    iters: 15,
    groups: 4,
    seed: 3,
  };
  const run = trainPair(handMade, config, agents);
  assert.equal(
    run.replaySteps,
    run.metrics.reduce((a, m) => a + m['env/replay_steps'], 0),
  );
  const p = agents.planner.probs({
    observation: 0,
    history: [],
    turn: 0,
    rng: undefined as never,
    env: { spec: pairSpecs(nS).planner, features: (s) => world.features(s as number) },
  });
  assert.ok(p[2] > 0.9, `π(2) = ${p[2]}`);
  assert.ok(run.metrics.at(-1)!['rollout/success'] > run.metrics[0]['rollout/success']);
});

test('on random maps the replay of the chosen waypoint is the episode itself, and the same seed gives the same bytes', () => {
  const config = { ...PAIR_DEFAULTS, size: 4, slippery: true };
  const tasks = [11, 12, 13].map((s) => pairTask(config, s));
  const a = freshAgents(16, [16], 5);
  const records = rolloutPair(envs, a, tasks, 4, 10, 99);
  const { replays } = replayWaypoints(envs, a.executor, records, 10, 99);
  records.forEach((r, i) => {
    assert.equal(replays[i][r.waypoint], r.trajectory.outcome.return);
  });
  const again = rolloutPair(envs, freshAgents(16, [16], 5), tasks, 4, 10, 99);
  assert.equal(
    JSON.stringify(again.map((r) => r.trajectory)),
    JSON.stringify(records.map((r) => r.trajectory)),
  );
  for (const r of records) TrajectorySchema.parse(JSON.parse(JSON.stringify(r.trajectory)));
});

test('training the pair: the same seed gives the same metrics and trajectories', () => {
  const config = {
    ...PAIR_DEFAULTS,
    credit: 'counterfactual' as const,
    iters: 2,
    groups: 4,
    groupSize: 4,
    seed: 2,
  };
  const run = () => {
    const a = freshAgents(16, [16], 2);
    return trainPair(envs, config, { ...a, trainPlanner: true, trainExecutor: true });
  };
  const r1 = run();
  const r2 = run();
  assert.equal(JSON.stringify(r1.metrics), JSON.stringify(r2.metrics));
  assert.equal(JSON.stringify(r1.last), JSON.stringify(r2.last));
  assert.ok(r1.replaySteps > 0 && r1.envSteps > 0);
});

test('sight R: the executor sees the holes within Chebyshev distance R of its cell, the planner the whole map', () => {
  // Gymnasium's 4x4: holes at cells 5, 7, 11, 12; from S (cell 0) only cell 5 is within distance 1.
  const w4 = new FrozenLakeWorld({
    desc: ['SFFF', 'FHFH', 'FFFH', 'HFFG'],
    slippery: false,
    successRate: 1 / 3,
  });
  const f4: EnvFactory = { make: () => new FrozenLakeEnv(w4), spec: () => w4.spec };
  const a = freshAgents(16, [8], 1);
  const holes = (sight: number) => {
    const [r] = rolloutPair(f4, a, [task], 1, 3, 1, sight);
    const ctx = r.executorContexts[0];
    assert.equal(ctx.observation.cell, 0);
    const seen = ctx.env.features!(ctx.observation).subarray(0, 16);
    const planner = r.plannerCtx.env.features!(0).subarray(0, 16);
    assert.deepEqual(
      [...planner.keys()].filter((i) => planner[i] === 1),
      [5, 7, 11, 12],
    );
    return [...seen.keys()].filter((i) => seen[i] === 1);
  };
  assert.deepEqual(holes(0), [5, 7, 11, 12]);
  assert.deepEqual(holes(1), [5]);
  // cells 7 (1, 3), 11 (2, 3) and 12 (3, 0) are all at distance 3 from (0, 0)
  assert.deepEqual(holes(2), [5]);
  assert.deepEqual(holes(3), [5, 7, 11, 12]);
});
