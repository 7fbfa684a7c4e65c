// The contracts of the credit issue, through the real CLI: calc, credit --in, credit fidelity.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { creditBatch, discounted } from '../../src/credit/index.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { readTrajectories } from '../../src/store/jsonl.ts';
import { inProcess, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-credit-'));

function refused(r: { code: number | null; stderr: string; stdout: string }, pattern: RegExp): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, pattern);
}

test('calc compound, dead-groups, tokens --json: the contract values and keys', async () => {
  const [c, d, t, bad, badG, sim] = await Promise.all([
    turnwise(['calc', 'compound', '--q', '0.95', '--n', '50', '--json']),
    turnwise(['calc', 'dead-groups', '--p', '0.05', '--G', '8', '--batch', '64', '--json']),
    turnwise(['calc', 'tokens', '--per-trajectory', '131000', '--batch', '64', '--steps', '1000', '--json']),
    turnwise(['calc', 'dead-groups', '--p', '1.5', '--G', '8', '--json']),
    // The --p refusal above through bin/; this file's other refusals in the shared worker.
    inProcess(['calc', 'dead-groups', '--p', '0.5', '--G', '0', '--json']),
    turnwise([
      'calc',
      'compound',
      '--q',
      '0.98',
      '--n',
      '50',
      '--simulate',
      '20000',
      '--seed',
      '3',
      '--json',
    ]),
  ]);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(Object.keys(JSON.parse(c.stdout)), ['value']);
  assert.equal(JSON.parse(c.stdout).value.toFixed(4), '0.0769');
  const dg = JSON.parse(d.stdout);
  assert.deepEqual(Object.keys(dg), [
    'allFail',
    'allSucceed',
    'poisson',
    'expectedSuccesses',
    'expectedLiveGroups',
    'liveShare',
  ]);
  assert.equal(dg.allFail.toFixed(4), '0.6634');
  assert.equal(dg.poisson.toFixed(4), '0.6703');
  assert.equal(dg.expectedSuccesses, 3.2);
  assert.equal(dg.expectedLiveGroups.toFixed(2), '2.69');
  assert.equal(dg.liveShare.toFixed(3), '0.337');
  const tk = JSON.parse(t.stdout);
  assert.equal(tk.totalTokens, 8384000000);
  assert.equal(tk.vsBaseline, 262);
  refused(bad, /^turnwise: --p: got "1\.5"; expected a probability in \[0, 1\]$/m);
  refused(badG, /^turnwise: --G: got "0"/);
  const s = JSON.parse(sim.stdout);
  assert.ok(Math.abs(s.simulated.value - s.value) < 4 * s.simulated.stdErr, sim.stdout);
  assert.equal(s.simulated.samples, 20000);
});

// Three tasks × 4 samples, written in a shuffled order: rows must follow the file, groups the task.
const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const policy = makePolicy('oracle:eps=0.3', makeEnv(makeTasks(config, 1, 0)[0]).spec);
const batch = rollout({
  makeEnv,
  tasks: makeTasks(config, 3, 8),
  samples: 4,
  budget: 40,
  runSeed: 8,
  policy,
}) as Trajectory[];
const order = [7, 0, 11, 3, 5, 9, 1, 4, 10, 2, 8, 6];
const file = join(dir, 'mixed.jsonl');
writeFileSync(file, order.map((i) => `${JSON.stringify(batch[i])}\n`).join(''));

