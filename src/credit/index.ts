// The registry of credit-assignment methods: name → estimator with typed options, the string parameters
// the CLI and method specs may set (`gae:lambda=0,values=zero`), and the batch runner that groups a
// batch by task, calls a method per group, puts the rows back in batch order and optionally applies
// per-task normalisation. train/ calls creditBatch; the CLI goes through parseMethodSpec first.
import type { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { parseField } from '../core/params.ts';
import type { Trajectory } from '../core/types.ts';
import { type ClueOptions, clue } from './clue.ts';
import type { Advantages } from './common.ts';
import { type DiscountedOptions, discounted } from './discounted.ts';
import { type DrGrpoOptions, drgrpo } from './drgrpo.ts';
import { type GaeOptions, gae, type ValueFn } from './gae.ts';
import { type GigpoOptions, gigpo } from './gigpo.ts';
import { groupByTask } from './groups.ts';
import { type GrpoOptions, grpo } from './grpo.ts';
import { type OutcomeOptions, outcome } from './outcome.ts';
import { CREDIT_PARAM_NAMES, METHOD_PARAMS, SPEC_PARAMS, type ValueSource } from './params.ts';
import { type ReverseTurnOptions, reverseTurn } from './reverse-turn.ts';
import { type RlooOptions, rloo } from './rloo.ts';
import { type RtpoOptions, rtpo } from './rtpo.ts';
import { type TaskNormOptions, taskNorm } from './task-norm.ts';
import { type TurnLevelOptions, turnLevel } from './turn-level.ts';

export * from './clue.ts';
export * from './common.ts';
export * from './discounted.ts';
export * from './drgrpo.ts';
export * from './fidelity.ts';
export * from './file.ts';
export * from './gae.ts';
export * from './gigpo.ts';
export * from './groups.ts';
export * from './grpo.ts';
export * from './outcome.ts';
export * from './params.ts';
export * from './reverse-turn.ts';
export * from './rloo.ts';
export * from './rtpo.ts';
export * from './task-norm.ts';
export * from './turn-level.ts';

export interface MethodOptions {
  outcome: OutcomeOptions;
  discounted: DiscountedOptions;
  gae: GaeOptions;
  grpo: GrpoOptions;
  drgrpo: DrGrpoOptions;
  rloo: RlooOptions;
  gigpo: GigpoOptions;
  'turn-level': TurnLevelOptions;
  'reverse-turn': ReverseTurnOptions;
  clue: ClueOptions;
  rtpo: RtpoOptions;
}

export type MethodName = keyof MethodOptions;

/** A group (the G samples of one task) → one row of per-turn advantages per trajectory. */
export type CreditFn<O> = (group: readonly Trajectory[], options: O) => Advantages;

/** Parameters settable from strings (CLI flags, method specs). `values` picks GAE's value source and is
 * resolved by the caller (it may need an oracle); `task-norm` is the post-step every method accepts. */
export type ParamName =
  | 'gamma'
  | 'lambda'
  | 'omega'
  | 'std'
  | 'eps'
  | 'crest'
  | 'penalty'
  | 'cbar'
  | 'values'
  | 'task-norm';

export interface ParsedParams {
  gamma?: number;
  lambda?: number;
  omega?: number;
  std?: boolean;
  eps?: number;
  crest?: boolean;
  penalty?: number;
  cbar?: number;
  values?: ValueSource;
  taskNorm?: 'env' | 'task';
}

type Parser = (raw: string, field: string) => ParsedParams[keyof ParsedParams];

const PARAM_KEYS: Record<ParamName, keyof ParsedParams> = {
  gamma: 'gamma',
  lambda: 'lambda',
  omega: 'omega',
  std: 'std',
  eps: 'eps',
  crest: 'crest',
  penalty: 'penalty',
  cbar: 'cbar',
  values: 'values',
  'task-norm': 'taskNorm',
};

export interface MethodEntry<O> {
  name: string;
  summary: string;
  fn: CreditFn<O>;
  /** The declaration of the parameters the method reads, with their defaults (credit/params.ts). */
  options: z.ZodObject;
  /** The string parameters of a spec, parsed and checked by those declarations (plus `task-norm`, and
   * `values` for gae). */
  params: Partial<Record<ParamName, Parser>>;
}

/** A method's registry entry: its declared options become its string parameters. */
function entry<M extends MethodName>(
  name: M,
  summary: string,
  fn: CreditFn<MethodOptions[M]>,
  extra: readonly (keyof typeof SPEC_PARAMS)[] = [],
): MethodEntry<MethodOptions[M]> {
  const options: z.ZodObject = METHOD_PARAMS[name];
  const fields: [string, z.ZodType][] = [
    ...Object.entries(options.shape as Record<string, z.ZodType>),
    ...[...extra, 'task-norm' as const].map((k): [string, z.ZodType] => [k, SPEC_PARAMS[k]]),
  ];
  const params: Partial<Record<ParamName, Parser>> = {};
  for (const [key, field] of fields)
    params[key as ParamName] = (raw, f) => parseField(field, raw, f) as ParsedParams[keyof ParsedParams];
  return { name, summary, fn, options, params };
}

export const METHODS: { [M in MethodName]: MethodEntry<MethodOptions[M]> } = {
  outcome: entry('outcome', 'every turn gets R_i', outcome),
  discounted: entry('discounted', 'G_t = Σ γ^{k−t} r_k (γ 0.99)', discounted),
  gae: entry('gae', 'GAE over turns (γ 0.99, λ 0.95) with values from --values', gae, ['values']),
  grpo: entry('grpo', '(R_i − mean)/(population std + ε)', grpo),
  drgrpo: entry('drgrpo', 'R_i − mean', drgrpo),
  rloo: entry('rloo', 'R_i − mean of the others', rloo),
  gigpo: entry('gigpo', 'A^E + ω·A^S over anchor states (γ 0.95, ω 1)', gigpo),
  'turn-level': entry(
    'turn-level',
    'A^O + λ·(turn reward normalised per turn index); crest: the outcome sets the sign',
    turnLevel,
  ),
  'reverse-turn': entry(
    'reverse-turn',
    'backward discounted return normalised per turn index (γ 0.95)',
    reverseTurn,
  ),
  clue: entry(
    'clue',
    'search: λ·(new clues − ρ·[none])/clues needed per turn, the outcome advantage on the answer turn',
    clue,
  ),
  rtpo: entry(
    'rtpo',
    'backward return, later turns weighted by min(c̄, π_θ/μ), normalised per turn index (γ 0.95, c̄ 1)',
    rtpo,
  ),
};

export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];

