// Reading flags: every value is checked and refused with a one-line InputError naming the flag.
import type { Command } from 'commander';
import { InputError } from '../core/errors.ts';
import { INTEGER_TEXT } from '../core/params.ts';
import { checkInSpaces } from '../core/policy.ts';
import type { EnvConfig, Task, Trajectory } from '../core/types.ts';
import { ENV_IDS, envConfig, envSpec } from '../envs/index.ts';

/** An integer flag: INTEGER_TEXT (decimal digits; `1e3`, `10.0`, `0x10` are refused, as in `--set`
 * and every config flag) within [min, max]. */
export function int(
  flag: string,
  raw: unknown,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const s = String(raw).trim();
  const x = Number(s);
  if (!INTEGER_TEXT.test(s) || !Number.isSafeInteger(x) || x < min || x > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER
        ? min === Number.MIN_SAFE_INTEGER
          ? 'an integer'
          : `an integer ≥ ${min}`
        : `an integer from ${min} to ${max}`;
    throw new InputError(flag, raw, `expected ${range}`);
  }
  return x;
}

/** `--level`: 1, 2, 3 or mixed (sql, code, tools and web levels; search hops); `shown` is the value
 * the refusal names (the flag as given, when `text` was trimmed from it). */
export function level(text: string, shown: unknown = text): 1 | 2 | 3 | 'mixed' {
  if (text !== 'mixed' && !/^[123]$/.test(text))
    throw new InputError('--level', shown, 'expected 1, 2, 3 or mixed');
  return text === 'mixed' ? 'mixed' : (Number(text) as 1 | 2 | 3);
}

export function num(
  flag: string,
  raw: unknown,
  check: (x: number) => boolean = Number.isFinite,
  allowed = 'a number',
): number {
  const s = String(raw).trim();
  const x = Number(s);
  if (s === '' || Number.isNaN(x) || !check(x)) throw new InputError(flag, raw, `expected ${allowed}`);
  return x;
}

export function probability(flag: string, raw: unknown): number {
  return num(flag, raw, (x) => x >= 0 && x <= 1, 'a probability in [0, 1]');
}

/** A comma-separated list of integers, e.g. `--T 10,20,50,100`. */
export function intList(flag: string, raw: unknown, min = 1): number[] {
  const parts = String(raw)
    .split(',')
    .map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) {
    throw new InputError(flag, raw, `expected comma-separated integers ≥ ${min}`);
  }
  return parts.map((p) => {
    const s = Number(p);
    if (!INTEGER_TEXT.test(p) || s < min || !Number.isSafeInteger(s)) {
      throw new InputError(flag, raw, `expected comma-separated integers ≥ ${min}`);
    }
    return s;
  });
}

/** `intList` whose values are all different (`--T 5,5` would measure one budget twice, as two). */
export function distinctIntList(flag: string, raw: unknown, min = 1): number[] {
  const values = intList(flag, raw, min);
  const twice = values.find((v, i) => values.indexOf(v) !== i);
  if (twice !== undefined)
    throw new InputError(flag, raw, `expected distinct integers ≥ ${min} (${twice} is given twice)`);
  return values;
}

export const seed = (raw: unknown): number => int('--seed', raw, 0, 2 ** 53 - 1);

export interface SeedRange {
  /** First seed. */
  start: number;
  /** One past the last seed. */
  end: number;
}

/** `A:B` = the seeds A, A+1, …, B−1 (Python's range), e.g. `--train-seeds 0:5000`. */
export function seedRange(flag: string, raw: unknown): SeedRange {
  const m = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(String(raw));
  const start = m === null ? Number.NaN : Number(m[1]);
  const end = m === null ? Number.NaN : Number(m[2]);
  if (
    !(Number.isSafeInteger(start) && Number.isSafeInteger(end) && end > start && end - start <= 10_000_000)
  ) {
    throw new InputError(
      flag,
      raw,
      'expected A:B with integers 0 ≤ A < B (seeds A to B−1, at most 10,000,000 of them)',
    );
  }
  return { start, end };
}

