// A fuzz test of the CLI (issue 14 point 8): for every command, generated malformed input — bad
// numbers (negative, huge, NaN, fractions, words), unknown enum values, unknown and misspelled flags,
// missing values, stray arguments, malformed specs (policies, maps, seed ranges, layer sizes, lists),
// malformed JSONL/JSON files and configs, and bad paths. Each case must be refused like any bad input:
// exit 2, exactly one line on stderr that names the flag (or the file), no stack trace, nothing on
// stdout, and nothing written under the output path or the working directory.
//
// The cases run through the real main() of src/cli/main.ts, loaded as bin/turnwise.js loads it, in one
// long-lived worker process (test/cli/main-worker.js, through test/cli/run.ts's inProcess) — a process
// per case would cost seconds each — and a few of them also through bin/turnwise.js, to show the two
// print the same thing. fast-check with a fixed seed picks the cases, so a run is reproducible and a
// failure shrinks to a small one.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { inProcess, node, type Ran, strayOutput } from './run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
// FUZZ_SEED / FUZZ_RUNS explore further (e.g. FUZZ_RUNS=200); the suite's own run is fixed and small.
const SEED = Number(process.env.FUZZ_SEED ?? 14);
/** Generated cases per command (a few each, on top of one per fuzzed flag; the suite in seconds). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

// ── Values ────────────────────────────────────────────────────────────────────────────────────
/** A value for a flag: text, or a file (or directory) the runner creates for the case. */
type Value = string | { file: string; name: string } | { dir: Record<string, string> };

const pick = (...xs: string[]) => fc.constantFrom(...xs);
const WORDS = pick(
  '',
  ' ',
  'abc',
  'NaN',
  'nan',
  'Infinity',
  '-Infinity',
  'undefined',
  'null',
  '0x10',
  '1_000',
  '7 apples',
  '1/2',
  '1,5',
  '٣',
);

/** The arbitraries badInt made: which fuzzed flags are integer flags (for the notation test below). */
const INT_FLAGS = new WeakSet<fc.Arbitrary<Value>>();
/** Whole numbers in another notation than decimal digits: refused by every integer flag alike. */
const WHOLE_NOT_DECIMAL = ['1e3', '2E1', '10.0', '0x10', '+5', '1e+1'];

/** Anything that is not an integer in [min, max]. */
function badInt(min: number, max = Number.MAX_SAFE_INTEGER): fc.Arbitrary<Value> {
  const arb = badIntValues(min, max);
  INT_FLAGS.add(arb);
  return arb;
}

function badIntValues(min: number, max: number): fc.Arbitrary<Value> {
  const out: fc.Arbitrary<string>[] = [
    WORDS,
    pick('1.5', '99999999999999999999', '9007199254740993', '--', '1.0e-3', ...WHOLE_NOT_DECIMAL),
    fc
      .double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })
      .filter((x) => !Number.isInteger(x))
      .map(String),
  ];
  if (min > -1e9) out.push(fc.integer({ min: -1e9, max: min - 1 }).map(String));
  if (max < 1e9) out.push(fc.integer({ min: max + 1, max: 2e9 }).map(String));
  return fc.oneof(...out);
}

/** Anything that is not a finite number passing `ok`. */
function badNum(ok: (x: number) => boolean = Number.isFinite): fc.Arbitrary<Value> {
  return fc.oneof(
    WORDS.filter((s) => !(s.trim() !== '' && ok(Number(s)))),
    fc
      .double({ min: -1e9, max: 1e9, noNaN: true })
      .filter((x) => !ok(x))
      .map(String),
  );
}

const probability = badNum((x) => x >= 0 && x <= 1);
const positive = badNum((x) => x > 0 && Number.isFinite(x));

/** A word not among `allowed` (so an unknown enum value). */
function badEnum(allowed: readonly string[]): fc.Arbitrary<Value> {
  return fc
    .oneof(
      fc.stringMatching(/^[a-z][a-z0-9_-]{0,9}$/).filter((s) => !allowed.includes(s)),
      pick('', ' ', 'NONE', '1', '?'),
    )
    .filter((s) => !allowed.includes(s.trim().toLowerCase()));
}

/** Comma-separated integers ≥ min (increasing, when `increasing`): anything else. */
const badList = (min: number, increasing = true) =>
  fc.oneof(
    pick(
      '',
      ',',
      '1,,2',
      'a,b',
      '1.5',
      '1e2',
      String(min - 1),
      `${min},-1`,
      '5,5',
      '5,10,5',
      ...(increasing ? ['10,5'] : []),
    ),
    fc.integer({ min: -1000, max: min - 1 }).map(String),
  );

const badPolicy = pick(
  'nope',
  'oracle:eps=2',
  'oracle:eps=-0.1',
  'oracle:temp=-1',
  'oracle:bogus=1',
  'oracle:eps',
  'oracle:horizon=0',
  'oracle:horizon=1.5',
  ':',
  '',
  'random:',
  'oracle:eps=0.1,eps=0.2',
  './no-such-checkpoint.json',
);
const badMap = pick(
  '3x3',
  '4x4x',
  '0x0',
  '65x65',
  'SFFF,FHFH',
  'SFFF,FHFH,FFFH,HFFX',
  'FFFF,FFFF,FFFF,FFFG',
  'SFFF,FFFF,FFFF,FFFF',
  'SG,,',
  'S',
  '',
);
/** Not `rubric:FILE` of a readable JSON rubric (the working directory is the case's cwd; ../in is IN). */
const badReward = pick(
  '',
  ' ',
  'nope',
  'env',
  'rubric',
  'rubric:',
  'rubric:/dev/null/x',
  'rubric:../in',
  'rubric:../in/a-file',
  'rubric:../in/valid.jsonl',
  'rubric:x.yaml',
);
/** Malformed rubric files: not JSON, the wrong shape, an unknown criterion, bad weights, a bad pattern,
 * side effects on FrozenLake, a judge nobody serves, YAML. */
