// What `turnwise compare` measures that recorded trajectories cannot show — step quality at the same
// states, recovery from injected errors, likelihood ratios — measured for two runs on their saved
// policies, by the library call `turnwise compare` makes (eval/compare.ts), on demand:
//   GET /api/compare/diagnostics?a=&b=&tasks=&samples=&T=&states=&actions=&continuations=&seed=
// Loading a policy and rolling it out needs the env registry and the policy loaders, which this layer
// does not import: the composition layer hands them in (`PolicyDiagnostics`, studies/ui-policies.ts),
// and runs each measurement on a worker thread, so the server answers other requests meanwhile.
// Measurements run one at a time (the machine's cores are the reader's), and each answer is kept for the
// server's life per (runs, parameters, versions of the two policy files): a policy rewritten by a live
// run is measured again. Nothing is written: the policies are read, the episodes played in memory.
import { InputError } from '../core/errors.ts';
import type { EnvConfig } from '../core/types.ts';
import type { CompareReport } from '../eval/compare.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import type { FoundRun } from './runs.ts';
import { largestBudget, NO_SPACES } from './trajectories.ts';

/** The sizes of one measurement, as `turnwise compare` takes them (its flags of the same names). */
export interface DiagnosticsParams {
  /** Tasks (seeds seed … seed + tasks − 1) and samples per task of the fresh episodes. */
  tasks: number;
  samples: number;
  /** K of Pass@(K,T): 1, 2, 4 … up to the samples. */
  K: number[];
  /** The one budget of the fresh episodes. */
  T: number[];
  states: number;
  actions: number;
  continuations: number;
  seed: number;
}

/** What the worker is handed: two run directories with their ids, the env, the sizes. */
export interface DiagnosticsJob extends DiagnosticsParams {
  a: { id: string; dir: string };
  b: { id: string; dir: string };
  env: EnvConfig;
}

/** A measurement: the report `turnwise compare --json` prints (policies named by their runs), why it
 * could not be had (a policy its loader refuses), or an error no input explains. */
export type DiagnosticsResult = { report: CompareReport } | { reason: string } | { error: string };

/** The composition layer's side: the saved policy of a run directory, and the measurement itself. */
export interface PolicyDiagnostics {
  /** The version of a directory's saved policy (it changes when the file is rewritten), or why it has
   * none, in a few words. */
  policyOf(dir: string): { version: string } | { reason: string };
  /** `turnwise compare`'s library call on the two saved policies, off this thread. */
  measure(job: DiagnosticsJob): Promise<DiagnosticsResult>;
  /** Stops a measurement under way (the server is closing). */
  close(): Promise<void>;
}

export interface DiagnosticsAnswer {
  a: string;
  b: string;
  /** The sizes used (defaults filled in) and the runs' env; resamples of the bootstrap intervals. */
  params: (DiagnosticsParams & { env: EnvConfig; resamples: number }) | null;
  available: boolean;
  /** Why nothing was measured (available false), in one line. */
  reason: string | null;
  report: CompareReport | null;
  /** Seconds the measurement took (a kept answer repeats them). */
  seconds: number | null;
}

/** The dashboard's default sizes: a quarter or less of `turnwise compare`'s (tasks 16, samples 64,
 * states 200, actions 16, continuations 8), which are the most it takes. */
export const DIAGNOSTICS_DEFAULTS = {
  tasks: 8,
  samples: 8,
  states: 50,
  actions: 8,
  continuations: 4,
  seed: 0,
};
export const DIAGNOSTICS_MAX = { tasks: 16, samples: 64, states: 200, actions: 16, continuations: 8 };
const MAX_T = 1000;
/** `turnwise compare`'s bootstrap resamples (its --resamples default), here fixed. */
const RESAMPLES = 2000;
/** Answers kept (each a few KB); the oldest goes first. */
const KEPT = 256;
export const DIAGNOSTICS_PARAMS = [
  'a',
  'b',
  'tasks',
  'samples',
  'T',
  'states',
  'actions',
  'continuations',
  'seed',
];

function bounded(name: string, raw: string | undefined, max: number, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max)
    throw new InputError(name, raw, `expected an integer from 1 to ${max}`);
  return Number(raw);
}

