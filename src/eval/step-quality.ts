// Step quality at the same state (docs/methods.md §5): at each state both policies draw M actions; each
// action is scored by the exact Q*_h(s, a), h = the turns left; over all M × M pairs we count A better,
// tie, B better, and each policy's mean regret V*_h(s) − Q*_h(s, a). States weigh equally. This
// separates "took better steps" from "reached easier states", which trajectory success mixes up.
//
// A and B draw from different streams (keys … state, policy): sharing one would make the diagonal
// pairs (i, i) correlated and bias the pair counts by O(1/M). Where both policies expose `probs`,
// the same figures are also computed exactly (no draw noise) at the same states.
import { isDiscrete } from '../core/policy.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type { Env, EnvFactory, Oracle, Policy, TurnContext } from '../core/types.ts';
import { decisionContext } from '../rollout/context.ts';
import { EnvCache } from '../rollout/env-cache.ts';
import { isPromise } from '../rollout/episode.ts';
import { EVAL_KEY } from './seeds.ts';
import { type State, TIE, turnsLeft } from './states.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface PairFigures {
  /** P(A's action has the higher Q*) over all pairs. */
  aBetter: number;
  ties: number;
  bBetter: number;
  /** P(A better) + ½ P(tie): 0.5 when the policies step equally well. */
  score: number;
  /** Mean V* − Q* of each policy's actions. */
  regretA: number;
  regretB: number;
}

/** The figures, null when there are no states to score. */
export type MaybeFigures = { [F in keyof PairFigures]: number | null };

export interface StepQuality extends MaybeFigures {
  /** States scored (the figures are null when there are none). */
  states: number;
  /** The expectations of the figures above at the same states, from the policies' distributions;
   * null unless both policies expose `probs`. */
  exact: PairFigures | null;
}

export interface StepQualityOptions {
  /** M: actions each policy draws per state (default 16). */
  actions?: number;
  seed: number;
  /** Distinguishes state sets (normal 0, error 1) so that their draws are independent. */
  key?: number;
  /** Receives each state's own figures — from the draws, and exact when both policies expose `probs`
   * — so that a caller can put an interval over states on the means (the budget study bootstraps them). */
  onState?: (index: number, sampled: PairFigures, exact: PairFigures | null, at: StateValues) => void;
  /**
   * Relative tie tolerance: two actions tie when their Q* differ by at most max(TIE, relTie · V*_h(s))
   * (default 0: TIE alone). Q* values that differ by 1e-4 of a probability are a tie for any purpose;
   * with TIE alone their order decides "better".
   */
  relTie?: number;
}

/** The state's V*_h(s) and the spread max − min of Q*_h(s, ·) (how much the choice matters there). */
export interface StateValues {
  v: number;
  spread: number;
}

export const DEFAULT_ACTIONS = 16;

/** What `policy` sees at the state: a budget-aware policy is told the turns left. */
function context(
  state: State,
  policy: AnyPolicy,
  env: Env<unknown, unknown>,
  rng: Rng,
): TurnContext<unknown> {
  return decisionContext(state, env, policy.budgetAware, rng);
}

/** Q*_h(s, a) of an action; an invalid action leaves the state as it is and spends the turn. */
function quality(q: Float64Array, stay: number, action: unknown): number {
  return typeof action === 'number' && Number.isInteger(action) && action >= 0 && action < q.length
    ? q[action]
    : stay;
}

function compare(x: number, y: number, tol = TIE): -1 | 0 | 1 {
  return Math.abs(x - y) <= tol ? 0 : x > y ? 1 : -1;
}

function zeroFigures(): Omit<PairFigures, 'score'> {
  return { aBetter: 0, ties: 0, bBetter: 0, regretA: 0, regretB: 0 };
}

function withScore(x: Omit<PairFigures, 'score'>): PairFigures {
  return { ...x, score: x.aBetter + x.ties / 2 };
}

