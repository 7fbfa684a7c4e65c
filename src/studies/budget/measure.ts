// The budget study's measurements on the held-out maps: one `measure…` per section of the summary
// (summary.ts), each from explicit inputs. The sampled episodes come first (sampleEpisodes); the
// diagnostics at T_max (step quality, recovery, likelihood) run on states and trajectories from the
// base's and RL's own episodes, as `turnwise compare` does.
//
// Every random choice derives from config.seed through fixed stream keys (the bootstrap keys below,
// STUDY_KEY in stats.ts, eval's own keys), so a stage gives the same figures whenever it runs.
import type { EnvSpec, Oracle, Task, Trajectory } from '../../core/types.ts';
import { bootstrapPassKT } from '../../eval/bootstrap.ts';
import { type PassMode, runPassCounts } from '../../eval/evaluate.ts';
import { exactPolicyValues } from '../../eval/exact.ts';
import { type Failures, failures } from '../../eval/failures.ts';
import { LIKELIHOOD_NOTE, likelihood, scorer } from '../../eval/likelihood.ts';
import { type PassCounts, passKT } from '../../eval/passkt.ts';
import { recovery } from '../../eval/recovery.ts';
import {
  collectStates,
  type ErrorStates,
  makeErrorStates,
  type Recorded,
  type State,
  turnsLeft,
} from '../../eval/states.ts';
import { type PairFigures, stepQuality } from '../../eval/step-quality.ts';
import { makePolicy } from '../../policies/spec.ts';
import { contextAt } from '../../rollout/context.ts';
import { withEnvs } from '../../rollout/env-cache.ts';
import type { StudyConfig } from './config.ts';
import type { MemoPolicy } from './memo.ts';
import type { AnyPolicy, PerPolicy, PerVariant, PolicyName, Variant } from './setup.ts';
import { namesOf } from './setup.ts';
import {
  bootstrapRatios,
  bootstrapSeries,
  passFromSuccess,
  type RatioIntervals,
  STUDY_KEY,
  windowTrend,
} from './stats.ts';
import {
  finiteOrNull,
  intervalOf,
  type PassGrid,
  type RecoveryFigure,
  type StepQualityDetail,
  type StepQualityFigure,
  type StepQualitySubset,
  type Summary,
} from './summary.ts';
import type { RlResult } from './trainer.ts';
import { type MakeEnv, movedAsIntended, WORLD_SETTINGS } from './world.ts';

const meanOf = (xs: readonly Float64Array[], j: number) => xs.reduce((a, x) => a + x[j], 0) / xs.length;
const nullGrid = (g: readonly (readonly number[])[]) => g.map((row) => row.map(finiteOrNull));
const ciGrid = (g: readonly (readonly (readonly [number, number])[])[]) =>
  g.map((row) => row.map(intervalOf));
const bootOf = (config: Pick<StudyConfig, 'eval' | 'seed'>) => ({
  resamples: config.eval.resamples,
  seed: config.seed,
});
const tmaxOf = (config: StudyConfig) => config.eval.T[config.eval.T.length - 1];
/** Coefficients of the contrast plus − minus over the policies `names` (for bootstrapSeries). */
const contrast = (names: readonly PolicyName[], plus: PolicyName, minus: PolicyName) =>
  names.map((n) => (n === plus ? 1 : n === minus ? -1 : 0));
const byPolicy = <X>(names: readonly PolicyName[], f: (n: PolicyName) => X) =>
  Object.fromEntries(names.map((n) => [n, f(n)])) as PerPolicy<X>;

// ── The sampled episodes ─────────────────────────────────────────────────────────────────────────

export interface Episodes {
  /** Per policy: success counts c(T) per map for every T, and the mode they were counted in. */
  counts: PerPolicy<{ mode: PassMode; counts: PassCounts }>;
  /** The diagnostic pools: the first diagnosticSamples episodes per map of the base and of RL at
   * T_max, task-major (the rest would only hold memory). */
  pools: { base: Recorded[]; rl: Recorded[] };
  /** The summary's `failures` section: how every sampled episode at T_max ended, per policy. */
  failures: PerPolicy<Failures>;
}

/**
 * `eval.samples` episodes per held-out map and policy at T_max (prefix mode, like `turnwise eval`).
 * The failure tally (eval/failures) is taken here, over all of a policy's episodes, because only
 * the diagnostic pools are kept once a policy is done.
 */
export async function sampleEpisodes(
  envs: MakeEnv,
  policies: PerPolicy<MemoPolicy>,
  test: readonly Task[],
  config: StudyConfig,
  onProgress: (done: number, total: number) => void,
): Promise<Episodes> {
  const { T, samples, diagnosticSamples } = config.eval;
  const names = namesOf(policies);
  const counts: Partial<Record<PolicyName, { mode: PassMode; counts: PassCounts }>> = {};
  const failed: Partial<Record<PolicyName, Failures>> = {};
  const pools: Partial<Record<PolicyName, Recorded[]>> = {};
  const total = names.length * test.length * samples;
  for (const [i, n] of names.entries()) {
    const run = await runPassCounts({
      envs,
      tasks: test,
      samples,
      T,
      policy: policies[n]!,
      runSeed: config.seed,
      keep: true,
      onProgress: (done) => onProgress(i * test.length * samples + done, total),
    });
    counts[n] = { mode: run.mode, counts: run.counts };
    failed[n] = failures(run.atTmax.map((r) => r.trajectory));
    if (n === 'base' || n === 'rl') pools[n] = run.atTmax.filter((_, e) => e % samples < diagnosticSamples);
  }
  return {
    counts: counts as Episodes['counts'],
    pools: { base: pools.base!, rl: pools.rl! },
    failures: failed as PerPolicy<Failures>,
  };
}

