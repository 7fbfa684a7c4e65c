// The two-agent setting on search (train/pair-search.ts): what each agent reads, that the plan reaches
// the executor only through its progress feature, that replays share the episode's streams, and that
// the same seed gives the same bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairCredit } from '../../src/credit/agents.ts';
import {
  searchPairEnvs as envs,
  goldCall,
  makeSearchTaskEnv,
  type SearchChoiceEnv,
  SLOT_FEATURES,
  searchTokens,
  searchWorld,
} from '../../src/envs/search/index.ts';
import { TrajectorySchema } from '../../src/store/schema.ts';
import { choiceEpisodes } from '../../src/train/pair.ts';
import {
  executorFeatures,
  freshSearchAgents,
  PLANS,
  QUESTION_BUCKETS,
  questionFeatures,
  replayPlans,
  rolloutSearchPair,
  SEARCH_PAIR_DEFAULTS,
  searchPairTask,
  trainSearchPair,
} from '../../src/train/pair-search.ts';

test('the planner reads the question as a bag of words: counts / 3, order does not matter', () => {
  const q = 'What is the name of the author of the publisher of a novel?';
  const f = questionFeatures(envs, q);
  assert.equal(f.length, QUESTION_BUCKETS);
  const total = f.reduce((a, x) => a + x, 0);
  assert.ok(Math.abs(total - searchTokens(q).length / 3) < 1e-5, `${total}`);
  const shuffled = 'of the author novel a the of publisher of name is the What?';
  assert.deepEqual([...questionFeatures(envs, shuffled)], [...f]);
  // One more "of" moves one bucket by 1/3.
  const more = questionFeatures(envs, `${q} of`);
  const moved = [...more].map((x, i) => x - f[i]).filter((d) => Math.abs(d) > 1e-6);
  assert.equal(moved.length, 1);
  assert.ok(Math.abs(moved[0] - 1 / 3) < 1e-6);
});

test("the executor's input is the env's own at the question's hops, and differs only in progress otherwise", () => {
  for (const seed of [0, 1, 2, 3, 4, 5]) {
    const task = searchPairTask('mixed', seed);
    const { level } = searchWorld(task);
    const env = makeSearchTaskEnv(task) as SearchChoiceEnv;
    let o = env.reset(7);
    // Walk the gold path: the useful call is always offered.
    for (let t = 0; t < 2 * level + 1; t++) {
      assert.deepEqual([...executorFeatures(envs, env, o, level)], [...Float32Array.from(o.features)]);
      for (let n = 1; n <= PLANS; n++) {
        const x = executorFeatures(envs, env, o, n);
        for (let i = 0; i < x.length; i++) {
          if (i % SLOT_FEATURES === 9) assert.equal(x[i], Math.fround(env.opened / (2 * n)));
          else assert.equal(x[i], Math.fround(o.features[i]));
        }
      }
      const gold = JSON.stringify(goldCall(env.world, new Set(env.clues)));
      const slot = o.slots.findIndex((c) => JSON.stringify(c) === gold);
      assert.ok(slot >= 0);
      const r = env.step(slot);
      if (r.terminated) {
        assert.equal(r.info.success, true);
        assert.equal(env.opened, level);
        break;
      }
      o = r.observation;
    }
  }
});

test('fixed planners: every plan is the question’s hops (level) or the constant, a forced turn, seen by each executor turn', () => {
  const { executor } = freshSearchAgents(envs, [16], 0);
  const tasks = [0, 1, 2, 3].map((s) => searchPairTask('mixed', s));
  for (const planner of ['level', 2] as const) {
    const records = rolloutSearchPair(envs, { planner, executor }, tasks, 3, 12, 5);
    assert.equal(records.length, 12);
    for (const r of records) {
      const n = planner === 'level' ? r.level : planner;
      assert.equal(r.choice, n - 1);
      const [p, ...turns] = r.trajectory.turns;
      assert.deepEqual(p.info, { agent: 'planner', step: false, plan: n });
      assert.equal(p.forced, true);
      assert.equal(p.observation, searchWorld(r.task).question);
      assert.ok(turns.length >= 1 && turns.length <= 11);
      turns.forEach((t, j) => {
        assert.equal(t.info.agent, 'executor');
        assert.equal(t.info.plan, n);
        // The progress the executor saw is documents opened / (2n): a multiple of 1/(2n).
        const x = (r.executorContexts[j].observation as { x: Float32Array }).x;
        const k = x[9] * 2 * n;
        assert.ok(Math.abs(k - Math.round(k)) < 1e-5, `${x[9]}`);
      });
      assert.doesNotThrow(() => TrajectorySchema.parse(r.trajectory));
    }
  }
});

test("replays share the episode's streams: the chosen plan's replay is the episode; some plan changes an outcome", () => {
  const agents = freshSearchAgents(envs, [16], 1);
  const tasks = Array.from({ length: 16 }, (_, i) => searchPairTask('mixed', 100 + i));
  const records = rolloutSearchPair(envs, agents, tasks, 8, 12, 9);
  const { replays, steps } = replayPlans(envs, agents.executor, records, 12, 9);
  assert.ok(steps > 0);
  records.forEach((r, i) => {
    assert.equal(replays[i][r.choice], r.trajectory.outcome.return);
  });
  // The plan reaches the executor: with every plan read the same, no replay would differ.
  assert.ok(replays.some((r) => Math.min(...r) !== Math.max(...r)));
  // Counterfactual credit takes them (it refuses replays that are not the episode's).
  for (let g = 0; g < 16; g++) {
    const group = records.slice(g * 8, g * 8 + 8);
    const adv = pairCredit(choiceEpisodes(group, replays.slice(g * 8, g * 8 + 8)), 'counterfactual');
    assert.equal(adv.planner.length, 8);
  }
});

test('the same seed trains the same pair, byte for byte', () => {
  const run = () => {
    const agents = freshSearchAgents(envs, [8], 4);
    const r = trainSearchPair(
      envs,
      {
        ...SEARCH_PAIR_DEFAULTS,
        credit: 'counterfactual',
        iters: 2,
        groups: 3,
        groupSize: 4,
        hidden: [8],
        seed: 4,
      },
      { ...agents, trainPlanner: true, trainExecutor: true },
    );
    return JSON.stringify({
      m: r.metrics,
      last: r.last,
      p: agents.planner.net.namedParameters().map(([, t]) => [...t.data]),
      e: agents.executor.net.namedParameters().map(([, t]) => [...t.data]),
    });
  };
  const a = run();
  assert.equal(a, run());
  assert.ok(JSON.parse(a).m[1]['env/replay_steps'] > 0);
});