const badRubric = fc.oneof(
  fc
    .constantFrom(
      '{',
      '[]',
      '{"criteria":[]}',
      '{"criteria":[{"kind":"vibes"}]}',
      '{"criteria":[{"kind":"success","weight":-1}]}',
      '{"criteria":[{"kind":"success","weight":0}]}',
      '{"criteria":[{"kind":"success"},{"kind":"success"}]}',
      '{"criteria":[{"kind":"final-regex","pattern":"("}]}',
      '{"criteria":[{"kind":"side-effects"}]}',
      '{"criteria":[{"kind":"judge","judge":"openai:http://127.0.0.1:1/v1#m"}]}',
      '{"criteria":[{"kind":"judge","judge":"openai:nowhere#m"}]}',
      '{"criteria":[{"kind":"judge","judge":"openai:http://127.0.0.1:1/v1#m","prompt":"{{nope}}"}]}',
    )
    .map((file): Value => ({ name: 'rubric.json', file })),
  fc.constant<Value>({ name: 'rubric.yaml', file: 'criteria: []' }),
);
const badSeeds = pick('5:5', '5:3', 'a:b', '-1:3', '1:2:3', '0:99999999999', '3', '', ':', '0:1e3');

/** Malformed trajectory files: not JSON, the wrong shape, values outside the env's spaces. */
function badTrajectories(valid: () => string): fc.Arbitrary<Value> {
  const mutate = (f: (t: Record<string, unknown>) => void) => () => {
    const t = JSON.parse(valid());
    f(t);
    return JSON.stringify(t);
  };
  const turn0 = (t: Record<string, unknown>) => (t.turns as Record<string, unknown>[])[0];
  const lines: Record<string, () => string> = {
    // (An env turnwise does not know is not malformed: such files are read as they are.)
    'not json': () => 'not json',
    truncated: () => valid().slice(0, 40),
    array: () => '[]',
    'empty object': () => '{}',
    'action 99': mutate((t) => (turn0(t).action = 99)),
    'observation 1000': mutate((t) => (turn0(t).observation = 1000)),
    'reward text': mutate((t) => (turn0(t).reward = 'x')),
    'turns missing': mutate((t) => delete t.turns),
    'budget negative': mutate((t) => (t.budget = -3)),
  };
  return fc
    .tuple(fc.constantFrom(...Object.keys(lines)), fc.nat({ max: 2 }), fc.boolean())
    .map(([kind, before, crlf]) => {
      const good = Array.from({ length: before }, valid);
      return {
        name: `bad-${kind.replace(/ /g, '-')}.jsonl`,
        file: [...good, lines[kind]()].join(crlf ? '\r\n' : '\n'),
      };
    });
}

/** Malformed JSON documents (configs, summaries). */
const badJson = (extra: readonly string[]) =>
  fc
    .constantFrom('{', '[]', 'null', '"x"', '1', '', '{"a":', ...extra)
    .map((file): Value => ({ name: 'bad.json', file }));

/**
 * Paths where nothing can be written. OUT/IN are replaced by the case's directories. (A run
 * directory whose parents do not exist yet is made with them, as the default runs/… is: not bad.)
 */
const badOutDir = pick('/dev/null/x', 'IN/a-file/x', 'IN/a-file', '/proc/turnwise-fuzz');
const badOutFile = pick(
  '/dev/null/x',
  'OUT/missing/deeper/x.jsonl',
  'IN/a-file/x',
  'IN',
  '/proc/turnwise-fuzz',
);
const badInFile = fc.oneof(
  pick('IN/no-such-file.jsonl', '/dev/null/x', 'IN'),
  fc.constant<Value>({ dir: {} }),
);

// ── Commands ──────────────────────────────────────────────────────────────────────────────────
interface Spec {
  /** Command path, e.g. ['env', 'describe']. */
  path: string[];
  /** A valid invocation (positionals and options): each case breaks one part of it. */
  base: string[];
  /** Flags whose value is fuzzed, and what is malformed for each. */
  flags: Record<string, fc.Arbitrary<Value>>;
  /** The first positional argument, fuzzed (it replaces base[0]). */
  argument?: fc.Arbitrary<Value>;
}

const ENV_FLAGS: Record<string, fc.Arbitrary<Value>> = {
  '--map': badMap,
  '--success-rate': probability,
  '--size': badInt(2, 64),
  '--p': badNum((x) => x > 0 && x <= 1),
  '--level': badEnum(['1', '2', '3', 'mixed']),
  '--domain': badEnum(['shop', 'school', 'library', 'files', 'bank', 'mixed']),
  '--env-params': pick('', 'x', '[1]', '1', 'null', '{"nope":1}', '{"slippery":3}', '{"level":9}'),
};
const PASS_FLAGS: Record<string, fc.Arbitrary<Value>> = {
  ...ENV_FLAGS,
  '--env': badEnum(['frozenlake', 'sql', 'tools', 'say']),
  '--tasks': badInt(1),
  '--samples': badInt(1),
  '--K': badList(1),
  '--T': badList(1),
  '--mode': badEnum(['exact', 'sampled', 'both']),
  '--resamples': badInt(1),
  '--seed': badInt(0),
  '--concurrency': badInt(1),
};
/** Not a Redis address (or one with nothing listening: port 1 refuses at once). */
const badQueue = pick(
  '',
  'x',
  '127.0.0.1:6379',
  'http://127.0.0.1:6379',
  'redis://',
  'redis://127.0.0.1:99999',
  'redis://u:p@127.0.0.1:6379',
  'redis://127.0.0.1:6379/16',
  'redis://127.0.0.1:6379?db=1',
  'redis://127.0.0.1:1',
);

const PASS_BASE = ['--tasks', '1', '--samples', '2', '--K', '1,2', '--T', '5', '--resamples', '10'];

