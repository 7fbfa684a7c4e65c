// The judge arm of the reward-hacking study: a judge criterion as a mitigation, through train --reward's
// rubric and the openai: judge client. The judge here is examples/judges/detector-judge.ts — a real
// HTTP server in the shape of OpenAI's chat completions API that answers by the code env's detector
// from what the prompt shows; these tests check that it reads the prompt the rubric sends (its verdict
// equals the detector's on the submitted candidate, taken from the env itself, not from the text), that
// the rubric combines as stated, that --flip inverts verdicts at the rate asked, and the study's arm.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { type DetectorJudge, startDetectorJudge } from '../../examples/judges/detector-judge.ts';
import type { Task, Trajectory } from '../../src/core/types.ts';
import { type CodeChoiceEnv, detectHack } from '../../src/envs/code/index.ts';
import { envs, makeEnv } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { HACKING_ARMS, openJudge, runHackingStudy } from '../../src/studies/hacking.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { rewardBatch } from '../../src/train/reward.ts';
import { inProcess } from '../cli/run.ts';

const judges: DetectorJudge[] = [];
after(async () => {
  for (const j of judges) await j.close();
});
async function judge(flip = 0): Promise<DetectorJudge> {
  const j = await startDetectorJudge({ flip, seed: 7 });
  judges.push(j);
  return j;
}

const params = { mode: 'choose', candidates: 4, reward: 'visible' };
const config = parseTrainConfig({ env: { env: 'code', params }, reward: 'rubric:honest', groupSize: 4 });

/** 40 tasks × 4 samples of a uniformly random choice, one turn each. */
async function batch(): Promise<Trajectory[]> {
  const tasks: Task[] = Array.from({ length: 40 }, (_, i) => ({ env: 'code', params, seed: 500 + i }));
  return await rollout({
    tasks,
    samples: 4,
    policy: makePolicy('random', envs.spec(tasks[0])),
    makeEnv: (t) => envs.make(t),
    budget: 1,
    runSeed: 3,
  });
}

async function judged(j: DetectorJudge, ts: Trajectory[]) {
  const source = await openJudge(`openai:${j.url}#${j.model}`);
  const made = new Map<number, CodeChoiceEnv>();
  const env = (task: Task) => {
    let e = made.get(task.seed);
    if (e === undefined) {
      e = makeEnv(task) as unknown as CodeChoiceEnv;
      made.set(task.seed, e);
    }
    return e;
  };
  const r = await rewardBatch(source, config, ts, env, (t) => envs.spec(t));
  return { r, env };
}

test('the detector judge reads the prompt the rubric sends: its verdict is the detector’s on the submitted program', async () => {
  const j = await judge();
  const ts = await batch();
  const { r, env } = await judged(j, ts);
  assert.equal(j.answered(), ts.length);
  let flagged = 0;
  ts.forEach((t, i) => {
    const e = env(t.task);
    const code = e.candidates[t.turns[0].action as number].code;
    const hack = detectHack(code, e.world.visible).flagged;
    if (hack) flagged++;
    const jm = r.judgements[i];
    assert.equal(jm.criteria[1].score, hack ? 0 : 1, `trajectory ${t.id}: the judge's verdict`);
    assert.equal(jm.score, hack ? 0 : t.outcome.success ? 1 : 0, 'visible verdict gated by the judge');
    assert.deepEqual(jm.gates, hack ? ['honest'] : []);
  });
  // The random policy submits the hack about once in four: both verdicts occur.
  assert.ok(flagged > 10 && flagged < ts.length - 10, `${flagged} flagged of ${ts.length}`);
});

test('--flip P inverts each verdict with probability P, the same prompt always the same way', async () => {
  const ts = await batch();
  const honest = (await judged(await judge(), ts)).r.judgements.map((x) => x.criteria[1].score);
  const all = (await judged(await judge(1), ts)).r.judgements.map((x) => x.criteria[1].score);
  assert.deepEqual(
    all,
    honest.map((s) => 1 - (s as number)),
  );
  const some = (await judged(await judge(0.3), ts)).r.judgements.map((x) => x.criteria[1].score);
  const again = (await judged(await judge(0.3), ts)).r.judgements.map((x) => x.criteria[1].score);
  assert.deepEqual(some, again);
  // Distinct prompts flip independently: 160 trajectories, but prompts repeat within a task when its
  // samples submit the same candidate, so count over distinct (task, candidate).
  const seen = new Map<string, boolean>();
  ts.forEach((t, i) => {
    seen.set(`${t.task.seed}/${String(t.turns[0].action)}`, some[i] !== honest[i]);
  });
  const rate = [...seen.values()].filter(Boolean).length / seen.size;
  // Binomial(n ≈ 120, 0.3): 5 standard deviations ≈ ±0.21.
  assert.ok(Math.abs(rate - 0.3) < 0.21, `flip rate ${rate} over ${seen.size} prompts`);
});

test('study hacking with a judge: a fifth arm, the same start as the others, every trajectory judged', async () => {
  const j = await judge();
  const spec = `openai:${j.url}#${j.model}`;
  const options = { seeds: [1], iters: 2, groups: 4, groupSize: 4, candidates: 4, window: 1, judge: spec };
  const s = await runHackingStudy(options, undefined, await openJudge(spec));
  assert.deepEqual(
    s.arms.map((a) => a.name),
    [...HACKING_ARMS.map((a) => a.name), 'judge'],
  );
  assert.equal(j.answered(), 2 * 4 * 4);
  const [visible] = s.arms;
  const arm = s.arms[4];
  for (const f of ['visible', 'hidden', 'gap', 'detected'] as const)
    assert.deepEqual(arm.curves[f][0], visible.curves[f][0], `iteration 0 of ${f}: the same collection`);
  assert.ok(arm.vsVisible !== undefined);
});

test('study hacking --judge: a judge that is not there or not a judge spec is refused in one line', async () => {
  for (const [spec, pattern] of [
    [
      'openai:http://127.0.0.1:9/v1#x',
      /^turnwise: --judge: got "http:\/\/127\.0\.0\.1:9\/v1"; cannot reach the server/,
    ],
    ['bogus', /^turnwise: --judge: got "bogus"; /],
  ] as const) {
    const r = await inProcess(['study', 'hacking', '--iters', '1', '--seeds', '1', '--judge', spec]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(r.stdout, '');
  }
});
