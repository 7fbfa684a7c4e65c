// credit --in in bounded memory: the streamed output is byte for byte what creditForSpec over the
// whole batch gives (JSON and text), for every method, on a file whose groups are interleaved across
// it — also when the cache of computed groups is too small to hold any (every group computed again).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fmt, table } from '../../src/cli/io.ts';
import { checkSpacesOfRegistered } from '../../src/cli/options.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { applyFlags, CREDIT_CACHE, deadGroups, parseMethodSpec } from '../../src/credit/index.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { readTrajectories, SkippedLines, TrajectoryFile } from '../../src/store/jsonl.ts';
import { creditForSpec, exactValuesFromSpecs } from '../../src/studies/credit-fidelity.ts';
import { creditOfFile } from '../../src/studies/credit-file.ts';
import { inProcess, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-credit-file-'));

// Two env configurations (task-norm env has two keys), 6 + 3 groups, lines dealt round-robin: every
// group is spread over the whole file.
const fixed = envConfig('frozenlake', { map: '4x4', slippery: true });
const maps = envConfig('frozenlake', { random: true, size: 5, p: 0.8, slippery: true });
const play = (config: typeof fixed, policy: string, tasks: number, samples: number, seed: number) =>
  rollout({
    makeEnv,
    tasks: makeTasks(config, tasks, seed),
    samples,
    budget: 30,
    runSeed: seed,
    policy: makePolicy(policy, makeEnv(makeTasks(config, 1, seed)[0]).spec),
  }) as Trajectory[];
const groups = [...play(fixed, 'oracle:eps=0.3', 6, 4, 1), ...play(maps, 'random', 3, 3, 2)];
const byTask = new Map<string, Trajectory[]>();
for (const t of groups) {
  const k = JSON.stringify(t.task);
  byTask.set(k, [...(byTask.get(k) ?? []), t]);
}
const dealt: Trajectory[] = [];
for (let r = 0; dealt.length < groups.length; r++)
  for (const g of byTask.values()) if (r < g.length) dealt.push(g[r]);
const file = join(dir, 'interleaved.jsonl');
writeFileSync(file, dealt.map((t) => `${JSON.stringify(t)}\n`).join(''));

const METHODS = [
  'outcome',
  'discounted',
  'gae',
  'gae:values=zero,lambda=0.5',
  'grpo',
  'drgrpo',
  'rloo',
  'gigpo',
  'gigpo:std=false',
  'turn-level',
  'turn-level:crest=true',
  'reverse-turn',
  'rtpo',
  'rtpo:cbar=2,gamma=1',
  'exact',
  'grpo:task-norm=env',
  'gigpo:task-norm=task',
  'gae:task-norm=env',
];

/** What credit --in printed before streaming: everything in memory, creditForSpec over the batch. */
function reference(spec: string) {
  const [s] = applyFlags([parseMethodSpec(spec, '--method', ['exact'])], {});
  const ts = readTrajectories(file, '--in', checkSpacesOfRegistered);
  const field = s.name === 'exact' ? '--method' : '--values';
  const advantages = creditForSpec(ts, s, () => exactValuesFromSpecs(field));
  const preview = (row: readonly number[], n = 8) =>
    `[${row
      .slice(0, n)
      .map((x) => fmt(x, 3))
      .join(' ')}${row.length > n ? ` … (${row.length})` : ''}]`;
  const c = deadGroups(ts).counts;
  const text = `${s.label}: ${ts.length} trajectories in ${c.groups} groups (${c.dead} dead: ${c.allFail} all-fail, ${c.allSucceed} all-succeed)\n${table(
    [
      ['id', 'R', 'turns', 'advantages'],
      ...ts.map((t, i) => [t.id, t.outcome.return, t.turns.length, preview(advantages[i])]),
    ],
  )}\n`;
  return { spec: s, advantages, json: `${JSON.stringify({ method: s.label, advantages })}\n`, text };
}

test('every method: the CLI prints the same bytes as creditForSpec over the whole file', async () => {
  const runs = await Promise.all(
    METHODS.flatMap((m) => [
      turnwise(['credit', '--in', file, '--method', m, '--json']),
      turnwise(['credit', '--in', file, '--method', m]),
    ]),
  );
  METHODS.forEach((m, i) => {
    const ref = reference(m);
    const [json, text] = [runs[2 * i], runs[2 * i + 1]];
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stdout, ref.json, m);
    assert.equal(text.stdout, ref.text, m);
    // Not a constant: the method gives different credit to different turns.
    assert.ok(new Set(ref.advantages.flat()).size > 1, m);
  });
});

test('a cache too small for any group: each group computed again for each of its rows, same rows', () => {
  const saved = CREDIT_CACHE.numbers;
  CREDIT_CACHE.numbers = 1;
  try {
    for (const m of ['grpo', 'gigpo', 'turn-level', 'gae:values=zero', 'rloo:task-norm=env']) {
      const ref = reference(m);
      const { index, rows } = creditOfFile(
        new TrajectoryFile(file, '--in', checkSpacesOfRegistered),
        ref.spec,
      );
      assert.equal(index.n, dealt.length);
      assert.equal(index.counts.groups, byTask.size);
      const got = [...rows()];
      assert.equal(JSON.stringify(got), JSON.stringify(ref.advantages), m);
    }
  } finally {
    CREDIT_CACHE.numbers = saved;
  }
});

test('skipped lines are not rows; a refusal of the exact values comes before any output', async () => {
  const lines = dealt.map((t) => JSON.stringify(t));
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(
    bad,
    `${[lines[0], '{"id":', lines[1], lines[2].replace('"action":', '"action":9,"a":')].join('\n')}\n`,
  );
  const s = new SkippedLines();
  const { index, rows } = creditOfFile(
    new TrajectoryFile(bad, '--in', checkSpacesOfRegistered, s),
    reference('grpo').spec,
  );
  assert.equal(index.n, 2);
  assert.equal(s.count, 2);
  assert.equal([...rows()].length, 2);
  // A tabular policy's table is not in the file: refused (exit 2, nothing on stdout).
  const tabular = join(dir, 'tabular.jsonl');
  writeFileSync(
    tabular,
    `${[...lines.slice(0, 5), lines[5].replace(/"policy":"[^"]*"/, '"policy":"tabular"')].join('\n')}\n`,
  );
  const r = await turnwise(['credit', '--in', tabular, '--method', 'exact', '--json']);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /^turnwise: --method: trajectory .* was played by "tabular", whose table is not in the file\n$/,
  );
});

test('credit fidelity --group-size 1 with a group-baseline method: refused in one line; without one, it runs', async () => {
  const base = ['credit', 'fidelity', '--policy', 'random', '--groups', '2', '--group-size', '1', '--json'];
  const [refusedRun, ok] = await Promise.all([
    inProcess(base),
    turnwise([...base, '--methods', 'exact,outcome,gae']),
  ]);
  assert.equal(refusedRun.code, 2);
  assert.equal(refusedRun.stdout, '');
  assert.match(
    refusedRun.stderr,
    /^turnwise: --group-size: got "1"; expected at least 2: --methods has grpo, [^\n]*\n$/,
  );
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(Object.keys(JSON.parse(ok.stdout).methods), ['exact', 'outcome', 'gae']);
});