function specs(valid: () => string): Spec[] {
  const trajectories = badTrajectories(valid);
  const summary = badJson(['{}', '{"config":1}', '{"findings":[]}']);
  return [
    {
      path: ['env', 'describe'],
      base: ['frozenlake'],
      flags: { ...ENV_FLAGS, '--seed': badInt(0), '--task-seed': badInt(0) },
      argument: badEnum(['frozenlake', 'sql', 'tools', 'say']),
    },
    {
      path: ['env', 'export'],
      base: ['sql', '--out', 'OUT/db.sql'],
      flags: {
        '--seed': badInt(0),
        '--level': ENV_FLAGS['--level'],
        '--domain': ENV_FLAGS['--domain'],
        '--out': badOutFile,
      },
      argument: badEnum(['sql']),
    },
    {
      path: ['env', 'oracle'],
      base: ['frozenlake'],
      flags: { ...ENV_FLAGS, '--budget': badInt(1), '--seed': badInt(0) },
      argument: badEnum(['frozenlake']),
    },
    {
      path: ['rollout'],
      base: ['--policy', 'random', '--episodes', '1', '--out', 'OUT/t.jsonl'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--policy': badPolicy,
        '--episodes': badInt(1),
        '--budget': badInt(1),
        '--seed': badInt(0),
        '--concurrency': badInt(1),
        '--out': badOutFile,
        '--db': badOutFile,
        '--queue': badQueue,
      },
    },
    {
      path: ['summary'],
      base: ['--in', 'IN/valid.jsonl'],
      flags: { '--in': fc.oneof(trajectories, badInFile) },
    },
    {
      path: ['eval'],
      base: ['--policy', 'random', ...PASS_BASE],
      flags: { ...PASS_FLAGS, '--policy': badPolicy, '--cache': badOutFile, '--queue': badQueue },
    },
    {
      path: ['eval'],
      base: ['--in', 'IN/valid.jsonl', '--K', '1', '--T', '5', '--resamples', '10'],
      flags: { '--in': fc.oneof(trajectories, badInFile), '--K': badList(1), '--T': badList(1) },
    },
    {
      path: ['eval'],
      base: ['--policy', 'random', ...PASS_BASE, '--reward', 'rubric:../in/rubric.json'],
      flags: { '--reward': badReward, '--scores': badOutFile, '--judge-cache': badOutFile },
    },
    {
      path: ['judge', 'audit'],
      base: ['--in', 'IN/valid.jsonl', '--rubric', 'IN/rubric.json'],
      flags: {
        '--in': fc.oneof(trajectories, badInFile),
        '--rubric': fc.oneof(badRubric, badInFile),
        '--threshold': badNum((x) => x > 0 && x <= 1),
        '--cache': badOutFile,
      },
    },
    {
      path: ['compare'],
      base: [
        '--a',
        'random',
        '--b',
        'oracle',
        ...PASS_BASE,
        '--states',
        '2',
        '--actions',
        '2',
        '--continuations',
        '1',
      ],
      flags: {
        ...PASS_FLAGS,
        '--a': badPolicy,
        '--b': badPolicy,
        '--states': badInt(1),
        '--states-from': badEnum(['a', 'b', 'both']),
        '--actions': badInt(1),
        '--continuations': badInt(1),
        '--cache': badOutFile,
        '--queue': badQueue,
      },
    },
    {
      path: ['credit'],
      base: ['--in', 'IN/valid.jsonl', '--method', 'grpo'],
      flags: {
        '--in': fc.oneof(trajectories, badInFile),
        '--method': fc.oneof(
          badEnum([
            'outcome',
            'discounted',
            'gae',
            'grpo',
            'drgrpo',
            'rloo',
            'gigpo',
            'turn-level',
            'reverse-turn',
            'rtpo',
            'exact',
          ]),
          pick('grpo:bogus=1', 'grpo:std=maybe', 'gae:gamma=2', 'gae:lambda=-1', 'grpo:', 'grpo:eps='),
        ),
        '--gamma': probability,
        '--std': badEnum(['true', 'false']),
        '--eps': badNum((x) => x >= 0 && Number.isFinite(x)),
      },
    },
    {
      path: ['credit', 'fidelity'],
      base: ['--policy', 'random', '--groups', '1', '--group-size', '2', '--methods', 'exact'],
      flags: {
        ...ENV_FLAGS,
        '--policy': badPolicy,
        '--budget': badInt(1),
        '--groups': badInt(1),
        '--group-size': badInt(1),
        '--seed': badInt(0),
        '--methods': pick('', 'nope', 'exact,,grpo', 'gae:gamma=2', 'grpo:bogus=1'),
      },
    },
    {
      path: ['calc', 'compound'],
      base: ['--q', '0.9', '--n', '3'],
      flags: { '--q': probability, '--n': badInt(0), '--seed': badInt(0), '--simulate': badInt(1) },
    },
    {
      path: ['calc', 'dead-groups'],
      base: ['--p', '0.5', '--G', '4'],
      flags: {
        '--p': probability,
        '--G': badInt(1),
        '--batch': fc.oneof(badInt(1), pick('6', '3')),
        '--seed': badInt(0),
      },
    },
    {
      path: ['calc', 'shaping'],
      base: ['--map', '4x4', '--budget', '3', '--kinds', 'potential'],
      flags: {
        '--map': pick('', 'S', '5x5', 'SFFX,FFFG', 'SF,FFG'),
        '--size': badInt(2, 64),
        '--p': badNum((x) => x > 0 && x <= 1),
        '--seed': badInt(0),
        '--budget': badInt(1, 10000),
        '--kinds': pick('', 'nope', 'potential,,progress', 'potential,potential2'),
        '--coef': pick('', 'x', '1,,2', 'NaN', 'Infinity'),
      },
    },
    {
      path: ['calc', 'fog'],
      base: ['--size', '3', '--budget', '3'],
      flags: {
        '--size': fc.oneof(badInt(2, 64), pick('5', '8')),
        '--p': badNum((x) => x > 0 && x <= 1),
        '--fog': badInt(1, 64),
        '--budget': badInt(1, 100),
      },
    },
    {
      path: ['train-pair'],
      base: ['--iters', '1', '--groups', '1', '--group-size', '2', '--eval-maps', '1', '--hidden', '4'],
      flags: {
        '--env': badEnum(['frozenlake', 'search']),
        '--level': pick('1', 'mixed', '4'),
        '--planner': badEnum(['mlp', 'goal']),
        '--executor': badEnum(['mlp']),
        '--credit': badEnum(['shared', 'per-agent', 'counterfactual']),
        '--size': badInt(2, 8),
        '--p': badNum((x) => x > 0 && x <= 1),
        '--budget': badInt(2, 1000),
        '--sight': badInt(0, 8),
        '--iters': badInt(1, 100_000),
        '--groups': badInt(1, 100_000),
        '--group-size': badInt(1, 10_000),
        '--hidden': pick('', ',', '1,,2', 'a,b', '1.5', '1e2', '0', '4,-1', '5000'),
        '--lr': badNum((x) => x > 0 && x < 10),
        '--eval-maps': badInt(1, 1_000_000),
        '--seed': badInt(0),
        '--out': badOutDir,
      },
    },
    {
      path: ['calc', 'tokens'],
      base: ['--per-trajectory', '100', '--batch', '8', '--steps', '10'],
      flags: {
        '--per-trajectory': positive,
        '--batch': badInt(1),
        '--steps': badInt(1),
        '--baseline': positive,
      },
    },
    {
      path: ['bc'],
      base: [
        '--train-seeds',
        '0:2',
        '--test-seeds',
        '100:102',
        '--epochs',
        '1',
        '--hidden',
        '4',
        '--out',
        'OUT/bc',
      ],
      flags: {
        ...ENV_FLAGS,
        '--expert': badPolicy,
        '--train-seeds': badSeeds,
        '--test-seeds': badSeeds,
        '--budget': badInt(1),
        '--hidden': pick('0', 'x', '64x', '64x-1', '', '1.5', '4xx4', '-4'),
        '--activation': badEnum(['relu', 'tanh', 'gelu']),
        '--targets': badEnum(['probs', 'actions']),
        '--episodes-per-task': badInt(1),
        '--epochs': badInt(1),
        '--batch-size': badInt(1),
        '--lr': positive,
        '--weight-decay': badNum((x) => x >= 0 && Number.isFinite(x)),
        '--seed': badInt(0),
        '--out': badOutDir,
      },
    },
    {
      path: ['tokenizer', 'train'],
      base: ['--env', 'frozenlake', '--vocab', '300', '--episodes', '2', '--out', 'OUT/tok.json'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--vocab': badInt(262, 65536),
        '--episodes': badInt(1, 100_000),
        '--eps': probability,
        '--seed': badInt(0),
        '--budget': badInt(1, 1_000_000),
        '--out': badOutFile,
      },
    },
    {
      // The tokenizer is read after every other flag is checked: only its own cases reach it.
      path: ['tokenizer', 'stats'],
      base: ['--env', 'frozenlake', '--episodes', '2', '--tokenizer', 'IN/valid.jsonl'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--episodes': badInt(1, 100_000),
        '--eps': probability,
        '--seed': badInt(0),
        '--budget': badInt(1, 1_000_000),
        '--tokenizer': fc.oneof(badJson(['{"format":"turnwise-tokenizer"}', '{"merges":["a"]}']), badInFile),
      },
    },
    {
      path: ['train'],
      base: ['--out', 'OUT/run'],
      flags: {
        '--config': fc.oneof(
          badJson(['{"algo":"nope"}', '{"iters":-1}', '{"lr":"fast"}', '{"noSuchField":1}', '{"policy":{}}']),
          badInFile,
        ),
        '--resume': fc.oneof(badInFile, pick('OUT/none')),
        '--algo': badEnum(['grpo', 'ppo', 'es', 'rtpo']),
        '--iters': badInt(1),
        '--group-size': badInt(1),
        '--groups': badInt(1),
        '--epochs': badInt(1, 1000),
        '--minibatches': badInt(1),
        '--checkpoint-every': badInt(1),
        '--eval-episodes': badInt(1),
        '--eval-budget': badInt(1, 1_000_000),
        '--budget': badInt(1, 1_000_000),
        '--max-prefix': badInt(0, 1_000_000),
        '--es-pairs': badInt(1),
        '--workers': badInt(1, 256),
        '--lr': positive,
        '--clip-low': badNum((x) => x >= 0 && x < 1),
        '--seed': badInt(0),
        '--set': pick(
          '',
          'x',
          'nope=1',
          'iters=',
          'iters=abc',
          'lr=NaN',
          '=3',
          'iters=1e3',
          'groups=0x10',
          'ppo.epochs=2.0',
        ),
        '--train-seeds': badSeeds,
        '--out': badOutDir,
        '--queue': badQueue,
        '--info-gain': pick('', 'x', '0', '-0.1', '1.5', 'NaN', 'Infinity'),
        '--rehearsal': pick('', '1', 'ratio=0', 'ratio=17', 'ratio=1,prior=x', 'ratio=1,ratio=1', 'alpha=2'),
        '--shaping': pick(
          '',
          'bogus',
          'progress:abc',
          'progress:0',
          'novelty:11',
          'potential:',
          ':0.1',
          'progress:0.1:2',
          'step-penalty:-1',
          'potential:Infinity',
          'Progress',
        ),
        '--reward': pick('', 'judge.json', 'rubric:', 'rubric:OUT/none.json', 'Rubric:x.json'),
        '--judge-cache': pick('OUT/judge.sqlite'),
      },
    },
    {
      path: ['adapt'],
      base: ['--policy', 'random', '--episodes', '128', '--out', 'OUT/run'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--policy': badPolicy,
        '--episodes': badInt(128),
        '--at': badList(1, false),
        '--groups': badInt(1, 100_000),
        '--group-size': badInt(2, 100_000),
        '--budget': badInt(1, 1_000_000),
        '--lr': badNum((x) => x > 0 && x <= 1),
        '--ent-coef': badNum((x) => x >= 0 && x <= 1),
        '--eval-tasks': badInt(1, 1_000_000),
        '--seed': badInt(0),
        '--out': badOutDir,
      },
    },
    {
      path: ['bench', 'env'],
      base: ['frozenlake', '--steps', '10'],
      flags: { ...ENV_FLAGS, '--steps': badInt(1), '--seed': badInt(0) },
      argument: badEnum(['frozenlake', 'sql', 'tools', 'say']),
    },
    {
      path: ['bench', 'rollout'],
      base: ['frozenlake', '--steps', '10'],
      flags: {
        '--steps': badInt(1),
        '--policy': badPolicy,
        '--budget': badInt(1),
        '--batch': badInt(1),
        '--seed': badInt(0),
      },
      argument: badEnum(['frozenlake', 'sql', 'tools', 'say']),
    },
    {
      path: ['bench', 'queue'],
      base: ['--tasks', '1', '--samples', '1', '--overhead-episodes', '1'],
      flags: {
        '--tasks': badInt(1, 100_000),
        '--samples': badInt(1, 1000),
        '--budget': badInt(1, 1000),
        '--concurrency': badInt(1, 256),
        '--latency': pick('fast', '-5ms', '5 parsecs', '', 'NaNms'),
        '--overhead-episodes': badInt(1, 100_000),
        '--queue': badQueue,
      },
    },
    { path: ['bench', 'nn'], base: ['--trial-seconds', '0.01'], flags: { '--trial-seconds': positive } },
    { path: ['bench', 'cli'], base: ['--rounds', '1'], flags: { '--rounds': badInt(1, 1000) } },
    {
      path: ['demo'],
      base: ['--episodes', '2', '--T', '5'],
      flags: { '--episodes': badInt(1), '--T': badList(1, false), '--seed': badInt(0) },
    },
    {
      path: ['study', 'budget'],
      base: ['--out', 'OUT/study'],
      flags: {
        '--profile': badEnum(['default', 'quick', 'smoke', 'full', 'tiny']),
        '--seed': badInt(0),
        '--set': pick('', 'x', 'nope=1', 'seed=-1', 'eval.K=abc', '=3', 'seed=1e1'),
        '--out': badOutDir,
      },
    },
    {
      path: ['study', 'hacking'],
      base: ['--iters', '1', '--seeds', '1', '--groups', '1'],
      flags: {
        '--seeds': pick('', 'x', '1,1', '-1', '1.5'),
        '--iters': badInt(1, 10_000),
        '--groups': badInt(1, 4096),
        '--window': badInt(1, 1),
        '--every': badInt(1, 10_000),
      },
    },
    {
      path: ['study', 'shaping'],
      base: ['--seeds', '0', '--iters', '1', '--kinds', 'none'],
      flags: {
        '--map': pick('', 'S', '5x5', 'SFFX,FFFG', 'SF,FFG'),
        '--seeds': pick('', ',', '0,,1', '-1', '1.5', '0,0', 'a'),
        '--iters': badInt(1, 100_000),
        '--algo': badEnum(['grpo', 'ppo']),
        '--budget': badInt(1, 10_000),
        '--kinds': pick('', 'nope', 'none,,potential', 'none,none', 'potential2'),
        '--coef': badNum((x) => x > 0 && x <= 10),
      },
    },
    {
      path: ['study', 'verdicts'],
      base: ['--in', 'IN/summary.json'],
      flags: { '--in': fc.oneof(summary, badInFile) },
    },
    {
      path: ['report'],
      base: ['IN/run'],
      flags: { '--trajectory': pick('', 'nope'), '--out': badOutFile },
      argument: fc.oneof(
        badInFile,
        summary.map((s) => ({ dir: { 'summary.json': (s as { file: string }).file } })),
      ),
    },
    {
      path: ['schema'],
      base: ['trajectory'],
      flags: {},
      argument: badEnum(['trajectory', 'train-config', 'study-config', 'study-summary']),
    },
    {
      path: ['serve'],
      base: ['--policy', 'random', '--port', '0'],
      flags: {
        ...ENV_FLAGS,
        '--policy': badPolicy,
        '--port': badInt(0, 65535),
        '--faults': pick('nope', '429=2', '500=-0.1', 'hang', 'seed=x', '429=0.5,429=0.1', '=1'),
        '--latency': pick('fast', '-5ms', '5 parsecs', '', 'NaNms', '1e999ms'),
      },
    },
    {
      path: ['serve-env'],
      base: ['--env', 'frozenlake', '--port', '0'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--protocol': badEnum(['openenv']),
        '--port': badInt(0, 65535),
        '--budget': badInt(1, 1_000_000),
        '--seed': badInt(0),
        '--max-sessions': badInt(1, 100_000),
        '--max-body-mb': badInt(1, 4096),
      },
    },
    {
      path: ['bench', 'serve'],
      base: ['--seconds', '0.1'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--policy': badPolicy,
        '--concurrency': badInt(1),
        '--budget': badInt(1),
        '--seconds': badNum((x) => x > 0),
      },
    },
    {
      path: ['bench', 'ui'],
      base: ['--turns', '10', '--opens', '1'],
      flags: { '--turns': badInt(1), '--opens': badInt(1), '--seed': badInt(0), '--dir': badOutDir },
    },
    {
      path: ['bench', 'proxy'],
      base: ['--calls', '1', '--warmup', '0'],
      flags: { '--calls': badInt(1), '--warmup': badInt(0), '--session-length': badInt(1) },
    },
    {
      path: ['mcp'],
      base: ['--env', 'frozenlake', '--task-seed', '0', '--store', 'OUT/m.jsonl'],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--task-seed': badInt(0),
        '--seed': badInt(0),
        '--sample': badInt(0),
        '--budget': badInt(1),
        '--store': badOutFile,
      },
    },
    {
      path: ['proxy'],
      base: ['--upstream', 'http://127.0.0.1:9/v1', '--store', 'OUT/p.sqlite', '--port', '0'],
      flags: {
        '--upstream': pick('nope', 'ftp://x/v1', 'http://', ''),
        '--store': badOutFile,
        '--port': badInt(0, 65535),
        '--budget': badInt(1),
      },
    },
    {
      path: ['harness', 'run'],
      base: [
        '--cmd',
        'true',
        '--env',
        'frozenlake',
        '--budget',
        '2',
        '--upstream',
        'http://127.0.0.1:9/v1',
        '--out',
        'OUT/h',
      ],
      flags: {
        ...ENV_FLAGS,
        '--env': PASS_FLAGS['--env'],
        '--tasks': badInt(1),
        '--samples': badInt(1),
        '--budget': badInt(1),
        '--concurrency': badInt(1),
        '--seed': badInt(0),
        '--upstream': pick('nope', 'ftp://x/v1', 'http://', ''),
        '--out': badOutDir,
        '--queue': badQueue,
      },
    },
    {
      path: ['probe'],
      base: ['http://127.0.0.1:9/v1#m'],
      flags: {},
      argument: pick('nope', 'http://', 'ftp://x/v1#m', '#m', 'http://[::1/v1#m', ''),
    },
    {
      // Every flag is checked before Redis is reached: port 1 refuses, and a case that got that far
      // would name --queue, not its own flag.
      path: ['worker'],
      base: ['--queue', 'redis://127.0.0.1:1'],
      flags: {
        '--queue': badQueue,
        '--concurrency': badInt(1, 4096),
        '--lock-ms': badInt(100, 3_600_000),
        '--name': pick('', 'a b', 'w:1', 'x'.repeat(65), 'é'),
        '--api-key-env': pick('', '1KEY', 'A-B', 'a b'),
      },
    },
    {
      path: ['queue', 'status'],
      base: ['--queue', 'redis://127.0.0.1:1'],
      flags: { '--queue': badQueue },
    },
    {
      // A valid base would listen: each case breaks one flag, refused before anything listens.
      path: ['ui'],
      base: ['--runs', 'IN', '--port', '0'],
      flags: {
        '--runs': pick('IN/no-such-dir', 'IN/a-file', '/dev/null/x'),
        '--port': badInt(0, 65535),
        // Addresses this machine does not have (TEST-NET-1 and an unassigned private one).
        '--host': pick('192.0.2.1', '10.255.255.1'),
      },
    },
    {
      path: ['export'],
      base: ['--in', 'IN/valid.jsonl', '--format', 'openai', '--out', 'OUT/sft.jsonl'],
      flags: {
        '--in': fc.oneof(trajectories, badInFile),
        '--format': badEnum(['openai', 'verl', 'verl-sft', 'turnwise-parquet', 'preference']),
        '--out': badOutFile,
        '--method': fc.oneof(
          badEnum([
            'outcome',
            'discounted',
            'gae',
            'grpo',
            'drgrpo',
            'rloo',
            'gigpo',
            'turn-level',
            'reverse-turn',
            'rtpo',
            'exact',
          ]),
          pick('grpo:bogus=1', 'gae:gamma=2', 'grpo:'),
        ),
        // Every finite number is a threshold: only non-numbers are bad.
        '--min-advantage': pick('', 'abc', 'NaN', 'Infinity', '-Infinity', '7 apples', '1,5', '0x'),
        '--chat': badEnum(['tools', 'text']),
        // Any name is a split; an empty one is not (and openai reads none).
        '--split': pick('', ' ', 'train'),
        // openai reads no --by, whatever its value.
        '--by': pick('', 'turns', 'rubric', 'vibes'),
      },
    },
    {
      path: ['export'],
      base: ['--in', 'IN/valid.jsonl', '--format', 'preference', '--out', 'OUT/p.jsonl'],
      flags: {
        '--in': fc.oneof(trajectories, badInFile),
        '--out': badOutFile,
        '--chat': badEnum(['tools', 'text']),
        // rubric reads a scored file, which valid.jsonl is not; side effects are the tools env's.
        '--by': pick(
          '',
          ' ',
          'vibes',
          'turn',
          'turns,turns',
          'rubric,turns',
          'side-effects',
          'turns,side-effects',
          'rubric',
        ),
      },
    },
  ];
}

