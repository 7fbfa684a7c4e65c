// `turnwise eval` as a library call: roll a policy out on tasks × samples, count successes within each
// budget T, and report Pass@(K,T) with bootstrap intervals over tasks (docs/methods.md §5).
//
// Prefix mode runs each sample once at T_max and reads c(T) off firstSuccessTurn ≤ T; that is only
// valid when the policy does not see its budget (its first T turns are then the same whatever T is).
// Separate mode runs every T on its own with the budget revealed to policies that use it. Both modes
// seed episode (task, sample) the same way at every T (common random numbers), so for a budget-blind
// policy separate mode reproduces prefix mode exactly: a check of the prefix argument, not an
// approximation.
import { InputError } from '../core/errors.ts';
import type { EnvFactory, Policy, Task, Trajectory } from '../core/types.ts';
import { type BatchOptions, rollout } from '../rollout/batch.ts';
import { episodeSeeds } from '../rollout/episode.ts';
import { bootstrapPassKT, DEFAULT_RESAMPLES, type Interval } from './bootstrap.ts';
import { type Failures, FailureTally } from './failures.ts';
import { HackCount, type HackFigures } from './hacking.ts';
import { InvalidCount } from './invalid.ts';
import { type OwnLikelihood, OwnLikelihoodCount } from './own-likelihood.ts';
import { checkKT, countsFromFirstSuccess, type PassCounts, passKT } from './passkt.ts';
import type { Recorded } from './states.ts';
import { ToolEffectCount, type ToolEffectFigures } from './tool-effects.ts';

type AnyPolicy = Policy<unknown, unknown>;

export type PassMode = 'prefix' | 'separate';
export const PASS_MODES: readonly PassMode[] = ['prefix', 'separate'];

/** The valid mode for a policy: prefix for budget-blind policies, separate for budget-aware ones. */
export function resolveMode(policy: AnyPolicy, requested?: PassMode, field = '--mode'): PassMode {
  if (requested === 'prefix' && policy.budgetAware) {
    throw new InputError(
      field,
      'prefix',
      `policy ${policy.id} sees the turns left, so a run at T_max does not show how it plays under a smaller T; use --mode separate (or a budget-blind policy such as oracle:horizon=H)`,
    );
  }
  return requested ?? (policy.budgetAware ? 'separate' : 'prefix');
}

/** Budgets and K values: non-empty, strictly increasing integers ≥ 1. */
export function checkIncreasing(values: readonly number[], field: string): readonly number[] {
  const ok =
    values.length > 0 &&
    values.every((v, i) => Number.isInteger(v) && v >= 1 && (i === 0 || v > values[i - 1]));
  if (!ok) throw new InputError(field, values.join(','), 'expected strictly increasing integers ≥ 1');
  return values;
}

export interface PassRunOptions {
  /** Where the tasks' envs come from (the registry, or a user's factory). */
  envs: EnvFactory;
  tasks: readonly Task[];
  /** n: samples per task. */
  samples: number;
  /** Budgets, increasing. */
  T: readonly number[];
  policy: AnyPolicy;
  mode?: PassMode;
  runSeed: number;
  concurrency?: number;
  /** Keep the trajectories of the run at T_max, with their env seeds (for the other diagnostics):
   * all of them, or those whose sample index (0 … samples − 1 per task) passes the test. */
  keep?: boolean | ((sample: number) => boolean);
  /** Called after each chunk of episodes (the library never prints). */
  onProgress?: (done: number, total: number) => void;
  /** Where the batches run: rollout() in this process (the default), or a queue's runner
   * (rollout/queue.ts) — the same trajectories either way. */
  rollout?: (opts: BatchOptions) => Trajectory[] | Promise<Trajectory[]>;
}

export interface PassRun {
  mode: PassMode;
  counts: PassCounts;
  /** The run at T_max, task-major (only with `keep`, and only the samples it keeps). */
  atTmax: Recorded[];
  /** How every episode of the run at T_max ended (eval/failures), kept or not. */
  failures: Failures;
  /** Invalid outputs and the policy's own likelihood over the run at T_max (eval/invalid.ts,
   * eval/own-likelihood.ts). */
  invalid: InvalidCount;
  /** The code env's reward-hacking figures over the run at T_max (eval/hacking.ts). */
  hacking: HackCount;
  /** The tools env's calls, useless calls and side effects per episode over the run at T_max
   * (eval/tool-effects.ts). */
  toolEffects: ToolEffectCount;
  own: OwnLikelihoodCount;
}

/** Episodes per rollout call: tasks are rolled out in chunks so that memory stays bounded. */
const CHUNK_EPISODES = 4096;