// ── Pass@(K,T) ───────────────────────────────────────────────────────────────────────────────────

/**
 * The summary's `passKT`: sampled Pass@(K,T) per policy from the episodes' counts, with bootstrap
 * intervals over maps; RL − base and BudgetMix − base paired over the same resampled maps.
 */
export function measurePass(episodes: Episodes, tasks: number, config: StudyConfig): Summary['passKT'] {
  const { K, T, samples } = config.eval;
  const boot = bootOf(config);
  const c = episodes.counts;
  const names = namesOf(c);
  const grid = (ci: [number, number][][], n: PolicyName): PassGrid => ({
    K: [...K],
    T: [...T],
    passKT: nullGrid(passKT(c[n]!.counts, K)),
    ci95: ciGrid(ci),
  });
  const bootRl = bootstrapPassKT([c.rl.counts, c.base.counts], K, boot);
  const bootMix = bootstrapPassKT([c.budgetmix.counts, c.base.counts], K, boot);
  const bootGigpo = c.gigpo ? bootstrapPassKT([c.gigpo.counts], K, boot) : undefined;
  const diffOf = (a: PolicyName, b: PolicyName) => {
    const pa = passKT(c[a]!.counts, K);
    const pb = passKT(c[b]!.counts, K);
    return nullGrid(pa.map((row, k) => row.map((x, j) => x - pb[k][j])));
  };
  return {
    base: grid(bootRl.ci[1], 'base'),
    rl: grid(bootRl.ci[0], 'rl'),
    budgetmix: grid(bootMix.ci[0], 'budgetmix'),
    ...(bootGigpo ? { gigpo: grid(bootGigpo.ci[0], 'gigpo') } : {}),
    diff: diffOf('rl', 'base'),
    diffCi95: ciGrid(bootRl.diffCi!),
    budgetmixDiff: diffOf('budgetmix', 'base'),
    budgetmixDiffCi95: ciGrid(bootMix.diffCi!),
    mode: [...new Set(names.map((n) => c[n]!.mode))].join(', '),
    samples,
    tasks,
  };
}

/**
 * The summary's `exactPassKT`: per map, the policy's exact success p_map(T) within each T (dynamic
 * programming), Pass@(K,T) = 1 − (1 − p_map(T))^K; means over maps with one bootstrap over maps for
 * every policy, so that RL − base, BudgetMix − base, BudgetMix − RL and the shrink contrast are paired.
 */
export function measureExactPass(
  policies: PerPolicy<MemoPolicy>,
  test: readonly Task[],
  config: StudyConfig,
  envs: MakeEnv,
): Summary['exactPassKT'] {
  const { K, T } = config.eval;
  const boot = bootOf(config);
  const names = namesOf(policies);
  const exact = byPolicy(names, (n) => test.map((task) => exactByT(task, policies[n]!, T, envs)));
  const nK = K.length;
  const nT = T.length;
  const width = nK * nT;
  const perMap = (p: Float64Array[]) => {
    const out = new Float64Array(p.length * width);
    p.forEach((row, i) => {
      K.forEach((k, a) => {
        for (let j = 0; j < nT; j++) out[i * width + a * nT + j] = passFromSuccess(row[j], k);
      });
    });
    return out;
  };
  const ex = bootstrapSeries(
    names.map((n) => perMap(exact[n]!)),
    test.length,
    width,
    [contrast(names, 'rl', 'base'), contrast(names, 'budgetmix', 'base'), contrast(names, 'budgetmix', 'rl')],
    { ...boot, key: STUDY_KEY.maps },
  );
  const toGrid = (mean: number[], ci: readonly [number, number][]): PassGrid => ({
    K: [...K],
    T: [...T],
    passKT: K.map((_, a) => T.map((_, j) => finiteOrNull(mean[a * nT + j]))),
    ci95: K.map((_, a) => T.map((_, j) => intervalOf(ci[a * nT + j]))),
  });
  const grid = (n: PolicyName) => {
    const s = names.indexOf(n);
    return toGrid(ex.mean[s], ex.ci[s]);
  };
  // The shrink contrast per K: [RL − base](K, T_tight) − [RL − base](K, T_train), per map, same resamples.
  const jTight = 0;
  const jTrain = T.indexOf(config.rl.budget);
  const rlMap = perMap(exact.rl);
  const baseMap = perMap(exact.base);
  const shrinkSeries = new Float64Array(test.length * nK);
  for (let i = 0; i < test.length; i++) {
    for (let a = 0; a < nK; a++) {
      const at = (j: number) => rlMap[i * width + a * nT + j] - baseMap[i * width + a * nT + j];
      shrinkSeries[i * nK + a] = at(jTight) - at(jTrain);
    }
  }
  const shrink = bootstrapSeries([shrinkSeries], test.length, nK, [], { ...boot, key: STUDY_KEY.maps });
  // The paper's slice K*: the lead per T with its p-value (for Holm), and the headroom-normalised lead
  // Σ_maps (RL − base) / Σ_maps (1 − base) = (mean RL − mean base) / (1 − mean base), resampling maps.
  const a8 = K.indexOf(sliceK(K));
  const lead = ex.contrasts[0];
  const slice = {
    K: K[a8],
    byT: T.map((t, j) => {
      const c = a8 * nT + j;
      const sums = new Float64Array(test.length);
      const counts = new Float64Array(test.length);
      for (let i = 0; i < test.length; i++) {
        sums[i] = rlMap[i * width + c] - baseMap[i * width + c];
        counts[i] = 1 - baseMap[i * width + c];
      }
      const h = bootstrapRatios([{ sums, counts }], boot);
      return {
        T: t,
        lead: {
          value: finiteOrNull(lead.mean[c]),
          ci95: intervalOf(lead.ci[c]),
          pNonNeg: finiteOrNull(lead.pNonNeg[c]),
        },
        headroom: { value: finiteOrNull(h.value[0]), ci95: intervalOf(h.ci[0]) },
      };
    }),
    shrink: { value: finiteOrNull(shrink.mean[0][a8]), ci95: intervalOf(shrink.ci[0][a8]) },
  };
  return {
    base: grid('base'),
    rl: grid('rl'),
    budgetmix: grid('budgetmix'),
    ...(policies.gigpo ? { gigpo: grid('gigpo') } : {}),
    diff: toGrid(ex.contrasts[0].mean, ex.contrasts[0].ci),
    budgetmixDiff: toGrid(ex.contrasts[1].mean, ex.contrasts[1].ci),
    budgetmixVsRl: toGrid(ex.contrasts[2].mean, ex.contrasts[2].ci),
    shrink: {
      Ttight: T[jTight],
      Ttrain: T[jTrain],
      byK: K.map((k, a) => ({
        K: k,
        value: finiteOrNull(shrink.mean[0][a]),
        ci95: intervalOf(shrink.ci[0][a]),
      })),
    },
    slice,
  };
}