// ── Cases ─────────────────────────────────────────────────────────────────────────────────────
interface Case {
  argv: (string | Value | { flag: string; value: Value })[];
  /** What the one line must name: the flag, or the argument's value. */
  mention: string[];
  what: string;
}

/** The base invocation with one flag's value replaced (or added). */
function withFlag(spec: Spec, flag: string, value: Value): Case {
  const base = [...spec.base];
  const i = base.indexOf(flag);
  if (i >= 0) base.splice(i, 2);
  // --flag=value, so a value that starts with '-' is still the flag's value (not another option).
  return { argv: [...spec.path, ...base, { flag, value }], mention: [flag], what: `${flag} ${show(value)}` };
}

function show(v: Value): string {
  return typeof v === 'string'
    ? JSON.stringify(v)
    : 'file' in v
      ? `file ${v.name}: ${JSON.stringify(v.file.slice(0, 80))}`
      : 'a directory';
}

/** Every kind of malformed invocation of one command. */
function casesOf(spec: Spec, known: readonly string[], optional: readonly string[] = []): fc.Arbitrary<Case> {
  const flags = Object.keys(spec.flags);
  const arbs: fc.Arbitrary<Case>[] = flags.map((f) => spec.flags[f].map((v) => withFlag(spec, f, v)));
  // An unknown flag, or a real one misspelled by a dropped or doubled letter.
  const all = [...known, '--help', '--version'];
  arbs.push(
    fc
      .oneof(
        fc.stringMatching(/^--[a-z][a-z-]{1,12}$/),
        fc.tuple(fc.constantFrom(...(flags.length > 0 ? flags : ['--json'])), fc.nat()).map(([f, k]) => {
          const j = 2 + (k % (f.length - 2));
          return k % 2 === 0 ? f.slice(0, j) + f.slice(j + 1) : f.slice(0, j) + f[j] + f.slice(j);
        }),
      )
      .filter(
        (f) => !all.some((k) => k === f || k.startsWith(`${f}`)) && f.length > 3 && !f.startsWith('--no-'),
      )
      .map((f) => ({ argv: [...spec.path, ...spec.base, f], mention: [f], what: `unknown flag ${f}` })),
  );
  // A flag that needs a value, given none (last on the line).
  const needValue = flags.filter((f) => !optional.includes(f));
  if (needValue.length > 0)
    arbs.push(
      fc.constantFrom(...needValue).map((f) => {
        const base = [...spec.base];
        const i = base.indexOf(f);
        if (i >= 0) base.splice(i, 2);
        return { argv: [...spec.path, ...base, f], mention: [f], what: `${f} without a value` };
      }),
    );
  if (spec.argument !== undefined) {
    const arg = spec.argument;
    arbs.push(
      arg.map((v) => ({
        argv: [...spec.path, v, ...spec.base.slice(1)],
        // The value as given, or (probe's URL#MODEL) its URL part.
        mention: typeof v === 'string' ? [v, v.split('#')[0]] : [],
        what: `argument ${show(v)}`,
      })),
    );
  }
  return fc.oneof(...arbs);
}

