// Step quality where no exact Q* exists (the tool envs): the per-turn quality proxy the env reports in
// `info.quality` (sql: the IoU of an executed query's result with the gold result; tools: the share of
// goal attributes satisfied after the call minus those destroyed; code: the share of hidden tests an
// attempt passes; search: the clues newly acquired) stands in for Q*_h(s, a).
//
// Two figures per policy pair:
//  - on their own trajectories: the mean proxy of each policy's own (not forced) turns that carry one;
//  - at the same states (docs/methods.md §5's design, the proxy in place of Q*): normal states drawn exactly
//    as collectStates draws them (same streams, so the same states), the env put back there by
//    replaying the recorded actions; each policy draws M actions, each is stepped from that state (the
//    env restored from a snapshot between draws) and scored by the proxy of its step. Pairs are compared
//    where both actions carry a proxy (a call without one — sql's list_tables — is not scored); `scored`
//    says how many pairs that was. States weigh equally; a state with no scored pair is left out.
import { Rng, STREAM } from '../core/rng.ts';
import type { Env, EnvFactory, Policy, Trajectory, Turn } from '../core/types.ts';
import { decisionContext } from '../rollout/context.ts';
import { isPromise } from '../rollout/episode.ts';
import { closeEnv } from '../rollout/lockstep.ts';
import { EVAL_KEY } from './seeds.ts';
import { type Recorded, replayTo, type State, TIE } from './states.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface StepProxy {
  /** The info field read. */
  field: 'quality';
  /** Own trajectories: mean proxy over the turns that carry one, and how many did. */
  own: { a: number | null; b: number | null; turnsA: number; turnsB: number };
  /** Same states: states with at least one scored pair, P(A better), ties, P(B better), the score
   * P(A better) + ½ P(tie), each policy's mean proxy there; null figures when no state was scored. */
  states: number;
  aBetter: number | null;
  ties: number | null;
  bBetter: number | null;
  score: number | null;
  meanA: number | null;
  meanB: number | null;
  /** Scored pairs over all pairs drawn. */
  scored: number;
}

const proxyOf = (info: Record<string, unknown>): number | undefined =>
  typeof info.quality === 'number' && Number.isFinite(info.quality) ? info.quality : undefined;

/** Whether any turn of these trajectories carries the proxy. */
export function hasStepProxy(trajectories: readonly Trajectory[]): boolean {
  return trajectories.some((t) => t.turns.some((x) => proxyOf(x.info) !== undefined));
}

/** The mean proxy of the policies' own (not forced) turns that carry one, and how many did. */
export function ownMean(trajectories: readonly Trajectory[]): [number | null, number] {
  let sum = 0;
  let n = 0;
  for (const t of trajectories) {
    for (const turn of t.turns) {
      const q = turn.forced === true ? undefined : proxyOf(turn.info);
      if (q === undefined) continue;
      sum += q;
      n++;
    }
  }
  return [n > 0 ? sum / n : null, n];
}

/** (pool, recorded, turn) of normal state i — collectStates' draw, keeping the recording. */
function drawStates(
  pools: readonly (readonly Recorded[])[],
  count: number,
  seed: number,
): { rec: Recorded; turn: number }[] {
  const cums = pools.map((pool) => {
    const cum = new Float64Array(pool.length + 1);
    pool.forEach((r, i) => {
      cum[i + 1] = cum[i] + r.trajectory.turns.length;
    });
    return cum;
  });
  const usable = pools.map((_, p) => p).filter((p) => cums[p][pools[p].length] > 0);
  const out: { rec: Recorded; turn: number }[] = [];
  if (usable.length === 0) return out;
  for (let i = 0; i < count; i++) {
    const p = usable[i % usable.length];
    const cum = cums[p];
    const u = Rng.derive(seed, STREAM.eval, EVAL_KEY.states, i).int(cum[pools[p].length]);
    let lo = 0;
    let hi = cum.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (cum[mid] <= u) lo = mid;
      else hi = mid - 1;
    }
    out.push({ rec: pools[p][lo], turn: u - cum[lo] });
  }
  return out;
}

