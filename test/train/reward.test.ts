// Training on a rubric's reward (train/reward.ts, `train --reward rubric:FILE`): the learner's batch is
// the scored trajectories with their score as their reward; a trajectory without a score is left out
// of the update, and so is a group left with fewer than two scores (GRPO); each trajectory's judgement
// is stored beside it in the iteration's transaction, so a resumed run stores each once; the stored
// trajectories stay on the env's reward. The judge is a real HTTP server answering in the shape of
// OpenAI's chat completions API (test/rewards/fixtures.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openRubric } from '../../src/cli/rubric.ts';
import type { Task } from '../../src/core/types.ts';
import { envs } from '../../src/envs/index.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { type Judgement, rewardBatch } from '../../src/train/reward.ts';
import { type FakeJudge, fakeJudge, LAKE, trajectory } from '../rewards/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-train-reward-'));
const judges: FakeJudge[] = [];
after(async () => {
  for (const j of judges) await j.close();
  rmSync(dir, { recursive: true, force: true });
});

function rubricFile(name: string, criteria: unknown[]): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify({ criteria }));
  return file;
}

const turnsIn = (text: string) => (text.match(/^Turn \d+$/gm) ?? []).length;
const task = (seed: number): Task => ({ ...LAKE, seed });

test('rewardBatch: scores as the rubric combines them become the rewards; the missing-score rule', async () => {
  // The judge scores N = turns shown (scale 1–10) and cannot be read on two-turn trajectories.
  const judge = await fakeJudge('j', (user) =>
    turnsIn(user) === 2 ? { content: 'It depends.' } : { content: `Score: ${turnsIn(user)}` },
  );
  judges.push(judge);
  const file = rubricFile('judged.json', [
    { id: 'solved', kind: 'success', weight: 0.5 },
    { id: 'j', kind: 'judge', judge: `openai:${judge.url}#j`, weight: 0.5 },
  ]);
  const opened = await openRubric(file);
  const config = parseTrainConfig({
    env: { env: 'frozenlake', params: LAKE.params },
    reward: `rubric:${file}`,
  });
  const batch = [
    // task 0: three samples, one unreadable → two used.
    trajectory('a', [0], { task: task(0), success: true }),
    trajectory('b', [0, 1], { task: task(0) }),
    trajectory('c', [0, 1, 2], { task: task(0) }),
    // task 1: one readable of two → the group has no baseline: left out.
    trajectory('d', [0, 1], { task: task(1) }),
    trajectory('e', [0, 1, 2, 3], { task: task(1), success: true }),
    // task 2: none readable.
    trajectory('f', [0, 1], { task: task(2) }),
    trajectory('g', [2, 2], { task: task(2) }),
  ];
  const text = () => ({ text: (o: unknown) => `cell ${String(o)}` });
  const r = await rewardBatch(opened, config, batch, text, (t) => envs.spec(t));
  // Score = 0.5·success + 0.5·(turns − 1)/9.
  const expected: Record<string, number | null> = {
    a: 0.5,
    b: null,
    c: 0.5 * (2 / 9),
    d: null,
    e: 0.5 + 0.5 * (3 / 9),
    f: null,
    g: null,
  };
  r.judgements.forEach((j: Judgement, i) => {
    const want = expected[batch[i].id];
    if (want === null) assert.equal(j.score, null, batch[i].id);
    else assert.ok(Math.abs((j.score as number) - want) < 1e-12, `${batch[i].id}: ${j.score} vs ${want}`);
    assert.equal(j.envReturn, batch[i].outcome.return);
    assert.equal(j.calls.length, 1, 'each trajectory shown to the judge once');
  });
  assert.deepEqual(
    r.judgements.map((j) => j.used),
    [true, false, true, false, false, false, false],
  );
  assert.equal(r.judgements[1].judgeErrors, 1);
  assert.match(r.judgements[1].calls[0].error ?? '', /./);
  // The learner's batch: a and c, their score as their reward (the last turn's; outcome.return).
  assert.deepEqual(
    r.learnt.map((t) => t.id),
    ['a', 'c'],
  );
  for (const t of r.learnt) {
    const s = expected[t.id] as number;
    assert.ok(Math.abs(t.outcome.return - s) < 1e-12);
    assert.deepEqual(
      t.turns.map((u) => u.reward),
      t.turns.map((_, k) => (k === t.turns.length - 1 ? t.outcome.return : 0)),
    );
  }
  assert.equal(batch[0].outcome.return, 1, 'the batch itself is untouched');
  const { 'reward/mean': meanScore, ...counts } = r.values;
  assert.ok(Math.abs(meanScore - (0.5 + 0.5 * (2 / 9) + 0.5 + 0.5 * (3 / 9)) / 3) < 1e-12);
  assert.deepEqual(counts, {
    'reward/scored': 3,
    'reward/missing': 4,
    'reward/judge_errors': 4,
    'reward/gated': 0,
    'reward/used': 2,
    'reward/dropped_groups': 1,
    'reward/judge_calls': 7,
  });
  // A method without a group baseline keeps a group's lone score.
  const gae = parseTrainConfig({
    env: { env: 'frozenlake', params: LAKE.params },
    reward: `rubric:${file}`,
    algo: 'ppo',
  });
  const g = await rewardBatch(opened, gae, batch, text, (t) => envs.spec(t));
  assert.deepEqual(
    g.learnt.map((t) => t.id),
    ['a', 'c', 'e'],
  );
});