// ── Running ───────────────────────────────────────────────────────────────────────────────────
let root: string;

/** Every file and directory under dir (relative paths), [] when it does not exist. */
function tree(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
  } catch {
    return [];
  }
}

let caseNo = 0;
/** Makes the case's directories and files, runs it, and returns what went wrong ([] = refused well). */
async function check(
  c: Case,
  run: (argv: string[], cwd: string) => Promise<Ran> = inProcess,
): Promise<string[]> {
  const dir = join(root, `case-${caseNo++}`);
  const IN = join(dir, 'in');
  const OUT = join(dir, 'out');
  const cwd = join(dir, 'cwd');
  for (const d of [IN, OUT, cwd]) mkdirSync(d, { recursive: true });
  writeFileSync(join(IN, 'valid.jsonl'), validLines.join('\n'));
  writeFileSync(join(IN, 'a-file'), 'a file, not a directory');
  writeFileSync(join(IN, 'rubric.json'), '{"criteria":[{"kind":"success"},{"kind":"max-turns","n":3}]}');
  let k = 0;
  // A file's or a path's refusal may name the path (with the line and field) rather than the flag.
  const mention = [...c.mention];
  const resolve = (v: Value): string => {
    if (typeof v === 'string') {
      const resolved = v.replace(/^IN(?=\/|$)/, IN).replace(/^OUT(?=\/|$)/, OUT);
      if (resolved !== v || v.startsWith('/')) mention.push(resolved);
      return resolved;
    }
    const p = join(IN, `value-${k++}`);
    mkdirSync(p);
    if ('file' in v) {
      writeFileSync(join(p, v.name), v.file);
      mention.push(join(p, v.name));
      return join(p, v.name);
    }
    for (const [name, content] of Object.entries(v.dir)) writeFileSync(join(p, name), content);
    mention.push(p);
    return p;
  };
  const argv = c.argv.map((v) =>
    typeof v === 'object' && 'flag' in v ? `${v.flag}=${resolve(v.value)}` : resolve(v),
  );
  const before = tree(IN);
  const r = await run(argv, cwd);
  const problems: string[] = [];
  const lines = r.stderr.split('\n');
  if (r.code !== 2) problems.push(`exit ${r.code}, not 2`);
  if (!(lines.length === 2 && lines[1] === '' && lines[0].startsWith('turnwise: ')))
    problems.push(`stderr is not one "turnwise: …" line`);
  if (/\n\s+at |Error: |internal error/.test(r.stderr)) problems.push('a stack trace or an internal error');
  const line = lines[0] ?? '';
  if (!mention.some((m) => line.includes(m)))
    problems.push(`the line does not name ${mention.join(' or ').replaceAll(dir, '')}`);
  if (r.stdout !== '') problems.push(`stdout: ${JSON.stringify(r.stdout.slice(0, 200))}`);
  const wrote = [...tree(OUT).map((f) => `out/${f}`), ...tree(cwd).map((f) => `cwd/${f}`)];
  const inputs = tree(IN).filter((f) => !before.includes(f));
  if (wrote.length + inputs.length > 0)
    problems.push(`wrote ${[...wrote, ...inputs.map((f) => `in/${f}`)].join(', ')}`);
  rmSync(dir, { recursive: true, force: true });
  return problems.length === 0
    ? []
    : [
        `turnwise ${argv.map((a) => JSON.stringify(a.replace(dir, ''))).join(' ')}\n    → ${problems.join('; ')}\n    stderr: ${r.stderr.trimEnd().slice(0, 300)}`,
      ];
}