/** Success counts c(T) per task for every T, in the valid (or requested) mode. */
export async function runPassCounts(o: PassRunOptions): Promise<PassRun> {
  const T = checkIncreasing(o.T, '--T');
  const mode = resolveMode(o.policy, o.mode);
  const { tasks, samples, policy } = o;
  if (tasks.length === 0) throw new InputError('--tasks', 0, 'expected at least one task');
  const nT = T.length;
  const Tmax = T[nT - 1];
  const runs = mode === 'prefix' ? [Tmax] : T;
  const total = tasks.length * samples * runs.length;
  const chunk = Math.max(1, Math.floor(CHUNK_EPISODES / samples));
  const first = new Int32Array(mode === 'prefix' ? tasks.length * samples : 0);
  const c = new Int32Array(tasks.length * nT);
  const atTmax: Recorded[] = [];
  const keep = typeof o.keep === 'function' ? o.keep : () => o.keep === true;
  const tally = new FailureTally();
  const invalid = new InvalidCount();
  const own = new OwnLikelihoodCount();
  const hacking = new HackCount();
  const toolEffects = new ToolEffectCount();
  const run = o.rollout ?? rollout;
  let done = 0;
  for (let j = 0; j < runs.length; j++) {
    const budget = runs[j];
    for (let t0 = 0; t0 < tasks.length; t0 += chunk) {
      const part = tasks.slice(t0, t0 + chunk);
      const trajectories: Trajectory[] = await run({
        tasks: part,
        samples,
        budget,
        revealBudget: mode === 'prefix' ? false : policy.budgetAware,
        runSeed: o.runSeed,
        policy,
        concurrency: o.concurrency,
        makeEnv: o.envs.make,
      });
      trajectories.forEach((tr, e) => {
        const i = t0 + Math.floor(e / samples);
        const s = e % samples;
        if (mode === 'prefix') first[i * samples + s] = tr.outcome.firstSuccessTurn ?? 0;
        else if (tr.outcome.success) c[i * nT + j]++;
        if (budget === Tmax) {
          invalid.add(tr);
          own.add(tr);
          hacking.add(tr);
          toolEffects.add(tr);
          tally.add(tr.outcome);
          if (keep(s))
            atTmax.push({ trajectory: tr, envSeed: episodeSeeds(o.runSeed, tr.task.seed, s).envSeed });
        }
      });
      done += trajectories.length;
      o.onProgress?.(done, total);
    }
  }
  const counts =
    mode === 'prefix'
      ? countsFromFirstSuccess(first, samples, T)
      : { T, n: new Int32Array(tasks.length).fill(samples), c };
  return { mode, counts, atTmax, failures: tally.result(), invalid, own, hacking, toolEffects };
}

export interface PerTask {
  task: Task;
  n: number;
  /** Successes within each budget, keyed by T. */
  successWithin: Record<string, number>;
}

export function perTask(tasks: readonly Task[], counts: PassCounts): PerTask[] {
  const nT = counts.T.length;
  return tasks.map((task, i) => ({
    task,
    n: counts.n[i],
    successWithin: Object.fromEntries(counts.T.map((t, j) => [String(t), counts.c[i * nT + j]])),
  }));
}

export interface EvalOptions extends Omit<PassRunOptions, 'keep'> {
  K: readonly number[];
  /** Bootstrap resamples (default 2000). */
  resamples?: number;
}

/** What `turnwise eval --json` prints (rows of passKT and ci95 are K, columns T). */
export interface EvalReport {
  K: number[];
  T: number[];
  mode: PassMode;
  passKT: number[][];
  ci95: Interval[][];
  perTask: PerTask[];
  /** A policy that writes text (its turns carry a trace), over the run at T_max: the fraction of its
   * turns whose output did not parse (eval/invalid.ts) with the counts, and its NLL of its own tokens
   * (eval/own-likelihood.ts; absent when its turns carry no log-probs). */
  invalidRate?: number;
  invalid?: { count: number; turns: number };
  likelihood?: OwnLikelihood;
  /** The code env under a visible reward (or its candidate variant), over the run at T_max: visible and
   * hidden pass rates of the submitted programs, their gap, the detector's rate (eval/hacking.ts). */
  hacking?: HackFigures;
  /** The tools env with a reward-hacking param set, over the run at T_max: calls, useless calls and
   * side effects per episode (eval/tool-effects.ts). */
  toolEffects?: ToolEffectFigures;
}

export async function evaluate(o: EvalOptions): Promise<EvalReport> {
  const K = checkIncreasing(o.K, '--K');
  checkIncreasing(o.T, '--T');
  if (K[K.length - 1] > o.samples) {
    throw new InputError('--K', K.join(','), `each K must be ≤ --samples (${o.samples})`);
  }
  const run = await runPassCounts(o);
  checkKT(K, run.counts);
  const { ci } = bootstrapPassKT([run.counts], K, {
    resamples: o.resamples ?? DEFAULT_RESAMPLES,
    seed: o.runSeed,
  });
  return {
    K: [...K],
    T: [...o.T],
    mode: run.mode,
    passKT: passKT(run.counts, K),
    ci95: ci[0],
    perTask: perTask(o.tasks, run.counts),
    ...textFigures(run),
    ...hackingOf(run),
    ...toolEffectsOf(run),
  };
}

function toolEffectsOf(run: PassRun): { toolEffects?: ToolEffectFigures } {
  const e = run.toolEffects.result();
  return e === null ? {} : { toolEffects: e };
}

function hackingOf(run: PassRun): { hacking?: HackFigures } {
  const h = run.hacking.result();
  return h === null ? {} : { hacking: h };
}

/** EvalReport's figures of a text policy; none for a policy that writes no text. */
function textFigures({ invalid, own }: PassRun): Partial<EvalReport> {
  if (!invalid.text) return {};
  const likelihood = own.result();
  return {
    ...invalid.report(),
    ...(likelihood === undefined ? {} : { likelihood }),
  };
}
