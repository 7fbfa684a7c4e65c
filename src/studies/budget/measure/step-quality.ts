// The summary's `stepQuality`: RL against the base action by action, at normal states, at error states
// and at their pre-error states, exactly (Q*) and from drawn actions; the error contrast; the injected
// errors' counts and regrets.
import type { ErrorStates, State } from '../../../eval/states.ts';
import { type PairFigures, stepQuality } from '../../../eval/step-quality.ts';
import { largestBudget, type StudyConfig } from '../config.ts';
import {
  finiteOrNull,
  intervalOf,
  type StepQualityDetail,
  type StepQualityFigure,
  type StepQualitySubset,
} from '../figures.ts';
import type { MemoPolicy } from '../memo.ts';
import type { PerPolicy } from '../setup.ts';
import { bootSettings, bootstrapRatios, bootstrapSeries, STUDY_KEY } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { MakeEnv } from '../world.ts';
import { byMove, type DiagnosticStates, pairedContrastWhere, preErrorState } from './states.ts';

/**
 * The three sets of states step quality is measured at, each with its own streams: `draws` for the
 * actions eval/step-quality draws, `resamples` for the bootstrap over states.
 */
const STATE_SETS = {
  normal: { draws: 0, resamples: STUDY_KEY.normalStates },
  error: { draws: 1, resamples: STUDY_KEY.errorStates },
  preError: { draws: 2, resamples: STUDY_KEY.preErrorStates },
} as const;
type StateSet = (typeof STATE_SETS)[keyof typeof STATE_SETS];

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
  const normal = await stepQualityAt(envs, states.normal, STATE_SETS.normal, policies, config);
  onPart();
  const error = await stepQualityAt(envs, errorStates, STATE_SETS.error, policies, config);
  const preError = await stepQualityAt(
    envs,
    errorStates.map(preErrorState),
    STATE_SETS.preError,
    policies,
    config,
  );
  onPart();
  const { attempts, noBadAction, terminal, belowThreshold, minRelRegret } = states.errors;
  const contrastOf = (keep: (st: State) => boolean) => {
    const c = pairedContrastWhere(error.perState, preError.perState, errorStates, keep, bootSettings(config));
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
    budget: largestBudget(config),
  };
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

/** Step quality at one set of states, on that set's own streams. */
async function stepQualityAt(
  envs: MakeEnv,
  states: readonly State[],
  set: StateSet,
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  config: StudyConfig,
): Promise<{ figure: StepQualityFigure; perState: Float64Array }> {
  const exactScore = new Float64Array(states.length);
  const drawnScore = new Float64Array(states.length);
  const perState: PerStateFigures[] = [];
  const q = await stepQuality(envs, states, policies.rl, policies.base, {
    actions: config.eval.actions,
    seed: config.seed,
    key: set.draws,
    relTie: config.eval.relTie,
    onState: (i, drawn: PairFigures, ex: PairFigures | null, at) => {
      drawnScore[i] = drawn.score;
      exactScore[i] = ex?.score ?? Number.NaN;
      if (ex !== null) perState[i] = { ...ex, ...at };
    },
  });
  const b = bootstrapSeries([exactScore, drawnScore], states.length, 1, [], {
    ...bootSettings(config),
    key: set.resamples,
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
    const r = bootstrapRatios(
      [strict, ties, score, excl, qRl, qBase, regretRl, regretBase],
      bootSettings(config),
    );
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
