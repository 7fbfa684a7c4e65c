// turnwise adapt through the CLI and src/train/adapt.ts: the "before" point is the trained policy's own
// exact success on the held-out maps (computed apart), the adapted policy written to --out measures what the
// last point says (a round trip through the file), the trained policy is never moved, the same seed gives
// the same curve, and bad input is refused in one line before any work.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { meanExactSuccess } from '../../src/eval/exact.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { adapt } from '../../src/train/adapt.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { learnerFor } from '../../src/train/learner.ts';
import { turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-adapt-'));
const base = join(dir, 'base');
const SOURCE = ['--random', '--size', '3', '--slippery'];
const TARGET = ['--random', '--size', '3', '--p', '0.6', '--slippery'];

test('adapt: before = the policy’s exact success on the held-out maps; the adapted file measures the last point', async () => {
  const trained = await turnwise([
    'train',
    ...SOURCE,
    '--policy',
    'mlp:hidden=16',
    '--iters',
    '3',
    '--groups',
    '4',
    '--eval-episodes',
    '10',
    '--out',
    base,
  ]);
  assert.equal(trained.code, 0, trained.stderr);
  const args = [
    'adapt',
    '--policy',
    base,
    ...TARGET,
    '--episodes',
    '96',
    '--groups',
    '4',
    '--group-size',
    '4',
    '--at',
    '32,96',
    '--budget',
    '12',
    '--eval-tasks',
    '40',
    '--seed',
    '2',
  ];
  const out = join(dir, 'adapted');
  const r = await turnwise([...args, '--json', '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.measure, 'exact');
  assert.deepEqual(
    report.points.map((p: { episodes: number }) => p.episodes),
    [0, 32, 96],
  );
  const target = envConfig('frozenlake', { random: true, size: 3, p: 0.6, slippery: true });
  const held = makeTasks(target, 40, 1_000_000);
  const spec = envs.spec(held[0]);
  const before = await meanExactSuccess(envs, held, makePolicy(base, spec), 12, false);
  assert.equal(report.points[0].success, before);
  const after = await meanExactSuccess(envs, held, makePolicy(out, spec), 12, false);
  assert.ok(Math.abs(report.points[2].success - after!) < 1e-12, `${report.points[2].success} vs ${after}`);
  for (const p of report.points) {
    assert.ok(p.success >= 0 && p.success <= report.optimal + 1e-12);
    assert.ok(Math.abs(p.gain - (p.success - before!)) < 1e-12);
  }
  // Steps grow with the episodes: every episode takes ≥ 1 step, at most the budget.
  assert.ok(report.points[1].steps >= 32 && report.points[1].steps <= 32 * 12);
  // The same seed: the same curve (the text output of the same run).
  const again = await turnwise([...args, '--json']);
  assert.deepEqual(JSON.parse(again.stdout).points, report.points);
});

test('adapt() adapts a copy: the trained policy’s parameters are not moved', async () => {
  const [task] = makeTasks(envConfig('frozenlake', { random: true, size: 3, slippery: true }), 1, 0);
  const policy = makePolicy(existsSync(base) ? base : 'mlp', envs.spec(task));
  const before = learnerFor(policy)!.params.map(([, t]) => Float32Array.from(t.data));
  const config = parseTrainConfig({
    env: { env: 'frozenlake', params: { random: true, size: 3, p: 0.6, slippery: true } },
    policy: { kind: 'mlp', hidden: [16] },
    iters: 2,
    groups: 2,
    groupSize: 4,
    budget: { kind: 'fixed', budget: 10 },
    eval: { episodes: 1 },
  });
  const held = makeTasks(
    envConfig('frozenlake', { random: true, size: 3, p: 0.6, slippery: true }),
    5,
    1_000_000,
  );
  const r = await adapt({ config, envs, policy, at: [8, 16], evalTasks: held, evalBudget: 10 });
  assert.equal(r.points.length, 3);
  learnerFor(policy)!.params.forEach(([, t], i) => {
    assert.deepEqual(t.data, before[i]);
  });
  await assert.rejects(
    adapt({ config, envs, policy, at: [12], evalTasks: held, evalBudget: 10 }),
    InputError,
  );
  await assert.rejects(
    adapt({ config, envs, policy, at: [24], evalTasks: held, evalBudget: 10 }),
    InputError,
  );
});

test('adapt takes a saved transformer too: at the temperature its spec gives, with the transformer’s training defaults', async () => {
  // The language agent reads any board as text, so it can meet the larger maps an MLP cannot read.
  const file = join(dir, 'lm.safetensors');
  const lake = envConfig('frozenlake', { random: true, size: 3, slippery: true });
  const fresh = makePolicy(
    'transformer:layers=1,d=16,heads=2,ctx=1024,seed=3',
    envs.spec(makeTasks(lake, 1, 0)[0]),
  );
  (fresh as TransformerPolicy).save(file);
  const saved = readFileSync(file);
  const spec = `transformer:from=${file},temperature=0.5`;
  const out = join(dir, 'lm-adapted');
  const r = await turnwise([
    'adapt',
    '--policy',
    spec,
    '--random',
    '--size',
    '4',
    '--slippery',
    '--episodes',
    '16',
    '--groups',
    '2',
    '--group-size',
    '4',
    '--at',
    '8,16',
    '--budget',
    '6',
    '--eval-tasks',
    '3',
    '--json',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  // A text policy's action distribution is not a table over the env's actions: sampled, one episode a task.
  assert.equal(report.measure, 'sampled');
  assert.deepEqual(
    report.points.map((p: { episodes: number }) => p.episodes),
    [0, 8, 16],
  );
  const env4 = envs.spec(
    makeTasks(envConfig('frozenlake', { random: true, size: 4, slippery: true }), 1, 0)[0],
  );
  // The adapted policy keeps the temperature it adapted at (its file alone: no from=).
  assert.equal((makePolicy(out, env4) as TransformerPolicy).format.temperature, 0.5);
  assert.equal((makePolicy(file, env4) as TransformerPolicy).format.temperature, 1);
  // The transformer's defaults of turnwise train (lr 3e-4 constant, 1 epoch × 2 minibatches), not the MLP's.
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual([config.optim.lr, config.optim.anneal, config.ppo.epochs], [3e-4, false, 1]);
  assert.deepEqual(readFileSync(file), saved);
});

test('adapt refuses bad input in one line, exit 2, before any work', async () => {
  const cases: [string[], RegExp][] = [
    [['--policy', base, ...TARGET], /^turnwise: --episodes: missing/],
    [
      ['--policy', base, ...TARGET, '--episodes', '200'],
      /--episodes: got "200"; expected a multiple of --groups × --group-size = 16 × 8 = 128/,
    ],
    [
      ['--policy', base, ...TARGET, '--episodes', '256', '--at', '100'],
      /--at: got "100"; expected multiples of 128/,
    ],
    [
      ['--policy', base, '--random', '--size', '4', '--episodes', '128'],
      /trained on features of length 27 .* has 48/,
    ],
    [
      ['--policy', base, ...TARGET, '--episodes', '128', '--lr', '0'],
      /--lr: got "0"; expected a number in \(0, 1\]/,
    ],
    [['--policy', 'random', ...TARGET, '--episodes', '128'], /--policy: got "random"; cannot be adapted/],
    [
      ['--policy', 'transformer:layers=1,d=16', ...TARGET, '--episodes', '128'],
      /--policy: got "transformer:layers=1,d=16"; a fresh transformer has learned nothing to adapt: give from=RUN/,
    ],
  ];
  for (const [argv, want] of cases) {
    const r = await turnwise(['adapt', ...argv]);
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
