// `turnwise ui` as a user runs it: real runs made by the CLI in a temporary directory, the real server
// on a free loopback port, and its JSON API read with plain fetch. Every expectation comes from another
// reader: the run's own metrics.jsonl and `train --json`, the trajectory file's lines, `turnwise credit
// --json`, `turnwise eval --in --json`, `turnwise compare --json` on the runs' saved policies, the
// tokenizer the transformer's checkpoint holds, Gymnasium's 4x4 map, and the writer's lock taken here.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readSavedTransformer } from '../../src/policies/transformer.ts';
import { DirLock } from '../../src/store/lock.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { chipText, tokenText } from '../fixtures/token-text.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-ui-'));
const runs = join(dir, 'runs');
const cli = (command: string) =>
  execFileSync(process.execPath, [BIN, ...command.split(' ')], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });

let url = '';
let stop: () => Promise<number | null> = async () => null;
let trainJson: { last: Record<string, number> };
let lock: DirLock | undefined;
let lock2: DirLock | undefined;
/** What the API's answers hold that the tests read (checked against other readers, not trusted). */
interface Row {
  id: string;
  index: number;
  turns: number;
  kind: string;
  status: string;
  env: unknown;
  policy: unknown;
  headline: Record<string, unknown>;
}
interface Body {
  runs: Row[];
  items: Row[];
  total: number;
  iterations: { iter: number }[];
  status: string;
  error: string;
  config: unknown;
  final: unknown;
  trajectory: unknown;
  credit: unknown;
}
const get = async (path: string) => {
  const r = await fetch(`${url}${path}`);
  return { status: r.status, body: (await r.json()) as Body };
};

before(async () => {
  mkdirSync(join(runs, 'nest', 'live'), { recursive: true });
  trainJson = JSON.parse(cli('train --map 4x4 --policy tabular --iters 3 --out runs/t1 --json'));
  cli(
    'rollout --map 4x4 --slippery --policy oracle:eps=0.3 --tasks 4 --samples 4 --budget 20 --out runs/r.jsonl',
  );
  cli('rollout --env tools --policy random --tasks 2 --samples 2 --out runs/tools.jsonl');
  // Other tasks of the same env (seeds 5 and 6): compared with r.jsonl, nothing to pair.
  cli(
    'rollout --map 4x4 --slippery --policy random --tasks 2 --samples 4 --budget 20 --seed 5 --out runs/r5.jsonl',
  );
  cli('rollout --map 4x4 --policy random --tasks 2 --samples 2 --db runs/db.sqlite --run r1');
  // Two training runs that keep their trajectories and save their policies, on one env: compare
  // measures the policies themselves.
  cli('train --map 4x4 --slippery --policy tabular --iters 3 --store-trajectories --out runs/ta');
  cli(
    'train --map 4x4 --slippery --policy mlp:hidden=16 --iters 2 --groups 4 --group-size 4 --store-trajectories --out runs/tb',
  );
  // A transformer (cloned for one epoch outside the runs, then trained once): its run's checkpoint
  // holds the tokenizer its chips are labelled with; its rollout file holds token ids only.
  cli(
    'bc --map 4x4 --slippery --policy transformer:layers=1,d=16,heads=2,ctx=1024,seed=3 --train-seeds 0:1 --test-seeds 1000000:1000001 --epochs 1 --eval-samples 1 --budget 3 --out lm',
  );
  cli(
    'train --map 4x4 --slippery --policy lm --iters 1 --groups 1 --group-size 2 --budget 3 --eval-episodes 2 --store-trajectories --out runs/tf',
  );
  cli('rollout --map 4x4 --slippery --policy lm --tasks 1 --samples 1 --budget 2 --out runs/lm.jsonl');
  // A harness-shaped run whose writer (this test) holds its lock: live until released.
  const store = new RunStore(join(runs, 'nest', 'live', 'run.sqlite'));
  store.createRun('harness', 'harness', {});
  store.close();
  lock = DirLock.acquire(join(runs, 'nest', 'live'), '--out');
  // A second one, for the live event stream.
  mkdirSync(join(runs, 'nest', 'live2'), { recursive: true });
  const store2 = new RunStore(join(runs, 'nest', 'live2', 'run.sqlite'));
  store2.createRun('harness', 'harness', {});
  store2.close();
  lock2 = DirLock.acquire(join(runs, 'nest', 'live2'), '--out');
  // A run outside the directory, and a link to it inside.
  cli('rollout --map 4x4 --policy random --episodes 2 --out outside.jsonl');
  symlinkSync(join(dir, 'outside.jsonl'), join(runs, 'link.jsonl'));

  const child = spawn(process.execPath, [BIN, 'ui', '--runs', runs, '--port', '0'], {
    env: { ...process.env, NO_COLOR: '1' },
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  stop = async () => {
    child.kill('SIGTERM');
    return await exited;
  };
  let stderr = '';
  url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.on('close', () => reject(new Error(`ui exited: ${stderr}`)));
  });
});

