// turnwise credit --in FILE --method M   — per-turn advantages of a trajectory file, grouped by task
// turnwise credit fidelity …             — every method against the exact advantage A^π = Q^π − V^π
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
import {
  type Advantages,
  applyFlags,
  CREDIT_PARAMS,
  type CreditParam,
  canonicalJson,
  type ExactValuesOf,
  GROUP_BASELINE_METHODS,
  METHOD_NAMES,
  type MethodSpec,
  methodDefaults,
  outcomeReward,
  type ParamName,
  parseMethodSpec,
  SPEC_PARAMS,
  splitMethodList,
  TASK_NORM_DEFAULTS,
  VALUE_SOURCES,
} from '../../credit/index.ts';
import { ENV_IDS, envSpec, makeTasks } from '../../envs/index.ts';
import { makePolicy } from '../../policies/spec.ts';
import {
  fileLines,
  LineReader,
  noTrajectories,
  orSkip,
  parseTrajectoryLine,
  SkippedLines,
} from '../../store/jsonl.ts';
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

/** Why an env without an exact oracle has no exact advantage, and what runs on it instead. */
const NO_ORACLE = (env: string) =>
  `an env with an exact oracle, and ${env} has none: the exact advantage A^π = Q^π − V^π needs the env's whole model solved by dynamic programming over a finite state space, and ${env}'s state (a database, an API state, a sandbox) is not one; methods without an oracle run on it with \`credit --in FILE --method M\` (gae with --values zero), and \`compare\` scores its steps by the env's quality proxy`;

/** `exact` and GAE with values=exact need the oracle of every trajectory's env. */
const needsOracle = (spec: MethodSpec): boolean =>
  spec.name === 'exact' || (spec.name === 'gae' && (spec.params.values ?? DEFAULT_VALUE_SOURCE) === 'exact');

const lacksOracle = (t: Trajectory): boolean => ENV_IDS.includes(t.task.env) && !envSpec(t.task).oracle;

/** The refusal of a spec that needs the oracle for a trajectory (of a registered env) that has none. */
function withoutOracle(spec: MethodSpec, t: Trajectory): InputError {
  const field = spec.name === 'exact' ? '--method' : '--values';
  const why = NO_ORACLE(t.task.env).replace(/^an env with an exact oracle, and /, '');
  return new InputError(
    field,
    spec.name === 'exact' ? spec.label : 'exact',
    `needs an exact oracle (trajectory ${t.id}): ${why}`,
  );
}

/** Advantages (numbers) that groups computed ahead of their rows may hold before they are dropped —
 * and computed again when their next row comes: memory stays bounded whatever the file's order
 * (exported for the test of that path). */
export const CREDIT_CACHE = { numbers: 4_000_000 };

/** A growable typed array. */
function grow<A extends Float64Array | Int32Array>(a: A, need: number): A {
  if (need <= a.length) return a;
  const bigger = new (a.constructor as new (n: number) => A)(Math.max(need, a.length * 2));
  bigger.set(a);
  return bigger;
}

/**
 * Pass 1 of `credit --in`: every line validated (schema, env spaces; skipped and counted with
 * `skipped`), and only what the later passes need kept — each valid line's place in the file and
 * group, the groups (by identical task, in order of first appearance) with what deadGroups counts,
 * and the widths of the text table's columns. No trajectory is held.
 */
export class CreditIndex {
  n = 0;
  offsets = new Float64Array(1024);
  bytes = new Int32Array(1024);
  numbers = new Int32Array(1024);
  group = new Int32Array(1024);
  /** The next line of the same group, or −1. */
  next = new Int32Array(1024);
  readonly first: number[] = [];
  readonly last: number[] = [];
  readonly size: number[] = [];
  /** Per group: the index of its --task-norm key. */
  readonly normKey: number[] = [];
  normKeys = 0;
  readonly counts = { groups: 0, live: 0, dead: 0, allFail: 0, allSucceed: 0 };
  private readonly firstReturn: number[] = [];
  private readonly equal: boolean[] = [];
  private readonly fails: boolean[] = [];
  private readonly succeeds: boolean[] = [];
  /** Text-table widths of the id, R and turns columns (the header's included). */
  readonly widths = [[...'id'].length, [...'R'].length, [...'turns'].length];
  noOracle: Trajectory | undefined;

