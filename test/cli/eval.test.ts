// The contracts of issue 3 (`turnwise eval`, `turnwise compare`), through the real CLI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { program } from '../../src/cli/main.ts';
import { InputError } from '../../src/core/errors.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { exactSuccess } from '../../src/eval/exact.ts';
import { passAtK } from '../../src/eval/passkt.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { firstSpawned, turnwise } from './run.ts';

const EVAL = [
  'eval',
  '--env',
  'frozenlake',
  '--map',
  '4x4',
  '--slippery',
  '--policy',
  'random',
  '--tasks',
  '1',
  '--samples',
  '64',
  '--K',
  '1,2,4,8,16',
  '--T',
  '10,20,50,100',
  '--seed',
  '3',
  '--json',
];

const COMPARE = [
  'compare',
  '--env',
  'frozenlake',
  '--map',
  '4x4',
  '--slippery',
  '--a',
  'oracle:horizon=100',
  '--b',
  'random',
  '--states',
  '200',
  '--actions',
  '16',
  '--seed',
  '5',
  '--json',
];

test('eval --json: the contract keys, pass@K from the per-task counts, same bytes twice', async () => {
  const [r, again] = await Promise.all([turnwise(EVAL), turnwise(EVAL)]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, again.stdout);
  const d = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(d), ['K', 'T', 'mode', 'passKT', 'ci95', 'perTask']);
  assert.deepEqual(d.K, [1, 2, 4, 8, 16]);
  assert.deepEqual(d.T, [10, 20, 50, 100]);
  assert.equal(d.mode, 'prefix');
  assert.equal(d.perTask.length, 1);
  const task = d.perTask[0];
  assert.deepEqual(Object.keys(task), ['task', 'n', 'successWithin']);
  assert.deepEqual(task.task, { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 3 });
  assert.equal(task.n, 64);
  assert.deepEqual(Object.keys(task.successWithin), ['10', '20', '50', '100']);
  const c = d.T.map((t: number) => task.successWithin[String(t)]);
  d.K.forEach((k: number, i: number) => {
    d.T.forEach((_: number, j: number) => {
      assert.ok(Math.abs(d.passKT[i][j] - passAtK(64, c[j], k)) < 1e-12, `K=${k} T=${d.T[j]}`);
      if (i > 0) assert.ok(d.passKT[i][j] >= d.passKT[i - 1][j]);
      if (j > 0) assert.ok(d.passKT[i][j] >= d.passKT[i][j - 1]);
      // One task: resampling tasks cannot move the estimate, and the CLI says so on stderr.
      assert.deepEqual(d.ci95[i][j], [d.passKT[i][j], d.passKT[i][j]]);
    });
  });
  assert.ok(Math.abs(d.passKT[0][3] - c[3] / 64) < 1e-12);
  assert.match(r.stderr, /1 task: an interval over tasks has no spread/);
});