after(async () => {
  lock?.release();
  lock2?.release();
  assert.equal(await stop(), 0, 'ui exits 0 on SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

const fileLines = (f: string) =>
  readFileSync(join(runs, f), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

test('every run is listed with its kind and status; nothing outside the directory', async () => {
  const { status, body } = await get('/api/runs');
  assert.equal(status, 200);
  const byId = Object.fromEntries(body.runs.map((r) => [r.id, r]));
  assert.deepEqual(Object.keys(byId).sort(), [
    'db.sqlite#r1',
    'lm.jsonl',
    'nest/live',
    'nest/live2',
    'r.jsonl',
    'r5.jsonl',
    't1',
    'ta',
    'tb',
    'tf',
    'tools.jsonl',
  ]);
  assert.deepEqual(
    ['db.sqlite#r1', 'nest/live', 'r.jsonl', 't1', 'tools.jsonl'].map((id) => [
      byId[id].kind,
      byId[id].status,
    ]),
    [
      ['rollout', 'finished'],
      ['harness', 'live'],
      ['file', 'unknown'],
      ['train', 'finished'],
      ['file', 'unknown'],
    ],
  );
  assert.deepEqual(byId.t1.env, { env: 'frozenlake', params: { map: '4x4', slippery: false } });
  assert.equal(byId.t1.headline.iterations, 3);
  assert.equal(byId['db.sqlite#r1'].headline.episodes, 4);
  assert.equal(byId['r.jsonl'].policy, 'oracle:eps=0.3');
  // The writer lets go: the run is no longer live, and (never marked done) it stopped.
  lock?.release();
  const again = await get('/api/runs/nest%2Flive');
  assert.equal(again.body.status, 'stopped');
});

test("a training run's metrics are its metrics.jsonl, and its last are what train --json printed", async () => {
  const { status, body } = await get('/api/runs/t1/metrics');
  assert.equal(status, 200);
  assert.deepEqual(body.iterations, fileLines('t1/metrics.jsonl'));
  const { iter, ...last } = body.iterations.at(-1)!;
  assert.equal(iter, 2);
  assert.deepEqual(
    last,
    Object.fromEntries(Object.entries(trainJson.last).sort(([a], [b]) => (a < b ? -1 : 1))),
  );
  const run = await get('/api/runs/t1');
  assert.deepEqual(run.body.config, JSON.parse(readFileSync(join(runs, 't1', 'config.json'), 'utf8')));
  assert.deepEqual(run.body.final, JSON.parse(readFileSync(join(runs, 't1', 'summary.json'), 'utf8')));
});

test('trajectory pages: offset/limit covers every trajectory once, in file order; filters and sorts', async () => {
  const lines = fileLines('r.jsonl');
  const seen: string[] = [];
  for (let offset = 0; offset < 20; offset += 5) {
    const { body } = await get(`/api/runs/r.jsonl/trajectories?offset=${offset}&limit=5`);
    assert.equal(body.total, 16);
    seen.push(...body.items.map((t) => `${t.index}:${t.id}`));
  }
  assert.deepEqual(
    seen,
    lines.map((t, i) => `${i}:${t.id}`),
  );
  const task2 = await get('/api/runs/r.jsonl/trajectories?task=2');
  assert.deepEqual(
    task2.body.items.map((t) => t.id),
    lines.filter((t) => t.task.seed === 2).map((t) => t.id),
  );
  const failed = await get('/api/runs/r.jsonl/trajectories?outcome=failure&limit=1000');
  assert.equal(failed.body.total, lines.filter((t) => !t.outcome.success).length);
  const longest = await get('/api/runs/r.jsonl/trajectories?sort=-turns&limit=1000');
  const turns = longest.body.items.map((t) => t.turns);
  assert.deepEqual(
    turns,
    [...turns].sort((a, b) => b - a),
  );
  // The store run pages the same way, from its rows.
  const store = await get('/api/runs/db.sqlite%23r1/trajectories?limit=3&offset=3');
  assert.deepEqual([store.body.total, store.body.items.map((t) => t.index)], [4, [3]]);
});

test('credit columns equal `turnwise credit --json` for every trajectory of the file', async () => {
  const grpo = JSON.parse(cli('credit --in runs/r.jsonl --method grpo --json')).advantages;
  const gigpo = JSON.parse(cli('credit --in runs/r.jsonl --method gigpo --json')).advantages;
  const exact = JSON.parse(cli('credit --in runs/r.jsonl --method exact --json')).advantages;
  // Groups that mix successes and failures: the columns are not all zeros.
  assert.ok(grpo.flat().some((a: number) => a !== 0));
  const lines = fileLines('r.jsonl');
  for (let k = 0; k < lines.length; k++) {
    const { status, body } = await get(`/api/trajectories/r.jsonl/${k}?credit=grpo,gigpo,exact`);
    assert.equal(status, 200);
    assert.deepEqual(body.trajectory, lines[k]);
    assert.deepEqual(body.credit, { grpo: grpo[k], gigpo: gigpo[k], exact: exact[k] });
  }
  // No oracle, no exact: refused naming the parameter; other methods still run on that env.
  const tools = await get('/api/trajectories/tools.jsonl/0?credit=exact');
  assert.equal(tools.status, 400);
  assert.match(tools.body.error, /^credit: got "exact"; needs an exact oracle/);
  assert.equal((await get('/api/trajectories/tools.jsonl/0?credit=grpo')).status, 200);
  // A training run stores outcomes only unless --store-trajectories: said so, not faked.
  const outcomeOnly = await get('/api/trajectories/t1/0');
  assert.equal(outcomeOnly.status, 400);
  assert.match(outcomeOnly.body.error, /holds the outcome only/);
});

test('ids that leave the directory are refused; unknown runs are 404', async () => {
  for (const id of [
    '..%2Fruns%2Fr.jsonl',
    '%2Fetc%2Fpasswd',
    'nest%2F..%2F..%2Foutside.jsonl',
    'link.jsonl',
  ]) {
    const { status, body } = await get(`/api/runs/${id}`);
    assert.equal(status, 400, id);
    assert.match(body.error, /^id: got /);
    assert.equal((await get(`/api/trajectories/${id}/0`)).status, 400, id);
  }
  assert.equal((await get('/api/runs/nope')).status, 404);
  assert.equal((await get('/api/trajectories/r.jsonl/16')).status, 404);
});

test('bad query parameters: 400 naming the parameter and what is allowed', async () => {
  const cases: [string, RegExp][] = [
    ['offset=-1', /^offset: got "-1"; expected an integer from 0/],
    ['limit=0', /^limit: got "0"; expected an integer from 1 to 1000/],
    ['limit=1001', /^limit: got "1001"/],
    ['task=x', /^task: got "x"/],
    ['sort=up', /^sort: got "up"; expected one of: index, turns, -turns, return, -return/],
    ['outcome=maybe', /^outcome: got "maybe"; expected one of: success, failure/],
    ['failure=oops', /^failure: got "oops"; expected one of: budget, /],
    ['colour=red', /^colour: got "red"; not a parameter; expected: offset, limit, task/],
  ];
  for (const [query, message] of cases) {
    const { status, body } = await get(`/api/runs/r.jsonl/trajectories?${query}`);
    assert.equal(status, 400, query);
    assert.match(body.error, message, query);
  }
  const method = await get('/api/trajectories/r.jsonl/0?credit=grpo,bogus');
  assert.equal(method.status, 400);
  assert.match(method.body.error, /^credit: got "bogus"; expected one of: .*grpo.*exact/);
});

test('bad flags: one line, exit 2', () => {
  for (const [args, line] of [
    [['--port', '70000'], 'turnwise: --port: got "70000"; expected an integer from 0 to 65535'],
    [['--runs', join(dir, 'none')], `turnwise: --runs: got "${join(dir, 'none')}"; no such directory`],
  ] as const) {
    try {
      execFileSync(process.execPath, [BIN, 'ui', ...args], { encoding: 'utf8', stdio: 'pipe' });
      assert.fail('expected exit 2');
    } catch (e) {
      const err = e as { status: number; stderr: string };
      assert.equal(err.status, 2);
      assert.equal(err.stderr, `${line}\n`);
    }
  }
});

test('trajectory pages filter by length: minTurns and maxTurns, both included', async () => {
  const lines = fileLines('r.jsonl');
  const { body } = await get('/api/runs/r.jsonl/trajectories?minTurns=5&maxTurns=12&limit=1000');
  assert.deepEqual(
    body.items.map((t) => t.index),
    lines.flatMap((t, i) => (t.outcome.turns >= 5 && t.outcome.turns <= 12 ? [i] : [])),
  );
  assert.match((await get('/api/runs/r.jsonl/trajectories?minTurns=-2')).body.error, /^minTurns: got "-2"/);
});

test("a trajectory's view: FrozenLake's board and action names; a tool env's text actions", async () => {
  const lake = (await get('/api/trajectories/r.jsonl/0')).body as unknown as { view: unknown };
  // Gymnasium's FrozenLake-v1 4x4 map, and its action order (0 Left, 1 Down, 2 Right, 3 Up).
  assert.deepEqual(lake.view, {
    actions: 4,
    oracle: true,
    names: ['Left', 'Down', 'Right', 'Up'],
    board: ['SFFF', 'FHFH', 'FFFH', 'HFFG'],
  });
  const tools = (await get('/api/trajectories/tools.jsonl/0')).body as unknown as { view: unknown };
  assert.deepEqual(tools.view, { actions: 'text', oracle: false, names: null, board: null });
});

test("a group: a task's samples in file order, their credit as `turnwise credit` gives it, where they part", async () => {
  const lines = fileLines('r.jsonl');
  const grpo = JSON.parse(cli('credit --in runs/r.jsonl --method grpo --json')).advantages as number[][];
  const exact = JSON.parse(cli('credit --in runs/r.jsonl --method exact --json')).advantages as number[][];
  for (const seed of [0, 1, 2, 3]) {
    const { status, body } = await get(`/api/runs/r.jsonl/groups/${seed}?credit=grpo,exact`);
    assert.equal(status, 200);
    const g = body as unknown as {
      indices: number[];
      trajectories: unknown[];
      credit: Record<string, number[][]>;
      divergedAt: number | null;
      fromFirst: (number | null)[];
    };
    const at = lines.flatMap((t, i) => (t.task.seed === seed ? [i] : []));
    assert.deepEqual(g.indices, at);
    assert.deepEqual(
      g.trajectories,
      at.map((i) => lines[i]),
    );
    assert.deepEqual(g.credit, { grpo: at.map((i) => grpo[i]), exact: at.map((i) => exact[i]) });
    // Where they part, read off the lines: the first turn at which some sample's (observation, action)
    // is not the first sample's.
    const key = (t: { observation: unknown; action: unknown } | undefined) =>
      t === undefined ? undefined : JSON.stringify([t.observation, t.action]);
    const samples = at.map((i) => lines[i].turns as { observation: unknown; action: unknown }[]);
    let t = 0;
    while (samples.every((s) => key(s[t]) !== undefined && key(s[t]) === key(samples[0][t]))) t++;
    const identical = samples.every((s) => s.length === samples[0].length && s.length === t);
    assert.equal(g.divergedAt, identical ? null : t);
    assert.equal(g.fromFirst[0], null);
  }
  assert.equal((await get('/api/runs/r.jsonl/groups/99')).status, 404);
  assert.match((await get('/api/runs/r.jsonl/groups/x')).body.error, /^task: got "x"/);
  assert.match(
    (await get('/api/runs/r.jsonl/groups/0?colour=1')).body.error,
    /^colour: got "1"; not a parameter/,
  );
});

test('compare: each side is `turnwise eval --in`, a run against itself differs by exactly 0', async () => {
  // The oracle was told its budget: separate mode, the one budget run (20), K up to the 4 samples.
  const { status, body } = await get('/api/compare?a=r.jsonl&b=r.jsonl');
  assert.equal(status, 200);
  const c = body as unknown as {
    K: number[];
    T: number[];
    mode: string;
    a: { passKT: number[][]; ci95: number[][][]; failures: unknown };
    diff: number[][];
    diffCi95: number[][][];
    paired: boolean;
  };
  assert.deepEqual([c.K, c.T, c.mode, c.paired], [[1, 2, 4], [20], 'separate', true]);
  const evalIn = JSON.parse(cli('eval --in runs/r.jsonl --K 1,2,4 --T 20 --json'));
  assert.deepEqual(c.a.passKT, evalIn.passKT);
  assert.deepEqual(c.a.ci95, evalIn.ci95);
  assert.deepEqual(c.a.failures, evalIn.failures);
  assert.deepEqual(c.diff, [[0], [0], [0]]);
  assert.deepEqual(c.diffCi95, [[[0, 0]], [[0, 0]], [[0, 0]]]);
  const cases: [string, RegExp][] = [
    ['a=r.jsonl', /^b: missing; expected a run id/],
    ['a=r.jsonl&b=r.jsonl&K=2,1', /^K: got "2,1"; expected increasing integers/],
    ['a=r.jsonl&b=r.jsonl&K=8', /^K: got 8; each K must be an integer from 1 to the samples per task \(4\)/],
    ['a=r.jsonl&b=r.jsonl&T=10', /^T: .*no trajectory run at budget 10/],
    ['a=r.jsonl&b=nest%2Flive', /^b: got "nest\/live"; .*no trajectories/],
    ['a=r.jsonl&b=r.jsonl&x=1', /^x: got "1"; not a parameter; expected: a, b, K, T/],
  ];
  for (const [q, message] of cases) {
    const r = await get(`/api/compare?${q}`);
    assert.equal(r.status, 400, q);
    assert.match(r.body.error, message, q);
  }
  assert.equal((await get('/api/compare?a=r.jsonl&b=nope')).status, 404);

  // Runs on other tasks: the difference of the two estimates, unpaired, with no interval.
  const other = (await get('/api/compare?a=r.jsonl&b=r5.jsonl')).body as unknown as typeof c & {
    tasks: { task: { seed: number }; a: unknown; b: unknown; diff: number | null }[];
  };
  const evalB = JSON.parse(cli('eval --in runs/r5.jsonl --K 1,2,4 --T 20 --json'));
  assert.deepEqual([other.paired, other.diffCi95], [false, null]);
  assert.deepEqual(
    other.diff,
    evalB.passKT.map((row: number[], k: number) => row.map((x, j) => x - evalIn.passKT[k][j])),
  );
  assert.deepEqual(
    other.tasks.map((t) => [t.task.seed, t.a === null, t.b === null, t.diff]),
    [
      [0, false, true, null],
      [1, false, true, null],
      [2, false, true, null],
      [3, false, true, null],
      [5, true, false, null],
      [6, true, false, null],
    ],
  );
});

interface Diagnostics {
  a: string;
  b: string;
  params: Record<string, unknown> | null;
  available: boolean;
  reason: string | null;
  report: {
    passKT: { a: { policy: string }; b: { policy: string } };
    stepQuality: { normal: { states: number }; error: { states: number } } | null;
    recovery: { states: number; continuations: number; a: { success: number | null } } | null;
    likelihood: { perToken?: unknown } | null;
  } | null;
  seconds: number | null;
}

/** `turnwise compare --json` on two runs' directories, its policies named by their runs (the API's
 * names: a policy is named by the path it was opened from). Run without blocking this process: a
 * fetch right after seconds of a blocked event loop could reuse a connection the server has closed. */
async function compareCli(a: string, b: string, flags: string) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [BIN, ...`compare --map 4x4 --slippery --a runs/${a} --b runs/${b} ${flags} --json`.split(' ')],
    { cwd: dir, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
  );
  const r = JSON.parse(stdout) as NonNullable<Diagnostics['report']>;
  r.passKT.a.policy = a;
  r.passKT.b.policy = b;
  return r;
}

/** An answer that measured runs a and b as `turnwise compare --json` with these flags does. */
async function sameAsCli(d: Diagnostics, a: string, b: string, flags: string): Promise<void> {
  assert.equal(d.available, true, d.reason ?? '');
  assert.deepEqual(d.report, await compareCli(a, b, flags));
}

/** Every file under the runs' directories with its size and modification time — but SQLite's WAL
 * index (run.sqlite-shm, and the empty -wal beside it), which any reader of a WAL store creates and
 * updates (every page that reads a store does; docs/ui.md says so). */
function snapshot(...ids: string[]): string[] {
  return ids.flatMap((id) =>
    readdirSync(join(runs, id), { recursive: true, encoding: 'utf8' })
      .filter((f) => !/\.sqlite-(shm|wal)$/.test(f))
      .map((f) => {
        const st = statSync(join(runs, id, f));
        return `${id}/${f} ${st.size} ${st.mtimeMs}`;
      }),
  );
}

test("compare diagnostics: the runs' saved policies measured, the numbers of `turnwise compare --json`", async () => {
  const untouched = snapshot('ta', 'tb');
  const { status, body } = await get('/api/compare/diagnostics?a=ta&b=tb');
  assert.equal(status, 200);
  const d = body as unknown as Diagnostics;
  // Kept: asked again, the same answer, down to the seconds the measurement took.
  assert.deepEqual((await get('/api/compare/diagnostics?a=ta&b=tb')).body, body);
  // Other sizes and seed, B first.
  const other = (
    await get(
      '/api/compare/diagnostics?a=tb&b=ta&tasks=3&samples=2&T=20&states=10&actions=4&continuations=2&seed=5',
    )
  ).body as unknown as Diagnostics;
  // Read-only: not a file of either run was written, created or removed.
  assert.deepEqual(snapshot('ta', 'tb'), untouched);

  // The dashboard's sizes, the runs' env, and T the budget both runs played (100).
  assert.deepEqual(d.params, {
    tasks: 8,
    samples: 8,
    K: [1, 2, 4, 8],
    T: [100],
    states: 50,
    actions: 8,
    continuations: 4,
    seed: 0,
    env: { env: 'frozenlake', params: { map: '4x4', slippery: true } },
    resamples: 2000,
  });
  const flags = '--tasks 8 --samples 8 --K 1,2,4,8 --T 100 --states 50 --actions 8 --continuations 4';
  await sameAsCli(d, 'ta', 'tb', `${flags} --seed 0`);
  // FrozenLake has an exact oracle: step quality at normal and error states and recovery were measured.
  assert.deepEqual(
    [d.report!.stepQuality!.normal.states, d.report!.stepQuality!.error.states, d.report!.recovery!.states],
    [50, 50, 50],
  );
  assert.ok(d.seconds !== null && d.seconds > 0);
  await sameAsCli(
    other,
    'tb',
    'ta',
    '--tasks 3 --samples 2 --K 1,2 --T 20 --states 10 --actions 4 --continuations 2 --seed 5',
  );
});

test('compare diagnostics of a transformer: measured off the server’s thread, as `turnwise compare` measures it', async () => {
  const q = 'a=tf&b=tf&tasks=2&samples=2&states=4&actions=2&continuations=1';
  let settled = false;
  const measuring = get(`/api/compare/diagnostics?${q}`).finally(() => {
    settled = true;
  });
  // The server answers other requests while it measures (the measurement has its own thread).
  const listed = await get('/api/runs');
  assert.equal(listed.status, 200);
  assert.equal(settled, false, 'the list came after the measurement: the server waited for it');
  const d = (await measuring).body as unknown as Diagnostics;
  await sameAsCli(
    d,
    'tf',
    'tf',
    '--tasks 2 --samples 2 --K 1,2 --T 3 --states 4 --actions 2 --continuations 1',
  );
  assert.ok(d.report!.likelihood!.perToken !== undefined, 'a text policy: likelihood per token too');
});

test('compare diagnostics: one line saying why when there is nothing to measure; bad parameters refused', async () => {
  const why = async (q: string) => {
    const { status, body } = await get(`/api/compare/diagnostics?${q}`);
    assert.equal(status, 200, q);
    const d = body as unknown as Diagnostics;
    assert.deepEqual([d.available, d.report, d.seconds], [false, null, null], q);
    return d.reason;
  };
  assert.equal(await why('a=r.jsonl&b=ta'), 'run "r.jsonl" is a trajectory file: it holds no policy');
  assert.equal(
    await why('a=ta&b=db.sqlite%23r1'),
    'run "db.sqlite#r1" is a run of a store file: it holds no policy',
  );
  assert.equal(
    await why('a=ta&b=nest%2Flive'),
    'run "nest/live" (harness) holds no saved policy (policy.safetensors)',
  );
  // t1 saved a policy too, trained on the 4x4 map without slippery ice.
  assert.equal(
    await why('a=ta&b=t1'),
    'the runs are on different envs (A frozenlake map=4x4 slippery=true, B frozenlake map=4x4 slippery=false)',
  );
  // A checkpoint its loader refuses (damaged), in a copy of ta: the loader's line, the run named.
  cpSync(join(runs, 'ta'), join(runs, 'broken'), { recursive: true });
  writeFileSync(join(runs, 'broken', 'policy.safetensors'), 'not a checkpoint');
  assert.match(
    (await why('a=ta&b=broken')) ?? '',
    /^run "broken": broken\/policy\.safetensors: .*(safetensors|header)/,
  );
  const cases: [string, RegExp][] = [
    ['a=ta', /^b: missing; expected a run id/],
    ['a=ta&b=tb&states=201', /^states: got "201"; expected an integer from 1 to 200/],
    ['a=ta&b=tb&samples=0', /^samples: got "0"; expected an integer from 1 to 64/],
    ['a=ta&b=tb&tasks=17', /^tasks: got "17"; expected an integer from 1 to 16/],
    ['a=ta&b=tb&T=x', /^T: got "x"; expected an integer from 1 to 1000/],
    ['a=ta&b=tb&seed=-1', /^seed: got "-1"; expected an integer ≥ 0/],
    ['a=ta&b=tb&K=1', /^K: got "1"; not a parameter; expected: a, b, tasks, samples, T, states/],
  ];
  for (const [q, message] of cases) {
    const r = await get(`/api/compare/diagnostics?${q}`);
    assert.equal(r.status, 400, q);
    assert.match(r.body.error, message, q);
  }
  assert.equal((await get('/api/compare/diagnostics?a=ta&b=nope')).status, 404);
  assert.equal((await get('/api/compare/diagnostics?a=..%2Fx&b=ta')).status, 400);
});

test("token chips: labelled by the tokenizer the transformer's checkpoint holds; ids where there is none", async () => {
  const { status, body } = await get('/api/trajectories/tf/0');
  assert.equal(status, 200);
  const a = body as unknown as {
    trajectory: { turns: { trace?: { tokens?: number[] } }[] };
    tokenText: {
      from: string | null;
      reason: string | null;
      labels: Record<string, string>;
      special: number[];
    };
  };
  const ids = [...new Set(a.trajectory.turns.flatMap((t) => t.trace?.tokens ?? []))].sort((x, y) => x - y);
  assert.ok(ids.length > 0);
  // The tokenizer as the policy loader reads it from the run's checkpoint.
  const tok = readSavedTransformer(join(runs, 'tf'))!.tokenizer;
  assert.equal(a.tokenText.from, 'policy.safetensors');
  assert.deepEqual(Object.keys(a.tokenText.labels).map(Number), ids);
  assert.deepEqual(
    a.tokenText.special,
    ids.filter((id) => tok.isSpecial(id)),
  );
  // What each label spells, whitespace and \xNN written back, is the token's text: its bytes as UTF-8,
  // or byte by byte where they are a piece of a character.
  for (const id of ids) {
    const label = a.tokenText.labels[id];
    assert.equal(chipText(tok, id, label), tokenText(tok, id), `token ${id}`);
  }
  // A rollout file of the same policy records ids only: said so, nothing labelled.
  const file = (await get('/api/trajectories/lm.jsonl/0')).body as unknown as typeof a;
  assert.deepEqual(file.tokenText, {
    from: null,
    reason: 'a trajectory file records token ids, not the tokenizer',
    labels: {},
    special: [],
  });
  // A policy that writes no text: no chips, nothing to label.
  assert.equal(((await get('/api/trajectories/r.jsonl/0')).body as unknown as typeof a).tokenText, null);
});

/** Reads server-sent events from a response, one {event, data} at a time. */
async function* events(r: Response): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const field = (name: string) =>
        block
          .split('\n')
          .filter((l) => l.startsWith(`${name}: `))
          .map((l) => l.slice(name.length + 2))
          .join('\n');
      yield { event: field('event'), data: field('data') };
    }
  }
}