/** An env configuration as one string, its keys sorted at every depth (two runs' envs compared). */
function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(',')}]`;
  if (x !== null && typeof x === 'object')
    return `{${Object.keys(x)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((x as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(x);
}

const envLine = (e: EnvConfig) =>
  `${e.env} ${Object.entries(e.params)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ')}`.trim();

/** The sizes of a query, defaults filled in and every value checked; T undefined when not given. */
function paramsOf(q: Record<string, string>): Omit<DiagnosticsParams, 'T'> & { T: number[] | undefined } {
  const d = DIAGNOSTICS_DEFAULTS;
  const m = DIAGNOSTICS_MAX;
  const samples = bounded('samples', q.samples, m.samples, d.samples);
  const K: number[] = [];
  for (let k = 1; k <= samples; k *= 2) K.push(k);
  if (q.seed !== undefined && (!/^\d+$/.test(q.seed) || !Number.isSafeInteger(Number(q.seed))))
    throw new InputError('seed', q.seed, 'expected an integer ≥ 0');
  return {
    tasks: bounded('tasks', q.tasks, m.tasks, d.tasks),
    samples,
    K,
    T: q.T === undefined ? undefined : [bounded('T', q.T, MAX_T, 0)],
    states: bounded('states', q.states, m.states, d.states),
    actions: bounded('actions', q.actions, m.actions, d.actions),
    continuations: bounded('continuations', q.continuations, m.continuations, d.continuations),
    seed: q.seed === undefined ? d.seed : Number(q.seed),
  };
}

/** The largest budget both runs played (neither policy is asked to play longer than it was). */
function sharedBudget(a: FoundRun, b: FoundRun, spacesOf: SpacesOf): number {
  const known = [a, b]
    .map((r) => (r.source === null ? undefined : largestBudget(r.source, spacesOf)))
    .filter((x): x is number => x !== undefined);
  if (known.length === 0)
    throw InputError.raw('T', 'the runs record no episodes to take their budget from; give T=');
  return Math.min(MAX_T, ...known);
}

/** Why a run has no saved policy to measure, or its directory and the policy's version. */
function policyOf(
  run: FoundRun,
  p: PolicyDiagnostics,
): { dir: string; version: string } | { reason: string } {
  const id = JSON.stringify(run.info.id);
  if (run.dir === null)
    return {
      reason: `run ${id} is a ${run.info.kind === 'file' ? 'trajectory file' : 'run of a store file'}: it holds no policy`,
    };
  const found = p.policyOf(run.dir);
  return 'reason' in found
    ? { reason: `run ${id} (${run.info.kind}) ${found.reason}` }
    : { dir: run.dir, ...found };
}

/** The measurements of one server: kept answers, and the one under way before the next starts. */
export class Diagnostics {
  private readonly kept = new Map<string, Promise<DiagnosticsAnswer>>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly policies: PolicyDiagnostics | undefined,
    private readonly spacesOf: SpacesOf = NO_SPACES,
  ) {}

  /** The answer for two runs and a query (its parameters checked: InputError names a bad one). */
  answer(a: FoundRun, b: FoundRun, q: Record<string, string>): Promise<DiagnosticsAnswer> {
    const asked = paramsOf(q);
    const none = (reason: string): Promise<DiagnosticsAnswer> =>
      Promise.resolve({
        a: a.info.id,
        b: b.info.id,
        params: null,
        available: false,
        reason,
        report: null,
        seconds: null,
      });
    if (this.policies === undefined) return none('this server was started without the policy loaders');
    const pa = policyOf(a, this.policies);
    const pb = policyOf(b, this.policies);
    if ('reason' in pa) return none(pa.reason);
    if ('reason' in pb) return none(pb.reason);
    const [ea, eb] = [a.info.env, b.info.env];
    if (ea === null || eb === null)
      return none(`run ${JSON.stringify((ea === null ? a : b).info.id)} records no env`);
    const env: EnvConfig = { env: ea.env, params: (ea.params ?? {}) as Record<string, unknown> };
    const envB: EnvConfig = { env: eb.env, params: (eb.params ?? {}) as Record<string, unknown> };
    if (canonical(env) !== canonical(envB))
      return none(`the runs are on different envs (A ${envLine(env)}, B ${envLine(envB)})`);
    const params: DiagnosticsParams = { ...asked, T: asked.T ?? [sharedBudget(a, b, this.spacesOf)] };
    const key = canonical([a.info.id, b.info.id, params, env, pa.version, pb.version]);
    const kept = this.kept.get(key);
    if (kept !== undefined) return kept;
    const job: DiagnosticsJob = {
      ...params,
      a: { id: a.info.id, dir: pa.dir },
      b: { id: b.info.id, dir: pb.dir },
      env,
    };
    const measured = this.run(job).then(({ result, seconds }): DiagnosticsAnswer => {
      if ('error' in result) throw new Error(result.error);
      const reason = 'reason' in result ? result.reason : null;
      return {
        a: a.info.id,
        b: b.info.id,
        params: reason === null ? { ...params, env, resamples: RESAMPLES } : null,
        available: reason === null,
        reason,
        report: 'report' in result ? result.report : null,
        seconds: reason === null ? seconds : null,
      };
    });
    this.kept.set(key, measured);
    // A failure is not kept: the next request tries again.
    measured.catch(() => this.kept.delete(key));
    if (this.kept.size > KEPT) this.kept.delete(this.kept.keys().next().value as string);
    return measured;
  }

  /** One measurement after those before it. */
  private run(job: DiagnosticsJob): Promise<{ result: DiagnosticsResult; seconds: number }> {
    const policies = this.policies!;
    const next = this.queue.then(async () => {
      const t0 = performance.now();
      const result = await policies.measure(job);
      return { result, seconds: (performance.now() - t0) / 1000 };
    });
    this.queue = next.catch(() => {});
    return next;
  }

  close(): Promise<void> {
    return this.policies?.close() ?? Promise.resolve();
  }
}
