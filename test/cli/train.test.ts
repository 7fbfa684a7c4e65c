// turnwise train through the real CLI: a run killed with SIGKILL resumes to exactly the uninterrupted run.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configFromFlags } from '../../src/cli/commands/train.ts';
import { InputError } from '../../src/core/errors.ts';
import { envConfig, makeEnv } from '../../src/envs/index.ts';
import { encodeCheckpoint } from '../../src/nn/checkpoint.ts';
import { decodeSafetensors } from '../../src/nn/safetensors.ts';
import type { NeuralPolicy } from '../../src/policies/neural.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { inProcess, turnwise } from './run.ts';
import { assertKilledResumes, lines, storeRows } from './train-run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-train-'));
const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const ARGS = [
  'train',
  '--map',
  '4x4',
  '--slippery',
  '--policy',
  'tabular',
  '--iters',
  '120',
  '--groups',
  '8',
  '--seed',
  '4',
  '--checkpoint-every',
  '10',
  '--eval-episodes',
  '300',
];

const rows = storeRows;

test('kill -9 mid-run, --resume: the same rows, metrics and policy as an uninterrupted run', async () => {
  // Killed once it is past a few checkpoints.
  const { report, whole } = await assertKilledResumes(ARGS, dir, 120, 35, 120 * 64);
  // The saved policy is usable anywhere a policy spec is.
  const r = await turnwise([
    'rollout',
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    whole,
    '--episodes',
    '200',
    '--json',
  ]);
  assert.equal(JSON.parse(r.stdout).exact.toFixed(6), report.final.exact.toFixed(6));
});

test('--resume of a live run, or a second writer, is refused at once; the live run is unharmed', async () => {
  const whole = join(dir, 'whole'); // the undisturbed run of the first test
  const live = join(dir, 'live');
  const child = spawn(process.execPath, [BIN, ...ARGS, '--out', live], { stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  // Ready when it has recorded a few iterations (it holds the lock from before its first write).
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      if (lines(join(live, 'metrics.jsonl')) >= 3) {
        clearInterval(poll);
        resolve();
      }
    }, 5);
  });
  // Stopped (not killed) while the others try: it is alive, holds the lock, and is mid-run.
  child.kill('SIGSTOP');
  // Refused in the shared worker, as a process would be: the lock names the live process.
  const [resume, again] = await Promise.all([
    inProcess(['train', '--resume', live]),
    inProcess([...ARGS, '--out', live]),
  ]);
  child.kill('SIGCONT');
  assert.equal(await exited, 0);
  assert.equal(resume.code, 2, resume.stderr);
  assert.match(
    resume.stderr,
    new RegExp(`^turnwise: --resume: got ".*live"; is in use by process ${child.pid} on `),
  );
  assert.equal(resume.stderr.trim().split('\n').length, 1);
  assert.equal(again.code, 2, again.stderr);
  assert.match(again.stderr, /--out: got ".*live"; (is in use by process|already holds a run)/);
  assert.equal(
    readFileSync(join(live, 'metrics.jsonl'), 'utf8'),
    readFileSync(join(whole, 'metrics.jsonl'), 'utf8'),
  );
  const [a, b] = [rows(whole), rows(live)];
  assert.equal(b.t, a.t);
  assert.equal(b.m, a.m);
  assert.equal(existsSync(join(live, 'lock')), false);
});