const lake = { env: 'frozenlake', params: { map: '4x4', slippery: true } };
const base = {
  env: lake,
  iters: 4,
  groups: 4,
  groupSize: 4,
  eval: { episodes: 20 },
  seed: 5,
  checkpointEvery: 2,
  storeTrajectories: true,
  ppo: { entCoef: 0 },
};

function stored(out: string) {
  const store = new RunStore(join(out, 'run.sqlite'), 'run', true);
  try {
    return { trajectories: store.trajectories('train'), judgements: store.judgements('train') };
  } finally {
    store.close();
  }
}

test('a run on a rubric: judgements stored beside the true trajectories, once each across a resume', async () => {
  const file = rubricFile('short.json', [{ id: 'short', kind: 'max-turns', n: 3 }]);
  const opened = await openRubric(file);
  const config = parseTrainConfig({ ...base, reward: `rubric:${file}` });
  const whole = join(dir, 'whole');
  const r = await trainPolicyGradient({ config, envs, out: whole, reward: opened });
  const { trajectories, judgements } = stored(whole);
  assert.equal(trajectories.length, 4 * 16);
  assert.deepEqual(
    judgements.map((j) => j.idx),
    trajectories.map((_, i) => i),
  );
  for (const [i, t] of trajectories.entries()) {
    const j = judgements[i].data as Judgement;
    assert.equal(j.score, t.outcome.turns <= 3 ? 1 : 0, `trajectory ${i}`);
    assert.equal(j.envReturn, t.outcome.success ? 1 : 0, 'stored on the env reward');
    assert.equal(t.outcome.return, j.envReturn);
  }
  for (const m of r.metrics) {
    const ts = trajectories.slice(16 * m.iter, 16 * (m.iter + 1));
    const short = ts.filter((t) => t.outcome.turns <= 3).length;
    assert.equal(m.values['reward/mean'], short / 16);
    assert.equal(m.values['rollout/success'], ts.filter((t) => t.outcome.success).length / 16);
  }

  // Killed after iteration 2 (its rows stored, the checkpoint at iteration 1), then resumed: the rows
  // after the checkpoint are recomputed, nothing is stored twice, and the run is the uninterrupted one.
  const cut = join(dir, 'cut');
  await trainPolicyGradient({ config, envs, out: cut, reward: opened, stopAfter: 2 });
  assert.equal(stored(cut).judgements.length, 3 * 16);
  const resumed = await trainPolicyGradient({ config, envs, out: cut, reward: opened, resume: true });
  assert.equal(resumed.resumed?.iterations, 2);
  assert.deepEqual(stored(cut), stored(whole));
});

test('a constant rubric score gives every advantage 0: the policy does not move (it does on a varying score)', async () => {
  const file = rubricFile('always.json', [{ id: 'any', kind: 'max-turns', n: 1000 }]);
  const opened = await openRubric(file);
  const shortFile = rubricFile('short-again.json', [{ id: 'short', kind: 'max-turns', n: 3 }]);
  const table = (r: Awaited<ReturnType<typeof trainPolicyGradient>>) =>
    Array.from(r.learner.params[0][1].data as Float32Array);
  const config = parseTrainConfig({ ...base, storeTrajectories: false });
  const untrained = await trainPolicyGradient({ config: { ...config, iters: 0 }, envs });
  const flat = await trainPolicyGradient({
    config: parseTrainConfig({ ...base, storeTrajectories: false, reward: `rubric:${file}` }),
    envs,
    reward: opened,
  });
  for (const m of flat.metrics) assert.equal(m.values['reward/mean'], 1);
  assert.deepEqual(table(flat), table(untrained));
  const short = await trainPolicyGradient({
    config: parseTrainConfig({ ...base, storeTrajectories: false, reward: `rubric:${shortFile}` }),
    envs,
    reward: await openRubric(shortFile),
  });
  assert.ok(short.metrics.some((m) => m.values['reward/mean'] > 0 && m.values['reward/mean'] < 1));
  assert.notDeepEqual(table(short), table(untrained));
});

test('a rubric reward refuses what reads or rewrites the reward before it', async () => {
  const reward = 'rubric:x.json';
  const refused = (extra: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(() => parseTrainConfig({ ...base, reward, ...extra }), pattern);
  refused({ shaping: { kind: 'progress', coef: 0.1 } }, /reward.*both rewrite the learner's reward/);
  refused({ algo: 'es' }, /reward.*algo es ranks/);
  refused({ dynamicSampling: { enabled: true } }, /reward.*dynamic sampling drops groups/);
  refused({ guidance: { mode: 'bread' } }, /reward.*BREAD replays/);
  assert.throws(() => parseTrainConfig({ ...base, reward: 'judge.json' }), /reward.*rubric:FILE/);
  await assert.rejects(
    trainPolicyGradient({ config: parseTrainConfig({ ...base, reward }), envs }),
    /needs its opened rubric/,
  );
});