let validLines: string[] = [];
let allSpecs: Spec[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'turnwise-fuzz-'));
  // Valid trajectory lines, written by the real CLI, for the malformed files to be made from.
  const file = join(root, 'valid.jsonl');
  const r = await inProcess(
    ['rollout', '--policy', 'random', '--tasks', '2', '--samples', '2', '--out', file],
    root,
  );
  assert.equal(r.code, 0, r.stderr);
  validLines = readFileSync(file, 'utf8').trim().split('\n');
  let i = 0;
  allSpecs = specs(() => validLines[i++ % validLines.length]);
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** The long names of every option a command path has, and of those whose value is optional. */
async function knownFlags(path: readonly string[]): Promise<{ known: string[]; optional: string[] }> {
  const { program } = await import('../../src/cli/main.ts');
  let cmd = await program();
  for (const name of path) cmd = cmd.commands.find((c) => c.name() === name) ?? cmd;
  const long = (os: typeof cmd.options) => os.map((o) => o.long ?? '').filter((s) => s !== '');
  return { known: long(cmd.options), optional: long(cmd.options.filter((o) => o.optional)) };
}

test('every command of the CLI has a fuzz spec (play excepted: it reads the terminal)', async () => {
  const { program } = await import('../../src/cli/main.ts');
  const leaves: string[] = [];
  const walk = (c: Awaited<ReturnType<typeof program>>, path: string[]) => {
    for (const sub of c.commands) {
      const p = [...path, sub.name()];
      if (sub.commands.length === 0 || sub.options.length > 0) leaves.push(p.join(' '));
      walk(sub, p);
    }
  };
  walk(await program(), []);
  const covered = new Set([...allSpecs.map((s) => s.path.join(' ')), 'env play', 'help']);
  assert.deepEqual(
    leaves.filter((l) => !covered.has(l)),
    [],
  );
  // Each fuzzed flag is a real flag of its command (a renamed flag would make its cases vacuous).
  for (const s of allSpecs) {
    const { known } = await knownFlags(s.path);
    for (const f of Object.keys(s.flags)) assert.ok(known.includes(f), `${s.path.join(' ')} has no ${f}`);
  }
});