test('a damaged run is refused with the file and the reason, before anything is written', async () => {
  const whole = join(dir, 'whole');
  const copy = (name: string) => {
    const d = join(dir, name);
    cpSync(whole, d, { recursive: true });
    return d;
  };
  const noCheckpoint = copy('no-checkpoint');
  rmSync(join(noCheckpoint, 'checkpoint.safetensors'));
  const noStore = copy('no-store');
  for (const f of ['run.sqlite', 'run.sqlite-wal', 'run.sqlite-shm'])
    rmSync(join(noStore, f), { force: true });
  const badStore = copy('bad-store');
  writeFileSync(join(badStore, 'run.sqlite'), 'this is not a database, it is a sentence');
  for (const f of ['run.sqlite-wal', 'run.sqlite-shm']) rmSync(join(badStore, f), { force: true });
  const nan = copy('nan');
  // Every float32 of the policy tensor NaN, as a diverged run would save it: written with a valid
  // checksum (a damaged file is refused by its checksum before its values are looked at).
  const ck = decodeSafetensors(readFileSync(join(nan, 'checkpoint.safetensors')));
  ck.tensors.get('policy.logits')!.data.fill(Number.NaN);
  writeFileSync(join(nan, 'checkpoint.safetensors'), encodeCheckpoint(ck.tensors, ck.metadata));
  writeFileSync(join(nan, 'policy.safetensors'), readFileSync(join(nan, 'checkpoint.safetensors')));
  const cases: [string[], RegExp, string][] = [
    [
      ['train', '--resume', noCheckpoint],
      /checkpoint\.safetensors: is missing though iteration 120 was recorded/,
      noCheckpoint,
    ],
    [['train', '--resume', noStore], /run\.sqlite: is missing: the run cannot resume/, noStore],
    [
      ['train', '--resume', badStore],
      /--resume: got ".*run\.sqlite"; cannot open as a SQLite run store/,
      badStore,
    ],
    [
      ['train', '--resume', nan],
      /checkpoint\.safetensors: tensor policy\.logits holds a non-finite value \(NaN\) at index 0/,
      nan,
    ],
    [
      ['rollout', '--map', '4x4', '--slippery', '--policy', nan, '--episodes', '5'],
      /tensor (policy\.)?logits holds a non-finite value/,
      nan,
    ],
  ];
  for (const [args, re, run] of cases) {
    const before = readFileSync(join(run, 'metrics.jsonl'), 'utf8');
    const r = await inProcess(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(readFileSync(join(run, 'metrics.jsonl'), 'utf8'), before, 'metrics.jsonl untouched');
    assert.equal(existsSync(join(run, 'lock')), false);
  }
});

test('bad training input: one line, exit code 2', async () => {
  const cases: [string[], RegExp][] = [
    [['train', '--algo', 'sarsa'], /--algo: got "sarsa"; expected one of: grpo, ppo, es/],
    [['train', '--budget-mix', '10,x'], /--budget-mix: got "10,x"/],
    [
      ['train', '--random', '--train-seeds', '0:100', '--test-seeds', '50:60'],
      /testSeeds: .*must not overlap/,
    ],
    [['train', '--policy', 'nope'], /--policy: got "nope"/],
    [['train', '--resume', join(dir, 'nothing-here')], /--resume: .*holds no config\.json/],
    [
      ['train', '--resume', join(dir, 'whole'), '--iters', '5'],
      /continues a run with its own config; drop --iters/,
    ],
    [['train', '--out', join(dir, 'whole')], /--out: .*already holds a run/],
  ];
  // In the shared worker: the deleted-checkpoint test below sees a real process refuse in one line.
  const results = await Promise.all(cases.map(([args]) => inProcess(args)));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, `${cases[i][0].join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, cases[i][1]);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  });
});

test('train --policy reads an mlp: spec as every other command does: the same options, the same refusals', () => {
  const policyOf = (spec: string) => configFromFlags({ policy: spec }).policy;
  const net = { kind: 'mlp', hidden: [64, 64], activation: 'relu', budgetAware: false };
  assert.deepEqual(policyOf('mlp'), net);
  assert.deepEqual(policyOf('mlp:hidden=32x16,activation=tanh'), {
    ...net,
    hidden: [32, 16],
    activation: 'tanh',
  });
  assert.deepEqual(policyOf('mlp:activation=gelu,budgetAware=1'), {
    ...net,
    activation: 'gelu',
    budgetAware: true,
  });
  assert.deepEqual(policyOf('mlp:budgetAware=0'), net);
  // The network a command builds from the same spec has the same shape.
  const env = makeEnv({ ...envConfig('frozenlake', { random: true, size: 4 }), seed: 1 });
  const built = makePolicy('mlp:hidden=32x16,activation=tanh,budgetAware=1', env.spec) as NeuralPolicy;
  assert.deepEqual(
    [built.config.hidden, built.config.activation, built.config.budgetAware],
    [[32, 16], 'tanh', true],
  );
  // Refused as makePolicy refuses them, word for word (a flag that is not 1/0/true/false and a
  // parameter given twice were taken silently before).
  for (const bad of [
    'mlp:budgetAware=2',
    'mlp:hidden=8,hidden=16',
    'mlp:activation=sigmoid',
    'mlp:hidden=64xx',
    'mlp:hidden=0',
    'mlp:depth=3',
    'mlp:hidden',
  ]) {
    const refusal = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        assert.ok(e instanceof InputError, `${bad}: ${e}`);
        return e.message;
      }
      assert.fail(`${bad} was accepted`);
    };
    assert.equal(
      refusal(() => policyOf(bad)),
      refusal(() => makePolicy(bad, env.spec)),
      bad,
    );
  }
  // Only the seed differs: a trained network is initialised from the run's --seed.
  assert.throws(() => policyOf('mlp:seed=3'), /--policy: got "mlp:seed=3"; .*--seed/);
});

test('--resume of a run whose checkpoint was deleted is refused naming it (a run shorter than checkpointEvery too); --restart starts over', async () => {
  // 6 iterations, a checkpoint every 10: the only checkpoint is the one written after the last iteration.
  const short = [...ARGS.slice(0, ARGS.indexOf('--iters')), '--iters', '6', '--groups', '2', '--seed', '4'];
  const fresh = join(dir, 'short-fresh');
  const ref = await turnwise([...short, '--checkpoint-every', '10', '--eval-episodes', '50', '--out', fresh]);
  assert.equal(ref.code, 0, ref.stderr);
  const run = join(dir, 'short-deleted');
  cpSync(fresh, run, { recursive: true });
  rmSync(join(run, 'checkpoint.safetensors'));
  const before = readFileSync(join(run, 'metrics.jsonl'), 'utf8');
  const r = await turnwise(['train', '--resume', run]);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(
    r.stderr,
    /^turnwise: .*checkpoint\.safetensors: is missing though iteration 6 was recorded .*; start it over with --restart/,
  );
  assert.equal(readFileSync(join(run, 'metrics.jsonl'), 'utf8'), before, 'metrics.jsonl untouched');
  assert.equal(rows(run).m, rows(fresh).m);
  assert.equal(existsSync(join(run, 'lock')), false);
  // --restart reruns it from iteration 0: the same run as the fresh one.
  const restarted = await turnwise(['train', '--resume', run, '--restart']);
  assert.equal(restarted.code, 0, restarted.stderr);
  assert.equal(
    readFileSync(join(run, 'metrics.jsonl'), 'utf8'),
    readFileSync(join(fresh, 'metrics.jsonl'), 'utf8'),
  );
  assert.deepEqual(rows(run), rows(fresh));
  assert.deepEqual(
    readFileSync(join(run, 'policy.safetensors')),
    readFileSync(join(fresh, 'policy.safetensors')),
  );
});