export async function stepQuality(
  envs: EnvFactory,
  states: readonly State[],
  a: AnyPolicy,
  b: AnyPolicy,
  options: StepQualityOptions,
): Promise<StepQuality> {
  const M = options.actions ?? DEFAULT_ACTIONS;
  const key = options.key ?? 0;
  const policies = [a, b];
  const sum = { aBetter: 0, ties: 0, bBetter: 0, regretA: 0, regretB: 0 };
  const exactSum = { aBetter: 0, ties: 0, bBetter: 0, regretA: 0, regretB: 0 };
  const da = isDiscrete(a) ? a : undefined;
  const db = isDiscrete(b) ? b : undefined;
  const withProbs = da !== undefined && db !== undefined;
  const cache = new EnvCache(envs.make);
  try {
    const scores = [new Float64Array(M), new Float64Array(M)];
    for (let i = 0; i < states.length; i++) {
      const state = states[i];
      const env = await cache.get(state.task);
      const oracle = env.oracle?.() as Oracle<unknown> | undefined;
      if (oracle === undefined)
        throw new Error(`env ${env.spec.id} has no exact oracle to score actions with`);
      const h = turnsLeft(state);
      const s = oracle.state(state.observation);
      const q = Float64Array.from(oracle.q(h, s));
      const v = oracle.v(h, s);
      const stay = oracle.v(h - 1, s);
      const tol = Math.max(TIE, (options.relTie ?? 0) * v);
      for (let p = 0; p < 2; p++) {
        const ctx = context(
          state,
          policies[p],
          env,
          Rng.derive(options.seed, STREAM.eval, EVAL_KEY.draws, key, i, p),
        );
        for (let m = 0; m < M; m++) {
          let act = policies[p].act(ctx);
          if (isPromise(act)) act = await act;
          scores[p][m] = quality(q, stay, act.action);
        }
      }
      let better = 0;
      let tie = 0;
      let worse = 0;
      for (const x of scores[0]) {
        for (const y of scores[1]) {
          const c = compare(x, y, tol);
          if (c > 0) better++;
          else if (c < 0) worse++;
          else tie++;
        }
      }
      const pairs = M * M;
      sum.aBetter += better / pairs;
      sum.ties += tie / pairs;
      sum.bBetter += worse / pairs;
      for (let m = 0; m < M; m++) {
        sum.regretA += (v - scores[0][m]) / M;
        sum.regretB += (v - scores[1][m]) / M;
      }
      // This state's own exact figures, accumulated apart only when someone asks for them (the sums
      // above keep their order of additions, hence their bits).
      const mine = options.onState === undefined ? null : zeroFigures();
      if (withProbs) {
        const rng = Rng.derive(0);
        const pa = da!.probs(context(state, a, env, rng));
        const pb = db!.probs(context(state, b, env, rng));
        for (let x = 0; x < q.length; x++) {
          exactSum.regretA += pa[x] * (v - q[x]);
          exactSum.regretB += pb[x] * (v - q[x]);
          if (mine !== null) {
            mine.regretA += pa[x] * (v - q[x]);
            mine.regretB += pb[x] * (v - q[x]);
          }
          for (let y = 0; y < q.length; y++) {
            const w = pa[x] * pb[y];
            const c = compare(q[x], q[y], tol);
            if (c > 0) exactSum.aBetter += w;
            else if (c < 0) exactSum.bBetter += w;
            else exactSum.ties += w;
            if (mine !== null) {
              if (c > 0) mine.aBetter += w;
              else if (c < 0) mine.bBetter += w;
              else mine.ties += w;
            }
          }
        }
      }
      if (options.onState !== undefined) {
        let regretA = 0;
        let regretB = 0;
        for (let m = 0; m < M; m++) {
          regretA += (v - scores[0][m]) / M;
          regretB += (v - scores[1][m]) / M;
        }
        const drawn = {
          aBetter: better / pairs,
          ties: tie / pairs,
          bBetter: worse / pairs,
          regretA,
          regretB,
        };
        let lo = Number.POSITIVE_INFINITY;
        let hi = Number.NEGATIVE_INFINITY;
        for (const x of q) {
          lo = Math.min(lo, x);
          hi = Math.max(hi, x);
        }
        options.onState(i, withScore(drawn), withProbs && mine !== null ? withScore(mine) : null, {
          v,
          spread: hi - lo,
        });
      }
    }
  } finally {
    await cache.close();
  }
  const n = states.length;
  const mean = (x: typeof sum): PairFigures => ({
    aBetter: x.aBetter / n,
    ties: x.ties / n,
    bBetter: x.bBetter / n,
    regretA: x.regretA / n,
    regretB: x.regretB / n,
    score: (x.aBetter + x.ties / 2) / n,
  });
  if (n === 0) {
    return {
      aBetter: null,
      ties: null,
      bBetter: null,
      regretA: null,
      regretB: null,
      score: null,
      states: 0,
      exact: null,
    };
  }
  return { ...mean(sum), states: n, exact: withProbs ? mean(exactSum) : null };
}