/** The env flags every command that builds tasks shares. */
export function envOptions(cmd: Command): Command {
  return cmd
    .option('--map <map>', 'FrozenLake map: 4x4, 8x8 or rows such as SFFF,FHFH,FFFH,HFFG (default 4x4)')
    .option('--slippery', 'slippery ice (Gymnasium is_slippery)')
    .option('--success-rate <p>', 'probability of moving the intended way on slippery ice (default 1/3)')
    .option(
      '--fog <R>',
      'FrozenLake fog: only cells within Chebyshev distance R are seen, a cell stays revealed once seen (default 0: no fog)',
    )
    .option('--random', 'a random valid map per task (task seed = --seed + task index)')
    .option('--size <n>', 'side of random maps (default 8, Gymnasium)')
    .option('--p <p>', 'probability that a random cell is frozen (default 0.8)')
    .option(
      '--level <n>',
      'sql, code, tools, web: difficulty 1, 2, 3; search: hops 1, 2, 3; or mixed (default mixed)',
    )
    .option(
      '--domain <d>',
      'sql: shop, school, library; tools: files, bank, tickets, all; code: string, array, arithmetic, parsing; web: shop, booking, admin; or mixed (default mixed)',
    )
    .option(
      '--variant <n>',
      'web: the apps with other labels, widgets, layout and flow order: 0 (canonical, default), any N, or mixed (each task its own)',
    )
    .option('--browser', "web: serve the apps over loopback HTTP and drive them in Debian's chromium")
    .option(
      '--env-params <json>',
      'more env params as a JSON object, under the flags above, e.g. code: {"reward":"visible"} (docs/reward-hacking.md)',
    );
}

export interface EnvFlags {
  map?: string;
  slippery?: boolean;
  successRate?: string;
  fog?: string;
  random?: boolean;
  size?: string;
  p?: string;
  level?: string;
  domain?: string;
  variant?: string;
  browser?: boolean;
  envParams?: string;
}

/** --env-params: a JSON object of env params. */
function envParamsFlag(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new InputError('--env-params', text, 'expected a JSON object, e.g. {"reward":"visible"}');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new InputError('--env-params', text, 'expected a JSON object, e.g. {"reward":"visible"}');
  return v as Record<string, unknown>;
}

export function envConfigFromFlags(
  envId: string,
  flags: EnvFlags,
  base: Readonly<Record<string, unknown>> = {},
): EnvConfig {
  const fromJson = flags.envParams === undefined ? {} : envParamsFlag(flags.envParams);
  const raw: Record<string, unknown> = { ...base, ...fromJson };
  // Rows are joined by commas: an empty row ("SFFF,,FFFG", a trailing comma) is a typo, not a row to drop.
  if (flags.map?.includes(',') && flags.map.split(',').some((row) => row.trim() === ''))
    throw new InputError('--map', flags.map, 'expected rows of S, F, H, G joined by commas, none empty');
  if (flags.map !== undefined) raw.map = flags.map;
  if (flags.slippery) raw.slippery = true;
  if (flags.successRate !== undefined) raw.successRate = probability('--success-rate', flags.successRate);
  if (flags.fog !== undefined) raw.fog = int('--fog', flags.fog, 0, 64);
  if (flags.random) raw.random = true;
  if (flags.size !== undefined) raw.size = int('--size', flags.size, 2, 64);
  if (flags.p !== undefined) raw.p = num('--p', flags.p, (x) => x > 0 && x <= 1, 'a probability in (0, 1]');
  if (flags.level !== undefined) raw.level = level(String(flags.level).trim(), flags.level);
  if (flags.domain !== undefined) raw.domain = flags.domain;
  if (flags.variant !== undefined) {
    const v = flags.variant.trim();
    if (v !== 'mixed' && !(/^\d{1,7}$/.test(v) && Number(v) <= 1_000_000))
      throw new InputError('--variant', flags.variant, 'expected an integer from 0 to 1000000, or mixed');
    raw.variant = v === 'mixed' ? 'mixed' : Number(v);
  }
  if (flags.browser) raw.browser = true;
  // The keys --env-params gave that no flag replaced: an env's refusal of one of them names --env-params.
  const jsonKeys = Object.keys(fromJson).filter((k) => raw[k] === fromJson[k]);
  try {
    return envConfig(envId, raw);
  } catch (e) {
    throw asFlagError(e, envId, raw, jsonKeys);
  }
}

