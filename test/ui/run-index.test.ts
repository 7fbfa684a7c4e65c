// The dashboard's index of large runs (src/ui/run-index.ts, src/ui/credit.ts) against the readers it
// replaces: pages equal what reading the whole file gave (readTrajectories, filtered and sorted in
// memory: the API's answers before the index), each trajectory equals its line, and every credit
// column — computed from the trajectory's group alone — equals `turnwise credit --in FILE --method M`
// over the whole file, for every method of the registry, exact, and task normalisation (which spans
// groups). Files are made by the CLI, then shuffled so that groups are scattered through the file.
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { spacesOfRegistered } from '../../src/cli/options.ts';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Trajectory } from '../../src/core/types.ts';
import type { IndexedTrajectories } from '../../src/credit/file.ts';
import { type MethodSpec, parseMethodSpec } from '../../src/credit/index.ts';
import { readTrajectories } from '../../src/store/jsonl.ts';
import { creditOfFile } from '../../src/studies/credit-file.ts';
import { type CreditOf, creditColumns } from '../../src/ui/credit.ts';
import { fileIndex } from '../../src/ui/run-index.ts';
import { type TrajectoryQuery, trajectoryAt, trajectoryPage } from '../../src/ui/trajectories.ts';
import { inProcess } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-ui-index-'));
const at = (f: string) => join(dir, f);
const cli = async (args: string) => {
  const r = await inProcess(args.split(' '), dir);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
};
const lines = (f: string) =>
  readFileSync(at(f), 'utf8')
    .split('\n')
    .filter((l) => l !== '');

// Every method of the registry (some with parameters), the exact advantage, and task normalisation by
// env (two maps here) and by task.
const METHODS = [
  'outcome',
  'discounted',
  'gae',
  'gae:values=zero,lambda=0.9',
  'grpo',
  'drgrpo',
  'rloo',
  'gigpo',
  'gigpo:omega=0.5,std=false',
  'turn-level',
  'turn-level:crest=true',
  'reverse-turn',
  'exact',
  'grpo:task-norm=env',
  'gigpo:task-norm=task',
];
const specs: MethodSpec[] = METHODS.map((m) => parseMethodSpec(m, 'credit', ['exact']));