/** The paper reads its budget findings at K = 8 (Zhu et al. 2026, §4); the largest K ≤ 8 of the grid
 * stands in when 8 is not on it (the smallest K when every K exceeds 8). */
export const PAPER_K = 8;
export function sliceK(K: readonly number[]): number {
  const ok = K.filter((k) => k <= PAPER_K);
  return ok.length > 0 ? ok[ok.length - 1] : K[0];
}

/** The summary's `reference`: mean exact success within each T on the held-out maps of the optimum
 * (V*_T), the expert and the uniform random policy — no sampling. */
export function measureReference(
  test: readonly Task[],
  expert: AnyPolicy,
  spec: EnvSpec,
  config: StudyConfig,
  envs: MakeEnv,
): Summary['reference'] {
  const { T } = config.eval;
  const optimal = test.map((task) => optimalByT(task, T, envs));
  const expertExact = test.map((task) => exactByT(task, expert, T, envs));
  const random = makePolicy('random', spec);
  const randomExact = test.map((task) => exactByT(task, random, T, envs));
  return {
    T: [...T],
    optimal: T.map((_, j) => finiteOrNull(meanOf(optimal, j))),
    expert: T.map((_, j) => finiteOrNull(meanOf(expertExact, j))),
    random: T.map((_, j) => finiteOrNull(meanOf(randomExact, j))),
  };
}

/** Success within each T of a policy on one map, exactly (V^π_T at the start cells). */
function exactByT(task: Task, policy: AnyPolicy, T: readonly number[], envs: MakeEnv): Float64Array {
  const env = envs.make(task);
  const oracle = env.oracle?.() as Oracle<unknown> | undefined;
  const Tmax = T[T.length - 1];
  const values = exactPolicyValues(env, policy, Tmax, policy.budgetAware);
  if (oracle === undefined || values === undefined) throw new Error(`no exact values for ${policy.id}`);
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += values.V[t * values.nS + s];
    return v / oracle.starts.length;
  });
}

function optimalByT(task: Task, T: readonly number[], envs: MakeEnv): Float64Array {
  const oracle = envs.make(task).oracle!() as Oracle<unknown>;
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += oracle.v(t, s);
    return v / oracle.starts.length;
  });
}

// ── Temperature control ──────────────────────────────────────────────────────────────────────────

/** The base's temperatures the control tries (τ = 1 is the base itself). */
export const BASE_TEMPERATURES = [0.1, 0.25, 0.5, 1] as const;

/** π_τ(a|s) ∝ π(a|s)^{1/τ}: the same network, sharpened (τ < 1). Exact evaluation only. */
export class TemperedPolicy {
  readonly id: string;
  readonly budgetAware: boolean;
  constructor(
    readonly inner: MemoPolicy,
    readonly tau: number,
  ) {
    this.id = `${inner.id}@τ=${tau}`;
    this.budgetAware = inner.budgetAware;
  }
  probs(ctx: Parameters<MemoPolicy['probs']>[0]): Float64Array {
    const p = this.inner.probs(ctx);
    let z = 0;
    for (let a = 0; a < p.length; a++) {
      p[a] = p[a] ** (1 / this.tau);
      z += p[a];
    }
    for (let a = 0; a < p.length; a++) p[a] /= z;
    return p;
  }
  probsBatch(ctxs: Parameters<MemoPolicy['probsBatch']>[0]): Float64Array[] {
    return ctxs.map((c) => this.probs(c));
  }
  act(): never {
    throw new Error('TemperedPolicy is for exact evaluation only');
  }
  logProb(ctx: Parameters<MemoPolicy['probs']>[0], action: number): number {
    return Math.log(this.probs(ctx)[action] ?? 0);
  }
}

/**
 * The summary's `temperature`: the base sharpened to each τ of BASE_TEMPERATURES, exact Pass@(1,T) on
 * the held-out maps; the best τ at the training budget; RL − base(best τ) per T, paired over maps —
 * so that RL's gain is split into what sharpening the base alone gives and what it does not.
 */
