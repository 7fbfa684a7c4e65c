// The states the step-level diagnostics look at (docs/methods.md §5):
//  - normal states: (trajectory, turn) pairs drawn uniformly from the policies' own trajectories, i.e.
//    from their state-visitation distribution under the budget;
//  - error states: take a turn u of a trajectory, put the env back where it was (replaying the
//    recorded actions from the episode's env seed), force a bad action there — one with positive
//    regret V*_h(s) − Q*_h(s, a) > 0, h = the turns left — and keep the state it leads to; with a
//    MoveClassifier, whether that forced move went the intended way or slipped. A tool env without an
//    oracle but with a scripted view (sql, tools, code) is given a detour instead: a valid call other
//    than the gold path's next one (a wrong query, a wrong tool call, a failing program), whose regret
//    no oracle measures (NaN in `regrets`).
// Every choice is drawn from Rng.derive(seed, STREAM.eval, key, i): reproducible, order-free.
import { Rng, STREAM } from '../core/rng.ts';
import type { Env, EnvFactory, Oracle, Task, Trajectory, Turn } from '../core/types.ts';
import { isPromise } from '../rollout/episode.ts';
import { closeEnv } from '../rollout/lockstep.ts';
import { EVAL_KEY } from './seeds.ts';

type AnyEnv = Env<unknown, unknown>;

/** A recorded trajectory with the env seed it was played with (what replay needs). */
export interface Recorded {
  trajectory: Trajectory;
  envSeed: number;
}

/** A decision point: the policy is about to take turn `history.length` of an episode with `budget`. */
export interface State {
  task: Task;
  observation: unknown;
  /** The turns before this state (an error state's last turn is the forced one, `forced: true`). */
  history: readonly Turn[];
  budget: number;
  /** Index of the pool (policy) whose trajectory the state came from. */
  from: number;
  /** The env at this state (error states; needed to continue from it). */
  snapshot?: unknown;
  /** Error states: the env just before the forced turn (the paired pre-error state), before its re-seed. */
  preSnapshot?: unknown;
  /** Error states whose forced move was classified (ErrorStateOptions.intended): true when the env's
   * randomness moved it elsewhere than the action intends, false when it went the intended way. */
  slipped?: boolean;
}

/**
 * Did a forced step go the way its action intends? `next` is the observation the step produced from
 * `observation`. Only the env's owner can say (on slippery ice the same action has several outcomes,
 * and the step's info does not name the one drawn), so the caller supplies it.
 */
export type MoveClassifier = (task: Task, observation: unknown, action: number, next: unknown) => boolean;

/** Q* differences below this count as ties (Q* values are probabilities here; as in policies/oracle). */
export const TIE = 1e-12;

export function turnsLeft(state: State): number {
  return state.budget - state.history.length;
}

/** Cumulative counts of eligible turns per trajectory, for uniform draws over (trajectory, turn). */
function turnIndex(pool: readonly Recorded[], eligible: (r: Recorded) => number): Float64Array {
  const cum = new Float64Array(pool.length + 1);
  pool.forEach((r, i) => {
    cum[i + 1] = cum[i] + Math.max(0, eligible(r));
  });
  return cum;
}

/** The trajectory holding eligible turn number u (0 ≤ u < cum[last]) and the turn within it. */
function locate(cum: Float64Array, u: number): [number, number] {
  let lo = 0;
  let hi = cum.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (cum[mid] <= u) lo = mid;
    else hi = mid - 1;
  }
  return [lo, u - cum[lo]];
}

/**
 * `count` normal states, taken in turn from each pool (state i from pool i mod pools) and uniformly over
 * the (trajectory, turn) pairs of that pool, with replacement.
 */
export function collectStates(pools: readonly (readonly Recorded[])[], count: number, seed: number): State[] {
  const index = pools.map((pool) => turnIndex(pool, (r) => r.trajectory.turns.length));
  const usable = pools.map((_, p) => p).filter((p) => index[p][pools[p].length] > 0);
  const states: State[] = [];
  if (usable.length === 0) return states;
  for (let i = 0; i < count; i++) {
    const p = usable[i % usable.length];
    const rng = Rng.derive(seed, STREAM.eval, EVAL_KEY.states, i);
    const cum = index[p];
    const [k, t] = locate(cum, rng.int(cum[pools[p].length]));
    const tr = pools[p][k].trajectory;
    states.push({
      task: tr.task,
      observation: tr.turns[t].observation,
      history: tr.turns.slice(0, t),
      budget: tr.budget,
      from: p,
    });
  }
  return states;
}

