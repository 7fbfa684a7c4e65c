// turnwise credit --in FILE --method M   — per-turn advantages of a trajectory file, grouped by task
// turnwise credit fidelity …             — every method against the exact advantage A^π = Q^π − V^π
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
import {
  applyFlags,
  CREDIT_PARAMS,
  type CreditParam,
  deadGroups,
  METHOD_NAMES,
  type MethodSpec,
  methodDefaults,
  type ParamName,
  parseMethodSpec,
  SPEC_PARAMS,
  splitMethodList,
  VALUE_SOURCES,
} from '../../credit/index.ts';
import { ENV_IDS, envSpec, makeTasks } from '../../envs/index.ts';
import { makePolicy } from '../../policies/spec.ts';
import { readTrajectories, SkippedLines } from '../../store/jsonl.ts';
import {
  CONTROL_METHODS,
  creditFidelity,
  creditForSpec,
  DEFAULT_FIDELITY_METHODS,
  DEFAULT_VALUE_SOURCE,
  exactValuesFromSpecs,
} from '../../studies/credit-fidelity.ts';
import { fmt, json, out, table, warn } from '../io.ts';
import {
  checkSpacesOfRegistered,
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  seed,
} from '../options.ts';
import { SKIP_HELP } from './summary.ts';

interface ParamFlags {
  gamma?: string;
  lambda?: string;
  omega?: string;
  std?: string;
  eps?: string;
  crest?: boolean;
  values?: string;
  taskNorm?: string | boolean;
  json?: boolean;
}

interface CreditFlags extends ParamFlags {
  in?: string;
  method?: string;
  skipInvalid?: boolean;
}

interface FidelityFlags extends CreditFlags, EnvFlags {
  env: string;
  policy: string;
  budget?: string;
  groups: string;
  groupSize: string;
  methods: string;
  seed: string;
}

function paramFlags(flags: ParamFlags): Partial<Record<ParamName, string>> {
  return {
    gamma: flags.gamma,
    lambda: flags.lambda,
    omega: flags.omega,
    std: flags.std,
    eps: flags.eps,
    crest: flags.crest ? 'true' : undefined,
    values: flags.values,
    'task-norm': flags.taskNorm === true ? 'env' : flags.taskNorm === false ? undefined : flags.taskNorm,
  };
}

/** A parameter's help: its declaration's description and each method's default (credit/params.ts). */
const paramHelp = (k: CreditParam): string => {
  const d = Object.entries(methodDefaults(k)).map(([m, v]) => `${m} ${v}`);
  return `${CREDIT_PARAMS[k].description} (default by method: ${d.join(', ')})`;
};

const preview = (row: readonly number[], n = 8): string =>
  `[${row
    .slice(0, n)
    .map((x) => fmt(x, 3))
    .join(' ')}${row.length > n ? ` … (${row.length})` : ''}]`;

/** Methods whose baseline is the rest of a task's group (GRPO-style), at the outcome or the turn level. */
const GROUP_BASELINES: readonly string[] = ['grpo', 'drgrpo', 'rloo', 'gigpo', 'turn-level', 'reverse-turn'];

/** Why an env without an exact oracle has no exact advantage, and what runs on it instead. */
const NO_ORACLE = (env: string) =>
  `an env with an exact oracle, and ${env} has none: the exact advantage A^π = Q^π − V^π needs the env's whole model solved by dynamic programming over a finite state space, and ${env}'s state (a database, an API state, a sandbox) is not one; methods without an oracle run on it with \`credit --in FILE --method M\` (gae with --values zero), and \`compare\` scores its steps by the env's quality proxy`;

/** `exact` and GAE with values=exact need the oracle of every trajectory's env: refused up front, with
 * the reason, when a registered env of the file has none. */
function refuseWithoutOracle(spec: MethodSpec, trajectories: readonly Trajectory[]): void {
  const exact =
    spec.name === 'exact' ||
    (spec.name === 'gae' && (spec.params.values ?? DEFAULT_VALUE_SOURCE) === 'exact');
  if (!exact) return;
  const field = spec.name === 'exact' ? '--method' : '--values';
  const t = trajectories.find((x) => ENV_IDS.includes(x.task.env) && !envSpec(x.task).oracle);
  if (t === undefined) return;
  const why = NO_ORACLE(t.task.env).replace(/^an env with an exact oracle, and /, '');
  throw new InputError(
    field,
    spec.name === 'exact' ? spec.label : 'exact',
    `needs an exact oracle (trajectory ${t.id}): ${why}`,
  );
}