test('credit --in --method grpo|gigpo --std false|gae --json: one row per trajectory, in file order', async () => {
  const [g, gi, gz, ge] = await Promise.all([
    turnwise(['credit', '--in', file, '--method', 'grpo', '--json']),
    turnwise(['credit', '--in', file, '--method', 'gigpo', '--std', 'false', '--json']),
    turnwise([
      'credit',
      '--in',
      file,
      '--method',
      'gae',
      '--values',
      'zero',
      '--gamma',
      '0.9',
      '--lambda',
      '1',
      '--json',
    ]),
    turnwise(['credit', '--in', file, '--method', 'gae', '--json']),
  ]);
  const trajectories = readTrajectories(file);
  const grpoOut = JSON.parse(g.stdout);
  assert.deepEqual(Object.keys(grpoOut), ['method', 'advantages']);
  assert.equal(grpoOut.method, 'grpo');
  assert.equal(grpoOut.advantages.length, 12);
  grpoOut.advantages.forEach((row: number[], i: number) => {
    assert.equal(row.length, trajectories[i].turns.length);
  });
  assert.deepEqual(grpoOut.advantages, creditBatch(trajectories, 'grpo', {}));
  // Rows are the file's order: the first line is batch[7].
  assert.deepEqual(grpoOut.advantages[0], creditBatch(batch, 'grpo', {})[7]);
  // Every group of this batch has outcome contrast, so GRPO is not trivially 0.
  assert.ok(grpoOut.advantages.every((row: number[]) => row.every((a) => a !== 0)));
  assert.deepEqual(JSON.parse(gi.stdout).advantages, creditBatch(trajectories, 'gigpo', { std: false }));
  // V ≡ 0, λ = 1: GAE is the discounted return.
  const zero = JSON.parse(gz.stdout).advantages as number[][];
  const ret = discounted(trajectories, { gamma: 0.9 });
  zero.forEach((row, i) => {
    row.forEach((a, t) => {
      assert.ok(Math.abs(a - ret[i][t]) < 1e-12);
    });
  });
  assert.equal(ge.code, 0, ge.stderr);
  assert.notDeepEqual(JSON.parse(ge.stdout).advantages, zero, 'the default value source is exact, not zero');
});

test('credit: bad input is one line and exit code 2', async () => {
  const malformed = join(dir, 'bad.jsonl');
  writeFileSync(malformed, `${JSON.stringify(batch[0])}\n{"id": 3}\n`);
  const [unknown, notTaken, badFile, missing, badSpec] = await Promise.all([
    inProcess(['credit', '--in', file, '--method', 'ppo', '--json']),
    inProcess(['credit', '--in', file, '--method', 'grpo', '--omega', '2', '--json']),
    inProcess(['credit', '--in', malformed, '--method', 'grpo', '--json']),
    inProcess(['credit', '--method', 'grpo', '--json']),
    inProcess(['credit', 'fidelity', '--policy', 'oracle', '--methods', 'exact,gae:lambda=2', '--json']),
  ]);
  refused(unknown, /^turnwise: --method: got "ppo"; expected one of: outcome, discounted, gae, grpo/);
  refused(notTaken, /^turnwise: --omega: got "2"; not a parameter of grpo$/m);
  refused(badFile, /bad\.jsonl:2\.id: got 3; expected string/);
  refused(missing, /^turnwise: --in: missing/);
  refused(badSpec, /--methods gae\.lambda: got "2"; expected a number in \[0, 1\]/);
});

test('credit fidelity --json: the contract shape; exact scores 1; same seed, same bytes', async () => {
  const args = [
    'credit',
    'fidelity',
    '--env',
    'frozenlake',
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    'oracle:eps=0.3',
    '--budget',
    '30',
    '--groups',
    '64',
    '--group-size',
    '8',
    '--methods',
    'exact,outcome,grpo,gigpo,gae',
    '--seed',
    '2',
    '--json',
  ];
  const [a, b, text] = await Promise.all([turnwise(args), turnwise(args), turnwise(args.slice(0, -1))]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, b.stdout);
  const r = JSON.parse(a.stdout);
  assert.deepEqual(Object.keys(r.methods), ['exact', 'outcome', 'grpo', 'gigpo', 'gae']);
  assert.deepEqual(r.methods.exact, { pearson: 1, spearman: 1, signAgreement: 1 });
  for (const m of Object.values(r.methods) as Record<string, number>[]) {
    assert.deepEqual(Object.keys(m), ['pearson', 'spearman', 'signAgreement']);
    assert.ok(m.pearson >= -1 && m.pearson <= 1);
  }
  assert.match(text.stdout, /^exact\s+1\.000\s+1\.000\s+1\.000$/m);
});
