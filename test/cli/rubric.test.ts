// The rubric through the CLI. The contract of issue 27: a rubric file with a deterministic check and a
// judge criterion, run through `eval --reward` against a judge endpoint that answers in the OpenAI
// shape, gives scores that combine as the rubric says; an unparseable judge answer is recorded as a
// judge error. Then `eval --in --reward`, `judge audit` and `export --format preference` on the same
// file, and the bad input each refuses in one line (exit 2) before any work.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type FakeJudge, fakeJudge, trlPreference } from '../rewards/fixtures.ts';
import { firstSpawned, inProcess } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-cli-rubric-'));
const judges: FakeJudge[] = [];
after(async () => {
  for (const j of judges) await j.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The number of turns a transcript shows. */
const turnsIn = (text: string) => (text.match(/^Turn \d+$/gm) ?? []).length;

/** A judge that scores N = min(10, turns shown), and rambles without a score in its first answer. */
async function judge(model: string): Promise<FakeJudge> {
  let n = 0;
  const j = await fakeJudge(model, (user) =>
    ++n === 1
      ? { content: 'Hard to say; the agent wandered.' }
      : { content: `Score: ${Math.min(10, turnsIn(user))}` },
  );
  judges.push(j);
  return j;
}

function rubric(name: string, judgeUrl: string, model: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      criteria: [
        { id: 'solved', kind: 'success', weight: 0.6 },
        { id: 'length', kind: 'judge', judge: `openai:${judgeUrl}#${model}`, weight: 0.4 },
      ],
    }),
  );
  return file;
}

interface Line {
  id: string;
  task: { seed: number };
  turns: { reward: number }[];
  outcome: { success: boolean; turns: number; return: number };
  rubric: {
    score: number | null;
    envReturn: number;
    judgeErrors: number;
    criteria: { id: string; score: number | null; error?: string }[];
    calls: { response: string | null; parsed?: number; error?: string }[];
  };
}
const lines = (file: string): Line[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);

const traj = join(dir, 't.jsonl');
before(async () => {
  const r = await inProcess(
    [
      'rollout',
      '--slippery',
      '--policy',
      'oracle:eps=0.3',
      '--tasks',
      '4',
      '--samples',
      '6',
      '--budget',
      '40',
      '--seed',
      '3',
      '--out',
      traj,
    ],
    dir,
  );
  assert.equal(r.code, 0, r.stderr);
});

test('contract: eval --reward rubric:FILE against an OpenAI-shaped judge — scores combine as stated, an unparseable answer is a judge error', async () => {
  const j = await judge('lengths-1');
  const file = rubric('contract.json', j.url, 'lengths-1');
  const scores = join(dir, 'scores.jsonl');
  const r = await inProcess(
    [
      'eval',
      '--slippery',
      '--policy',
      'oracle:eps=0.3',
      '--tasks',
      '3',
      '--samples',
      '4',
      '--K',
      '1,4',
      '--T',
      '40',
      '--seed',
      '5',
      '--reward',
      `rubric:${file}`,
      '--scores',
      scores,
    ],
    dir,
  );
  assert.equal(r.code, 0, r.stderr);
  const got = lines(scores);
  assert.equal(got.length, 12, 'every trajectory of the run at the largest T');
  assert.equal(j.seen.length, 12);
  let errors = 0;
  const scored: number[] = [];
  for (const t of got) {
    const call = t.rubric.calls[0];
    const n = Math.min(10, t.outcome.turns);
    const success = t.outcome.success ? 1 : 0;
    assert.equal(t.rubric.envReturn, success, "the env's own return kept beside");
    if (call.response === 'Hard to say; the agent wandered.') {
      errors++;
      assert.equal(t.rubric.score, null);
      assert.equal(t.rubric.judgeErrors, 1);
      assert.match(call.error as string, /the answer does not match Score/);
      assert.equal(t.rubric.criteria[1].score, null);
      assert.equal(t.outcome.return, success, 'no score: the env reward stays');
      continue;
    }
    assert.equal(call.parsed, n);
    const want = 0.6 * success + 0.4 * ((n - 1) / 9);
    assert.ok(Math.abs((t.rubric.score as number) - want) < 1e-12, `${t.id}: ${t.rubric.score} ≠ ${want}`);
    assert.equal(t.outcome.return, t.rubric.score, 'the reward is the rubric score');
    assert.equal(t.turns.at(-1)?.reward, t.rubric.score);
    assert.equal(
      t.turns.slice(0, -1).reduce((s, u) => s + u.reward, 0),
      0,
    );
    scored.push(want);
  }
  assert.equal(errors, 1);
  const mean = scored.reduce((s, x) => s + x, 0) / scored.length;
  assert.match(
    r.stdout,
    new RegExp(
      `\\nrubric .*contract\\.json: mean score ${mean.toFixed(4)} over 11 of 12 trajectories \\(env success \\d\\.\\d{4} beside\\); judge errors 1 \\(in 1 trajectory\\); scores set by a gate 0\\n`,
    ),
  );
  assert.match(
    r.stdout,
    /\njudge requests: 12 \(0 retries, 0 failed; 200×12\), 0 from the cache; tokens 120 in, 24 out\n$/,
  );
});