export function measureTemperature(
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  test: readonly Task[],
  config: StudyConfig,
  envs: MakeEnv,
): Summary['temperature'] {
  const { T } = config.eval;
  const jTrain = T.indexOf(config.rl.budget);
  const byTau = BASE_TEMPERATURES.map((tau) =>
    test.map((task) =>
      exactByT(
        task,
        tau === 1 ? policies.base : (new TemperedPolicy(policies.base, tau) as unknown as AnyPolicy),
        T,
        envs,
      ),
    ),
  );
  const meanAt = (rows: Float64Array[], j: number) => rows.reduce((a, r) => a + r[j], 0) / rows.length;
  let best = BASE_TEMPERATURES.length - 1;
  BASE_TEMPERATURES.forEach((_, i) => {
    if (meanAt(byTau[i], jTrain) > meanAt(byTau[best], jTrain)) best = i;
  });
  const rl = test.map((task) => exactByT(task, policies.rl, T, envs));
  const flat = (rows: Float64Array[]) => {
    const out = new Float64Array(rows.length * T.length);
    rows.forEach((r, i) => {
      out.set(r, i * T.length);
    });
    return out;
  };
  const b = bootstrapSeries(
    [flat(rl), flat(byTau[best]), flat(byTau[BASE_TEMPERATURES.length - 1])],
    test.length,
    T.length,
    [[1, -1, 0]],
    {
      ...bootOf(config),
      key: STUDY_KEY.maps + 7,
    },
  );
  return {
    T: [...T],
    temperatures: [...BASE_TEMPERATURES],
    base: byTau.map((rows) => T.map((_, j) => finiteOrNull(meanAt(rows, j)))),
    bestTemperature: BASE_TEMPERATURES[best],
    rlMinusBestBase: T.map((_, j) => ({
      value: finiteOrNull(b.contrasts[0].mean[j]),
      ci95: intervalOf(b.contrasts[0].ci[j]),
    })),
  };
}

// ── Diagnostics at T_max ─────────────────────────────────────────────────────────────────────────

export interface DiagnosticStates {
  /** States visited by the base's and RL's episodes (eval/states collectStates). */
  normal: State[];
  /** Error states: a bad action forced at the previous turn of those episodes. */
  errors: ErrorStates;
  /** How familiar each kind of state is to each policy (occupancy). */
  occupancy: Summary['stepQuality']['occupancy'];
}

/**
 * Occupancy: the share of `states` whose (map, observation) some trajectory of the pool visited (any
 * turn) — for error states, 1 − novelty. The paper's mechanism needs error states the base rarely
 * sees; where ordinary play visits them all, there is nothing for RL to learn there.
 */
export function occupancy(
  states: readonly Pick<State, 'task' | 'observation'>[],
  pool: readonly Recorded[],
): number | null {
  const seen = new Map<unknown, Set<string>>();
  for (const r of pool) {
    let set = seen.get(r.trajectory.task);
    if (set === undefined) {
      set = new Set();
      seen.set(r.trajectory.task, set);
    }
    for (const t of r.trajectory.turns) set.add(JSON.stringify(t.observation));
  }
  if (states.length === 0) return null;
  const hit = states.filter((st) => seen.get(st.task)?.has(JSON.stringify(st.observation)) === true).length;
  return hit / states.length;
}

/** The states the step-quality and recovery diagnostics are measured at (`eval.states` of each kind). */
export async function diagnosticStates(
  envs: MakeEnv,
  pools: Episodes['pools'],
  config: StudyConfig,
): Promise<DiagnosticStates> {
  const from = [pools.base, pools.rl];
  const normal = collectStates(from, config.eval.states, config.seed);
  const errors = await makeErrorStates(envs, from, config.eval.states, config.seed, {
    minRelRegret: config.eval.minRelRegret,
    intended: movedAsIntended(WORLD_SETTINGS[config.world].memory),
  });
  const occ = (xs: readonly State[]) => ({ base: occupancy(xs, pools.base), rl: occupancy(xs, pools.rl) });
  return { normal, errors, occupancy: { normal: occ(normal), error: occ(errors.states) } };
}

/**
 * The summary's `stepQuality`: RL-vs-base win rate P(RL's action has the higher Q*) + ½ P(tie) at
 * normal and at error states, exact over both action distributions and from `eval.actions` draws,
 * with intervals over states. `onPart` after each kind of state.
 */
export async function measureStepQuality(
  envs: MakeEnv,
  states: DiagnosticStates,
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  config: StudyConfig,
  onPart: () => void,
): Promise<Summary['stepQuality']> {
  const errorStates = states.errors.states;
  const normal = await stepQualityAt(envs, states.normal, 0, policies, config);
  onPart();
  const error = await stepQualityAt(envs, errorStates, 1, policies, config);
  const preError = await stepQualityAt(envs, errorStates.map(preErrorState), 2, policies, config);
  onPart();
  const { attempts, noBadAction, terminal, belowThreshold, minRelRegret } = states.errors;
  const contrastOf = (keep: (st: State) => boolean) => {
    const c = pairedContrastWhere(error.perState, preError.perState, errorStates, keep, bootOf(config));
    return {
      delta: { value: finiteOrNull(c.diff), ci95: intervalOf(c.diffCi) },
      winError: { value: finiteOrNull(c.value[0]), ci95: intervalOf(c.ci[0]) },
      winPreError: { value: finiteOrNull(c.value[1]), ci95: intervalOf(c.ci[1]) },
      pairs: c.pairs,
      maps: c.maps,
    };
  };
  const contrast = contrastOf(() => true);
  return {
    normal: normal.figure,
    error: error.figure,
    preError: preError.figure,
    contrast,
    contrastByMove: byMove(contrastOf),
    occupancy: states.occupancy,
    errorStates: {
      attempts,
      noBadAction,
      belowThreshold,
      terminal,
      minRelRegret,
      moves: moveCounts(states.errors),
      regret: regretDistribution(states.errors.regrets),
      terminalRegret: regretDistribution(states.errors.terminalRegrets),
    },
    budget: tmaxOf(config),
  };
}