async function settle<T>(x: T | Promise<T>): Promise<T> {
  return isPromise(x) ? await x : x;
}

function sameObservation(a: unknown, b: unknown): boolean {
  return Object.is(a, b) || JSON.stringify(a) === JSON.stringify(b);
}

/** A fresh env put back at turn u of a recorded episode, by replaying its actions from its env seed.
 * The caller owns (and closes) it; it is closed here if the replay fails. */
export async function replayTo(envs: EnvFactory, rec: Recorded, u: number): Promise<AnyEnv> {
  const { trajectory: tr, envSeed } = rec;
  const env = await envs.make(tr.task);
  try {
    let obs = await settle(env.reset(envSeed));
    for (let t = 0; t <= u; t++) {
      if (!sameObservation(obs, tr.turns[t].observation)) {
        throw new Error(
          `replay of ${tr.id} diverged at turn ${t}: the env is not deterministic under its seed`,
        );
      }
      if (t === u) break;
      obs = (await settle(env.step(tr.turns[t].action))).observation;
    }
  } catch (e) {
    await closeEnv(env);
    throw e;
  }
  return env;
}

export interface ErrorStates {
  states: State[];
  /** Forcing attempts made (each one turn of one trajectory). */
  attempts: number;
  /** Attempts where every action was optimal (no positive-regret action to force). */
  noBadAction: number;
  /** Attempts where the forced action ended the episode (a hole, or a lucky slip onto the goal): there
   * is nothing to recover from, so they are not error states. */
  terminal: number;
  /** Attempts with positive-regret actions, none of them as bad as `minRelRegret` demands. */
  belowThreshold: number;
  /** The relative regret (V* − Q*)/V* of the forced action of each state (states' order), and of each
   * dropped terminal attempt (so the distribution of what was forced is complete). */
  regrets: number[];
  terminalRegrets: number[];
  /** With a classifier: whether each dropped terminal attempt's forced move slipped (terminalRegrets'
   * order; the kept states carry `slipped` themselves). Empty without one. */
  terminalSlipped: boolean[];
  /** The threshold the forced actions met. */
  minRelRegret: number;
}

export interface ErrorStateOptions {
  /** Forcing attempts at most (default 20 · count). */
  maxAttempts?: number;
  /**
   * A forced action must lose at least this fraction of the state's value: (V*_h − Q*_h(s,a)) / V*_h ≥
   * minRelRegret (default 0: any action with positive regret, beyond the tie tolerance). An action
   * that loses 0.2% of the value is not an error anyone would notice; 0.1 asks for a real one.
   */
  minRelRegret?: number;
  /** Classifies each forced move as intended or slipped (State.slipped, terminalSlipped); none: no split. */
  intended?: MoveClassifier;
}

/** The actions an error may force at (h, s): positive regret beyond TIE and ≥ minRelRegret · V*. */
export function errorActions(q: ArrayLike<number>, v: number, minRelRegret: number): number[] {
  const bad: number[] = [];
  for (let a = 0; a < q.length; a++) {
    const regret = v - q[a];
    if (regret > TIE && regret >= minRelRegret * v) bad.push(a);
  }
  return bad;
}

/** Envs that can be put back at a state and scored exactly support error injection. */
export function canInjectErrors(env: AnyEnv): boolean {
  return (
    env.spec.snapshots &&
    env.spec.oracle &&
    env.snapshot !== undefined &&
    env.restore !== undefined &&
    env.oracle !== undefined &&
    typeof env.spec.actions === 'number'
  );
}

/** Error states by a detour from the gold path: a tool env with snapshots and a scripted view. */
export function canInjectDetours(env: AnyEnv): boolean {
  return (
    env.spec.snapshots &&
    env.snapshot !== undefined &&
    env.restore !== undefined &&
    env.scripted !== undefined
  );
}

/** A tool call's identity (its name and arguments), as the scripted policies compare calls. */
const callKey = (a: unknown) =>
  JSON.stringify(
    typeof a === 'object' && a !== null && 'name' in a
      ? [a.name, (a as { arguments?: unknown }).arguments]
      : a,
  );

