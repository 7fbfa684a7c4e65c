// Parameters declared once, through the real CLI: every declared flag is in --help with its field's
// description; --set reaches any field with the field's own validation; flags, --set and the config
// file agree, with precedence file < flags < --set.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { TRAIN_FLAGS } from '../../src/cli/commands/train.ts';
import { applyParamFlags, applySets, paramFlags } from '../../src/cli/params.ts';
import { InputError } from '../../src/core/errors.ts';
import { parseValue } from '../../src/core/params.ts';
import { StudyConfigSchema } from '../../src/studies/budget/config.ts';
import { TrainConfigSchema } from '../../src/train/config.ts';
import { firstSpawned, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-params-'));
const squash = (s: string) => s.replace(/\s+/g, ' ');

// The flags `turnwise train` had before they were derived; each must still exist.
const LEGACY = [
  '--config',
  '--resume',
  '--env',
  '--policy',
  '--algo',
  '--iters',
  '--groups',
  '--group-size',
  '--budget',
  '--budget-mix',
  '--reveal-budget',
  '--credit',
  '--gamma',
  '--lambda',
  '--lr',
  '--epochs',
  '--minibatches',
  '--clip-low',
  '--clip-high',
  '--kl',
  '--entropy',
  '--aggregation',
  '--dynamic-sampling',
  '--guidance',
  '--expert',
  '--max-prefix',
  '--cross-policy',
  '--train-seeds',
  '--test-seeds',
  '--eval-episodes',
  '--eval-budget',
  '--es-pairs',
  '--es-sigma',
  '--es-lr',
  '--workers',
  '--checkpoint-every',
  '--store-trajectories',
  '--seed',
  '--out',
  '--json',
  '--map',
  '--slippery',
  '--success-rate',
  '--fog',
  '--random',
  '--size',
  '--p',
];

test('train --help: every declared flag, with its description and default; the legacy flags all remain', async () => {
  const r = await turnwise(['train', '--help']);
  assert.equal(r.code, 0, r.stderr);
  const help = squash(r.stdout);
  const flags = TRAIN_FLAGS;
  assert.equal(flags.length, 40);
  for (const f of flags) {
    // The help line is the declaration's text, wrapped by commander.
    const text = squash(f.option.description);
    assert.ok(help.includes(`${f.option.flags} ${text}`), `${f.name}: ${text}`);
  }
  assert.match(help, /--clip-high <ε> ε_high of the ratio clip \(DAPO clip-higher\) \(default 0\.28\)/);
  assert.match(
    help,
    /--lr <lr> Adam's step size \(default by policy kind: tabular 0\.1, neural 0\.003, transformer 0\.0003\)/,
  );
  assert.match(
    help,
    /--gamma <γ> discount γ of the returns \(default by method: discounted 0\.99, gae 0\.99, gigpo 0\.95/,
  );
  assert.match(help, /--train-seeds <A:B> .* \(default 0:1000000\)/);
  assert.match(help, /--set <path=value>/);
  assert.match(help, /Precedence: the --config file < flags < --set\./);
  const given = new Set(help.match(/--[a-z-]+/g));
  assert.deepEqual(
    LEGACY.filter((f) => !given.has(f)),
    [],
  );
});

test('study budget --help: the declared --seed, and --set', async () => {
  const r = await turnwise(['study', 'budget', '--help']);
  const help = squash(r.stdout);
  const [seed] = paramFlags(StudyConfigSchema);
  assert.equal(seed.name, '--seed');
  assert.ok(help.includes(`--seed <n> ${StudyConfigSchema.shape.seed.description}`));
  assert.match(help, /seed of everything random in the study: BC init .* \(default 0\)/);
  assert.match(help, /Precedence: the profile < flags < --set\./);
});

/** A one-iteration run; returns the resolved config it saved. */
async function configOf(name: string, args: string[]): Promise<Record<string, unknown>> {
  const out = join(dir, name);
  const small = [
    '--map',
    '4x4',
    '--iters',
    '1',
    '--groups',
    '1',
    '--group-size',
    '2',
    '--eval-episodes',
    '1',
  ];
  const r = await turnwise(['train', ...small, ...args, '--out', out, '--json']);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
}

test('--set changes exactly its field; flags and --set give the same config; file < flags < --set', async () => {
  const file = join(dir, 'run.json');
  writeFileSync(file, JSON.stringify({ ppo: { clipHigh: 0.5, klCoef: 0.01 }, optim: { weightDecay: 0.25 } }));
  const [base, set, flag, mixFlag, mixSet, seedsFlag, seedsSet, fromFile, fileAndFlag, all, several] =
    await Promise.all([
      configOf('base', []),
      configOf('set', ['--set', 'ppo.clipHigh=0.3']),
      configOf('flag', ['--clip-high', '0.3']),
      configOf('mix-flag', ['--budget-mix', '10,20,50']),
      configOf('mix-set', ['--set', 'budget={"kind":"mix","budgets":[10,20,50]}']),
      configOf('seeds-flag', ['--train-seeds', '5:90']),
      configOf('seeds-set', ['--set', 'trainSeeds=[5,90]']),
      configOf('file', ['--config', file]),
      configOf('file-flag', ['--config', file, '--clip-high', '0.3']),
      configOf('all', ['--config', file, '--clip-high', '0.3', '--set', 'ppo.clipHigh=0.4']),
      configOf('several', [
        '--set',
        'credit.std=false',
        '--set',
        'guidance.mode=gaussian',
        '--set',
        'guidance.expert="oracle:eps=0"',
        '--set',
        'policy={"kind":"mlp","hidden":[8]}',
      ]),
    ]);
  const ppo = base.ppo as Record<string, unknown>;
  assert.equal(ppo.clipHigh, 0.28);
  assert.deepEqual(set, { ...base, ppo: { ...ppo, clipHigh: 0.3 } });
  assert.deepEqual(flag, set);
  assert.deepEqual(mixSet, mixFlag);
  assert.deepEqual(mixFlag.budget, { kind: 'mix', budgets: [10, 20, 50] });
  assert.deepEqual(seedsSet, seedsFlag);
  assert.deepEqual(seedsFlag.trainSeeds, [5, 90]);
  // The file sets three fields; a flag overrides one of them; --set overrides the flag.
  assert.deepEqual(fromFile.ppo, { ...ppo, clipHigh: 0.5, klCoef: 0.01 });
  assert.deepEqual((fromFile.optim as Record<string, unknown>).weightDecay, 0.25);
  assert.deepEqual(fileAndFlag, { ...fromFile, ppo: { ...ppo, clipHigh: 0.3, klCoef: 0.01 } });
  assert.deepEqual(all, { ...fromFile, ppo: { ...ppo, clipHigh: 0.4, klCoef: 0.01 } });
  // JSON-ish values: a boolean, a JSON string literal, an object.
  assert.deepEqual(several.credit, { std: false });
  assert.equal((several.guidance as Record<string, unknown>).expert, 'oracle:eps=0');
  assert.deepEqual(several.policy, { kind: 'mlp', hidden: [8], activation: 'relu', budgetAware: false });
  // An MLP's policy-kind defaults follow from the policy set by --set.
  assert.equal((several.optim as Record<string, unknown>).lr, 0.003);
});

test('bad --set and bad flags: one line naming the field and what is allowed, exit code 2', async () => {
  const cases: [string[], string][] = [
    [
      ['train', '--set', 'ppo.clipHgh=0.3'],
      'turnwise: --set: no field "ppo.clipHgh"; ppo has epochs, minibatches, clipLow, clipHigh, klCoef, dualClip, entCoef, aggregation, aggregationConstant',
    ],
    [['train', '--set', 'nope=1'], 'turnwise: --set: no field "nope"; the config has env, trainSeeds,'],
    [
      ['train', '--set', 'ppo.clipHigh=abc'],
      'turnwise: --set ppo.clipHigh: got "abc"; expected a number ≥ 0',
    ],
    [
      ['train', '--set', 'ppo.clipLow=2'],
      'turnwise: --set ppo.clipLow: got "2"; expected a number in [0, 1]',
    ],
    [
      ['train', '--set', 'iters=0.5'],
      'turnwise: --set iters: got "0.5"; expected an integer from 1 to 10000000',
    ],
    [
      ['train', '--set', 'algo=sarsa'],
      'turnwise: --set algo: got "sarsa"; expected one of: grpo, ppo, es, rtpo',
    ],
    [
      ['train', '--algo', 'rtpo', '--credit', 'grpo'],
      'turnwise: config.credit.method: got "grpo"; algo rtpo computes its own credit',
    ],
    [['train', '--set', 'credit.cbar=0'], 'turnwise: --set credit.cbar: got "0"; expected a number > 0'],
    [['train', '--set', 'credit.std=yes'], 'turnwise: --set credit.std: got "yes"; expected true or false'],
    [['train', '--set', 'iters'], 'turnwise: --set: got "iters"; expected path.to.field=value'],
    [['train', '--clip-high', 'abc'], 'turnwise: --clip-high: got "abc"; expected a number ≥ 0'],
    [['train', '--aggregation', 'sum'], 'turnwise: --aggregation: got "sum"; expected one of: turn-mean,'],
    [
      ['train', '--budget', '5', '--budget-mix', '5,10'],
      'turnwise: --budget-mix: got "5,10"; give --budget or --budget-mix, not both',
    ],
    [
      ['train', '--gamma', '0.9'],
      'turnwise: config.credit.gamma: got 0.9; grpo does not read gamma; it takes eps, std',
    ],
    [
      ['study', 'budget', '--set', 'rl.itrs=4'],
      'turnwise: --set: no field "rl.itrs"; rl has budget, iters, groupSize, groupsPerIter, gigpo',
    ],
    [
      ['study', 'budget', '--set', 'rl.iters=x'],
      'turnwise: --set rl.iters: got "x"; expected an integer ≥ 1',
    ],
    [
      ['study', 'budget', '--profile', 'quick', '--set', 'eval.samples=4'],
      'turnwise: config.eval.diagnosticSamples: got 8; must be ≤ eval.samples (4)',
    ],
  ];
  const results = await Promise.all(cases.map(([args], i) => firstSpawned(i, args)));
  results.forEach((r, i) => {
    const [args, start] = cases[i];
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.ok(
      r.stderr.startsWith(start),
      `${args.join(' ')}:\n  ${r.stderr}  expected to start with\n  ${start}`,
    );
  });
});

test('parseValue: the field type decides how the text is read', () => {
  const { ppo, guidance, trainSeeds, storeTrajectories } = TrainConfigSchema.shape;
  assert.equal(parseValue(ppo.unwrap().shape.clipHigh, '0.3'), 0.3);
  assert.equal(parseValue(ppo.unwrap().shape.clipHigh, 'x'), 'x');
  assert.equal(parseValue(guidance.unwrap().shape.expert, '12'), '12');
  assert.equal(parseValue(guidance.unwrap().shape.expert, '"a b"'), 'a b');
  assert.deepEqual(parseValue(trainSeeds, '[0, 5]'), [0, 5]);
  assert.equal(parseValue(storeTrajectories, 'true'), true);
  assert.equal(parseValue(storeTrajectories, '1'), '1');
  // An integer field reads decimal digits only: other notations stay text, for the schema to refuse.
  const { iters } = TrainConfigSchema.shape;
  assert.equal(parseValue(iters, '1000'), 1000);
  assert.equal(parseValue(iters, '-3'), -3);
  for (const text of ['1e3', '10.0', '0x10', '+5', '']) assert.equal(parseValue(iters, text), text, text);
  assert.equal(parseValue(ppo.unwrap().shape.clipHigh, '3e-1'), 0.3);
  assert.deepEqual(parseValue(undefined, '{"map":"8x8"}'), { map: '8x8' });
});

test('applyParamFlags and applySets write at the declared paths; a flag nobody declares is a bug', () => {
  const flags = paramFlags(StudyConfigSchema);
  const cmd = new Command().exitOverride();
  for (const f of flags) cmd.addOption(f.option);
  cmd.parse(['--seed', '7'], { from: 'user' });
  const raw: Record<string, unknown> = {};
  applyParamFlags(flags, cmd.opts(), raw);
  applySets(StudyConfigSchema, raw, ['eval.T=[10,20]', 'rl.gigpo=false', 'base.expert=oracle:eps=0.1']);
  assert.deepEqual(raw, {
    seed: 7,
    eval: { T: [10, 20] },
    rl: { gigpo: false },
    base: { expert: 'oracle:eps=0.1' },
  });
  assert.throws(
    () => paramFlags(StudyConfigSchema, { '--nope': { parse: String } }),
    /no field declares --nope/,
  );
  assert.throws(() => applySets(StudyConfigSchema, raw, ['seed.x=1']), InputError);
});