/** A figure over the error states whose forced move went the intended way, and over those that slipped
 * (states without a classification are in neither). */
export function byMove<X>(figure: (keep: (st: State) => boolean) => X): { intended: X; slipped: X } {
  return { intended: figure((st) => st.slipped === false), slipped: figure((st) => st.slipped === true) };
}

/** How the forced moves went: kept error states and dropped terminal attempts, intended or slipped. */
export function moveCounts(
  e: Pick<ErrorStates, 'states' | 'terminalSlipped'>,
): Summary['stepQuality']['errorStates']['moves'] {
  const count = (xs: readonly (boolean | undefined)[], slipped: boolean) =>
    xs.filter((x) => x === slipped).length;
  const kept = e.states.map((st) => st.slipped);
  return {
    intended: count(kept, false),
    slipped: count(kept, true),
    terminalIntended: count(e.terminalSlipped, false),
    terminalSlipped: count(e.terminalSlipped, true),
  };
}

/** Edges of the relative-regret histogram of injected errors. */
export const REGRET_BINS = [0, 0.01, 0.05, 0.1, 0.2, 0.5, 1] as const;

/** Quantiles (nearest rank), mean and histogram (REGRET_BINS, last bin closed) of relative regrets. */
export function regretDistribution(xs: readonly number[]): Summary['stepQuality']['errorStates']['regret'] {
  const v = [...xs].sort((a, b) => a - b);
  const q = (p: number) => (v.length === 0 ? null : v[Math.min(v.length - 1, Math.floor(p * v.length))]);
  const counts = REGRET_BINS.slice(0, -1).map((lo, i) => {
    const hi = REGRET_BINS[i + 1];
    return v.filter((x) => x >= lo && (x < hi || (i === REGRET_BINS.length - 2 && x <= hi))).length;
  });
  return {
    n: v.length,
    mean: v.length === 0 ? null : v.reduce((a, b) => a + b, 0) / v.length,
    p10: q(0.1),
    median: q(0.5),
    p90: q(0.9),
    bins: [...REGRET_BINS],
    counts,
  };
}

/** The state an error state was forced from: its forced turn undone (same map and budget, one more
 * turn left, the observation the bad action was taken at). */
export function preErrorState(state: State): State {
  const forced = state.history[state.history.length - 1];
  if (forced?.forced !== true) throw new Error('preErrorState: the state does not end in a forced turn');
  return {
    task: state.task,
    observation: forced.observation,
    history: state.history.slice(0, -1),
    budget: state.budget,
    from: state.from,
  };
}

/**
 * A paired contrast over states clustered by map: x_i at state i against y_i at its partner, as ratio
 * estimators Σ_maps Σ_i x_i / Σ_maps n_map (so diff = mean of x_i − y_i), intervals resampling maps.
 * Pairs where either side is missing (NaN) are left out of both.
 */
export function pairedContrast(
  x: Float64Array,
  y: Float64Array,
  states: readonly Pick<State, 'task'>[],
  boot: { resamples: number; seed: number },
): RatioIntervals & { pairs: number; maps: number } {
  const mapOf = new Map<unknown, number>();
  for (const st of states) if (!mapOf.has(st.task)) mapOf.set(st.task, mapOf.size);
  const m = mapOf.size;
  const side = () => ({ sums: new Float64Array(m), counts: new Float64Array(m) });
  const [a, b] = [side(), side()];
  let pairs = 0;
  states.forEach((st, i) => {
    if (!Number.isFinite(x[i]) || !Number.isFinite(y[i])) return;
    const k = mapOf.get(st.task)!;
    a.sums[k] += x[i];
    a.counts[k]++;
    b.sums[k] += y[i];
    b.counts[k]++;
    pairs++;
  });
  return { ...bootstrapRatios([a, b], boot), pairs, maps: m };
}

/** pairedContrast over the states `keep` selects (the same bootstrap settings). */
export function pairedContrastWhere(
  x: Float64Array,
  y: Float64Array,
  states: readonly State[],
  keep: (st: State) => boolean,
  boot: { resamples: number; seed: number },
): ReturnType<typeof pairedContrast> {
  const idx = states.flatMap((st, i) => (keep(st) ? [i] : []));
  const pick = (z: Float64Array) => Float64Array.from(idx, (i) => z[i]);
  return pairedContrast(
    pick(x),
    pick(y),
    idx.map((i) => states[i]),
    boot,
  );
}

/** Step quality at one set of states; `key` separates the random streams of the two sets. */
async function stepQualityAt(
  envs: MakeEnv,
  states: readonly State[],
  key: number,
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  config: StudyConfig,
): Promise<{ figure: StepQualityFigure; perState: Float64Array }> {
  const exactScore = new Float64Array(states.length);
  const drawnScore = new Float64Array(states.length);
  const perState: PerStateFigures[] = [];
  const q = await stepQuality(envs, states, policies.rl, policies.base, {
    actions: config.eval.actions,
    seed: config.seed,
    key,
    relTie: config.eval.relTie,
    onState: (i, drawn: PairFigures, ex: PairFigures | null, at) => {
      drawnScore[i] = drawn.score;
      exactScore[i] = ex?.score ?? Number.NaN;
      if (ex !== null) perState[i] = { ...ex, ...at };
    },
  });
  const b = bootstrapSeries([exactScore, drawnScore], states.length, 1, [], {
    ...bootOf(config),
    key: STUDY_KEY.states + 10 * key,
  });
  const figure = {
    value: finiteOrNull(q.exact?.score),
    ci95: intervalOf(b.ci[0][0]),
    rlBetter: finiteOrNull(q.exact?.aBetter),
    ties: finiteOrNull(q.exact?.ties),
    baseBetter: finiteOrNull(q.exact?.bBetter),
    regretRl: finiteOrNull(q.exact?.regretA),
    regretBase: finiteOrNull(q.exact?.regretB),
    states: q.states,
    sampled: { value: finiteOrNull(q.score), ci95: intervalOf(b.ci[1][0]) },
    relTie: config.eval.relTie,
    detail: stepQualityDetail(states, perState, config),
  };
  return { figure, perState: exactScore };
}