/** Whether any flag of envOptions that sets an env parameter was given (--env itself aside). */
export function envFlagsGiven(flags: EnvFlags): boolean {
  const { map, slippery, successRate, fog, random, size, p, level, domain, variant, browser, envParams } =
    flags;
  return [map, slippery, successRate, fog, random, size, p, level, domain, variant, browser, envParams].some(
    (x) => x !== undefined,
  );
}

/** The env parameters that envOptions' flags set (`successRate` by `--success-rate`, …). */
const ENV_PARAMS = new Set([
  'map',
  'slippery',
  'successRate',
  'fog',
  'random',
  'size',
  'p',
  'level',
  'domain',
  'variant',
  'browser',
]);
const flagName = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * An env's refusal of its parameters names them as config fields (`params.domain`, or `params` for
 * an unknown one); on the command line the user typed a flag, so the line names the flag instead.
 */
function asFlagError(
  e: unknown,
  envId: string,
  raw: Record<string, unknown>,
  jsonKeys: readonly string[],
): unknown {
  if (!(e instanceof InputError)) return e;
  const key = e.field.startsWith('params.') ? e.field.slice('params.'.length).split('.')[0] : undefined;
  if (
    (key !== undefined && jsonKeys.includes(key)) ||
    (e.field === 'params' && jsonKeys.some((k) => e.message.includes(`"${k}"`)))
  )
    return InputError.raw('--env-params', e.message);
  if (key !== undefined && ENV_PARAMS.has(key))
    return InputError.raw(flagName(key), e.message.slice(e.field.length + 2));
  if (e.field === 'params') {
    const unknown = Object.keys(raw).find((k) => ENV_PARAMS.has(k) && e.message.includes(`"${k}"`));
    if (unknown !== undefined)
      return new InputError(flagName(unknown), raw[unknown], `${envId} has no ${flagName(unknown)}`);
  }
  return e;
}

/** For trajectory readers: refuse a line whose observations or actions its (registered) env cannot
 * have; trajectories of envs turnwise does not know are taken as they are. */
export function checkSpacesOfRegistered(t: Trajectory, where: string): void {
  if (!ENV_IDS.includes(t.task.env)) return;
  checkInSpaces(t, envSpec(t.task), where);
}

const FROZENLAKE_SPACES = new Map<string, { observations: number; actions: number } | undefined>();

/** The integer spaces of a registered env's task, for the quick way of store/outcomes.ts (what
 * checkSpacesOfRegistered checks on the whole way). FrozenLake's depend on its params only (the map,
 * or the size of random maps), so they are computed once per params, not once per line. */
export function spacesOfRegistered(task: Task): { observations: number; actions: number } | undefined {
  if (!ENV_IDS.includes(task.env)) return undefined;
  const key = task.env === 'frozenlake' ? JSON.stringify(task.params) : undefined;
  if (key !== undefined && FROZENLAKE_SPACES.has(key)) return FROZENLAKE_SPACES.get(key);
  const spec = envSpec(task);
  const spaces =
    typeof spec.observations === 'number' && typeof spec.actions === 'number'
      ? { observations: spec.observations, actions: spec.actions }
      : undefined;
  if (key !== undefined) FROZENLAKE_SPACES.set(key, spaces);
  return spaces;
}