/** The methods whose baseline is the other samples of the task's group: a group of one gives them no
 * contrast (every advantage 0), so training and `credit fidelity` refuse group size 1 with them. */
export const GROUP_BASELINE_METHODS: readonly MethodName[] = [
  'grpo',
  'drgrpo',
  'rloo',
  'gigpo',
  'turn-level',
  'reverse-turn',
  'rtpo',
];

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}

/**
 * Runs a method on a batch: groups by identical task, one call per group, rows back in batch order.
 * With `taskNorm`, the rows are then re-standardised per task (see task-norm.ts).
 */
export function creditBatch<M extends MethodName>(
  batch: readonly Trajectory[],
  method: M,
  options: MethodOptions[M],
  post: { taskNorm?: TaskNormOptions } = {},
): Advantages {
  const fn: CreditFn<MethodOptions[M]> = METHODS[method].fn;
  const out: Advantages = new Array(batch.length);
  for (const g of groupByTask(batch)) {
    const rows = fn(
      g.indices.map((i) => batch[i]),
      options,
    );
    g.indices.forEach((i, k) => {
      out[i] = rows[k];
    });
  }
  return post.taskNorm === undefined ? out : taskNorm(batch, out, post.taskNorm);
}

/** A method as named on the command line, with its parsed parameters. */
export interface MethodSpec<N extends string = string> {
  /** The spec as written (`gae:lambda=0`), used as the label of results. */
  label: string;
  name: N;
  params: ParsedParams;
}

/**
 * Parses `name[:key=value,…]`. `extra` names (the fidelity study's `exact`, `shuffled`) are accepted
 * with `extraParams` as their only parameters.
 */
export function parseMethodSpec(
  spec: string,
  field = '--method',
  extra: readonly string[] = [],
  extraParams: Partial<Record<ParamName, Parser>> = {},
): MethodSpec {
  const colon = spec.indexOf(':');
  const name = (colon < 0 ? spec : spec.slice(0, colon)).trim();
  const allowedNames = [...METHOD_NAMES, ...extra];
  if (!allowedNames.includes(name))
    throw new InputError(field, spec, `expected one of: ${allowedNames.join(', ')}`);
  const parsers = isMethodName(name) ? METHODS[name].params : extraParams;
  const params: ParsedParams = {};
  if (colon >= 0) {
    for (const part of spec.slice(colon + 1).split(',')) {
      const eq = part.indexOf('=');
      if (eq <= 0) throw new InputError(field, spec, 'parameters are key=value pairs separated by commas');
      const key = part.slice(0, eq).trim();
      setParam(params, name, parsers, key, part.slice(eq + 1).trim(), `${field} ${name}.${key}`, spec, field);
    }
  }
  return { label: spec.trim(), name, params };
}