test("a run's event stream: a finished run's state once, then the end; a live run's change as it happens", async () => {
  const done = await fetch(`${url}/api/runs/t1/events`);
  assert.equal(done.headers.get('content-type'), 'text/event-stream');
  const all = [];
  for await (const e of events(done)) all.push(e);
  const {
    config: _c,
    final: _f,
    ...info
  } = (await get('/api/runs/t1')).body as unknown as Record<string, unknown>;
  assert.deepEqual(all, [{ event: 'run', data: JSON.stringify(info) }]);

  const live = await fetch(`${url}/api/runs/nest%2Flive2/events`);
  const stream = events(live);
  const first = await stream.next();
  assert.equal(JSON.parse(first.value!.data).status, 'live');
  // The writer lets go: the next event says so (the stream polls the run; no sleep here).
  lock2?.release();
  const next = await stream.next();
  assert.equal(JSON.parse(next.value!.data).status, 'stopped');
  await stream.return(undefined);
  assert.equal((await get('/api/runs/nope/events')).status, 404);
});

test('the credit methods are those `turnwise credit --help` lists', async () => {
  const help = cli('credit --help').replace(/\s+/g, ' ');
  const listed = /--method <m> (.*?) \| exact/.exec(help)![1].split(' | ');
  const { body } = await get('/api/methods');
  const methods = (body as unknown as { methods: { name: string }[] }).methods.map((m) => m.name);
  assert.deepEqual(methods, listed);
});

test('the pages: / is the shell (no network: its CSP), /app.js the bundled front end', async () => {
  const page = await fetch(`${url}/`);
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
  assert.match(await page.text(), /<script type="module" src="\/app\.js"><\/script>/);
  const js = await fetch(`${url}/app.js`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const code = await js.text();
  // One module: no import of anything (bundled), and it draws with the report's chart code.
  assert.doesNotMatch(code, /\bimport\s*[{("'*]|\bfrom\s*["']/);
  assert.match(code, /turnwise-chart/);
});