/** One state's exact step-quality figures with its V* and Q* spread. */
export type PerStateFigures = PairFigures & { v: number; spread: number };

/**
 * The step-quality figures that say what a win rate hides, with intervals that resample maps (all
 * states of a map together): strict P(RL better), P(tie), the ½-tie score, the ties-excluded win rate
 * P(RL better | not a tie) (a ratio estimator), E_π[Q*] and the mean regret of each policy — over all
 * states, the consequential ones (max − min Q* ≥ eval.consequentialGap) and each pool's states.
 */
export function stepQualityDetail(
  states: readonly Pick<State, 'task' | 'from'>[],
  perState: readonly (PerStateFigures | undefined)[],
  config: Pick<StudyConfig, 'eval' | 'seed'>,
): StepQualityDetail {
  const mapOf = new Map<unknown, number>();
  for (const st of states) if (!mapOf.has(st.task)) mapOf.set(st.task, mapOf.size);
  const m = mapOf.size;
  const subset = (keep: (i: number) => boolean): StepQualitySubset => {
    const series = () => ({ sums: new Float64Array(m), counts: new Float64Array(m) });
    const [strict, ties, score, excl, qRl, qBase, regretRl, regretBase] = Array.from({ length: 8 }, series);
    let n = 0;
    states.forEach((st, i) => {
      const x = perState[i];
      if (x === undefined || !keep(i)) return;
      const k = mapOf.get(st.task)!;
      n++;
      const add = (s: { sums: Float64Array; counts: Float64Array }, value: number, count = 1) => {
        s.sums[k] += value;
        s.counts[k] += count;
      };
      add(strict, x.aBetter);
      add(ties, x.ties);
      add(score, x.score);
      add(excl, x.aBetter, x.aBetter + x.bBetter);
      add(qRl, x.v - x.regretA);
      add(qBase, x.v - x.regretB);
      add(regretRl, x.regretA);
      add(regretBase, x.regretB);
    });
    const r = bootstrapRatios([strict, ties, score, excl, qRl, qBase, regretRl, regretBase], bootOf(config));
    const e = (j: number) => ({ value: finiteOrNull(r.value[j]), ci95: intervalOf(r.ci[j]) });
    return {
      states: n,
      rlBetter: e(0),
      ties: e(1),
      score: e(2),
      tiesExcluded: e(3),
      qRl: e(4),
      qBase: e(5),
      regretRl: e(6),
      regretBase: e(7),
    };
  };
  const gap = config.eval.consequentialGap;
  return {
    consequentialGap: gap,
    all: subset(() => true),
    consequential: subset((i) => perState[i]!.spread >= gap),
    fromBase: subset((i) => states[i].from === 0),
    fromRl: subset((i) => states[i].from === 1),
  };
}

/**
 * The summary's `recovery`: from the error states, each variant's and the base's continuation success
 * (`eval.continuations` sampled continuations per state, eval/recovery) and the exact continuation
 * value V^π_h(s) at the same states (h = turns left), differences paired over states.
 */
export async function measureRecovery(
  errorStates: readonly State[],
  policies: PerPolicy<MemoPolicy>,
  config: StudyConfig,
  envs: MakeEnv,
): Promise<Summary['recovery']> {
  const { continuations, resamples } = config.eval;
  const { seed } = config;
  const Tmax = tmaxOf(config);
  const names = namesOf(policies);
  const variants = names.filter((n) => n !== 'base');
  const recs: Partial<Record<PolicyName, Awaited<ReturnType<typeof recovery>>>> = {};
  for (const n of variants) {
    recs[n] = await recovery(envs, errorStates, policies[n]!, policies.base, {
      continuations,
      seed,
      resamples,
    });
  }
  // V^π of a policy on a map, computed once per (policy, map) and read at every state of that map.
  const exactValuesCache = new Map<string, Map<Task, Float64Array>>();
  const exactAt = (n: PolicyName, state: State): number => {
    let byTask = exactValuesCache.get(n);
    if (byTask === undefined) {
      byTask = new Map();
      exactValuesCache.set(n, byTask);
    }
    const env = envs.make(state.task);
    const oracle = env.oracle!() as Oracle<unknown>;
    let V = byTask.get(state.task);
    if (V === undefined) {
      const p = policies[n]!;
      V = exactPolicyValues(env, p, Tmax, p.budgetAware)!.V;
      byTask.set(state.task, V);
    }
    return V[turnsLeft(state) * oracle.nS + oracle.state(state.observation)];
  };
  const exactSeries = names.map((n) => Float64Array.from(errorStates, (st) => exactAt(n, st)));
  const recExact = bootstrapSeries(
    exactSeries,
    errorStates.length,
    1,
    [contrast(names, 'rl', 'base'), contrast(names, 'budgetmix', 'base')],
    { ...bootOf(config), key: STUDY_KEY.states + 5 },
  );
  // Difference in differences: RL's exact gain at each error state against its gain at the pre-error
  // state, the same map and one more turn left; clustered by map.
  const [rlAt, baseAt] = [exactSeries[names.indexOf('rl')], exactSeries[names.indexOf('base')]];
  const gE = Float64Array.from(errorStates, (_, i) => rlAt[i] - baseAt[i]);
  const gP = Float64Array.from(errorStates, (st) => {
    const pre = preErrorState(st);
    return exactAt('rl', pre) - exactAt('base', pre);
  });
  const didOf = (keep: (st: State) => boolean) => {
    const dd = pairedContrastWhere(gE, gP, errorStates, keep, bootOf(config));
    return {
      gainError: { value: finiteOrNull(dd.value[0]), ci95: intervalOf(dd.ci[0]) },
      gainPreError: { value: finiteOrNull(dd.value[1]), ci95: intervalOf(dd.ci[1]) },
      did: { value: finiteOrNull(dd.diff), ci95: intervalOf(dd.diffCi) },
      maps: dd.maps,
    };
  };
  const did = didOf(() => true);
  const side = (n: PolicyName): RecoveryFigure => {
    const s = names.indexOf(n);
    const c = n === 'base' ? recs.rl!.b : recs[n]!.a;
    return {
      value: finiteOrNull(c.success),
      ci95: intervalOf(c.ci95),
      exact: finiteOrNull(recExact.mean[s][0]),
      exactCi95: intervalOf(recExact.ci[s][0]),
    };
  };
  const diff = (n: PolicyName, j: number): RecoveryFigure => ({
    value: finiteOrNull(recs[n]!.diff),
    ci95: intervalOf(recs[n]!.diffCi95),
    exact: finiteOrNull(recExact.contrasts[j].mean[0]),
    exactCi95: intervalOf(recExact.contrasts[j].ci[0]),
  });
  return {
    base: side('base'),
    rl: side('rl'),
    budgetmix: side('budgetmix'),
    ...(policies.gigpo ? { gigpo: side('gigpo') } : {}),
    rlMinusBase: diff('rl', 0),
    budgetmixMinusBase: diff('budgetmix', 1),
    did,
    didByMove: byMove((keep) => ({ ...didOf(keep), states: errorStates.filter(keep).length })),
    states: errorStates.length,
    continuations,
  };
}

