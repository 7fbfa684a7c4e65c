// eval --in streams its file through summary's reader: the same report as evaluate() on interleaved
// lines of many tasks, lines outside the env's spaces refused by line and field (exit 2, one line) or
// skipped and counted with --skip-invalid, exactly as summary --in does.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { passFromFile } from '../../src/cli/commands/eval.ts';
import { failures } from '../../src/eval/failures.ts';
import {
  envConfig,
  envs,
  evaluate,
  makePolicy,
  makeTasks,
  rollout,
  type Trajectory,
} from '../../src/index.ts';
import { SkippedLines } from '../../src/store/jsonl.ts';
import { inProcess, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-eval-in-cli-'));
const config = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
const tasks = makeTasks(config, 40, 11);
const spec = envs.make({ ...config, seed: 11 }).spec;
const policy = makePolicy('oracle:eps=0.3,horizon=100', spec);
const K = [1, 2, 4];
const T = [4, 8, 20];
let runs: Trajectory[] = [];
const write = (name: string, lines: string[]) => {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
};
/** A fixed permutation (a linear congruential shuffle): the tasks' lines interleaved across the file. */
const shuffled = <T>(xs: T[]): T[] => {
  const a = [...xs];
  let s = 12345;
  for (let i = a.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
};
let clean = '';
let bad = '';

test('setup: 40 random maps × 5 samples, budget-blind, lines shuffled', async () => {
  runs = await rollout({
    tasks,
    samples: 5,
    budget: 20,
    revealBudget: false,
    runSeed: 4,
    policy,
    makeEnv: envs.make,
  });
  const lines = shuffled(runs.map((t) => JSON.stringify(t)));
  clean = write('clean.jsonl', lines);
  // Line 3: observation 16 on a 4x4 map (0..15); line 6: action 4 (0..3); line 8: not JSON.
  const obs = lines[2].replace(/"observation":\d+/, '"observation":16');
  const act = lines[4].replace(/"action":\d+/, '"action":4');
  assert.notEqual(obs, lines[2]);
  assert.notEqual(act, lines[4]);
  bad = write('bad.jsonl', [
    ...lines.slice(0, 2),
    obs,
    ...lines.slice(2, 4),
    act,
    lines[4],
    '{"id":',
    ...lines.slice(5),
  ]);
});

test('interleaved tasks: the same Pass@(K,T), intervals, per-task counts and failures as evaluate()', async () => {
  const direct = await evaluate({
    envs,
    tasks,
    samples: 5,
    K,
    T,
    policy,
    mode: 'prefix',
    runSeed: 4,
    resamples: 300,
  });
  const r = passFromFile(clean, K, T, undefined, 300, 4);
  assert.equal(r.mode, 'prefix');
  assert.equal(r.trajectories, 200);
  const bySeed = (xs: { task: { seed: number } }[]) => [...xs].sort((a, b) => a.task.seed - b.task.seed);
  assert.deepEqual(bySeed(r.perTask), direct.perTask);
  // The tasks in the order the file first names them.
  const firstSeen = [
    ...new Set(
      readFileSync(clean, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).task.seed),
    ),
  ];
  assert.deepEqual(
    r.perTask.map((p) => p.task.seed),
    firstSeen,
  );
  assert.deepEqual(r.passKT, direct.passKT);
  assert.deepEqual(r.failures, failures(runs));
  assert.ok(r.failures.byKind.irreversible > 0 && r.failures.successes > 0);
});

test('a line outside the spaces is refused by line and field, like summary; --skip-invalid counts it', async () => {
  const args = ['--K', '1,2,4', '--T', '4,8,20', '--resamples', '300', '--seed', '4', '--json'];
  const [refused, summary, skip, ref, noIn] = await Promise.all([
    turnwise(['eval', '--in', bad, ...args]),
    inProcess(['summary', '--in', bad]),
    turnwise(['eval', '--in', bad, '--skip-invalid', ...args]),
    turnwise(['eval', '--in', clean, ...args]),
    inProcess(['eval', '--skip-invalid', '--policy', 'random', '--map', '4x4']),
  ]);
  assert.equal(refused.code, 2);
  assert.equal(refused.stdout, '');
  assert.match(refused.stderr, /^turnwise: .*bad\.jsonl:3\.turns\.\d+\.observation: got 16; [^\n]*\n$/);
  assert.equal(refused.stderr, summary.stderr);
  assert.equal(skip.code, 0, skip.stderr);
  const { skipped, ...rest } = JSON.parse(skip.stdout);
  const cleanReport = JSON.parse(ref.stdout);
  assert.equal(cleanReport.trajectories, 200);
  assert.equal(rest.trajectories, 200);
  assert.deepEqual(rest, cleanReport);
  assert.equal(skipped.count, 3);
  assert.equal(skipped.first.line, 3);
  assert.match(
    skip.stderr,
    /^turnwise: skipped 3 invalid lines of .*bad\.jsonl; the first, line 3: [^\n]*\n$/,
  );
  assert.equal(noIn.code, 2);
  assert.match(noIn.stderr, /^turnwise: --skip-invalid: .*--in[^\n]*\n$/);
  // An action outside the spaces names its line and field too.
  const lines = readFileSync(bad, 'utf8').split('\n');
  const act = write('action.jsonl', [lines[0], lines[5]]);
  assert.throws(() => passFromFile(act, K, T, undefined, 50, 0), {
    name: 'InputError',
    message: /action\.jsonl:2\.turns\.\d+\.action: got 4/,
  });
  const s = new SkippedLines();
  assert.equal(passFromFile(act, [1], T, undefined, 50, 0, s).trajectories, 1);
  assert.equal(s.count, 1);
});