async function settle<T>(x: T | Promise<T>): Promise<T> {
  return isPromise(x) ? await x : x;
}

export interface StepProxyOptions {
  states: number;
  actions: number;
  seed: number;
  /** Receives each scored state's own figures (the caller may put an interval over states on them). */
  onState?: (index: number, figures: ProxyFigures) => void;
}

/** One state's figures: over its M × M pairs where both draws carry a proxy. */
export interface ProxyFigures {
  aBetter: number;
  ties: number;
  bBetter: number;
  /** P(A better) + ½ P(tie). */
  score: number;
  meanA: number;
  meanB: number;
}

/** Where a state's draws are stepped from: the env at the state (taken over: closed by the caller), and
 * a fresh one at the same state for a draw when the env cannot be restored. */
interface StateEnv {
  env: Env<unknown, unknown>;
  fresh: () => Promise<Env<unknown, unknown>>;
}

/** M draws of each policy at one state, each stepped from the state itself and scored by its proxy;
 * the pair counts (drawn, scored) and the state's figures, null when no pair was scored. `key`
 * separates the draws of different state sets (normal states: 2). */
async function scoreState(
  at: StateEnv,
  point: { observation: unknown; history: readonly Turn[]; budget: number },
  both: readonly AnyPolicy[],
  M: number,
  seed: number,
  key: number,
  i: number,
): Promise<{ drawn: number; scored: number; figures: ProxyFigures | null }> {
  const { env } = at;
  const snapshot = env.snapshot?.();
  const scores: (number | undefined)[][] = [[], []];
  for (let p = 0; p < 2; p++) {
    const ctx = decisionContext(
      point,
      env,
      both[p].budgetAware,
      Rng.derive(seed, STREAM.eval, EVAL_KEY.draws, key, i, p),
    );
    for (let m = 0; m < M; m++) {
      // Each draw is stepped from the state itself: restored from its snapshot, or made anew.
      let stepped = env;
      if (m > 0 || p > 0) {
        if (snapshot !== undefined && env.restore !== undefined) env.restore(snapshot);
        else stepped = await at.fresh();
      }
      const act = await settle(both[p].act(ctx));
      try {
        scores[p].push(proxyOf((await settle(stepped.step(act.action))).info));
      } finally {
        if (stepped !== env) await closeEnv(stepped);
      }
    }
  }
  let better = 0;
  let tie = 0;
  let worse = 0;
  for (const x of scores[0]) {
    for (const y of scores[1]) {
      if (x === undefined || y === undefined) continue;
      if (Math.abs(x - y) <= TIE) tie++;
      else if (x > y) better++;
      else worse++;
    }
  }
  const pairs = better + tie + worse;
  const drawn = scores[0].length * scores[1].length;
  if (pairs === 0) return { drawn, scored: 0, figures: null };
  const mean = (xs: (number | undefined)[]) => {
    const ys = xs.filter((x): x is number => x !== undefined);
    return ys.reduce((s, x) => s + x, 0) / ys.length;
  };
  const aBetter = better / pairs;
  const ties = tie / pairs;
  return {
    drawn,
    scored: pairs,
    figures: {
      aBetter,
      ties,
      bBetter: worse / pairs,
      score: aBetter + ties / 2,
      meanA: mean(scores[0]),
      meanB: mean(scores[1]),
    },
  };
}

/** Sums the scored states' figures into the means the report gives. */
class ProxyTally {
  readonly sum = { aBetter: 0, ties: 0, bBetter: 0, meanA: 0, meanB: 0 };
  states = 0;
  scored = 0;
  drawn = 0;

