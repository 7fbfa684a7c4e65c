// `turnwise compare` as a library call: two policies on the same tasks, every diagnostic of
// docs/methods.md §5 side by side — Pass@(K,T) of each with the paired difference, step quality at the
// same states (normal and error states), recovery from error states, likelihood ratios, failures.
// Both policies run with the same episode seeds (common random numbers): comparing a policy with
// itself gives a difference of exactly 0.
import { InputError } from '../core/errors.ts';
import type { EnvFactory, Policy, Task } from '../core/types.ts';
import { closeEnv } from '../rollout/lockstep.ts';
import { bootstrapPassKT, DEFAULT_RESAMPLES, type Interval } from './bootstrap.ts';
import {
  checkIncreasing,
  type PassMode,
  type PassRunOptions,
  resolveMode,
  runPassCounts,
} from './evaluate.ts';
import { type Failures, failures } from './failures.ts';
import type { HackFigures } from './hacking.ts';
import { type Likelihood, likelihood } from './likelihood.ts';
import { checkKT, passKT } from './passkt.ts';
import { DEFAULT_CONTINUATIONS, type Recovery, recovery } from './recovery.ts';
import { canInjectErrors, collectStates, makeErrorStates, type Recorded } from './states.ts';
import { hasStepProxy, type StepProxy, stepProxy } from './step-proxy.ts';
import { DEFAULT_ACTIONS, type StepQuality, stepQuality } from './step-quality.ts';
import type { ToolEffectFigures } from './tool-effects.ts';

type AnyPolicy = Policy<unknown, unknown>;

export type StatesFrom = 'a' | 'b' | 'both';
export const STATES_FROM: readonly StatesFrom[] = ['a', 'b', 'both'];

export interface CompareOptions {
  envs: EnvFactory;
  tasks: readonly Task[];
  samples: number;
  K: readonly number[];
  T: readonly number[];
  a: AnyPolicy;
  b: AnyPolicy;
  /** Applies to both policies; by default each gets its valid mode. */
  mode?: PassMode;
  runSeed: number;
  /** States for step quality (normal and error states each; default 200). */
  states?: number;
  statesFrom?: StatesFrom;
  /** M: actions each policy draws per state (default 16). */
  actions?: number;
  /** Continuations per error state and policy (default 8). */
  continuations?: number;
  resamples?: number;
  concurrency?: number;
  onProgress?: (stage: string, done: number, total: number) => void;
  /** Where each policy's Pass@(K,T) rollouts run (default: in this process); the diagnostics on their
   * states (step quality, recovery, likelihood) run here. */
  rollouts?: { a: PassRunOptions['rollout']; b: PassRunOptions['rollout'] };
}

export interface PassSide {
  policy: string;
  mode: PassMode;
  K: number[];
  T: number[];
  passKT: number[][];
  ci95: Interval[][];
}

export interface StepQualityByKind {
  normal: StepQuality;
  error: StepQuality;
}

export interface RecoveryReport extends Recovery {
  /** Forcing attempts; those where no action was bad; those where the forced action ended the episode. */
  attempts: number;
  noBadAction: number;
  terminal: number;
}

/** What `turnwise compare --json` prints. Step quality and recovery are null for an env without an
 * exact oracle or snapshots; likelihood is null when a policy cannot score actions. */
export interface CompareReport {
  passKT: { a: PassSide; b: PassSide; diff: number[][]; diffCi95: Interval[][] };
  stepQuality: StepQualityByKind | null;
  /** Step quality by the env's per-turn proxy (`info.quality`) where there is no exact oracle
   * (eval/step-proxy.ts); null when there is an oracle or no turn carries the proxy. */
  stepProxy: StepProxy | null;
  recovery: RecoveryReport | null;
  likelihood: Likelihood | null;
  failures: { a: Failures; b: Failures };
  /** The code env under a visible reward (or its candidate variant): each policy's visible and hidden
   * pass rates, gap and detector rate over its run at T_max (eval/hacking.ts); absent elsewhere. */
  hacking?: { a: HackFigures | null; b: HackFigures | null };
  /** The tools env with a reward-hacking param set: each policy's calls, useless calls and side effects
   * per episode over its run at T_max (eval/tool-effects.ts); absent elsewhere. */
  toolEffects?: { a: ToolEffectFigures | null; b: ToolEffectFigures | null };
}

export const DEFAULT_STATES = 200;