  /** `probe` sees each valid trajectory (to find refusals the later passes would meet). */
  constructor(
    path: string,
    spec: MethodSpec,
    skipped: SkippedLines | undefined,
    probe?: (t: Trajectory) => void,
  ) {
    const groups = new Map<string, number>();
    const norms = new Map<string, number>();
    const by = spec.params.taskNorm;
    const oracle = needsOracle(spec);
    for (const [line, number, offset, bytes] of fileLines(path, '--in')) {
      const t = orSkip(
        () => parseTrajectoryLine(line, `${path}:${number}`, checkSpacesOfRegistered),
        number,
        skipped,
      );
      if (t === undefined) continue;
      if (oracle && this.noOracle === undefined && lacksOracle(t)) this.noOracle = t;
      probe?.(t);
      const k = this.n++;
      this.offsets = grow(this.offsets, this.n);
      this.bytes = grow(this.bytes, this.n);
      this.numbers = grow(this.numbers, this.n);
      this.group = grow(this.group, this.n);
      this.next = grow(this.next, this.n);
      this.offsets[k] = offset;
      this.bytes[k] = bytes;
      this.numbers[k] = number;
      this.next[k] = -1;
      const key = canonicalJson(t.task);
      let g = groups.get(key);
      const R = outcomeReward(t);
      if (g === undefined) {
        g = this.first.length;
        groups.set(key, g);
        this.first.push(k);
        this.last.push(k);
        this.size.push(0);
        // As task-norm.ts keys a task: the env configuration, or (`task`) the task itself.
        const nk = by === 'task' ? key : canonicalJson({ env: t.task.env, params: t.task.params });
        let ni = norms.get(nk);
        if (ni === undefined) {
          ni = norms.size;
          norms.set(nk, ni);
        }
        this.normKey.push(ni);
        this.firstReturn.push(R);
        this.equal.push(true);
        this.fails.push(true);
        this.succeeds.push(true);
      } else {
        this.next[this.last[g]] = k;
        this.last[g] = k;
      }
      this.group[k] = g;
      this.size[g]++;
      if (R !== this.firstReturn[g]) this.equal[g] = false;
      if (t.outcome.success) this.fails[g] = false;
      else this.succeeds[g] = false;
      const cells = [t.id, String(t.outcome.return), String(t.turns.length)];
      cells.forEach((c, i) => {
        this.widths[i] = Math.max(this.widths[i], [...c].length);
      });
    }
    if (this.n === 0) throw noTrajectories(path, '--in', skipped);
    this.normKeys = norms.size;
    // deadGroups' counts, group by group.
    this.counts.groups = this.first.length;
    for (let g = 0; g < this.first.length; g++) {
      if (!this.equal[g]) this.counts.live++;
      else {
        this.counts.dead++;
        if (this.fails[g]) this.counts.allFail++;
        else if (this.succeeds[g]) this.counts.allSucceed++;
      }
    }
  }

  /** The rows of advantages in file order, each group's computed by `compute` when its first row
   * is due (its lines read back by offset) and kept until its last — unless CREDIT_CACHE is full. */
  *rows(reader: LineReader, compute: (group: Trajectory[]) => Advantages): Generator<number[]> {
    const cache = new Map<number, { rows: Advantages; left: number; numbers: number }>();
    let held = 0;
    const seen = new Int32Array(this.first.length);
    for (let k = 0; k < this.n; k++) {
      const g = this.group[k];
      const pos = seen[g]++;
      let c = cache.get(g);
      if (c === undefined) {
        const members: Trajectory[] = [];
        for (let m = this.first[g]; m !== -1; m = this.next[m]) {
          const where = `${reader.path}:${this.numbers[m]}`;
          members.push(parseTrajectoryLine(reader.read(this.offsets[m], this.bytes[m]), where));
        }
        const rows = compute(members);
        let numbers = 0;
        for (const r of rows) numbers += r.length;
        if (held + numbers > CREDIT_CACHE.numbers) {
          cache.clear();
          held = 0;
        }
        c = { rows, left: this.size[g] - pos, numbers };
        cache.set(g, c);
        held += numbers;
      }
      const row = c.rows[pos];
      if (--c.left === 0) {
        cache.delete(g);
        held -= c.numbers;
      }
      yield row;
    }
  }
}

/**
 * The rows of `credit --in` in file order, with --task-norm applied as taskNorm() applies it — the
 * mean and the population std of each key's advantages summed in the same order (file order, turn
 * by turn), so the same bits — at the cost of two more passes over the groups.
 */
