// turnwise credit --in FILE --method M   — per-turn advantages of a trajectory file, grouped by task
// turnwise credit fidelity …             — every method against the exact advantage A^π = Q^π − V^π
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
import {
  applyFlags,
  CREDIT_PARAMS,
  type CreditParam,
  GROUP_BASELINE_METHODS,
  METHOD_NAMES,
  type MethodSpec,
  methodDefaults,
  type ParamName,
  parseMethodSpec,
  SPEC_PARAMS,
  splitMethodList,
  VALUE_SOURCES,
} from '../../credit/index.ts';
import { envSpec, makeTasks } from '../../envs/index.ts';
import { makePolicy } from '../../policies/spec.ts';
import { SkippedLines, TrajectoryFile } from '../../store/jsonl.ts';
import {
  CONTROL_METHODS,
  creditFidelity,
  DEFAULT_FIDELITY_METHODS,
  DEFAULT_VALUE_SOURCE,
} from '../../studies/credit-fidelity.ts';
import { creditOfFile, NO_ORACLE } from '../../studies/credit-file.ts';
import { Chunked, fmt, json, out, table, tableRow, warn } from '../io.ts';
import {
  checkSpacesOfRegistered,
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  seed,
} from '../options.ts';
import { ABOUT } from './about.ts';
import { SKIP_HELP } from './summary.ts';

interface ParamFlags {
  gamma?: string;
  lambda?: string;
  omega?: string;
  std?: string;
  eps?: string;
  crest?: boolean;
  penalty?: string;
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
    penalty: flags.penalty,
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

/**
 * `credit --in FILE --method M`: the advantages of a file in bounded memory (studies/credit-file.ts),
 * byte for byte what creditForSpec over the whole batch prints, streamed out (text: one more pass for
 * the advantages column's width, one to read the id, R and turns columns back).
 */
function creditFile(flags: CreditFlags, path: string, spec: MethodSpec): void {
  const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
  // Text-table widths of the id, R and turns columns (the header's included).
  const widths = [[...'id'].length, [...'R'].length, [...'turns'].length];
  const cells = (t: Trajectory) => [t.id, String(t.outcome.return), String(t.turns.length)];
  const { index: ix, rows } = creditOfFile(
    new TrajectoryFile(path, '--in', checkSpacesOfRegistered, skipped),
    spec,
    (t) =>
      cells(t).forEach((c, i) => {
        widths[i] = Math.max(widths[i], [...c].length);
      }),
  );
  const w = new Chunked();
  if (flags.json) {
    // JSON.stringify of { method, advantages, skipped? }, written a row at a time.
    w.write(`{"method":${JSON.stringify(spec.label)},"advantages":[`);
    let k = 0;
    for (const row of rows()) w.write(`${k++ === 0 ? '' : ','}${JSON.stringify(row)}`);
    w.write(`]${skipped ? `,"skipped":${JSON.stringify(skipped)}` : ''}}\n`);
    if (skipped && skipped.count > 0) warn(skipped.note(path));
    w.flush();
    return;
  }
  let width = [...'advantages'].length;
  for (const row of rows()) width = Math.max(width, [...preview(row)].length);
  widths.push(width);
  if (skipped && skipped.count > 0) warn(skipped.note(path));
  const c = ix.counts;
  w.write(
    `${spec.label}: ${ix.n} trajectories in ${c.groups} groups (${c.dead} dead: ${c.allFail} all-fail, ${c.allSucceed} all-succeed)\n`,
  );
  w.write(`${tableRow(['id', 'R', 'turns', 'advantages'], widths)}\n`);
  w.write(`${widths.map((x) => '-'.repeat(x)).join('  ')}\n`);
  const trajectories = ix.trajectories();
  try {
    for (const row of rows()) {
      const t = trajectories.next().value as Trajectory;
      w.write(`${tableRow([...cells(t), preview(row)], widths)}\n`);
    }
  } finally {
    trajectories.return(undefined);
  }
  w.flush();
}

export function registerCredit(program: Command): void {
  // The method parameters live on `credit` itself; `credit fidelity` reads them as global options
  // (commander hands every flag it knows to the parent first).
  const credit = program
    .command('credit')
    .description(ABOUT.credit.description)
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
    .option('--penalty <ρ>', paramHelp('penalty'))
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
      creditFile(flags, flags.in, spec);
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
      const grouped = specs.find((s) => (GROUP_BASELINE_METHODS as readonly string[]).includes(s.name));
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