/**
 * The summary's `likelihood`: NLL of RL's actions under the base and under RL, and the cumulative
 * LLR log π_RL − log π_base over RL's and the base's successful trajectories (eval/likelihood, on the
 * diagnostic pools); intervals by resampling maps (one eval/likelihood call per map).
 */
export async function measureLikelihood(
  envs: MakeEnv,
  pools: Episodes['pools'],
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  maps: number,
  spec: EnvSpec,
  config: StudyConfig,
): Promise<Summary['likelihood']> {
  const { diagnosticSamples } = config.eval;
  const boot = bootOf(config);
  const rlTraj: Trajectory[] = pools.rl.map((r) => r.trajectory);
  const baseTraj: Trajectory[] = pools.base.map((r) => r.trajectory);
  const lik = (await likelihood(envs, rlTraj, baseTraj, policies.rl, policies.base))!;
  const series = () => ({
    nllB: new Float64Array(maps),
    nllR: new Float64Array(maps),
    llrR: new Float64Array(maps),
    llrB: new Float64Array(maps),
    nllBB: new Float64Array(maps),
  });
  const sums = series();
  const counts = series();
  for (let i = 0; i < maps; i++) {
    const part = (await likelihood(
      envs,
      rlTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      baseTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      policies.rl,
      policies.base,
    ))!;
    const put = (key: keyof typeof sums, mean: number | null, finite: number) => {
      counts[key][i] = mean === null ? 0 : finite;
      sums[key][i] = mean === null ? 0 : mean * finite;
    };
    put('nllB', part.nllAunderB, part.actions.a - part.infinite.nllAunderB);
    put('nllR', part.nllAunderA, part.actions.a - part.infinite.nllAunderA);
    put('llrR', part.llrSuccessA, part.successful.a - part.infinite.llrSuccessA);
    put('llrB', part.llrSuccessB, part.successful.b - part.infinite.llrSuccessB);
    put('nllBB', part.nllBunderB, part.actions.b - part.infinite.nllBunderB);
  }
  const ratio = (key: keyof typeof sums) => ({ sums: sums[key], counts: counts[key] });
  const nllCi = bootstrapRatios([ratio('nllB'), ratio('nllR')], boot);
  const llrCi = bootstrapRatios([ratio('llrR'), ratio('llrB')], boot);
  const figure = (value: number | null, ci95: readonly [number, number], n: number, infinite: number) => ({
    value: finiteOrNull(value),
    ci95: intervalOf(ci95),
    n,
    infinite,
  });
  const estimate = (value: number | undefined, ci95: readonly [number, number] | undefined) => ({
    value: finiteOrNull(value),
    ci95: intervalOf(ci95),
  });
  // The base's own NLL, and RL's NLL under the base relative to it (paired over maps).
  const own = bootstrapRatios([ratio('nllB'), ratio('nllBB')], boot);
  const nllBaseUnderBase = figure(
    lik.nllBunderB,
    own.ci[1],
    lik.actions.b - lik.infinite.nllBunderB,
    lik.infinite.nllBunderB,
  );
  // LLR per trajectory, split by outcome, per map: the sign of the base successes' LLR, its per-turn
  // rate, and successes against failures within each policy.
  const llr = {
    base: await trajectoryLlrs(envs, baseTraj, policies.rl, policies.base),
    rl: await trajectoryLlrs(envs, rlTraj, policies.rl, policies.base),
  };
  const byMap = (xs: readonly TrajectoryLlr[], success: boolean, per: 'trajectory' | 'turn') => {
    const out = { sums: new Float64Array(maps), counts: new Float64Array(maps), n: 0, infinite: 0 };
    xs.forEach((x, e) => {
      if (x.success !== success) return;
      if (!Number.isFinite(x.llr)) {
        out.infinite++;
        return;
      }
      const i = Math.floor(e / diagnosticSamples);
      out.sums[i] += x.llr;
      out.counts[i] += per === 'turn' ? x.turns : 1;
      out.n++;
    });
    return out;
  };
  const perTurn = bootstrapRatios([byMap(llr.base, true, 'turn')], boot);
  const vsFailure = (xs: readonly TrajectoryLlr[]) => {
    const [ok, failed] = [byMap(xs, true, 'trajectory'), byMap(xs, false, 'trajectory')];
    const b = bootstrapRatios([ok, failed], boot);
    return {
      failure: figure(b.value[1], b.ci[1], failed.n, failed.infinite),
      gap: estimate(b.diff, b.diffCi),
    };
  };
  const [vsBase, vsRl] = [vsFailure(llr.base), vsFailure(llr.rl)];
  return {
    nllRlUnderBase: figure(
      lik.nllAunderB,
      nllCi.ci[0],
      lik.actions.a - lik.infinite.nllAunderB,
      lik.infinite.nllAunderB,
    ),
    nllRlUnderRl: figure(
      lik.nllAunderA,
      nllCi.ci[1],
      lik.actions.a - lik.infinite.nllAunderA,
      lik.infinite.nllAunderA,
    ),
    llrSuccessRl: figure(
      lik.llrSuccessA,
      llrCi.ci[0],
      lik.successful.a - lik.infinite.llrSuccessA,
      lik.infinite.llrSuccessA,
    ),
    llrSuccessBase: figure(
      lik.llrSuccessB,
      llrCi.ci[1],
      lik.successful.b - lik.infinite.llrSuccessB,
      lik.infinite.llrSuccessB,
    ),
    llrGap: { value: finiteOrNull(llrCi.diff), ci95: intervalOf(llrCi.diffCi) },
    nllBaseUnderBase,
    nllRatio: estimate(own.ratio, own.ratioCi),
    llrPerTurnSuccessBase: estimate(perTurn.value[0], perTurn.ci[0]),
    llrFailureBase: vsBase.failure,
    llrFailureRl: vsRl.failure,
    llrSuccessMinusFailureBase: vsBase.gap,
    llrSuccessMinusFailureRl: vsRl.gap,
    uniformNll: Math.log(typeof spec.actions === 'number' ? spec.actions : 1),
    note: LIKELIHOOD_NOTE,
  };
}

