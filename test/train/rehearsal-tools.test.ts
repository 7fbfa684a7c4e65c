// World-model rehearsal on search (src/train/rehearsal-tools.ts): the model files what the tools
// answered each call from recorded real turns — every answer on file is the world's own answer to that
// call (whatever the episode had done before it); an imagined env holding every call of an episode
// replays it turn for turn as the real env played it; a call never made halts; a training run's
// imagined episodes, counts and refusals; stopped and resumed is the uninterrupted run.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Env, Trajectory, Turn } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import {
  parseSearchCall,
  type SearchChoiceEnv,
  type SearchChoiceObservation,
  searchAnswer,
  searchCallKey,
  searchWorld,
} from '../../src/envs/search/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { parseRehearsalFlag } from '../../src/train/rehearsal.ts';
import { ToolModel } from '../../src/train/rehearsal-tools.ts';
import { assertSameRun } from '../cli/train-run.ts';

const CONFIG = { ratio: 1, alpha: 4, prior: 'pooled' as const };
const tasks = makeTasks(envConfig('search', { mode: 'choose' }), 4, 300);

/** Plays a random-slot episode of up to `budget` turns (the episode seeded `seed`). */
function play(env: Env<unknown, unknown>, task: (typeof tasks)[0], seed: number, budget = 12): Trajectory {
  const rng = Rng.derive(seed, 0x5eed);
  let o = env.reset(seed) as SearchChoiceObservation;
  const turns: Turn[] = [];
  let ret = 0;
  let success = false;
  for (let t = 0; t < budget; t++) {
    const a = rng.int(o.slots.length);
    const r = env.step(a) as {
      observation: SearchChoiceObservation;
      reward: number;
      terminated: boolean;
      info: Turn['info'];
    };
    turns.push({ t, observation: o, action: a, reward: r.reward, logp: 0, info: r.info });
    ret += r.reward;
    o = r.observation;
    if (r.terminated) {
      success = r.info.success === true;
      break;
    }
  }
  return {
    id: `${task.seed}-${seed}`,
    task,
    policy: 'random',
    budget,
    revealBudget: false,
    turns,
    outcome: {
      success,
      return: ret,
      turns: turns.length,
      firstSuccessTurn: null,
      end: 'truncated',
      failure: null,
    },
  };
}

function batch(): Trajectory[] {
  const out: Trajectory[] = [];
  for (const task of tasks)
    for (let i = 0; i < 8; i++)
      out.push(play(envs.make(task) as Env<unknown, unknown>, task, 1000 * task.seed + i));
  return out;
}

test('every answer on file is the world’s own answer to that call, whatever the episode had done before it', () => {
  const model = new ToolModel(CONFIG);
  const b = batch();
  const { added, conflicts } = model.learn(b, (task) => envs.make(task));
  assert.equal(conflicts, 0);
  assert.ok(added > 40, `filed ${added}`);
  let checked = 0;
  for (const t of b) {
    const world = searchWorld(t.task);
    t.turns.forEach((turn, i) => {
      const call = (turn.observation as SearchChoiceObservation).slots[turn.action as number];
      const parsed = parseSearchCall(call);
      assert.ok(parsed.ok);
      const filed = model.lookup(t.task, searchCallKey(parsed));
      // The last turn of a truncated episode shows no answer (its next observation is not recorded).
      if (filed === undefined) {
        assert.ok(i === t.turns.length - 1 && call.name !== 'answer', JSON.stringify(call));
        return;
      }
      assert.deepEqual(filed, JSON.parse(JSON.stringify(searchAnswer(world, parsed))));
      checked++;
    });
  }
  assert.ok(checked > 100, `checked ${checked}`);
  // Learning the same batch again files nothing new and contradicts nothing.
  assert.deepEqual(
    model.learn(b, (task) => envs.make(task)),
    { added: 0, conflicts: 0 },
  );
});