before(async () => {
  await cli(
    'rollout --map 4x4 --slippery --policy oracle:eps=0.3 --tasks 5 --samples 4 --budget 20 --seed 3 --out a.jsonl',
  );
  await cli(
    'rollout --map 8x8 --slippery --policy oracle:eps=0.2 --tasks 2 --samples 3 --budget 40 --seed 1 --out b.jsonl',
  );
  await cli('rollout --map 4x4 --slippery --policy random --tasks 3 --samples 3 --budget 15 --out c.jsonl');
  // Shuffled (groups scattered), a blank line, and one line whose keys are in another order (read
  // the whole way, not the quick way).
  const all = [...lines('a.jsonl'), ...lines('b.jsonl'), ...lines('c.jsonl')];
  Rng.fromSeed(7).shuffle(all);
  const t = JSON.parse(all[4]) as Record<string, unknown>;
  const { id, ...rest } = t;
  all[4] = JSON.stringify({ ...rest, id });
  all.splice(9, 0, '');
  writeFileSync(at('mixed.jsonl'), `${all.join('\n')}\n`);
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** The API's pages before the index: the whole file read, filtered and sorted in memory. */
function pageOfWholeFile(path: string, q: TrajectoryQuery) {
  const rows = readTrajectories(path, 'run')
    .map((t, index) => ({
      index,
      id: t.id,
      task: t.task,
      policy: t.policy,
      budget: t.budget,
      success: t.outcome.success,
      turns: t.outcome.turns,
      return: t.outcome.return,
      failure: t.outcome.failure,
    }))
    .filter(
      (r) =>
        (q.task === undefined || r.task.seed === q.task) &&
        (q.outcome === undefined || r.success === (q.outcome === 'success')) &&
        (q.failure === undefined || r.failure === q.failure) &&
        (q.policy === undefined || r.policy === q.policy),
    );
  if (q.sort !== 'index') {
    const key = q.sort.replace('-', '') as 'turns' | 'return';
    const sign = q.sort.startsWith('-') ? -1 : 1;
    rows.sort((a, b) => sign * (a[key] - b[key]) || a.index - b.index);
  }
  return {
    total: rows.length,
    offset: q.offset,
    limit: q.limit,
    items: rows.slice(q.offset, q.offset + q.limit),
  };
}

test('pages are what reading the whole file gave, byte for byte, for filters, sorts and offsets', () => {
  const path = at('mixed.jsonl');
  const queries: Partial<TrajectoryQuery>[] = [
    {},
    { offset: 7, limit: 5 },
    { offset: 40, limit: 10 },
    { sort: '-turns' },
    { sort: 'turns', limit: 7, offset: 3 },
    { sort: 'return' },
    { sort: '-return', outcome: 'success' },
    { outcome: 'failure', failure: 'irreversible' },
    { failure: 'budget', sort: '-turns' },
    { policy: 'random' },
    { policy: 'nobody' },
    { task: 1 },
    { task: 3, sort: '-return', offset: 1, limit: 2 },
  ];
  for (const x of queries) {
    const q: TrajectoryQuery = { offset: 0, limit: 50, sort: 'index', ...x };
    assert.equal(
      JSON.stringify(trajectoryPage({ file: path }, q, spacesOfRegistered)),
      JSON.stringify(pageOfWholeFile(path, q)),
      JSON.stringify(x),
    );
  }
  // The same without the env spaces (every line the whole way).
  const q: TrajectoryQuery = { offset: 0, limit: 1000, sort: '-turns' };
  assert.equal(JSON.stringify(trajectoryPage({ file: path }, q)), JSON.stringify(pageOfWholeFile(path, q)));
  // Each trajectory, read alone by its place, is its line as the whole file reads it.
  const whole = readTrajectories(path, 'run');
  for (const [k, t] of whole.entries())
    assert.deepEqual(trajectoryAt({ file: path }, k, spacesOfRegistered), t);
  assert.equal(trajectoryAt({ file: path }, whole.length, spacesOfRegistered), undefined);
});

/** `turnwise credit --in FILE --method M --json`'s rows. */
async function cliCredit(file: string, method: string): Promise<number[][]> {
  return JSON.parse(await cli(`credit --in ${file} --method ${method} --json`)).advantages;
}

/** creditOfFile, counting the trajectories each call reads. */
function counting(): { credit: CreditOf; read: number[] } {
  const read: number[] = [];
  const credit: CreditOf = (source, spec) => {
    let n = 0;
    const counted: IndexedTrajectories = {
      *scan() {
        for (const x of source.scan()) {
          n++;
          yield x;
        }
        read.push(n);
      },
      open: () => source.open(),
    };
    return creditOfFile(counted, spec);
  };
  return { credit, read };
}

test('every credit column equals `turnwise credit --in FILE` over the whole file; a group is read alone', async () => {
  const path = at('mixed.jsonl');
  const whole = readTrajectories(path, 'run');
  const expected: Record<string, number[][]> = {};
  for (const m of METHODS) expected[m] = await cliCredit('mixed.jsonl', m);
  // Not all zeros: the groups mix successes and failures, and the maps differ for task-norm.
  assert.ok(expected.grpo.flat().some((a) => a !== 0));
  assert.notDeepEqual(expected['grpo:task-norm=env'], expected.grpo);
  const { credit, read } = counting();
  for (let k = 0; k < whole.length; k++) {
    const got = creditColumns({ file: path }, k, specs, credit, spacesOfRegistered);
    for (const m of METHODS) assert.deepEqual(got[m], expected[m][k], `${m}, trajectory ${k}`);
  }
  // Per-group columns read the group and at most one probe per (env config, policy, budget): three
  // here. Task-norm columns read the whole file, once per method (then kept).
  const group = (t: Trajectory) =>
    whole.filter((u) => JSON.stringify(u.task) === JSON.stringify(t.task)).length;
  const biggest = Math.max(...whole.map(group));
  const perGroup = read.filter((n) => n < whole.length);
  assert.ok(
    Math.max(...perGroup) <= biggest + 3,
    `read ${Math.max(...perGroup)} for a group of ≤ ${biggest}`,
  );
  assert.equal(read.filter((n) => n === whole.length).length, 2);
});

test('a method the run cannot serve is refused as `credit --in` refuses it, naming the same trajectory', async () => {
  await cli('rollout --env tools --policy random --tasks 1 --samples 2 --out tools.jsonl');
  // A tools trajectory (no exact oracle) after FrozenLake's: the whole file is refused for exact.
  writeFileSync(at('no-oracle.jsonl'), `${[...lines('a.jsonl'), lines('tools.jsonl')[1]].join('\n')}\n`);
  const r = await inProcess(['credit', '--in', 'no-oracle.jsonl', '--method', 'exact', '--json'], dir);
  assert.equal(r.code, 2);
  const refusal = r.stderr.trim().replace(/^turnwise: --method: /, 'credit: ');
  assert.match(refusal, /^credit: got "exact"; needs an exact oracle \(trajectory /);
  // Asked for a FrozenLake trajectory whose own group has the oracle.
  assert.throws(
    () =>
      creditColumns(
        { file: at('no-oracle.jsonl') },
        0,
        [specs[METHODS.indexOf('exact')]],
        creditOfFile,
        spacesOfRegistered,
      ),
    (e: unknown) => e instanceof InputError && e.message === refusal,
  );
  // Methods without the oracle still run there, equal to the whole file's.
  const grpo = await cliCredit('no-oracle.jsonl', 'grpo');
  const got = creditColumns(
    { file: at('no-oracle.jsonl') },
    3,
    [specs[METHODS.indexOf('grpo')]],
    creditOfFile,
    spacesOfRegistered,
  );
  assert.deepEqual(got.grpo, grpo[3]);
});

test('a store run: pages from SQL, credit from the group read by row, equal to the same run written as a file', async () => {
  await cli(
    'rollout --map 4x4 --slippery --policy oracle:eps=0.3 --tasks 4 --samples 3 --budget 20 --db s.sqlite --run r1 --out s.jsonl',
  );
  const source = { store: at('s.sqlite'), run: 'r1' };
  const expected: Record<string, number[][]> = {};
  for (const m of METHODS) expected[m] = await cliCredit('s.jsonl', m);
  const n = lines('s.jsonl').length;
  for (let idx = 0; idx < n; idx++) {
    const got = creditColumns(source, idx, specs, creditOfFile, spacesOfRegistered);
    for (const m of METHODS) assert.deepEqual(got[m], expected[m][idx], `${m}, row ${idx}`);
  }
  const page = trajectoryPage(source, { offset: 2, limit: 4, sort: '-turns' });
  const file = trajectoryPage({ file: at('s.jsonl') }, { offset: 2, limit: 4, sort: '-turns' });
  assert.deepEqual(page, file);
});

test('a new version of the file is indexed again; a damaged line is refused as the whole read refuses it', () => {
  const path = at('v.jsonl');
  copyFileSync(at('a.jsonl'), path);
  const q: TrajectoryQuery = { offset: 0, limit: 1000, sort: 'index' };
  const first = fileIndex(path, spacesOfRegistered).index;
  assert.equal(trajectoryPage({ file: path }, q, spacesOfRegistered).total, 20);
  assert.equal(fileIndex(path, spacesOfRegistered).index, first, 'kept while the file is unchanged');
  appendFileSync(path, `${lines('b.jsonl').join('\n')}\n`);
  assert.equal(trajectoryPage({ file: path }, q, spacesOfRegistered).total, 26);
  assert.notEqual(fileIndex(path, spacesOfRegistered).index, first);
  // A turn's reward that is not a number, in the middle of a line: found by the index's pass.
  const bad = lines('b.jsonl')[0].replace('"reward":0,', '"reward":"0",');
  appendFileSync(path, `${bad}\n`);
  let whole: unknown;
  try {
    readTrajectories(path, 'run');
  } catch (e) {
    whole = e;
  }
  assert.ok(whole instanceof InputError);
  assert.throws(
    () => trajectoryPage({ file: path }, q, spacesOfRegistered),
    (e: unknown) => e instanceof InputError && e.message === whole.message,
  );
});