function takes(parsers: Partial<Record<ParamName, Parser>>): string {
  const keys = Object.keys(parsers);
  return keys.length > 0 ? `takes ${keys.join(', ')}` : 'takes no parameters';
}

function setParam(
  params: ParsedParams,
  name: string,
  parsers: Partial<Record<ParamName, Parser>>,
  key: string,
  raw: string,
  valueField: string,
  spec: string,
  specField: string,
): void {
  const parse = Object.hasOwn(parsers, key) ? parsers[key as ParamName] : undefined;
  if (parse === undefined) throw new InputError(specField, spec, `${name} ${takes(parsers)}`);
  const k = PARAM_KEYS[key as ParamName];
  if (params[k] !== undefined) throw new InputError(specField, spec, `parameter ${key} is given twice`);
  (params as Record<string, unknown>)[k] = parse(raw, valueField);
}

/** Whether a method (or an extra name with `extraParams`) reads a parameter. */
export function methodTakes(
  name: string,
  param: ParamName,
  extraParams: Partial<Record<ParamName, Parser>> = {},
): boolean {
  const parsers = isMethodName(name) ? METHODS[name].params : extraParams;
  return Object.hasOwn(parsers, param);
}

/**
 * Applies command-line flags (`--gamma 0.9` → gamma) to specs: a flag goes to every spec whose method
 * reads it, unless the spec sets the parameter itself. A flag that no spec reads is refused rather than
 * silently ignored.
 */
export function applyFlags(
  specs: readonly MethodSpec[],
  flags: Partial<Record<ParamName, string>>,
  extraParams: Partial<Record<ParamName, Parser>> = {},
): MethodSpec[] {
  const out = specs.map((s) => ({ ...s, params: { ...s.params } }));
  for (const [param, raw] of Object.entries(flags) as [ParamName, string | undefined][]) {
    if (raw === undefined) continue;
    const readers = out.filter((s) => methodTakes(s.name, param, extraParams));
    if (readers.length === 0) {
      const names = [...new Set(out.map((s) => s.name))].join(', ');
      throw new InputError(`--${param}`, raw, `not a parameter of ${names}`);
    }
    for (const s of readers) {
      const k = PARAM_KEYS[param];
      if (s.params[k] !== undefined) continue;
      const parsers = isMethodName(s.name) ? METHODS[s.name].params : extraParams;
      (s.params as Record<string, unknown>)[k] = parsers[param]!(raw, `--${param}`);
    }
  }
  return out;
}

/** Splits a `--methods` list: commas separate methods, and a `key=value` part without a colon
 * continues the previous method's parameters (`exact,gae:lambda=0,values=zero,grpo`). */
export function splitMethodList(list: string, field = '--methods'): string[] {
  const specs: string[] = [];
  for (const raw of list.split(',')) {
    const part = raw.trim();
    if (part === '') throw new InputError(field, list, 'expected comma-separated methods');
    if (part.includes('=') && !part.includes(':') && specs.length > 0) specs[specs.length - 1] += `,${part}`;
    else specs.push(part);
  }
  return specs;
}

/** The estimator parameters a spec may set (GAE's value source and --task-norm are not options). */
type Settable = Omit<ParsedParams, 'values' | 'taskNorm'>;

/** The parameters of `p` that method `m` reads (its declaration, credit/params.ts), those given only. */
function declared(m: MethodName, p: Settable): Settable {
  const out: Settable = {};
  const set = <K extends keyof Settable>(k: K) => {
    if (p[k] !== undefined && Object.hasOwn(METHOD_PARAMS[m].shape, k)) out[k] = p[k];
  };
  for (const k of CREDIT_PARAM_NAMES) set(k);
  return out;
}

/** Per method, its typed options from the parsed parameters (GAE's values must be resolved). */
const OPTIONS: { [M in MethodName]: (p: Settable, values?: ValueFn) => MethodOptions[M] } = {
  outcome: () => ({}),
  discounted: (p) => declared('discounted', p),
  gae: (p, values) => {
    if (values === undefined) throw new RangeError('gae needs a ValueFn');
    return { ...declared('gae', p), values };
  },
  grpo: (p) => declared('grpo', p),
  drgrpo: () => ({}),
  rloo: () => ({}),
  gigpo: (p) => declared('gigpo', p),
  'turn-level': (p) => declared('turn-level', p),
  'reverse-turn': (p) => declared('reverse-turn', p),
  clue: (p) => declared('clue', p),
  rtpo: (p) => declared('rtpo', p),
};

/** The typed options of a parsed spec; GAE's `values` must be resolved by the caller. */
export function methodOptions<M extends MethodName>(
  name: M,
  params: ParsedParams,
  values?: ValueFn,
): MethodOptions[M] {
  const { values: _source, taskNorm: _post, ...rest } = params;
  return OPTIONS[name](rest, values);
}
