// `turnwise train --policy RUN` of a saved transformer through the real CLI: what the MLP path has works
// for it — a kill -9 mid-run resumes to exactly the uninterrupted run, and the KL reference, a stale
// policy (cross-policy sampling), dynamic sampling, BudgetMix, PPO's critic, GiGPO and Dr. GRPO's
// aggregation each run and are recorded in the run's config.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { turnwise } from './run.ts';
import { assertSameRun, killAfter } from './train-run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-train-lm-'));
const tok = join(dir, 'tok.json');
const base = join(dir, 'base');

// A base that writes valid actions often enough for the groups to differ: cloned on one map.
const made = await turnwise([
  'tokenizer',
  'train',
  '--env',
  'frozenlake',
  '--map',
  '4x4',
  '--mode',
  'text',
  '--vocab',
  '400',
  '--episodes',
  '20',
  '--out',
  tok,
]);
assert.equal(made.code, 0, made.stderr);
const cloned = await turnwise([
  'bc',
  '--map',
  '4x4',
  '--expert',
  'oracle',
  '--policy',
  `transformer:layers=1,d=16,heads=2,ctx=256,mode=text,tokenizer=${tok}`,
  '--train-seeds',
  '0:1',
  '--test-seeds',
  '5:6',
  '--budget',
  '8',
  '--epochs',
  '4',
  '--lr',
  '3e-3',
  '--eval-samples',
  '1',
  '--out',
  base,
]);
assert.equal(cloned.code, 0, cloned.stderr);

const ARGS = [
  'train',
  '--map',
  '4x4',
  '--policy',
  base,
  '--groups',
  '2',
  '--group-size',
  '4',
  '--budget',
  '8',
];

test('a transformer run killed with SIGKILL resumes to the same rows, metrics and policy', async () => {
  const run = [...ARGS, '--iters', '8', '--checkpoint-every', '1', '--eval-episodes', '8'];
  const whole = join(dir, 'whole');
  const killed = join(dir, 'killed');
  const ref = await turnwise([...run, '--out', whole, '--json']);
  assert.equal(ref.code, 0, ref.stderr);
  const partial = await killAfter(run, killed, 3);
  assert.ok(partial >= 3 && partial < 8, `killed after ${partial} iterations`);
  const res = await turnwise(['train', '--resume', killed, '--json']);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout).final, JSON.parse(ref.stdout).final);
  assertSameRun(killed, whole, 8 * 8);
});

test('KL reference, cross-policy, dynamic sampling, BudgetMix, PPO, GiGPO, Dr. GRPO: each runs on a transformer', async () => {
  // The fields of config.json the cases read.
  interface Saved {
    algo: string;
    ppo: { klCoef: number; aggregation: string };
    crossPolicy: { q: number };
    dynamicSampling: { enabled: boolean };
    budget: { kind: string };
    credit: { method?: string };
  }
  const cases: [string[], (c: Saved, last: Record<string, number>) => void][] = [
    [['--kl', '0.1'], (c, m) => assert.ok(c.ppo.klCoef === 0.1 && Number.isFinite(m['train/kl']))],
    [['--cross-policy', '0.5'], (c) => assert.equal(c.crossPolicy.q, 0.5)],
    [['--dynamic-sampling'], (c) => assert.equal(c.dynamicSampling.enabled, true)],
    [['--budget-mix', '4,8'], (c, m) => assert.ok(c.budget.kind === 'mix' && m['rollout/budget'] <= 8)],
    [['--algo', 'ppo'], (c) => assert.equal(c.algo, 'ppo')],
    [['--credit', 'gigpo'], (c) => assert.equal(c.credit.method, 'gigpo')],
    [['--aggregation', 'constant-sum'], (c) => assert.equal(c.ppo.aggregation, 'constant-sum')],
  ];
  for (const [flags, check] of cases) {
    const out = join(dir, `opt-${flags.join('')}`);
    const args = ARGS.filter(
      (x, i) => !(flags[0] === '--budget-mix' && (x === '--budget' || ARGS[i - 1] === '--budget')),
    );
    const r = await turnwise([
      ...args,
      ...flags,
      '--iters',
      '2',
      '--eval-episodes',
      '4',
      '--out',
      out,
      '--json',
    ]);
    assert.equal(r.code, 0, `${flags.join(' ')}: ${r.stderr}`);
    const { last } = JSON.parse(r.stdout);
    assert.ok(Number.isFinite(last['train/loss']), `${flags.join(' ')}: loss ${last['train/loss']}`);
    assert.ok(last['train/turns'] > 0, `${flags.join(' ')}: token units ${last['train/turns']}`);
    check(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')), last);
  }
});
