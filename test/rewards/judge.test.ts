// Judges: their parsers on answers written by hand; each judging mode against a fake endpoint that
// answers in the OpenAI chat-completions shape (a deliberately position-biased judge for pairwise, one
// that writes unparseable text or refuses for the judge errors); the replay cache and the totals; an
// unreachable judge refused before any call; and a real `turnwise serve` of a turnwise policy as a judge.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openRubric, scoreBatch } from '../../src/cli/rubric.ts';
import { InputError } from '../../src/core/errors.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { grpoScores } from '../../src/credit/grpo.ts';
import { envConfig, envs, makeTasks, OraclePolicy, rollout, startServer } from '../../src/index.ts';
import { readChoice, readGroup, readPoint } from '../../src/rewards/judge.ts';
import { positionBias } from '../../src/rewards/judging.ts';
import { type JudgeCriterion, parseRubric } from '../../src/rewards/rubric.ts';
import { scoredLine } from '../../src/rewards/score.ts';
import { parseTrajectoryLine } from '../../src/store/jsonl.ts';
import { type Answer, type FakeJudge, fakeJudge, trajectory } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-judge-'));
const servers: { close(): Promise<void> }[] = [];
after(async () => {
  for (const s of servers) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function judge(model: string, answer: (user: string) => Answer): Promise<FakeJudge> {
  const j = await fakeJudge(model, answer);
  servers.push(j);
  return j;
}

/** A rubric of these criteria written to a file, opened (its judges connected). */
async function rubricOf(criteria: Record<string, unknown>[], cacheFile?: string) {
  const file = join(dir, `r${Math.random().toString(36).slice(2)}.json`);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(file, JSON.stringify({ criteria }));
  return openRubric(file, { cacheFile });
}

const parsed = (c: Record<string, unknown>) =>
  parseRubric({ criteria: [{ kind: 'judge', judge: 'openai:http://h/v1#m', ...c }] }, 'p.json')
    .criteria[0] as JudgeCriterion;

test('pointwise parsers: a number (by pattern, or the last one), yes-no, a regex map or expected text, a JSON field', () => {
  const read = (c: Record<string, unknown>, text: string, values: Record<string, string> = {}) => {
    const j = parsed(c);
    return readPoint(text, j.parser, j.scale, values);
  };
  assert.deepEqual(read({}, 'Fine work, 9 of 10 steps useful.\nScore: 7'), { value: 7 });
  assert.deepEqual(read({}, 'Score: 7/10'), { value: 7 }, 'the default pattern reads after "Score:"');
  assert.match((read({}, 'Score: 12') as { error: string }).error, /12 is off the scale \(1 to 10\)/);
  assert.match((read({}, 'I cannot rate this.') as { error: string }).error, /does not match Score/);
  assert.deepEqual(read({ parser: { kind: 'number' } }, 'steps 3, overall 8'), { value: 8 });
  assert.deepEqual(read({ scale: 'yes-no' }, 'Was it solved? Yes. No doubt: yes.'), { value: 1 });
  assert.deepEqual(read({ scale: 'yes-no' }, 'NO'), { value: 0 });
  assert.match((read({ scale: 'yes-no' }, 'maybe') as { error: string }).error, /neither yes nor no/);
  const grade = { kind: 'regex', pattern: 'grade ([A-C])', map: { A: 10, B: 6, C: 1 } };
  assert.deepEqual(read({ parser: grade }, 'grade B'), { value: 6 });
  assert.match((read({ parser: grade }, 'grade D') as { error: string }).error, /does not match/);
  const expect = {
    scale: 'yes-no',
    parser: { kind: 'regex', pattern: '<answer>(\\w+)</answer>', expect: '{{final}}' },
  };
  assert.deepEqual(read(expect, '<answer>Left</answer>', { final: 'Left' }), { value: 1 });
  assert.deepEqual(read(expect, '<answer>Down</answer>', { final: 'Left' }), { value: 0 });
  const json = { scale: { min: 0, max: 1 }, parser: { kind: 'json', field: 'verdict.score' } };
  assert.deepEqual(read(json, 'Here:\n```json\n{"verdict": {"score": 0.25}}\n```'), { value: 0.25 });
  assert.deepEqual(read(json, 'so {"verdict": {"score": 1}} it is'), { value: 1 });
  assert.match((read(json, '{"verdict": {}}') as { error: string }).error, /no number at verdict\.score/);
});

test('pairwise and group parsers', () => {
  const choice = parsed({ mode: 'pairwise' }).parser as Extract<JudgeCriterion['parser'], { kind: 'choice' }>;
  assert.deepEqual(readChoice('A looks shorter.\nAnswer: B', choice), { value: 0 });
  assert.deepEqual(readChoice('Answer: A', choice), { value: 1 });
  assert.match((readChoice('Both are fine.', choice) as { error: string }).error, /names neither A nor B/);
  assert.deepEqual(readChoice('I prefer B, not A', { kind: 'choice' }), { value: 1 }, 'the last label');
  const g = parsed({ mode: 'group' });
  const p = g.parser as Extract<JudgeCriterion['parser'], { kind: 'json' }>;
  const scores = (s: unknown) => JSON.stringify({ scores: s });
  assert.deepEqual(readGroup(scores([0.2, 0.9, 0]), p, g.scale, 3), { value: [0.2, 0.9, 0] });
  // By trajectory_id, whatever the order of the entries.
  const byId = [
    { trajectory_id: '3', explanation: 'x', score: 0.1 },
    { trajectory_id: '1', explanation: 'y', score: 0.7 },
    { trajectory_id: 2, explanation: 'z', score: 0.4 },
  ];
  assert.deepEqual(readGroup(scores(byId), p, g.scale, 3), { value: [0.7, 0.4, 0.1] });
  assert.match(
    (readGroup(scores([0.2, 0.9]), p, g.scale, 3) as { error: string }).error,
    /2 scores for 3 trajectories/,
  );
  assert.match(
    (readGroup(scores([0.2, 1.5, 0]), p, g.scale, 3) as { error: string }).error,
    /1\.5 is off the scale/,
  );
  const twice = [byId[0], byId[0], byId[2]];
  assert.match(
    (readGroup(scores(twice), p, g.scale, 3) as { error: string }).error,
    /not one of 1\.\.3 once each/,
  );
});

/** Four FrozenLake trajectories of one task: 3, 5, 8 and 12 turns, the second and third successful. */
const group = [
  trajectory('t3', [1, 2, 2]),
  trajectory('t5', [1, 2, 2, 1, 1], { success: true }),
  trajectory('t8', [1, 1, 2, 2, 2, 1, 1, 2], { success: true }),
  trajectory('t12', new Array(12).fill(1)),
];
/** The number of turns a transcript shows. */
const turnsIn = (text: string) => (text.match(/^Turn \d+$/gm) ?? []).length;

test('pointwise against an OpenAI-shaped endpoint: scores normalised, every call recorded, unparseable and refused answers are judge errors', async () => {
  // Score = 10 − turns shown (3 → 7, 5 → 5, 8 → 2); 12 turns: it rambles; refuses nothing but… see t5b.
  const j = await judge('fair-1', (user) => {
    const n = turnsIn(user);
    if (n === 12) return { content: 'This is a long one; hard to say.' };
    if (n === 9) return { content: null, refusal: "I can't help with that." };
    return { content: `Reasoning…\nScore: ${10 - n}` };
  });
  const nine = trajectory('t9', new Array(9).fill(2));
  const opened = await rubricOf([
    { kind: 'success', weight: 0.6 },
    { id: 'j', kind: 'judge', judge: `openai:${j.url}#fair-1`, weight: 0.4, price: { in: 1, out: 5 } },
  ]);
  const batch = [...group, nine];
  const { run, summary, totals } = await scoreBatch(opened, batch);
  const js = run.results.map((r) => r.criteria[1]);
  assert.deepEqual(
    js.map((c) => c.score),
    [(7 - 1) / 9, (5 - 1) / 9, (2 - 1) / 9, null, null],
  );
  assert.match(js[3].error as string, /the answer does not match Score/);
  assert.equal(js[4].error, "the judge refused: I can't help with that.");
  // The combination: 0.6·success + 0.4·(N − 1)/9; missing with a judge error.
  assert.deepEqual(
    run.results.map((r) => r.score),
    [0.4 * (6 / 9), 0.6 + 0.4 * (4 / 9), 0.6 + 0.4 * (1 / 9), null, null],
  );
  assert.deepEqual(
    run.results.map((r) => r.judgeErrors),
    [0, 0, 0, 1, 1],
  );
  // The call recorded with the trajectory: the prompt sent, the answer, what was read.
  const call = run.results[0].calls[0];
  assert.deepEqual(call.shown, ['t3']);
  assert.equal(call.response, 'Reasoning…\nScore: 7');
  assert.equal(call.parsed, 7);
  assert.deepEqual(call.prompt, j.seen[0].messages);
  assert.match(
    call.prompt[1].content,
    /Transcript \(3 turns\):\nTurn 1\nObservation:\nP___\n_O_O\n___O\nO__G\nAction: Down/,
  );
  assert.equal(j.seen[0].temperature, 0);
  assert.equal(j.seen[0].model, 'fair-1');
  assert.equal(summary.judgeErrors, 2);
  assert.equal(summary.scored, 3);
  assert.equal(totals?.requests, 5);
  assert.equal(totals?.promptTokens, 50);
  assert.equal(totals?.completionTokens, 10);
  assert.equal(totals?.cost, (50 * 1 + 10 * 5) / 1e6);
});

test('the replay cache: the same prompts again are answered from it, with no request', async () => {
  const j = await judge('cached-1', (user) => ({ content: `Score: ${Math.min(10, turnsIn(user))}` }));
  const cache = join(dir, 'judge-cache.sqlite');
  const criteria = [{ kind: 'judge', judge: `openai:${j.url}#cached-1` }];
  const first = await scoreBatch(await rubricOf(criteria, cache), group);
  const seen = j.seen.length;
  const again = await scoreBatch(await rubricOf(criteria, cache), group);
  assert.equal(j.seen.length, seen, 'no chat request the second time');
  assert.equal(again.totals?.requests, 0);
  assert.equal(again.totals?.cached, 4);
  assert.deepEqual(
    again.run.results.map((r) => r.score),
    first.run.results.map((r) => r.score),
  );
  assert.deepEqual(
    first.run.results.map((r) => r.score),
    [2 / 9, 4 / 9, 7 / 9, 1],
  );
});

test('pairwise: a judge biased to the first shown, its position bias and scores computed by hand', async () => {
  // It prefers the trajectory with fewer turns only when that one is shown second with at least 4
  // turns fewer; otherwise it says A, the first shown. Pairs (turns): 3-5, 3-8, 3-12, 5-8, 5-12, 8-12.
  //   shown (3, x): A — right; shown (x, 3): B when x ≥ 7, else A (wrong).
  //   3-5: A, A → flipped;  3-8: A, B;  3-12: A, B;  5-8: A, A → flipped;  5-12: A, B;  8-12: A, B.
  // First shown preferred in 8 of 12 answers: bias 8/12 − ½ = 1/6; 2 pairs flipped.
  const j = await judge('biased-1', (user) => {
    const a = turnsIn(user.slice(0, user.indexOf('Agent B')));
    const b = turnsIn(user.slice(user.indexOf('Agent B')));
    return { content: b <= a - 4 ? 'Answer: B' : 'Answer: A' };
  });
  const opened = await rubricOf([{ kind: 'judge', judge: `openai:${j.url}#biased-1`, mode: 'pairwise' }]);
  const { run, summary } = await scoreBatch(opened, group);
  assert.equal(j.seen.length, 12);
  const p = run.pairs.get('judge');
  assert.ok(p !== undefined);
  assert.equal(p.answers, 12);
  assert.equal(p.firstWins, 8);
  assert.equal(p.flipped, 2);
  assert.equal(positionBias(p), 8 / 12 - 0.5);
  assert.deepEqual(summary.positionBias, [
    { criterion: 'judge', bias: 8 / 12 - 0.5, answers: 12, firstWins: 8, flipped: 2, pairs: 6 },
  ]);
  // p(3 over 5) = ½ (flipped), p(3 over 8) = p(3 over 12) = 1: 3 scores 5/6; 5: ½ (vs 3), ½ (vs 8,
  // flipped), 1 (vs 12): 2/3; 8: 0, ½, 1: ½; 12: 0, 0, 0.
  assert.deepEqual(
    run.results.map((r) => r.score),
    [5 / 6, 2 / 3, 1 / 2, 0],
  );
  // Each call shows the pair in its order, and is recorded with both trajectories.
  assert.deepEqual(
    run.results[0].calls.map((c) => c.shown),
    [
      ['t3', 't5'],
      ['t5', 't3'],
      ['t3', 't8'],
      ['t8', 't3'],
      ['t3', 't12'],
      ['t12', 't3'],
    ],
  );
});

test('pairwise: an unparseable answer leaves both trajectories of the pair without a score', async () => {
  const j = await judge('shy-1', (user) => ({
    content: turnsIn(user) === 3 + 12 ? 'They are both interesting.' : 'Answer: A',
  }));
  const opened = await rubricOf([{ kind: 'judge', judge: `openai:${j.url}#shy-1`, mode: 'pairwise' }]);
  const { run } = await scoreBatch(opened, group);
  assert.deepEqual(
    run.results.map((r) => [r.score, r.judgeErrors]),
    [
      [null, 1],
      [0.5, 0],
      [0.5, 0],
      [null, 1],
    ],
  );
  assert.match(run.results[0].criteria[0].error as string, /names neither A nor B/);
});

test('group (RULER): one prompt per task, scores by trajectory_id; a bad answer is a judge error for the whole group', async () => {
  // Scores 1/turns of each trajectory shown, listed in reverse order with their ids.
  const j = await judge('ruler-1', (user) => {
    const parts = user.split(/^Trajectory \d+ /m).slice(1);
    if (parts.length === 2) return { content: '{"scores": [0.5]}' };
    const entries = parts.map((p, k) => ({
      trajectory_id: String(k + 1),
      explanation: '…',
      score: 1 / turnsIn(p),
    }));
    return { content: JSON.stringify({ scores: entries.reverse() }) };
  });
  const other = { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 1 };
  const pair = [trajectory('u2', [2, 2], { task: other }), trajectory('u4', [2, 2, 1, 1], { task: other })];
  const opened = await rubricOf([{ kind: 'judge', judge: `openai:${j.url}#ruler-1`, mode: 'group' }]);
  const batch = [group[0], pair[0], group[1], group[2], pair[1], group[3]];
  const { run } = await scoreBatch(opened, batch);
  assert.equal(j.seen.length, 2, 'one call a task');
  assert.deepEqual(
    run.results.map((r) => r.score),
    [1 / 3, null, 1 / 5, 1 / 8, null, 1 / 12],
  );
  assert.match(run.results[1].criteria[0].error as string, /1 scores for 2 trajectories/);
  assert.deepEqual(run.results[0].calls[0].shown, ['t3', 't5', 't8', 't12']);
  assert.match((j.seen[0].messages as { content: string }[])[1].content, /Score each of the 4 trajectories/);
  // The scored trajectories, read back as any trajectory file is, feed GRPO's group baseline with the
  // judge's scores as their returns: A_i = (R_i − mean R)/(std R + 1e-6), std over the group (÷G).
  const lines = [0, 2, 3, 5].map((i) =>
    JSON.stringify(scoredLine(batch[i], run.results[i], 'rubric:g.json')),
  );
  const back = lines.map((l, k) => parseTrajectoryLine(l, `line ${k + 1}`));
  const R = [1 / 3, 1 / 5, 1 / 8, 1 / 12];
  assert.deepEqual(
    back.map((t) => t.outcome.return),
    R,
  );
  const mean = R.reduce((a, b) => a + b, 0) / 4;
  const std = Math.sqrt(R.reduce((a, b) => a + (b - mean) ** 2, 0) / 4);
  const A = grpoScores(back);
  R.forEach((r, i) => {
    assert.ok(Math.abs(A[i] - (r - mean) / (std + 1e-6)) < 1e-12);
  });
});

test('a judge that cannot be reached, or does not list its model, is refused before any call, naming the criterion', async () => {
  const refusal = async (criteria: Record<string, unknown>[]) => {
    try {
      await rubricOf(criteria);
    } catch (e) {
      assert.ok(e instanceof InputError, String(e));
      return e.message;
    }
    assert.fail('accepted');
  };
  assert.match(
    await refusal([{ kind: 'success' }, { kind: 'judge', judge: 'openai:http://127.0.0.1:1/v1#m' }]),
    /^\S+\.json criteria\[1\]\.judge: got "http:\/\/127\.0\.0\.1:1\/v1"; cannot reach the server \(ECONNREFUSED\)$/,
  );
  const j = await judge('listed-1', () => ({ content: 'Score: 1' }));
  assert.match(
    await refusal([{ kind: 'judge', judge: `openai:${j.url}#other-2` }]),
    /criteria\[0\]\.judge: got "other-2"; the server does not list this model; it lists listed-1$/,
  );
  assert.equal(j.seen.length, 0);
});

test('a served turnwise policy as a judge: the oracle, asked at the last state, agrees or not with the last move', async () => {
  // turnwise serve of oracle:horizon=100 reads the board in the prompt and answers its greedy action
  // there; the criterion scores 1 when that is the trajectory's last move. Expected: argmax of the
  // exact Q*_100 at the last observation's cell (computed here from the env's oracle).
  const config = envConfig('frozenlake', { map: '4x4', slippery: true });
  const env = envs.make({ ...config, seed: 0 });
  const server = await startServer({ policy: new OraclePolicy({ horizon: 100 }, 'oracle:horizon=100'), env });
  servers.push(server);
  const batch: Trajectory[] = await rollout({
    tasks: makeTasks(config, 3, 7),
    samples: 4,
    budget: 40,
    runSeed: 2,
    policy: new OraclePolicy({ eps: 0.4 }, 'oracle:eps=0.4'),
    makeEnv: envs.make,
  });
  const opened = await rubricOf([
    {
      kind: 'judge',
      judge: `openai:${server.url}#oracle:horizon=100`,
      scale: 'yes-no',
      prompt: 'The last move was {{final}}, from here:\n{{last_observation}}',
      parser: { kind: 'regex', pattern: '<answer>(\\w+)</answer>', expect: '{{final}}' },
    },
  ]);
  const { run, totals } = await scoreBatch(opened, batch);
  const oracle = env.oracle?.();
  assert.ok(oracle !== undefined);
  const names = ['Left', 'Down', 'Right', 'Up'];
  let agree = 0;
  batch.forEach((t, i) => {
    const last = t.turns[t.turns.length - 1];
    const q = Array.from(oracle.q(100, last.observation as number));
    const best = q.map((x, a) => (x === Math.max(...q) ? names[a] : '')).filter((x) => x !== '');
    const answered = /<answer>(\w+)<\/answer>/.exec(run.results[i].calls[0].response ?? '')?.[1] as string;
    assert.ok(best.includes(answered), `${t.id}: the served oracle answered ${answered}, Q* says ${best}`);
    const expected = answered === names[last.action as number] ? 1 : 0;
    assert.equal(run.results[i].score, expected, t.id);
    agree += expected;
  });
  assert.ok(agree > 0 && agree < batch.length, `${agree} of ${batch.length}: both verdicts occur`);
  assert.equal(totals?.requests, batch.length);
  assert.equal(totals?.failed, 0);
});