  add(r: { drawn: number; scored: number; figures: ProxyFigures | null }): void {
    this.drawn += r.drawn;
    this.scored += r.scored;
    if (r.figures === null) return;
    this.states++;
    for (const k of Object.keys(this.sum) as (keyof ProxyTally['sum'])[]) this.sum[k] += r.figures[k];
  }

  figures(): Omit<StepProxy, 'field' | 'own'> {
    const per = (x: number) => (this.states > 0 ? x / this.states : null);
    const aBetter = per(this.sum.aBetter);
    const ties = per(this.sum.ties);
    return {
      states: this.states,
      aBetter,
      ties,
      bBetter: per(this.sum.bBetter),
      score: aBetter === null || ties === null ? null : aBetter + ties / 2,
      meanA: per(this.sum.meanA),
      meanB: per(this.sum.meanB),
      scored: this.drawn > 0 ? this.scored / this.drawn : 0,
    };
  }
}

export async function stepProxy(
  envs: EnvFactory,
  recorded: { a: readonly Recorded[]; b: readonly Recorded[] },
  pools: readonly (readonly Recorded[])[],
  policies: { a: AnyPolicy; b: AnyPolicy },
  o: StepProxyOptions,
): Promise<StepProxy> {
  const [ownA, turnsA] = ownMean(recorded.a.map((r) => r.trajectory));
  const [ownB, turnsB] = ownMean(recorded.b.map((r) => r.trajectory));
  const both = [policies.a, policies.b];
  const tally = new ProxyTally();
  const points = drawStates(pools, o.states, o.seed);
  for (let i = 0; i < points.length; i++) {
    const { rec, turn } = points[i];
    const tr = rec.trajectory;
    const env = (await replayTo(envs, rec, turn)) as Env<unknown, unknown>;
    try {
      const point = {
        observation: tr.turns[turn].observation,
        history: tr.turns.slice(0, turn),
        budget: tr.budget,
      };
      const fresh = async () => (await replayTo(envs, rec, turn)) as Env<unknown, unknown>;
      const r = await scoreState({ env, fresh }, point, both, o.actions, o.seed, 2, i);
      tally.add(r);
      if (r.figures !== null) o.onState?.(i, r.figures);
    } finally {
      await closeEnv(env);
    }
  }
  return { field: 'quality', own: { a: ownA, b: ownB, turnsA, turnsB }, ...tally.figures() };
}

/**
 * The same figures at given states that carry their env (`snapshot`, or `preSnapshot` with `pre`: error
 * states and their pre-error states, eval/states.ts), each state's draws under `key` (≥ 3; normal
 * states drawn by stepProxy use 2).
 */
export async function stepProxyAt(
  envs: EnvFactory,
  states: readonly State[],
  policies: { a: AnyPolicy; b: AnyPolicy },
  o: Omit<StepProxyOptions, 'states'> & { key: number; pre?: boolean },
): Promise<Omit<StepProxy, 'field' | 'own'>> {
  const tally = new ProxyTally();
  for (let i = 0; i < states.length; i++) {
    const st = states[i];
    const snapshot = o.pre === true ? st.preSnapshot : st.snapshot;
    const history = o.pre === true ? st.history.slice(0, -1) : st.history;
    const observation = o.pre === true ? st.history[st.history.length - 1].observation : st.observation;
    if (snapshot === undefined) throw new Error('stepProxyAt: a state without its env snapshot');
    const fresh = async () => {
      const env = (await envs.make(st.task)) as Env<unknown, unknown>;
      env.restore!(snapshot);
      return env;
    };
    const env = await fresh();
    try {
      const r = await scoreState(
        { env, fresh },
        { observation, history, budget: st.budget },
        [policies.a, policies.b],
        o.actions,
        o.seed,
        o.key,
        i,
      );
      tally.add(r);
      if (r.figures !== null) o.onState?.(i, r.figures);
    } finally {
      await closeEnv(env);
    }
  }
  return tally.figures();
}