test('eval --random: one map per task (task seed = seed + index); Pass@(1,100) near the exact mean', async () => {
  const r = await turnwise([
    'eval',
    '--random',
    '--size',
    '4',
    '--p',
    '0.8',
    '--slippery',
    '--policy',
    'oracle:horizon=100',
    '--tasks',
    '50',
    '--samples',
    '32',
    '--K',
    '1,4',
    '--T',
    '20,100',
    '--seed',
    '3',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.deepEqual(
    d.perTask.map((t: { task: { seed: number } }) => t.task.seed),
    Array.from({ length: 50 }, (_, i) => 3 + i),
  );
  assert.deepEqual(d.perTask[0].task.params, { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }), 50, 3);
  const policy = makePolicy('oracle:horizon=100', makeEnv(tasks[0]).spec);
  const exact = tasks.reduce((s, t) => s + exactSuccess(makeEnv(t), policy, 100)! / 50, 0);
  assert.ok(Math.abs(d.passKT[0][1] - exact) < 0.04, `${d.passKT[0][1]} vs exact ${exact}`);
  const [lo, hi] = d.ci95[0][1];
  assert.ok(lo < d.passKT[0][1] && d.passKT[0][1] < hi && hi - lo < 0.2);
});

test('compare --json: the contract keys and the values theory fixes for oracle vs random', async () => {
  const r = await turnwise(COMPARE);
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(d), [
    'passKT',
    'stepQuality',
    'stepProxy',
    'recovery',
    'likelihood',
    'failures',
  ]);
  assert.equal(d.stepProxy, null); // FrozenLake has the exact Q*: no proxy
  for (const key of ['a', 'b', 'diff', 'diffCi95']) assert.ok(key in d.passKT, key);
  const { a, b, diff, diffCi95 } = d.passKT;
  assert.equal(a.policy, 'oracle:horizon=100');
  assert.equal(b.policy, 'random');
  a.passKT.forEach((row: number[], k: number) => {
    row.forEach((x, j) => {
      assert.equal(diff[k][j], x - b.passKT[k][j]);
      assert.ok(diffCi95[k][j][0] <= diff[k][j] && diff[k][j] <= diffCi95[k][j][1]);
    });
  });
  // Pass@(1,100) of each policy against its exact success probability (16 tasks × 64 samples).
  const task = makeTasks(envConfig('frozenlake', { map: '4x4', slippery: true }), 1, 5)[0];
  const env = makeEnv(task);
  for (const [side, spec] of [
    [a, 'oracle:horizon=100'],
    [b, 'random'],
  ] as const) {
    const exact = exactSuccess(env, makePolicy(spec, env.spec), 100)!;
    const se = Math.sqrt((exact * (1 - exact)) / 1024);
    assert.ok(Math.abs(side.passKT[0][3] - exact) < 4 * se, `${spec}: ${side.passKT[0][3]} vs ${exact}`);
  }
  for (const kind of ['normal', 'error']) {
    const q = d.stepQuality[kind];
    for (const key of ['aBetter', 'ties', 'bBetter', 'regretA', 'regretB'])
      assert.ok(key in q, `${kind}.${key}`);
    assert.equal(q.states, 200);
    assert.ok(Math.abs(q.aBetter + q.ties + q.bBetter - 1) < 1e-12);
    // The oracle's regret is tiny (it looks 100 turns ahead, scored at the turns actually left);
    // random's is E over states of V* − mean Q*.
    assert.ok(q.regretA < 1e-3 && q.regretB > 0.05, `${q.regretA} ${q.regretB}`);
    assert.ok(q.bBetter < 0.02 && q.aBetter > 0.6);
  }
  for (const key of ['a', 'b']) assert.ok(key in d.recovery, key);
  assert.ok(d.recovery.a.success > d.recovery.b.success && d.recovery.diffCi95[0] > 0);
  const l = d.likelihood;
  for (const key of ['nllAunderA', 'nllAunderB', 'llrSuccessA', 'llrSuccessB']) assert.ok(key in l, key);
  // Every action has probability 1/4 under random, whoever took it.
  assert.equal(l.nllAunderB, Math.log(4));
  assert.equal(l.nllBunderB, Math.log(4));
  // The greedy oracle's own actions are (nearly) certain under it; per action, LLR = ln 4 − NLL under A.
  assert.ok(l.nllAunderA >= 0 && l.nllAunderA < 0.05);
  assert.ok(l.llrSuccessA > 0);
  assert.ok(l.infinite.nllBunderA > 0, 'random takes actions the greedy oracle never would');
  for (const side of ['a', 'b']) {
    const f = d.failures[side];
    assert.equal(f.episodes, 1024);
    assert.equal(
      f.successes + Object.values(f.byKind as Record<string, number>).reduce((x, y) => x + y),
      1024,
    );
  }
  assert.equal(d.failures.b.byKind.budget, 0, 'random on 4x4 falls in a hole long before 100 turns');
});

