// The nn issue's commands through the real CLI: bench nn, bc, and a bc checkpoint as --policy.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { firstSpawned, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-cli-nn-'));

test('bench nn --json: GFLOP/s at 64, 256, 512, MLP train steps/s, the transformer figures, and beside llama.cpp', async () => {
  const r = await turnwise(['bench', 'nn', '--trial-seconds', '0.01', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const b = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(b.matmul), ['64', '256', '512']);
  for (const n of ['64', '256', '512']) assert.ok(b.matmul[n] > 0 && b.matmulScalar[n] > 0);
  assert.ok(b.mlpTrainStepsPerSecond > 0);
  assert.equal(b.kernel, 'wasm-simd128');
  const t = b.transformer;
  assert.deepEqual(Object.keys(t.generateTokensPerSecond), ['1', '64']);
  assert.ok(t.params > 0 && t.trainTokensPerSecond > 0 && t.mfu > 0);
  assert.equal(t.peakGflops, Math.max(...Object.values(b.matmul as Record<string, number>)));
  const l = b.llamaCpp;
  assert.equal(l.model.params, t.params);
  assert.equal(l.threads, 1);
  for (const engine of ['ours', 'llamaCpp', 'llamaCppDecode'])
    assert.deepEqual(Object.keys(l.generateTokensPerSecond[engine]), ['1', '16']);
  assert.deepEqual(l.generatedTokens.llamaCpp, { '1': 64, '16': 1024 });
  assert.equal(typeof l.greedyTokensEqual, 'boolean');
});

const bcArgs = (out: string) => [
  'bc',
  '--random',
  '--size',
  '4',
  '--p',
  '0.8',
  '--slippery',
  '--expert',
  'oracle:horizon=100',
  '--train-seeds',
  '0:150',
  '--test-seeds',
  '1000:1040',
  '--budget',
  '60',
  '--hidden',
  '16x16',
  '--epochs',
  '10',
  '--lr',
  '0.01',
  '--out',
  out,
  '--seed',
  '0',
  '--json',
];

test('bc --json: held-out success above random, a loadable checkpoint, the same bytes on a rerun', async () => {
  const [a, b] = await Promise.all([turnwise(bcArgs(join(dir, 'a'))), turnwise(bcArgs(join(dir, 'b')))]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const s = JSON.parse(a.stdout);
  assert.equal(s.train.tasks, 150);
  assert.equal(s.test.tasks, 40);
  assert.equal(s.student.parameters, 48 * 16 + 16 + 16 * 16 + 16 + 16 * 4 + 4);
  assert.ok(s.test.success.student > s.test.success.random + 0.2, JSON.stringify(s.test.success));
  assert.ok(s.test.success.expert >= s.test.success.student);
  assert.equal(s.out, join(dir, 'a', 'policy.safetensors'));
  const fileA = readFileSync(join(dir, 'a', 'policy.safetensors'));
  const fileB = readFileSync(join(dir, 'b', 'policy.safetensors'));
  assert.ok(fileA.equals(fileB), 'same seed, same checkpoint bytes');
  const { seconds: _a, out: _oa, ...restA } = s;
  const { seconds: _b, out: _ob, ...restB } = JSON.parse(b.stdout);
  assert.deepEqual(restA, restB);
  // The checkpoint header: 8-byte little-endian size, JSON starting with {, padded to 8, Adam state inside.
  const n = Number(fileA.readBigUInt64LE(0));
  assert.equal((8 + n) % 8, 0);
  const header = JSON.parse(fileA.subarray(8, 8 + n).toString('utf8'));
  assert.equal(JSON.parse(header.__metadata__.turnwise).kind, 'mlp-policy');
  assert.equal(JSON.parse(header.__metadata__.optimizer).kind, 'adam');
  assert.deepEqual(header['layers.0.weight'].shape, [16, 48]);
  assert.deepEqual(header['optimizer.m.layers.0.weight'].shape, [16 * 48]);

  // The run directory is a --policy: its exact held-out success is the one bc reported.
  const r = await turnwise([
    'rollout',
    '--random',
    '--size',
    '4',
    '--slippery',
    '--policy',
    join(dir, 'a'),
    '--tasks',
    '40',
    '--seed',
    '1000',
    '--budget',
    '60',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(Math.abs(JSON.parse(r.stdout).exact - s.test.success.student) < 1e-12);
});

test('bc and mlp refusals: one line, exit code 2', async () => {
  const bad: [string[], RegExp][] = [
    [['bc', '--train-seeds', '10:10', '--test-seeds', '0:5'], /--train-seeds: got "10:10"; expected A:B/],
    [['bc', '--train-seeds', 'a:b', '--test-seeds', '0:5'], /--train-seeds/],
    [['bc', '--train-seeds', '0:5'], /--test-seeds: missing/],
    [['bc', '--train-seeds', '0:5', '--test-seeds', '5:6', '--targets', 'soft'], /--targets: got "soft"/],
    [['bc', '--train-seeds', '0:5', '--test-seeds', '5:6', '--hidden', '64x'], /--hidden/],
    [['rollout', '--policy', 'mlp:hidden=0', '--episodes', '1'], /--policy mlp.hidden: got "0"/],
    [['rollout', '--policy', join(dir, 'missing.safetensors'), '--episodes', '1'], /no such file/],
  ];
  for (const [i, [args, message]] of bad.entries()) {
    const r = await firstSpawned(i, args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
