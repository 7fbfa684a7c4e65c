// `turnwise train-pair` as a user runs it: a run directory whose bytes the seed decides, a fixed
// executor that stays what it was, the trajectory file readable by summary, and refusals before work.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-pair-'));
const SMALL = ['--iters', '2', '--groups', '4', '--group-size', '4', '--eval-maps', '5', '--hidden', '8'];
const read = (d: string, f: string) => readFileSync(join(dir, d, f));

test('the same seed writes the same run directory, byte for byte; a fixed executor is left as it was', async () => {
  for (const d of ['a', 'b']) {
    const r = await turnwise([
      'train-pair',
      ...SMALL,
      '--credit',
      'counterfactual',
      '--seed',
      '3',
      '--out',
      join(dir, d),
    ]);
    assert.equal(r.code, 0, r.stderr);
  }
  for (const f of ['planner.safetensors', 'executor.safetensors', 'trajectories.jsonl', 'summary.json'])
    assert.ok(read('a', f).equals(read('b', f)), f);
  const summary = JSON.parse(read('a', 'summary.json').toString());
  assert.deepEqual(summary.trained, { planner: true, executor: true });
  assert.ok(summary.replaySteps > 0);
  // 5 maps × 4 episodes, each turn 0 the planner's and the rest the executor's
  const lines = read('a', 'trajectories.jsonl')
    .toString()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 20);
  for (const t of lines) {
    assert.deepEqual(t.turns[0].info, { agent: 'planner', step: false });
    for (const turn of t.turns.slice(1)) assert.equal(turn.info.agent, 'executor');
  }
  const s = await turnwise(['summary', '--in', join(dir, 'a', 'trajectories.jsonl'), '--json']);
  assert.equal(s.code, 0, s.stderr);

  // The planner alone over a.executor: the executor written again is the one read.
  const r = await turnwise([
    'train-pair',
    ...SMALL,
    '--executor',
    join(dir, 'a', 'executor.safetensors'),
    '--out',
    join(dir, 'c'),
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(read('c', 'executor.safetensors').equals(read('a', 'executor.safetensors')));
  assert.deepEqual(JSON.parse(read('c', 'summary.json').toString()).trained, {
    planner: true,
    executor: false,
  });
  // With the planner fixed to the goal every waypoint is the goal, a forced turn.
  const g = await turnwise(['train-pair', ...SMALL, '--planner', 'goal', '--out', join(dir, 'g')]);
  assert.equal(g.code, 0, g.stderr);
  assert.ok(!existsSync(join(dir, 'g', 'planner.safetensors')));
  for (const line of read('g', 'trajectories.jsonl').toString().trim().split('\n')) {
    const t = JSON.parse(line);
    assert.equal(t.turns[0].action, 15);
    assert.equal(t.turns[0].forced, true);
  }
});

test('refusals: one line naming the flag, exit 2, nothing written', async () => {
  const cases: [string[], RegExp][] = [
    [['--credit', 'coma'], /^turnwise: --credit: got "coma"; expected shared, per-agent, counterfactual\n$/],
    [['--executor', 'goal'], /^turnwise: --executor: got "goal"; expected mlp or a network file\n$/],
    [
      ['--planner', join(dir, 'nope.safetensors')],
      /^turnwise: --planner: got ".*nope.safetensors"; expected mlp, goal or a network file written by train-pair --out \(no such file\)\n$/,
    ],
    [
      ['--executor', join(dir, 'a', 'planner.safetensors')],
      /^turnwise: --executor: got ".*planner.safetensors"; expected an executor network of 4x4 maps \(.*features of length 48 \(frozenlake-planner\).*\)\n$/,
    ],
    [
      ['--planner', join(dir, 'a', 'planner.safetensors'), '--size', '3'],
      /^turnwise: --planner: got ".*planner.safetensors"; expected a planner network of 3x3 maps \(.*\)\n$/,
    ],
    [['--budget', '1'], /^turnwise: --budget: got "1"; expected an integer from 2 to 1000\n$/],
    [['--hidden', '5000'], /^turnwise: --hidden: got "5000"; expected widths from 1 to 4096\n$/],
  ];
  for (const [args, message] of cases) {
    const r = await turnwise(['train-pair', ...SMALL, ...args, '--out', join(dir, 'refused')]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '');
    assert.ok(!existsSync(join(dir, 'refused')));
  }
});

test('--env search: the same seed writes the same run directory; plans recorded; a fixed planner writes no network', async () => {
  const SEARCH = ['--env', 'search', ...SMALL];
  for (const d of ['sa', 'sb']) {
    const r = await turnwise([
      'train-pair',
      ...SEARCH,
      '--credit',
      'counterfactual',
      '--seed',
      '2',
      '--out',
      join(dir, d),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^pair on search questions \(level mixed, 6 calls offered a turn\)/);
  }
  for (const f of ['planner.safetensors', 'executor.safetensors', 'trajectories.jsonl', 'summary.json'])
    assert.ok(read('sa', f).equals(read('sb', f)), f);
  const summary = JSON.parse(read('sa', 'summary.json').toString());
  assert.equal(summary.config.level, 'mixed');
  assert.equal(summary.config.budget, 12);
  assert.ok(summary.replaySteps > 0);
  const lines = read('sa', 'trajectories.jsonl').toString().trim().split('\n');
  assert.equal(lines.length, 20);
  for (const line of lines) {
    const t = JSON.parse(line);
    const plan = t.turns[0].action + 1;
    assert.deepEqual(t.turns[0].info, { agent: 'planner', step: false, plan });
    for (const turn of t.turns.slice(1))
      assert.deepEqual([turn.info.agent, turn.info.plan], ['executor', plan]);
  }
  // The planner fixed to the question's hops, at level 2: every plan is 2, forced.
  const l = await turnwise([
    'train-pair',
    ...SEARCH,
    '--level',
    '2',
    '--planner',
    'level',
    '--out',
    join(dir, 'sl'),
  ]);
  assert.equal(l.code, 0, l.stderr);
  assert.ok(!existsSync(join(dir, 'sl', 'planner.safetensors')));
  for (const line of read('sl', 'trajectories.jsonl').toString().trim().split('\n')) {
    const t = JSON.parse(line);
    assert.deepEqual([t.turns[0].action, t.turns[0].forced], [1, true]);
  }
  // The planner alone over sa's executor, which is written back unchanged.
  const p = await turnwise([
    'train-pair',
    ...SEARCH,
    '--executor',
    join(dir, 'sa', 'executor.safetensors'),
    '--out',
    join(dir, 'sp'),
  ]);
  assert.equal(p.code, 0, p.stderr);
  assert.ok(read('sp', 'executor.safetensors').equals(read('sa', 'executor.safetensors')));

  const refusals: [string[], RegExp][] = [
    [
      ['--size', '5'],
      /^turnwise: --size: got "5"; only with --env frozenlake \(search questions have --level\)\n$/,
    ],
    [['--slippery'], /^turnwise: --slippery: got "true"; only with --env frozenlake/],
    [['--level', '4'], /^turnwise: --level: got "4"; expected 1, 2, 3 or mixed\n$/],
    [
      ['--planner', 'goal'],
      /^turnwise: --planner: got "goal"; expected mlp, level, 1, 2, 3 or a network file/,
    ],
    [
      ['--planner', '3', '--executor', join(dir, 'sa', 'executor.safetensors')],
      /^turnwise: --executor: got ".*"; with --planner 3 the executor is trained: mlp\n$/,
    ],
    [
      ['--planner', join(dir, 'a', 'planner.safetensors')],
      /^turnwise: --planner: got ".*"; expected a planner network of search questions \(.*frozenlake-planner.*\)\n$/,
    ],
  ];
  for (const [args, message] of refusals) {
    const r = await turnwise(['train-pair', ...SEARCH, ...args, '--out', join(dir, 'refused')]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '');
    assert.ok(!existsSync(join(dir, 'refused')));
  }
  // And the other way: search's flags on frozenlake.
  for (const [args, message] of [
    [['--level', '2'], /^turnwise: --level: got "2"; only with --env search/],
    [['--planner', 'level'], /^turnwise: --planner: got "level"; expected mlp, goal or a network file/],
    [['--env', 'web'], /^turnwise: --env: got "web"; expected frozenlake or search\n$/],
  ] as [string[], RegExp][]) {
    const r = await turnwise(['train-pair', ...SMALL, ...args]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, message);
  }
});