test('eval and compare print readable tables without --json', async () => {
  const [e, c] = await Promise.all([
    turnwise(EVAL.filter((x) => x !== '--json')),
    turnwise([
      ...COMPARE.filter((x) => x !== '--json'),
      '--states',
      '20',
      '--tasks',
      '2',
      '--resamples',
      '100',
    ]),
  ]);
  assert.equal(e.code, 0, e.stderr);
  assert.match(e.stdout, /prefix mode: one run per sample at T=100/);
  assert.match(e.stdout, /K=16 +0\.\d{4} \[0\.\d{4}, 0\.\d{4}\]/);
  assert.equal(c.code, 0, c.stderr);
  for (const re of [
    /A − B \(paired/,
    /^normal +20 /m,
    /^A +0\.\d{4}/m,
    /A's actions \(\d+\) +0\.\d{4} +1\.3863/,
    /Failures at T=100/,
  ]) {
    assert.match(c.stdout, re);
  }
});

const ev = ['eval', '--policy', 'random', '--tasks', '2', '--samples', '8', '--K', '1,2', '--T', '10'];
const cmp = ['compare', '--a', 'random', '--b', 'random', '--tasks', '2', '--samples', '8', '--K', '1,2'];

test('eval/compare bad input through the real CLI: one line naming the flag, exit code 2', async () => {
  const cases: [string[], RegExp][] = [
    [[...ev, '--K', '1,16'], /^turnwise: --K: got "1,16"; each K must be ≤ --samples \(8\)$/],
    [[...ev, '--K', ''], /^turnwise: --K: got ""; expected comma-separated integers ≥ 1$/],
    [[...ev, '--policy', 'wizard'], /^turnwise: --policy: got "wizard"/],
    [
      [...ev, '--policy', 'oracle', '--mode', 'prefix'],
      /^turnwise: --mode: got "prefix"; policy oracle sees the turns left/,
    ],
    [['compare', '--a', 'random'], /required option '--b <spec>' not specified/],
    [[...cmp, '--states-from', 'c'], /^turnwise: --states-from: got "c"; expected one of: a, b, both$/],
  ];
  const results = await Promise.all(cases.map(([args], i) => firstSpawned(i, args)));
  results.forEach((r, i) => {
    const [args, pattern] = cases[i];
    assert.equal(r.code, 2, `${args.join(' ')} → ${r.code}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr.trim(), pattern, args.join(' '));
    assert.equal(r.stdout, '');
  });
});

test('more refusals, in process (the same commander program; main turns InputError into exit code 2)', async () => {
  const cases: [string[], RegExp][] = [
    [[...ev, '--K', '2,1'], /^--K: got "2,1"; expected strictly increasing integers ≥ 1$/],
    [[...ev, '--T', '20,10,10'], /^--T: got "20,10,10"; expected strictly increasing/],
    [[...ev, '--T', '0'], /^--T: got "0"/],
    [[...ev, '--mode', 'sideways'], /^--mode: got "sideways"; expected one of: prefix, separate$/],
    [[...ev, '--tasks', '0'], /^--tasks: got "0"/],
    [[...ev, '--resamples', 'lots'], /^--resamples: got "lots"/],
    [[...ev, '--env', 'chess'], /^--env: got "chess"/],
    [[...cmp, '--b', 'wizard'], /^--b: got "wizard"/],
    [
      [...cmp, '--b', 'oracle', '--mode', 'prefix'],
      /^--mode: got "prefix"; policy oracle sees the turns left/,
    ],
    [[...cmp, '--states', '0'], /^--states: got "0"/],
    [[...cmp, '--actions', '-1'], /^--actions: got "-1"/],
    [[...cmp, '--continuations', '1.5'], /^--continuations: got "1.5"/],
  ];
  for (const [args, pattern] of cases) {
    await assert.rejects((await program()).parseAsync(args, { from: 'user' }), (e: unknown) => {
      assert.ok(e instanceof InputError, `${args.join(' ')}: ${e}`);
      assert.match(e.message, pattern, args.join(' '));
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
  }
});