test('generated malformed input to every command: exit 2, one line naming the field, nothing written', async () => {
  const failures: string[] = [];
  for (const spec of allSpecs) {
    const { known, optional } = await knownFlags(spec.path);
    // Every fuzzed flag once (so each is tried at least once), then RUNS generated cases.
    const fixed = Object.keys(spec.flags).map(
      (f) =>
        fc.sample(
          spec.flags[f].map((v) => withFlag(spec, f, v)),
          { seed: SEED, numRuns: 1 },
        )[0],
    );
    const generated = fc.sample(casesOf(spec, known, optional), { seed: SEED, numRuns: RUNS });
    for (const c of [...fixed, ...generated]) failures.push(...(await check(c)));
  }
  assert.deepEqual(failures, [], `\n${failures.join('\n')}\n${strayOutput}`);
});

test('every integer flag refuses a whole number written otherwise than in decimal digits (1e3, 10.0, 0x10, +5)', async () => {
  const failures: string[] = [];
  let flags = 0;
  for (const spec of allSpecs) {
    for (const [flag, arb] of Object.entries(spec.flags)) {
      if (!INT_FLAGS.has(arb)) continue;
      flags++;
      for (const v of WHOLE_NOT_DECIMAL) failures.push(...(await check(withFlag(spec, flag, v))));
    }
  }
  // train's and study's flags come from their config declarations; the others from cli/options.ts.
  assert.ok(flags >= 60, `${flags} integer flags`);
  assert.deepEqual(failures, [], `\n${failures.join('\n')}\n${strayOutput}`);
});