test('eval --in --reward --json: the summary of a recorded file; judge audit and export --format preference on it', async () => {
  const j = await judge('lengths-2');
  const file = rubric('in.json', j.url, 'lengths-2');
  const scores = join(dir, 'in-scores.jsonl');
  const r = await inProcess(
    [
      'eval',
      '--in',
      traj,
      '--K',
      '1',
      '--T',
      '40',
      '--reward',
      `rubric:${file}`,
      '--scores',
      scores,
      '--json',
    ],
    dir,
  );
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as {
    reward: {
      mean: number;
      scored: number;
      judgeErrors: number;
      trajectories: number;
      criteria: { id: string; errors: number }[];
    };
    judgeRequests: { requests: number };
  };
  const got = lines(scores);
  const values = got.map((t) => t.rubric.score).filter((s): s is number => s !== null);
  assert.equal(report.reward.trajectories, 24);
  assert.equal(report.reward.scored, 23);
  assert.equal(report.reward.judgeErrors, 1);
  assert.deepEqual(
    report.reward.criteria.map((c) => [c.id, c.errors]),
    [
      ['solved', 0],
      ['length', 1],
    ],
  );
  assert.ok(Math.abs(report.reward.mean - values.reduce((s, x) => s + x, 0) / values.length) < 1e-12);
  assert.equal(report.judgeRequests.requests, 24);

  // The audit of the same judge (a new server: its first answer rambles again): its confusion matrix is
  // the judge's verdicts (score ≥ ½) against outcome.success, counted here from a scored file.
  const k = await judge('lengths-3');
  const audited = rubric('audit.json', k.url, 'lengths-3');
  const a = await inProcess(['judge', 'audit', '--in', traj, '--rubric', audited, '--json'], dir);
  assert.equal(a.code, 0, a.stderr);
  const audit = JSON.parse(a.stdout) as {
    audits: {
      criterion: string;
      n: number;
      judgeErrors: number;
      confusion: Record<string, number>;
      kappa: number | null;
    }[];
  };
  const want = { tp: 0, fn: 0, fp: 0, tn: 0 };
  for (const t of got) {
    const s = t.rubric.criteria[1].score;
    if (s === null) continue;
    const key = t.outcome.success ? (s >= 0.5 ? 'tp' : 'fn') : s >= 0.5 ? 'fp' : 'tn';
    want[key]++;
  }
  const [length] = audit.audits;
  assert.equal(length.criterion, 'length');
  assert.equal(length.n, 23);
  assert.equal(length.judgeErrors, 1);
  assert.deepEqual(length.confusion, want);
  const text = await inProcess(['judge', 'audit', '--in', traj, '--rubric', audited], dir);
  assert.match(
    text.stdout,
    /^judge audit of .*audit\.json on .*t\.jsonl: 24 trajectories, env success \d\.\d{4}; a verdict is pass when the score is ≥ 0\.5\n/,
  );
  assert.match(text.stdout, /\nlength bias: the score against the turns within each verifier class/);

  // Preference pairs by the rubric's scores: every pair of a task's scored trajectories with different
  // scores, the higher chosen; read back as TRL reads them.
  const prefs = join(dir, 'prefs.jsonl');
  const e = await inProcess(
    ['export', '--format', 'preference', '--by', 'rubric', '--in', scores, '--out', prefs, '--chat', 'text'],
    dir,
  );
  assert.equal(e.code, 0, e.stderr);
  let pairs = 0;
  for (const seed of new Set(got.map((t) => t.task.seed))) {
    const xs = got
      .filter((t) => t.task.seed === seed && t.rubric.score !== null)
      .map((t) => t.rubric.score as number);
    for (let i = 0; i < xs.length; i++) for (let m = i + 1; m < xs.length; m++) if (xs[i] !== xs[m]) pairs++;
  }
  const rows = readFileSync(prefs, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(rows.length, pairs);
  assert.match(
    e.stdout,
    new RegExp(
      `^wrote ${pairs} preference pairs of 4 tasks \\(from 24 trajectories; chosen by the higher rubric score; \\d+ pairs without the facts to decide\\)`,
    ),
  );
  for (const row of rows) trlPreference(row);

  // By the preference criterion (fewer turns among successes): the chosen conversation has fewer
  // assistant messages (turns) than the rejected one.
  const byTurns = join(dir, 'prefs-turns.jsonl');
  const f = await inProcess(
    ['export', '--format', 'preference', '--in', traj, '--out', byTurns, '--json'],
    dir,
  );
  assert.equal(f.code, 0, f.stderr);
  const all = lines(traj);
  let expected = 0;
  for (const seed of new Set(all.map((t) => t.task.seed))) {
    const ns = all.filter((t) => t.task.seed === seed && t.outcome.success).map((t) => t.outcome.turns);
    for (let i = 0; i < ns.length; i++)
      for (let m = i + 1; m < ns.length; m++) if (ns[i] !== ns[m]) expected++;
  }
  assert.equal((JSON.parse(f.stdout) as { pairs: number }).pairs, expected);
  const turnRows = readFileSync(byTurns, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, { role: string }[]>);
  assert.equal(turnRows.length, expected);
  for (const row of turnRows) {
    trlPreference(row);
    const assistants = (ms: { role: string }[]) => ms.filter((m) => m.role === 'assistant').length;
    assert.ok(assistants(row.chosen) < assistants(row.rejected));
    assert.ok(Array.isArray(row.tools), 'tools mode: the tool the model was offered');
  }
});

test('bad input to --reward, judge audit and export --format preference: exit 2, one line naming the field, before any work', async () => {
  const ok = join(dir, 'ok.json');
  writeFileSync(ok, JSON.stringify({ criteria: [{ kind: 'success' }] }));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const notJson = write('not.json', '{"criteria": [');
  const unknown = write(
    'unknown.json',
    JSON.stringify({ criteria: [{ kind: 'success' }, { kind: 'vibes' }] }),
  );
  const weights = write('weights.json', JSON.stringify({ criteria: [{ kind: 'success', weight: -1 }] }));
  const gone = write(
    'gone.json',
    JSON.stringify({ criteria: [{ kind: 'judge', judge: 'openai:http://127.0.0.1:1/v1#m' }] }),
  );
  const effects = write('effects.json', JSON.stringify({ criteria: [{ kind: 'side-effects' }] }));
  const pairwise = write(
    'pairwise.json',
    JSON.stringify({
      criteria: [{ kind: 'judge', judge: 'openai:http://127.0.0.1:1/v1#m', mode: 'pairwise' }],
    }),
  );
  const out = join(dir, 'never.jsonl');
  const evalArgs = ['eval', '--policy', 'random', '--tasks', '1', '--samples', '2', '--K', '1', '--T', '5'];
  const cases: [string[], RegExp][] = [
    [
      [...evalArgs, '--reward', `rubric:${notJson}`, '--scores', out],
      /^turnwise: --reward: got ".*not\.json"; not valid JSON/,
    ],
    [
      [...evalArgs, '--reward', `rubric:${unknown}`],
      /^turnwise: \S*unknown\.json criteria\[1\]\.kind: got "vibes"; expected one of success, max-turns/,
    ],
    [
      [...evalArgs, '--reward', `rubric:${weights}`],
      /^turnwise: \S*weights\.json criteria\[0\]\.weight: got -1/,
    ],
    [
      [...evalArgs, '--reward', `rubric:${gone}`, '--scores', out],
      /^turnwise: \S*gone\.json criteria\[0\]\.judge: got "http:\/\/127\.0\.0\.1:1\/v1"; cannot reach the server \(ECONNREFUSED\)$/,
    ],
    [
      [...evalArgs, '--reward', `rubric:${effects}`],
      /^turnwise: \S*effects\.json criteria\[0\]\.kind: got "side-effects"; side effects are counted on the tools env only/,
    ],
    [
      [...evalArgs, '--samples', '1', '--reward', `rubric:${pairwise}`],
      /^turnwise: --samples: got 1; the rubric's pairwise judge \(criteria\[0\]\) compares the samples of a task; give at least 2 samples a task$/,
    ],
    [
      [...evalArgs, '--reward', 'judge:x.json'],
      /^turnwise: --reward: got "judge:x\.json"; expected rubric:FILE\.json/,
    ],
    [
      [...evalArgs, '--scores', out],
      /^turnwise: --scores: got ".*never\.jsonl"; writes the scored trajectories of --reward/,
    ],
    [
      [...evalArgs, '--reward', `rubric:${ok}`, '--judge-cache', join(dir, 'c.sqlite')],
      /^turnwise: --judge-cache: got .*; the rubric .* has no judge criterion/,
    ],
    [
      ['judge', 'audit', '--in', traj, '--rubric', ok, '--threshold', '0'],
      /^turnwise: --threshold: got "0"; expected a number in \(0, 1\]$/,
    ],
    [['judge', 'audit', '--in', traj, '--rubric', unknown], /criteria\[1\]\.kind/],
    [
      ['export', '--format', 'preference', '--in', traj, '--out', out, '--by', 'vibes'],
      /^turnwise: --by: got "vibes"; expected rubric/,
    ],
    [
      ['export', '--format', 'preference', '--in', traj, '--out', out, '--by', 'rubric'],
      /t\.jsonl:1: has no rubric score: --by rubric reads a scored file/,
    ],
    [
      ['export', '--format', 'preference', '--in', traj, '--out', out, '--by', 'turns,side-effects'],
      /^turnwise: --by: got "turns,side-effects"; side effects are counted on the tools env only/,
    ],
    [
      ['export', '--format', 'openai', '--in', traj, '--out', out, '--by', 'turns'],
      /^turnwise: --by: got "turns"; is read by --format preference only, not openai$/,
    ],
  ];
  for (const [i, [args, want]] of cases.entries()) {
    const r = await firstSpawned(i, args);
    assert.equal(r.code, 2, `${args.join(' ')}\n${r.stderr}`);
    assert.equal(r.stdout, '');
    const errLines = r.stderr.split('\n');
    assert.equal(errLines.length, 2, r.stderr);
    assert.match(errLines[0], want, args.join(' '));
    assert.equal(existsSync(out), false, `${args.join(' ')} wrote its output`);
  }
});

test('train --reward rubric:FILE: the judge scores every trajectory of every iteration, its errors counted and stored', async () => {
  const j = await judge('train-1');
  const file = rubric('train.json', j.url, 'train-1');
  const out = join(dir, 'train-run');
  const cache = join(dir, 'train-judge.sqlite');
  const args = [
    'train',
    '--slippery',
    '--iters',
    '2',
    '--groups',
    '2',
    '--group-size',
    '3',
    '--seed',
    '4',
    '--reward',
    `rubric:${file}`,
    '--judge-cache',
    cache,
    '--json',
  ];
  const r = await inProcess([...args, '--out', out], dir);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as { reward: Record<string, unknown>; last: Record<string, number> };
  assert.equal(j.seen.length, 12, '2 iterations × 2 groups × 3 samples, one pointwise call each');
  assert.equal(report.reward.trajectories, 12);
  assert.equal(report.reward.judgeCalls, 12);
  assert.equal(report.reward.judgeErrors, 1, "the judge's rambling first answer");
  assert.equal(report.reward.missing, 1);
  assert.equal((report.reward.totals as { requests: number }).requests, 12);
  assert.ok('reward/mean' in report.last && 'reward/used' in report.last);
  // What the rubric gave each trajectory is in the run store, beside it.
  const { RunStore } = await import('../../src/store/sqlite.ts');
  const store = new RunStore(join(out, 'run.sqlite'), 'run', true);
  const js = store
    .judgements('train')
    .map((x) => x.data as { score: number | null; calls: { response: string }[] });
  store.close();
  assert.equal(js.length, 12);
  assert.equal(js.filter((x) => x.score === null).length, 1);
  assert.ok(js.every((x) => x.calls.length === 1 && typeof x.calls[0].response === 'string'));
  // The same run again answers from the judge cache: the judge is not asked, the bytes are the same.
  const again = await inProcess([...args, '--out', join(dir, 'train-run-2')], dir);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(j.seen.length, 12, 'answered from --judge-cache');
  const r2 = JSON.parse(again.stdout) as { last: Record<string, number> };
  assert.deepEqual(r2.last['reward/mean'], report.last['reward/mean']);
});

test('train --reward: bad input refused in one line before any work', async () => {
  const j = await judge('train-2');
  const file = rubric('train-bad.json', j.url, 'train-2');
  const cases: [string[], RegExp][] = [
    [['--reward', 'judge.json'], /^turnwise: --reward: got "judge.json"; expected rubric:FILE\.json/],
    [
      ['--reward', `rubric:${join(dir, 'absent.json')}`],
      /^turnwise: --reward: got ".*absent\.json"; cannot read the file/,
    ],
    [['--judge-cache', join(dir, 'c.sqlite')], /^turnwise: --judge-cache: .*give --reward rubric:FILE/],
    [
      ['--reward', `rubric:${file}`, '--shaping', 'progress'],
      /^turnwise: config.reward: got "rubric:.*"; cannot go with shaping progress/,
    ],
  ];
  for (const [extra, pattern] of cases) {
    const out = join(dir, `bad-${extra.join('-').replace(/[^a-z]/g, '')}`);
    const r = await inProcess(['train', '--slippery', '--iters', '1', ...extra, '--out', out], dir);
    assert.equal(r.code, 2, `${extra.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(existsSync(out), false, 'no run directory made');
  }
  assert.equal(j.seen.length, 0, 'the judge was never asked');
});
