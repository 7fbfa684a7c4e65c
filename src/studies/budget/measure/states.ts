// The states the diagnostics at T_max are measured at: normal states and error states drawn from the
// base's and RL's own episodes (as `turnwise compare` does), how familiar each kind is to each policy,
// each error state's own pre-error state, and the paired contrast over states clustered by map that
// step quality and recovery both read.
import {
  collectStates,
  type ErrorStates,
  makeErrorStates,
  type Recorded,
  type State,
} from '../../../eval/states.ts';
import type { StudyConfig } from '../config.ts';
import { bootstrapRatios, type RatioIntervals } from '../stats.ts';
import type { Summary } from '../summary.ts';
import { type MakeEnv, movedAsIntended, WORLD_SETTINGS } from '../world.ts';
import type { Episodes } from './episodes.ts';

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

/** A figure over the error states whose forced move went the intended way, and over those that slipped
 * (states without a classification are in neither). */
export function byMove<X>(figure: (keep: (st: State) => boolean) => X): { intended: X; slipped: X } {
  return { intended: figure((st) => st.slipped === false), slipped: figure((st) => st.slipped === true) };
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