export async function compare(o: CompareOptions): Promise<CompareReport> {
  const K = checkIncreasing(o.K, '--K');
  const T = checkIncreasing(o.T, '--T');
  if (K[K.length - 1] > o.samples) {
    throw new InputError('--K', K.join(','), `each K must be ≤ --samples (${o.samples})`);
  }
  const progress = o.onProgress ?? (() => {});
  const run = (policy: AnyPolicy, label: 'a' | 'b') =>
    runPassCounts({
      rollout: o.rollouts?.[label],
      envs: o.envs,
      tasks: o.tasks,
      samples: o.samples,
      T,
      policy,
      mode: o.mode,
      runSeed: o.runSeed,
      concurrency: o.concurrency,
      keep: true,
      onProgress: (done, total) => progress(`rollouts ${label}`, done, total),
    });
  // Resolve both modes before rolling anything out, so that a refused mode fails fast.
  resolveMode(o.a, o.mode);
  resolveMode(o.b, o.mode);
  const runA = await run(o.a, 'a');
  const runB = await run(o.b, 'b');
  checkKT(K, runA.counts);
  const resamples = o.resamples ?? DEFAULT_RESAMPLES;
  const boot = bootstrapPassKT([runA.counts, runB.counts], K, { resamples, seed: o.runSeed });
  const pa = passKT(runA.counts, K);
  const pb = passKT(runB.counts, K);
  const side = (policy: AnyPolicy, mode: PassMode, p: number[][], ci: Interval[][]): PassSide => ({
    policy: policy.id,
    mode,
    K: [...K],
    T: [...T],
    passKT: p,
    ci95: ci,
  });

  const recorded = { a: runA.atTmax, b: runB.atTmax };
  const from = o.statesFrom ?? 'both';
  const pools: Recorded[][] =
    from === 'both' ? [recorded.a, recorded.b] : from === 'a' ? [recorded.a] : [recorded.b];
  const nStates = o.states ?? DEFAULT_STATES;
  const actions = o.actions ?? DEFAULT_ACTIONS;
  const probe = await o.envs.make(o.tasks[0]);
  const withOracle = probe.oracle !== undefined && probe.spec.oracle;
  const injects = canInjectErrors(probe);
  await closeEnv(probe);
  let quality: StepQualityByKind | null = null;
  let recovered: RecoveryReport | null = null;
  if (withOracle) {
    progress('step quality', 0, 2);
    const normal = collectStates(pools, nStates, o.runSeed);
    const normalQ = await stepQuality(o.envs, normal, o.a, o.b, { actions, seed: o.runSeed, key: 0 });
    if (injects) {
      const errors = await makeErrorStates(o.envs, pools, nStates, o.runSeed);
      const errorQ = await stepQuality(o.envs, errors.states, o.a, o.b, { actions, seed: o.runSeed, key: 1 });
      quality = { normal: normalQ, error: errorQ };
      progress('recovery', 0, 1);
      const rec = await recovery(o.envs, errors.states, o.a, o.b, {
        continuations: o.continuations ?? DEFAULT_CONTINUATIONS,
        seed: o.runSeed,
        resamples,
      });
      recovered = {
        ...rec,
        attempts: errors.attempts,
        noBadAction: errors.noBadAction,
        terminal: errors.terminal,
      };
    } else {
      const none = await stepQuality(o.envs, [], o.a, o.b, { actions, seed: o.runSeed, key: 1 });
      quality = { normal: normalQ, error: none };
    }
  }
  let proxy: StepProxy | null = null;
  const all = [...recorded.a, ...recorded.b].map((r) => r.trajectory);
  if (!withOracle && hasStepProxy(all)) {
    progress('step quality (proxy)', 0, 1);
    proxy = await stepProxy(
      o.envs,
      recorded,
      pools,
      { a: o.a, b: o.b },
      { states: nStates, actions, seed: o.runSeed },
    );
  }
  progress('likelihood', 0, 1);
  const trajectories = (rs: Recorded[]) => rs.map((r) => r.trajectory);
  const lik = await likelihood(o.envs, trajectories(recorded.a), trajectories(recorded.b), o.a, o.b);
  return {
    passKT: {
      a: side(o.a, runA.mode, pa, boot.ci[0]),
      b: side(o.b, runB.mode, pb, boot.ci[1]),
      diff: pa.map((row, k) => row.map((x, j) => x - pb[k][j])),
      diffCi95: boot.diffCi!,
    },
    stepQuality: quality,
    stepProxy: proxy,
    recovery: recovered,
    likelihood: lik,
    failures: { a: failures(trajectories(recorded.a)), b: failures(trajectories(recorded.b)) },
    ...hackingOf(runA.hacking.result(), runB.hacking.result()),
    ...toolEffectsOf(runA.toolEffects.result(), runB.toolEffects.result()),
  };
}

function toolEffectsOf(
  a: ToolEffectFigures | null,
  b: ToolEffectFigures | null,
): Pick<CompareReport, 'toolEffects'> {
  return a === null && b === null ? {} : { toolEffects: { a, b } };
}

function hackingOf(a: HackFigures | null, b: HackFigures | null): Pick<CompareReport, 'hacking'> {
  return a === null && b === null ? {} : { hacking: { a, b } };
}