export function registerCredit(program: Command): void {
  // The method parameters live on `credit` itself; `credit fidelity` reads them as global options
  // (commander hands every flag it knows to the parent first).
  const credit = program
    .command('credit')
    .description('per-turn advantages of a trajectory file (grouped by identical task), or `credit fidelity`')
    .option('--in <file.jsonl>', 'trajectories, one JSON object per line')
    .option(
      '--method <m>',
      `${METHOD_NAMES.join(' | ')} | exact (needs an oracle); parameters as m:key=value,…`,
    )
    .option('--gamma <γ>', paramHelp('gamma'))
    .option('--lambda <λ>', paramHelp('lambda'))
    .option('--omega <ω>', paramHelp('omega'))
    .option('--std <bool>', `true | false: ${paramHelp('std')}`)
    .option('--eps <ε>', paramHelp('eps'))
    .option('--crest', paramHelp('crest'))
    .option(
      '--values <source>',
      `${SPEC_PARAMS.values.description}, ${VALUE_SOURCES.join(' | ')} (default ${DEFAULT_VALUE_SOURCE}): exact = V^π_{T−t} of the policy named in the file, from the env's oracle (refused, never zero-filled, when unavailable); zero = V ≡ 0 (a λ-return)`,
    )
    .option('--task-norm [by]', `${SPEC_PARAMS['task-norm'].description}: env (default) | task`)
    .option('--skip-invalid', SKIP_HELP)
    .option('--json', 'machine-readable output')
    .action((flags: CreditFlags) => {
      if (flags.in === undefined)
        throw new InputError('--in', undefined, 'give a trajectory JSONL file (or run `credit fidelity`)');
      if (flags.method === undefined)
        throw new InputError('--method', undefined, `expected one of: ${METHOD_NAMES.join(', ')}, exact`);
      const [spec] = applyFlags([parseMethodSpec(flags.method, '--method', ['exact'])], paramFlags(flags));
      const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
      const trajectories = readTrajectories(flags.in, '--in', checkSpacesOfRegistered, skipped);
      refuseWithoutOracle(spec, trajectories);
      const advantages = creditForSpec(trajectories, spec, () =>
        exactValuesFromSpecs(spec.name === 'exact' ? '--method' : '--values'),
      );
      if (skipped && skipped.count > 0) warn(skipped.note(flags.in));
      if (flags.json) return json({ method: spec.label, advantages, ...(skipped ? { skipped } : {}) });
      const counts = deadGroups(trajectories).counts;
      out(
        `${spec.label}: ${trajectories.length} trajectories in ${counts.groups} groups (${counts.dead} dead: ${counts.allFail} all-fail, ${counts.allSucceed} all-succeed)`,
      );
      out(
        table([
          ['id', 'R', 'turns', 'advantages'],
          ...trajectories.map((t, i) => [t.id, t.outcome.return, t.turns.length, preview(advantages[i])]),
        ]),
      );
    });

  envOptions(
    credit
      .command('fidelity')
      .description(
        'roll a policy out and score each credit method against the exact advantage A^π_{T−t} = Q^π − V^π',
      )
      .configureHelp({ showGlobalOptions: true }),
  )
    .option('--env <id>', 'environment id (needs an exact oracle)', 'frozenlake')
    .requiredOption(
      '--policy <spec>',
      'a policy with an explicit distribution: random | oracle[:…] | tabular',
    )
    .option('--budget <T>', 'turn budget T (default: the registered episode limit)')
    .option('--groups <n>', 'tasks, one group each (task seed = --seed + index)', '64')
    .option('--group-size <K>', 'samples per task', '8')
    .option(
      '--methods <list>',
      `comma-separated methods, each name[:key=value,…]; plus exact and shuffled (controls)`,
      DEFAULT_FIDELITY_METHODS,
    )
    .option('--seed <n>', 'run seed (and first task seed)', '0')
    .action(async function (this: Command) {
      const flags = this.optsWithGlobals() as FidelityFlags;
      if (flags.in !== undefined)
        throw new InputError('--in', flags.in, '`credit fidelity` rolls its own batch out');
      if (flags.method !== undefined)
        throw new InputError('--method', flags.method, '`credit fidelity` takes --methods');
      if (flags.skipInvalid)
        throw new InputError(
          '--skip-invalid',
          true,
          '`credit fidelity` reads no file: it rolls its own batch out',
        );
      const runSeed = seed(flags.seed);
      const groups = int('--groups', flags.groups, 1, 1_000_000);
      const groupSize = int('--group-size', flags.groupSize, 1, 100_000);
      const config = envConfigFromFlags(flags.env, flags);
      const spec = envSpec(makeTasks(config, 1, runSeed)[0]);
      if (!spec.oracle)
        throw new InputError('--env', flags.env, `credit fidelity needs ${NO_ORACLE(spec.id)}`);
      const budget =
        flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
      const policy = makePolicy(flags.policy, spec);
      const specs: MethodSpec[] = applyFlags(
        splitMethodList(flags.methods).map((m) => parseMethodSpec(m, '--methods', CONTROL_METHODS)),
        paramFlags(flags),
      );
      const labels = new Set<string>();
      for (const s of specs) {
        if (labels.has(s.label)) throw new InputError('--methods', s.label, 'each method once');
        labels.add(s.label);
      }
      const grouped = specs.find((s) => GROUP_BASELINES.includes(s.name));
      if (groupSize === 1 && grouped !== undefined)
        throw new InputError(
          '--group-size',
          flags.groupSize,
          `expected at least 2: --methods has ${grouped.label}, whose baseline is the other samples of the task's group, and a group of one has no contrast (every advantage 0); give --group-size 2 or more, or only methods without a group baseline (exact, outcome, discounted, gae)`,
        );
      const result = await creditFidelity({
        config,
        policy,
        budget,
        groups,
        groupSize,
        seed: runSeed,
        methods: specs,
      });
      if (flags.json)
        return json({
          ...result,
          env: config,
          policy: policy.id,
          budget,
          groups,
          groupSize,
          seed: runSeed,
        });
      out(
        `${policy.id} on ${config.env} ${JSON.stringify(config.params)}, budget ${budget}: ${groups} groups × ${groupSize}, ` +
          `${result.turns} turns, success ${fmt(result.success, 3)}, dead groups ${result.deadGroups}, ` +
          `exact advantage 0 on ${fmt(result.exactZeroShare * 100, 1)}% of turns`,
      );
      out(
        table([
          ['method', 'pearson', 'spearman', 'sign agreement'],
          ...Object.entries(result.methods).map(([m, s]) => [
            m,
            fmt(s.pearson, 3),
            fmt(s.spearman, 3),
            fmt(s.signAgreement, 3),
          ]),
        ]),
      );
      out('pearson/spearman: - when a method gives every turn the same credit (correlation undefined)');
    });
}