function* creditRows(
  ix: CreditIndex,
  path: string,
  spec: MethodSpec,
  exact: () => ExactValuesOf,
): Generator<number[]> {
  const { taskNorm: by, ...params } = spec.params;
  const method: MethodSpec = { ...spec, params };
  const compute = (group: Trajectory[]) => creditForSpec(group, method, exact);
  const reader = new LineReader(path, '--in');
  try {
    if (by === undefined) {
      yield* ix.rows(reader, compute);
      return;
    }
    const keyOf = (k: number) => ix.normKey[ix.group[k]];
    const sum = new Float64Array(ix.normKeys);
    const count = new Float64Array(ix.normKeys);
    const firstValue = new Float64Array(ix.normKeys);
    const equal = new Array<boolean>(ix.normKeys).fill(true);
    let k = 0;
    for (const row of ix.rows(reader, compute)) {
      const j = keyOf(k++);
      for (const a of row) {
        if (count[j] === 0) firstValue[j] = a;
        else if (a !== firstValue[j]) equal[j] = false;
        count[j]++;
        sum[j] += a;
      }
    }
    const mu = Array.from(sum, (s, j) => (count[j] > 0 ? s / count[j] : 0));
    const squares = new Float64Array(ix.normKeys);
    k = 0;
    for (const row of ix.rows(reader, compute)) {
      const j = keyOf(k++);
      for (const a of row) squares[j] += (a - mu[j]) * (a - mu[j]);
    }
    const scale = Array.from(
      squares,
      (s, j) => (count[j] > 0 ? Math.sqrt(s / count[j]) : 0) + TASK_NORM_DEFAULTS.eps,
    );
    k = 0;
    for (const row of ix.rows(reader, compute)) {
      const j = keyOf(k++);
      if (count[j] < 2 || equal[j]) yield row.slice().fill(0);
      else yield row.map((a) => (a - mu[j]) / scale[j]);
    }
  } finally {
    reader.close();
  }
}

/** Writes text in ~1 MiB pieces (stdout is synchronous for files and pipes: memory stays bounded). */
class Chunked {
  private parts: string[] = [];
  private size = 0;

  write(text: string): void {
    this.parts.push(text);
    this.size += text.length;
    if (this.size >= 1 << 20) this.flush();
  }

  flush(): void {
    if (this.parts.length > 0) process.stdout.write(this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }
}

/** One row of io.ts table() with the given column widths (the first column left-aligned). */
const tableRow = (cells: readonly string[], widths: readonly number[]): string =>
  cells
    .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
    .join('  ')
    .trimEnd();

/**
 * `credit --in FILE --method M`: the advantages of a file in bounded memory, byte for byte what
 * creditForSpec over the whole batch prints. Pass 1 validates and indexes the file (CreditIndex);
 * the next passes compute one group at a time from its lines read back by offset and stream the rows
 * out (--task-norm: two passes for its mean and std first; text: one for the advantages column's width).
 */
/** Pass 1 over a file (refusing it, or a spec it cannot serve, before any output), and the rows of
 * advantages in file order as a generator of the later passes; what `credit --in` prints. */
export function creditOfFile(
  path: string,
  spec: MethodSpec,
  skipped: SkippedLines | undefined,
): { index: CreditIndex; rows: () => Generator<number[]> } {
  let values: ExactValuesOf | undefined;
  const exact = () => {
    values ??= exactValuesFromSpecs(spec.name === 'exact' ? '--method' : '--values');
    return values;
  };
  // The exact values' refusals (a policy that cannot be rebuilt or has no explicit distribution)
  // depend on the env, the policy and the budget only: one trajectory of each is tried in pass 1, so
  // that the refusal comes before any output (and after the file's own, as before).
  const tried = new Set<string>();
  let refusal: InputError | undefined;
  const probe = (t: Trajectory) => {
    const key = `${t.task.env}|${t.policy}|${t.budget}|${t.revealBudget}`;
    if (refusal !== undefined || tried.has(key) || lacksOracle(t)) return;
    tried.add(key);
    try {
      exact()(t);
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      refusal = e;
    }
  };
  const ix = new CreditIndex(path, spec, skipped, needsOracle(spec) ? probe : undefined);
  if (ix.noOracle !== undefined) throw withoutOracle(spec, ix.noOracle);
  if (refusal !== undefined) throw refusal;
  return { index: ix, rows: () => creditRows(ix, path, spec, exact) };
}

function creditFile(flags: CreditFlags, path: string, spec: MethodSpec): void {
  const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
  const { index: ix, rows } = creditOfFile(path, spec, skipped);
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
  const widths = [...ix.widths, width];
  if (skipped && skipped.count > 0) warn(skipped.note(path));
  const c = ix.counts;
  w.write(
    `${spec.label}: ${ix.n} trajectories in ${c.groups} groups (${c.dead} dead: ${c.allFail} all-fail, ${c.allSucceed} all-succeed)\n`,
  );
  w.write(`${tableRow(['id', 'R', 'turns', 'advantages'], widths)}\n`);
  w.write(`${widths.map((x) => '-'.repeat(x)).join('  ')}\n`);
  const reader = new LineReader(path, '--in');
  try {
    let k = 0;
    for (const row of rows()) {
      const t = parseTrajectoryLine(reader.read(ix.offsets[k], ix.bytes[k]), `${path}:${ix.numbers[k]}`);
      k++;
      w.write(
        `${tableRow([t.id, String(t.outcome.return), String(t.turns.length), preview(row)], widths)}\n`,
      );
    }
  } finally {
    reader.close();
  }
  w.flush();
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
