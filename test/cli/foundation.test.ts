// The contracts of the foundation issue, through the real CLI.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { firstSpawned, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-cli-'));

test('env describe --json prints Gymnasium-shaped P', async () => {
  const r = await turnwise(['env', 'describe', 'frozenlake', '--map', '4x4', '--slippery', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(d), ['desc', 'nS', 'nA', 'P']);
  assert.deepEqual(d.desc, ['SFFF', 'FHFH', 'FFFH', 'HFFG']);
  assert.equal(d.nS, 16);
  assert.equal(d.nA, 4);
  assert.deepEqual(d.P[14][2], [
    [0.33333333333333337, 14, 0, false],
    [0.3333333333333333, 15, 1, true],
    [0.33333333333333337, 10, 0, false],
  ]);
  const det = JSON.parse(
    (await turnwise(['env', 'describe', 'frozenlake', '--map', '8x8', '--json'])).stdout,
  );
  assert.equal(det.nS, 64);
  assert.deepEqual(det.P[0][1], [[1, 8, 0, false]]);
  const sr = JSON.parse(
    (await turnwise(['env', 'describe', 'frozenlake', '--slippery', '--success-rate', '0.8', '--json']))
      .stdout,
  );
  assert.deepEqual(
    sr.P[0][2].map((x: number[]) => x[0]),
    [0.09999999999999998, 0.8, 0.09999999999999998],
  );
  const rnd = [
    'env',
    'describe',
    'frozenlake',
    '--random',
    '--size',
    '5',
    '--p',
    '0.7',
    '--seed',
    '3',
    '--json',
  ];
  const [a, b] = await Promise.all([turnwise(rnd), turnwise(rnd)]);
  assert.equal(a.stdout, b.stdout);
  assert.equal(JSON.parse(a.stdout).nS, 25);
});

test('env oracle --json: V[0] = 0.7442 at T=100 and 0.1991 at T=20', async () => {
  const [r100, r20] = await Promise.all([
    turnwise(['env', 'oracle', 'frozenlake', '--map', '4x4', '--slippery', '--budget', '100', '--json']),
    turnwise(['env', 'oracle', 'frozenlake', '--map', '4x4', '--slippery', '--budget', '20', '--json']),
  ]);
  const d = JSON.parse(r100.stdout);
  assert.deepEqual(Object.keys(d), ['V', 'Q']);
  assert.equal(d.V.length, 16);
  assert.equal(d.Q[0].length, 4);
  assert.equal(d.V[0].toFixed(4), '0.7442');
  assert.equal(Math.max(...d.Q[0]), d.V[0]);
  assert.equal(JSON.parse(r20.stdout).V[0].toFixed(4), '0.1991');
});

test('rollout --json: the random policy within binomial error of 0.01394; --out writes JSONL', async () => {
  const out = join(dir, 'r.jsonl');
  const r = await turnwise([
    'rollout',
    '--env',
    'frozenlake',
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    'random',
    '--episodes',
    '20000',
    '--budget',
    '100',
    '--seed',
    '1',
    '--json',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  for (const key of ['episodes', 'success', 'meanTurns', 'failures']) assert.ok(key in s, key);
  assert.equal(s.episodes, 20000);
  assert.equal(s.exact.toFixed(5), '0.01394');
  assert.ok(Math.abs(s.success - 0.01394) < 4 * Math.sqrt((0.01394 * 0.98606) / 20000));
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  assert.equal(lines.length, 20000);
  assert.equal(JSON.parse(lines[0]).task.seed, 1);
  const sum = await turnwise(['summary', '--in', out, '--json']);
  assert.equal(JSON.parse(sum.stdout).success, s.success);
});

test('rollout --tasks --samples with --random: one map per task, deterministic', async () => {
  const args = [
    'rollout',
    '--random',
    '--size',
    '4',
    '--slippery',
    '--policy',
    'oracle',
    '--tasks',
    '5',
    '--samples',
    '4',
    '--budget',
    '30',
    '--seed',
    '9',
  ];
  const f1 = join(dir, 'a.jsonl');
  const f2 = join(dir, 'b.jsonl');
  const [a, b] = await Promise.all([
    turnwise([...args, '--out', f1, '--json']),
    turnwise([...args, '--out', f2, '--json']),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(JSON.parse(a.stdout).episodes, 20);
  assert.equal(readFileSync(f1, 'utf8'), readFileSync(f2, 'utf8'));
  const seeds = readFileSync(f1, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l).task.seed);
  assert.deepEqual(seeds, [9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 13]);
});

test('env play reads moves from stdin when there is no TTY', async () => {
  const r = await turnwise(['env', 'play', 'frozenlake', '--json'], 'd d s s s d\n');
  assert.equal(r.code, 0, r.stderr);
  const played = JSON.parse(r.stdout);
  assert.equal(played.success, true);
  assert.equal(played.turnsUsed, 6);
  assert.match(r.stderr, /success: you reached the goal after 6 turn/);
});

test('bench env and bench rollout print their JSON keys', async () => {
  const [e, r] = await Promise.all([
    turnwise(['bench', 'env', 'frozenlake', '--map', '8x8', '--slippery', '--steps', '20000', '--json']),
    turnwise(['bench', 'rollout', 'frozenlake', '--map', '8x8', '--slippery', '--steps', '20000', '--json']),
  ]);
  assert.ok(JSON.parse(e.stdout).stepsPerSecond > 0);
  const rr = JSON.parse(r.stdout);
  assert.ok(rr.stepsPerSecond > 0 && rr.episodesPerSecond > 0 && rr.steps >= 20000);
});

test('bad input: one line on stderr naming the problem, exit code 2, no stack', async () => {
  const cases: [string[], RegExp][] = [
    [['env', 'describe', 'nope'], /--env: got "nope"; expected one of: frozenlake/],
    [['env', 'describe', 'frozenlake', '--map', 'SFQ,FFG'], /--map: got "SFQ,FFG"/],
    [['env', 'describe', 'frozenlake', '--map', 'SFH,FHF,HFG'], /no path from S/],
    [['env', 'oracle', 'frozenlake', '--budget', '0'], /--budget: got "0"/],
    [['env', 'describe', 'frozenlake', '--random', '--p', '1.5'], /--p: got "1.5"/],
    [['rollout', '--policy', 'random', '--episodes', '3', '--budget', '-4'], /--budget: got "-4"/],
    [['rollout', '--policy', 'wizard', '--episodes', '3'], /--policy: got "wizard"/],
    [['rollout', '--policy', 'oracle:eps=3', '--episodes', '3'], /eps: got "3"/],
    [['rollout', '--policy', 'random', '--episodes', 'many'], /--episodes: got "many"/],
    [['rollout', '--policy', 'random', '--episodes', '3', '--tasks', '2'], /either --episodes or --tasks/],
    [
      ['rollout', '--policy', 'random', '--episodes', '2', '--out', join(dir, 'no/such/dir/x.jsonl')],
      /--out: .*its directory .*no\/such\/dir does not exist/,
    ],
    [['summary', '--in', join(dir, 'missing.jsonl')], /--in: got .*cannot read it \(ENOENT\)/],
    [['rollout', '--policy', 'random', '--frobnicate'], /unknown option '--frobnicate'/],
  ];
  const results = await Promise.all(cases.map(([args], i) => firstSpawned(i, args)));
  results.forEach((r, i) => {
    const [args, pattern] = cases[i];
    assert.equal(r.code, 2, `${args.join(' ')} → ${r.code}: ${r.stderr}`);
    assert.match(r.stderr, pattern, args.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });
});