test('keep=N: the tables of the N questions met most recently stay (the batch’s always), in the order a checkpoint restores', () => {
  const b = batch(); // 8 episodes of each of the 4 tasks, task by task
  const of = (i: number) => b.filter((t) => t.task.seed === tasks[i].seed);
  const model = new ToolModel({ ...CONFIG, keep: 3 });
  const learn = (m: ToolModel, ...ix: number[]) => m.learn(ix.flatMap(of), (task) => envs.make(task));
  const kept = (m: ToolModel) => tasks.map((t) => m.known(t) > 0);
  learn(model, 0, 1);
  learn(model, 2, 3); // four met, three kept: task 0, the least recently met, goes
  assert.deepEqual(kept(model), [false, true, true, true]);
  assert.equal(model.questions, 3);
  learn(model, 1); // task 1 met again: now the most recent
  const restored = new ToolModel({ ...CONFIG, keep: 3 }, model.state().tools);
  for (const m of [model, restored]) {
    learn(m, 0); // task 0 comes back: task 2, now the least recent, goes
    assert.deepEqual(kept(m), [true, true, false, true]);
  }
  assert.deepEqual(restored.state(), model.state());
  // A batch of more questions than keep keeps them all.
  const small = new ToolModel({ ...CONFIG, keep: 1 });
  learn(small, 0, 1, 2);
  assert.equal(small.questions, 3);
  learn(small, 3);
  assert.deepEqual(kept(small), [false, false, false, true]);
  // The flag: keep=N, an integer ≥ 1.
  assert.deepEqual(parseRehearsalFlag('ratio=1,keep=64'), { ...CONFIG, keep: 64 });
  for (const bad of ['ratio=1,keep=0', 'ratio=1,keep=1.5', 'ratio=1,keep=x', 'ratio=1,keep=2,keep=3'])
    assert.throws(
      () => parseRehearsalFlag(bad),
      (e: unknown) => e instanceof InputError && /--rehearsal: got ".*"; expected .*keep=N/.test(e.message),
      bad,
    );
});

test('an imagined env that has every call of an episode on file replays it as the real env played it; a call never made halts', () => {
  const model = new ToolModel(CONFIG);
  const b = batch();
  model.learn(b, (task) => envs.make(task));
  let replayed = 0;
  for (const t of b) {
    const real = envs.make(t.task) as SearchChoiceEnv;
    const imagined = real.toolAnswers().imagine((k) => model.lookup(t.task, k));
    const seed = Number(t.id.split('-')[1]);
    let o = imagined.reset(seed);
    // A truncated episode's last call may be unknown (its answer was never seen): replay up to it.
    const n = t.outcome.turns - (t.turns.at(-1)!.info.success === undefined && t.turns.length === 12 ? 1 : 0);
    for (let i = 0; i < n; i++) {
      assert.deepEqual(o, t.turns[i].observation, `episode ${t.id} turn ${i}`);
      const r = imagined.step(t.turns[i].action) as { reward: number; info: Turn['info'] };
      assert.equal(r.reward, t.turns[i].reward);
      assert.deepEqual(r.info, t.turns[i].info);
      o = (r as unknown as { observation: unknown }).observation;
      replayed++;
    }
  }
  assert.ok(replayed > 80, `replayed ${replayed}`);
  // An empty model knows no call: the first step halts with reward 0.
  const env = (envs.make(tasks[0]) as SearchChoiceEnv).toolAnswers().imagine(() => undefined);
  env.reset(1);
  const r = env.step(0) as { reward: number; terminated: boolean; info: Turn['info'] };
  assert.equal(r.reward, 0);
  assert.equal(r.terminated, true);
  assert.equal(r.info.halted, true);
  assert.equal(r.info.success, undefined);
  // An answer never given halts too, though the real env would have judged it.
  const world = searchWorld(tasks[0]);
  const only = new Map([
    [searchCallKey({ ok: true, name: 'answer', text: 'Somebody Else' }), { correct: false }],
  ]);
  const call = envs.make(tasks[0]) as unknown as {
    toolAnswers(): { imagine(l: (k: string) => unknown): Env<unknown, unknown> };
  };
  const inner = call.toolAnswers().imagine((k) => only.get(k));
  assert.ok(world.answer !== 'Somebody Else');
  inner.reset(2);
  assert.equal((inner.step(0) as { info: Turn['info'] }).info.halted, true);
});