/** What may be forced at turn u of a trajectory: the oracle's bad actions with their relative regret,
 * or a scripted env's detours (regret NaN: no oracle measures it). */
function forcible(
  env: AnyEnv,
  tr: Trajectory,
  u: number,
  minRelRegret: number,
): { bad: unknown[]; regret: (a: unknown) => number; noneAtAll: boolean } {
  if (env.oracle === undefined) {
    const view = env.scripted!();
    const history = tr.turns.slice(0, u);
    const gold = callKey(view.goldAction(history));
    const bad = view.validActions(history).filter((a) => callKey(a) !== gold);
    return { bad, regret: () => Number.NaN, noneAtAll: bad.length === 0 };
  }
  const oracle = env.oracle() as Oracle<unknown>;
  const s = oracle.state(tr.turns[u].observation);
  const h = tr.budget - u;
  const q = oracle.q(h, s);
  const v = oracle.v(h, s);
  const bad = errorActions(q, v, minRelRegret);
  return {
    bad,
    regret: (a) => (v - q[a as number]) / v,
    noneAtAll: bad.length === 0 && errorActions(q, v, 0).length === 0,
  };
}

/**
 * `count` error states (fewer if `maxAttempts` forcing attempts do not yield them). Attempt i takes
 * pool i mod pools, a turn u ≤ budget − 2 of it (so that at least one turn is left after the forced
 * one) uniformly, and a uniformly chosen action of positive regret under Q*_{budget−u} that loses at
 * least `minRelRegret` of the state's value (errorActions).
 */
export async function makeErrorStates(
  envs: EnvFactory,
  pools: readonly (readonly Recorded[])[],
  count: number,
  seed: number,
  options: ErrorStateOptions = {},
): Promise<ErrorStates> {
  const maxAttempts = options.maxAttempts ?? 20 * count;
  const minRelRegret = options.minRelRegret ?? 0;
  const eligible = (r: Recorded) => Math.min(r.trajectory.turns.length, r.trajectory.budget - 1);
  const index = pools.map((pool) => turnIndex(pool, eligible));
  const usable = pools.map((_, p) => p).filter((p) => index[p][pools[p].length] > 0);
  const out: ErrorStates = {
    states: [],
    attempts: 0,
    noBadAction: 0,
    terminal: 0,
    belowThreshold: 0,
    regrets: [],
    terminalRegrets: [],
    terminalSlipped: [],
    minRelRegret,
  };
  if (usable.length === 0) return out;
  while (out.states.length < count && out.attempts < maxAttempts) {
    const i = out.attempts++;
    const p = usable[i % usable.length];
    const rng = Rng.derive(seed, STREAM.eval, EVAL_KEY.errors, i);
    const cum = index[p];
    const [k, u] = locate(cum, rng.int(cum[pools[p].length]));
    const rec = pools[p][k];
    const tr = rec.trajectory;
    const env = await replayTo(envs, rec, u);
    try {
      const { bad, regret, noneAtAll } = forcible(env, tr, u, minRelRegret);
      if (bad.length === 0) {
        if (noneAtAll) out.noBadAction++;
        else out.belowThreshold++;
        continue;
      }
      const forced = bad[rng.int(bad.length)];
      const relRegret = regret(forced);
      // The forced step gets its own env randomness (re-seeded), independent of the original episode.
      const preSnapshot = env.snapshot!();
      env.restore!(preSnapshot, rng.uint32());
      const res = await settle(env.step(forced));
      const slipped =
        options.intended === undefined || typeof forced !== 'number'
          ? undefined
          : !options.intended(tr.task, tr.turns[u].observation, forced, res.observation);
      if (res.terminated) {
        out.terminal++;
        out.terminalRegrets.push(relRegret);
        if (slipped !== undefined) out.terminalSlipped.push(slipped);
        continue;
      }
      out.regrets.push(relRegret);
      const forcedTurn: Turn = {
        t: u,
        observation: tr.turns[u].observation,
        action: forced,
        reward: res.reward,
        logp: 0,
        info: res.info,
        forced: true,
      };
      out.states.push({
        task: tr.task,
        observation: res.observation,
        history: [...tr.turns.slice(0, u), forcedTurn],
        budget: tr.budget,
        from: p,
        snapshot: env.snapshot!(),
        preSnapshot,
        ...(slipped === undefined ? {} : { slipped }),
      });
    } finally {
      await closeEnv(env);
    }
  }
  return out;
}