test('cross-field nonsense in a training (or bc) config: exit 2, one line naming both fields, nothing written', async () => {
  const cases: [string[], string[]][] = [
    [
      ['--group-size', '1'],
      ['groupSize', 'credit.method grpo'],
    ],
    [
      ['--clip-low', '0.3', '--clip-high', '0.2'],
      ['ppo.clipHigh', 'ppo.clipLow'],
    ],
    [
      ['--groups', '2', '--group-size', '2', '--minibatches', '5'],
      ['ppo.minibatches', 'groups × groupSize'],
    ],
    [
      ['--algo', 'es', '--credit', 'rloo'],
      ['credit.method', 'algo es'],
    ],
    [
      ['--algo', 'es', '--gamma', '0.9'],
      ['credit.gamma', 'algo es'],
    ],
    [
      ['--algo', 'es', '--dynamic-sampling'],
      ['dynamicSampling.enabled', 'algo es'],
    ],
    [
      ['--algo', 'es', '--cross-policy', '0.5'],
      ['crossPolicy.q', 'algo es'],
    ],
    [
      ['--algo', 'es', '--guidance', 'bread'],
      ['guidance.mode', 'algo es'],
    ],
    [
      ['--algo', 'es', '--kl', '0.1'],
      ['ppo.klCoef', 'algo es'],
    ],
    [
      ['--algo', 'es', '--clip-high', '0.4'],
      ['ppo.clipHigh', 'algo es'],
    ],
    [
      ['--es-pairs', '8'],
      ['es.pairs', 'algo is grpo'],
    ],
    [
      ['--algo', 'ppo', '--workers', '2'],
      ['es.workers', 'algo is ppo'],
    ],
    [
      ['--expert', 'oracle'],
      ['guidance.expert', 'guidance.mode is none'],
    ],
    [
      ['--max-prefix', '3'],
      ['guidance.maxPrefix', 'guidance.mode is none'],
    ],
    [
      ['--set', 'critic.lr=0.1'],
      ['critic.lr', 'credit.method is grpo'],
    ],
    [
      ['--set', 'ppo.aggregationConstant=100'],
      ['ppo.aggregationConstant', 'ppo.aggregation is turn-mean'],
    ],
    [
      ['--set', 'crossPolicy.refreshEvery=5'],
      ['crossPolicy.refreshEvery', 'crossPolicy.q'],
    ],
    [
      ['--set', 'dynamicSampling.maxRounds=5'],
      ['dynamicSampling.maxRounds', 'dynamicSampling.enabled'],
    ],
    [
      ['--group-size', '1', '--credit', 'outcome', '--dynamic-sampling'],
      ['dynamicSampling.enabled', 'groupSize 1'],
    ],
    [
      ['--random', '--train-seeds', '0:100', '--test-seeds', '50:150'],
      ['testSeeds', 'trainSeeds'],
    ],
    [
      ['--test-seeds', '0:10'],
      ['testSeeds', 'env.params.map'],
    ],
    [
      ['--policy', 'mlp:budgetAware=1', '--set', 'revealBudget=false'],
      ['revealBudget', 'turns left'],
    ],
    [
      ['--env', 'sql', '--shaping', 'progress'],
      ['config.shaping', 'env.env is sql'],
    ],
    [
      ['--algo', 'es', '--shaping', 'potential'],
      ['config.shaping', 'algo es'],
    ],
    [
      ['--async-pipeline', '--algo', 'es'],
      ['config.asyncPipeline', 'algo es'],
    ],
    [
      ['--async-pipeline', '--guidance', 'gaussian'],
      ['config.asyncPipeline', 'guidance.mode gaussian'],
    ],
    [
      ['--async-pipeline', '--cross-policy', '0.25'],
      ['config.asyncPipeline', 'crossPolicy.q'],
    ],
    [['--vs-unshaped'], ['--vs-unshaped', '--shaping']],
    [
      ['--reward', 'rubric:r.json', '--shaping', 'progress'],
      ['config.reward', 'shaping progress'],
    ],
    [
      ['--reward', 'rubric:r.json', '--algo', 'es'],
      ['config.reward', 'algo es'],
    ],
  ];
  const all: [string[], string[]][] = cases.map(([a, f]) => [['train', '--out', 'OUT/run', ...a], f]);
  // bc's held-out tasks, likewise.
  const bc = ['bc', '--random', '--size', '4', '--epochs', '1', '--hidden', '4', '--out', 'OUT/bc'];
  all.push([
    [...bc, '--train-seeds', '0:10', '--test-seeds', '5:15'],
    ['--test-seeds', '--train-seeds 0:10'],
  ]);
  const failures: string[] = [];
  for (const [args, fields] of all) {
    let line = '';
    const c: Case = { argv: args, mention: [fields[0]], what: args.join(' ') };
    failures.push(
      ...(await check(c, async (argv, cwd) => {
        const r = await inProcess(argv, cwd);
        line = r.stderr;
        return r;
      })),
    );
    for (const f of fields)
      if (!line.includes(f)) failures.push(`${args.join(' ')}: does not name ${f}: ${line}`);
  }
  assert.deepEqual(failures, [], `\n${failures.join('\n')}`);
});

test('the binary refuses exactly as main() in the worker does (same exit code, same line)', async () => {
  const binary = (argv: string[], cwd: string): Promise<Ran> => node([BIN, ...argv], { cwd });
  // A process start costs seconds on a busy machine: two cases.
  const sample = fc.sample(
    fc.constantFrom(...allSpecs).chain((s) => casesOf(s, [])),
    { seed: SEED, numRuns: 2 },
  );
  for (const c of sample) {
    const seen: Ran[] = [];
    const viaWorker = await check(c, async (argv, cwd) => {
      seen.push(await inProcess(argv, cwd));
      return seen[0];
    });
    const viaBinary = await check(c, async (argv, cwd) => {
      seen.push(await binary(argv, cwd));
      return seen[1];
    });
    assert.deepEqual([viaWorker, viaBinary], [[], []], c.what);
    const same = (r: Ran) => ({
      code: r.code,
      stdout: r.stdout,
      stderr: r.stderr.replace(/case-\d+/g, 'case'),
    });
    assert.deepEqual(same(seen[1]), same(seen[0]), c.what);
  }
});