interface TrajectoryLlr {
  /** Σ_t [log π_A − log π_B] over the trajectory's own (unforced) turns, as eval/likelihood sums it. */
  llr: number;
  turns: number;
  success: boolean;
}

/** Each trajectory's cumulative LLR of a against b (eval/likelihood's contexts and order of additions). */
async function trajectoryLlrs(
  envs: MakeEnv,
  trajectories: readonly Trajectory[],
  a: MemoPolicy,
  b: MemoPolicy,
): Promise<TrajectoryLlr[]> {
  const scoreA = scorer(a)!;
  const scoreB = scorer(b)!;
  const revealBudget = a.budgetAware || b.budgetAware;
  return withEnvs(envs.make, async (views) => {
    const out: TrajectoryLlr[] = [];
    for (const tr of trajectories) {
      const env = await views.get(tr.task);
      let llr = 0;
      let turns = 0;
      for (let t = 0; t < tr.turns.length; t++) {
        if (tr.turns[t].forced === true) continue;
        const ctx = contextAt(tr, t, env, { revealBudget: tr.revealBudget || revealBudget });
        llr += (scoreA(ctx, tr.turns[t].action) as number) - (scoreB(ctx, tr.turns[t].action) as number);
        turns++;
      }
      out.push({ llr, turns, success: tr.outcome.success });
    }
    return out;
  });
}

// ── Training ─────────────────────────────────────────────────────────────────────────────────────

type Curve = { iter: number; value: number | null }[];

/**
 * The summary's `curves`: each variant's trajectory and step reward per iteration (from the trainer),
 * and their trends: mean of the last quarter of iterations − mean of the first quarter, with a
 * bootstrap interval over iterations (windowTrend, stream key 10 · variant + curve).
 */
export function measureTrainingCurves(
  trained: PerVariant<Pick<RlResult, 'curves'>>,
  config: StudyConfig,
): Summary['curves'] {
  const boot = bootOf(config);
  const variants = namesOf(trained) as Variant[];
  const window = Math.max(1, Math.floor(config.rl.iters / 4));
  const curve = (key: 'trajectoryReward' | 'stepReward' | 'stepRegret') =>
    Object.fromEntries(
      variants.map((n) => [
        n,
        trained[n]!.curves.map((p) => ({ iter: p.iter, value: finiteOrNull(p[key]) })),
      ]),
    ) as PerVariant<Curve>;
  const trend = Object.fromEntries(
    variants.map((n, v) => {
      const c = trained[n]!.curves;
      const tr = (key: 'trajectoryReward' | 'stepReward' | 'stepRegret', k: number) => {
        const w = windowTrend(
          c.map((p) => p[key]),
          window,
          { ...boot, key: 10 * v + k },
        );
        return {
          first: finiteOrNull(w.first),
          last: finiteOrNull(w.last),
          value: finiteOrNull(w.value),
          ci95: intervalOf(w.ci),
        };
      };
      return [
        n,
        {
          trajectoryReward: tr('trajectoryReward', 0),
          stepReward: tr('stepReward', 1),
          stepRegret: tr('stepRegret', 2),
        },
      ];
    }),
  );
  return {
    trajectoryReward: curve('trajectoryReward'),
    stepReward: curve('stepReward'),
    stepRegret: curve('stepRegret'),
    window,
    trend,
  };
}