test('sql: every answer filed from an ε-scripted batch replays its episode turn for turn in an env that runs no query; a query never run halts', async () => {
  const sqlTasks = makeTasks(envConfig('sql', { level: 1 }), 3, 40);
  const spec = envs.spec(sqlTasks[0]);
  const policy = makePolicy('oracle:eps=0.4', spec);
  const real = await rollout({
    tasks: sqlTasks,
    samples: 4,
    budget: 8,
    runSeed: 3,
    policy,
    makeEnv: (t) => envs.make(t),
  });
  const model = new ToolModel(CONFIG);
  const views = new Map(sqlTasks.map((t) => [t.seed, envs.make(t)]));
  try {
    assert.equal(model.learn(real, (t) => views.get(t.seed)!).conflicts, 0);
    assert.ok(model.size > 10, `filed ${model.size}`);
    let replayed = 0;
    for (const t of real) {
      const env = views.get(t.task.seed)!.toolAnswers!().imagine((k) => model.lookup(t.task, k));
      let o = await env.reset(0);
      // A truncated episode's last call shows no answer: replay up to it.
      const n = t.outcome.end === 'truncated' ? t.turns.length - 1 : t.turns.length;
      for (let i = 0; i < n; i++) {
        assert.deepEqual(o, t.turns[i].observation, `${t.id} turn ${i}`);
        const r = await env.step(t.turns[i].action);
        assert.equal(r.reward, t.turns[i].reward);
        assert.deepEqual(r.info, t.turns[i].info);
        assert.equal(r.terminated, i === t.turns.length - 1 && t.outcome.end === 'terminated');
        o = r.observation;
        replayed++;
      }
    }
    assert.ok(replayed > 30, `replayed ${replayed}`);
    assert.ok(real.some((t) => t.outcome.success) && real.some((t) => !t.outcome.success));
    // A query never run halts (reward 0), though the real env would have run it.
    const env = views.get(sqlTasks[0].seed)!.toolAnswers!().imagine((k) => model.lookup(sqlTasks[0], k));
    await env.reset(0);
    const r = await env.step({ name: 'execute_sql', arguments: { query: 'SELECT 12345 AS never_asked' } });
    assert.deepEqual([r.reward, r.terminated, r.info.halted], [0, true, true]);
  } finally {
    for (const v of views.values()) v.close?.();
  }
});

/** A small MLP run on the choice variant over a pool of 6 questions (4 groups × 4, budget 12). */
const searchConfig = (more: Record<string, unknown>) =>
  parseTrainConfig({
    env: envConfig('search', { mode: 'choose' }),
    policy: { kind: 'mlp', hidden: [16] },
    groups: 4,
    groupSize: 4,
    trainSeeds: [0, 6],
    budget: { kind: 'fixed', budget: 12 },
    eval: { episodes: 8 },
    ...more,
  });

test('a search rehearsal run: round(R·K) imagined episodes per question, the table growing over a pool of questions, no contradictions', async () => {
  const config = searchConfig({ iters: 4, seed: 2, rehearsal: { ...CONFIG, ratio: 1.5 } });
  const r = await trainPolicyGradient({ config, envs });
  let last = 0;
  for (const m of r.metrics) {
    const v = m.values;
    assert.equal(v['rehearsal/imagined_episodes'], 4 * 6);
    assert.equal(v['rollout/episodes'], 16);
    assert.equal(v['rehearsal/conflicts'], 0);
    assert.equal(v['train/turns'], v['rehearsal/real_steps'] + v['rehearsal/imagined_steps']);
    assert.ok(v['rehearsal/known_calls'] >= last && v['rehearsal/new_calls'] >= 0);
    assert.equal(v['rehearsal/known_calls'], last + v['rehearsal/new_calls']);
    assert.ok(v['rehearsal/halted'] >= 0 && v['rehearsal/halted'] <= 1);
    last = v['rehearsal/known_calls'];
  }
  assert.ok(last > 0);
});

test('search rehearsal stopped after its third iteration and resumed is the uninterrupted run; alpha, prior and other tool envs refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-rehearsal-tools-'));
  const config = searchConfig({ iters: 5, checkpointEvery: 1, seed: 5, rehearsal: CONFIG });
  const whole = join(dir, 'whole');
  const cut = join(dir, 'cut');
  const a = await trainPolicyGradient({ config, envs, out: whole });
  await trainPolicyGradient({ config, envs, out: cut, stopAfter: 2 });
  const b = await trainPolicyGradient({ config, envs, out: cut, resume: true });
  assert.deepEqual(b.resumed?.iterations, 3);
  assertSameRun(cut, whole, 5 * 16);
  assert.deepEqual(b.final, a.final);
  for (const [c, why] of [
    [
      { env: envConfig('search', {}), rehearsal: { ...CONFIG, alpha: 2 } },
      /alpha and prior are FrozenLake's/,
    ],
    [
      { env: envConfig('search', {}), rehearsal: { ...CONFIG, prior: 'uniform' } },
      /alpha and prior are FrozenLake's/,
    ],
    [{ env: envConfig('sql', {}), rehearsal: { ...CONFIG, alpha: 0 } }, /alpha and prior are FrozenLake's/],
    [{ env: envConfig('tools', {}), rehearsal: CONFIG }, /search or sql/],
    [{ env: envConfig('frozenlake', {}), rehearsal: { ...CONFIG, keep: 4 } }, /keep is the tool envs'/],
  ] as const)
    assert.throws(
      () => parseTrainConfig(c),
      (e: unknown) => e instanceof InputError && /rehearsal/.test(e.message) && why.test(e.message),
    );
});
