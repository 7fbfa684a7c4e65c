// Likelihood diagnostics (docs/methods.md §5): how surprising one policy's actions are to the other.
//   NLL of A's actions under P = mean over A's (non-forced) actions of −log π_P(a_t | h_t)
//   LLR of a trajectory        = Σ_t [log π_A(a_t | h_t) − log π_B(a_t | h_t)]
// summarised over the successful trajectories of each policy (positive: A would rather have taken
// those steps). Turns are scored in the context act() saw (rollout/context.ts), with the turns left
// told whenever the trajectory revealed them or a scorer is budget-aware (a budget-blind policy
// ignores them, a budget-aware one needs them).
//
// Infinite values. A greedy policy gives most actions probability 0, so log π = −∞ is common (random's
// actions under the greedy oracle). JSON has no Infinity, and a mean with one infinite term says
// nothing else, so: every figure is the mean over its finite terms, `infinite` counts the terms left
// out (actions for NLL, trajectories for LLR — +∞ for A's trajectories when B gives one of A's actions
// probability 0, −∞ for B's when A does; a term that is −∞ − (−∞) is undefined and counted there too),
// and a figure is null when no term is finite. Read a figure together with its count.
//
// Text policies (the paper's units, Zhu et al. 2026). When a policy writes text, the same terms are
// also reported per token and per trajectory (`perToken`, `perTrajectory`; absent for policies that
// write no text, whose output is unchanged):
//   NLL per token       = Σ −log π_P(a_t | h_t) / Σ n_t over the actions (finite terms, with their tokens)
//   NLL per trajectory  = mean over trajectories of Σ_t −log π_P(a_t | h_t)
//   LLR per token       = Σ LLR(τ) / Σ_{t ∈ τ} n_t over the successful trajectories
// (LLR per trajectory is the figure above). The token unit n_t: the tokens of the action as the policy
// whose trajectory it is wrote it — `trace.tokens` of the turn (`trace.logprobs` when the server gave
// no ids), `<|end|>` included for the transformer; for a turn without them (a policy that writes no
// text, the oracle), the tokens the text policy (A, else B) writes the action in (`actionTokens`, its
// canonical rendering and `<|end|>`). One count per action whichever policy scores it, so that for the
// same actions NLL under B − NLL under A = LLR, per token as per action. Two policies with different
// tokenizers write the same action in different counts: the figures are per token of the policy that
// acted. A side with a turn that has no count has null per-token figures.
import { isDiscrete } from '../core/policy.ts';
import type {
  EnvFactory,
  EnvSpec,
  MaybePromise,
  Policy,
  Trajectory,
  Turn,
  TurnContext,
} from '../core/types.ts';
import { contextAt } from '../rollout/context.ts';
import { type EnvCache, withEnvs } from '../rollout/env-cache.ts';
import { isPromise } from '../rollout/episode.ts';

type AnyPolicy = Policy<unknown, unknown>;
type Scorer = (ctx: TurnContext<unknown>, action: unknown) => MaybePromise<number>;

export const LIKELIHOOD_NOTE =
  'means over finite terms; infinite counts the terms (actions for NLL, trajectories for LLR) whose value is infinite or undefined and which are left out; a figure is null when no term is finite';

export interface Likelihood {
  /** Mean −log π_A over A's actions. */
  nllAunderA: number | null;
  /** Mean −log π_B over A's actions. */
  nllAunderB: number | null;
  /** Mean trajectory LLR (log π_A − log π_B) over A's successful trajectories. */
  llrSuccessA: number | null;
  /** The same over B's successful trajectories. */
  llrSuccessB: number | null;
  nllBunderB: number | null;
  nllBunderA: number | null;
  /** Actions scored, per policy whose trajectories they come from. */
  actions: { a: number; b: number };
  /** Successful trajectories, per policy. */
  successful: { a: number; b: number };
  /** Terms left out of each figure because they are infinite (or undefined). */
  infinite: Record<
    'nllAunderA' | 'nllAunderB' | 'llrSuccessA' | 'llrSuccessB' | 'nllBunderB' | 'nllBunderA',
    number
  >;
  note: string;
  /** The figures per token of the acting policy's text; present when a policy writes text. */
  perToken?: PerToken;
  /** NLL per trajectory; present with perToken. LLR per trajectory is llrSuccessA/B above. */
  perTrajectory?: PerTrajectory;
}

type Pair<T> = { a: T; b: T };
type Figures = 'nllAunderA' | 'nllAunderB' | 'nllBunderB' | 'nllBunderA';

export const TOKEN_UNIT =
  "tokens of each action as the policy whose trajectory it is wrote it (the turn's trace.tokens, <|end|> included for the transformer); for a policy that writes no text, as the text policy (A, else B) writes the action (actionTokens)";

/** Σ −log π / Σ tokens and Σ LLR / Σ tokens over the same finite terms as the per-action figures
 * (`infinite` repeats their counts); null for a side whose turns cannot all be counted in tokens. */
export interface PerToken extends Record<Figures | 'llrSuccessA' | 'llrSuccessB', number | null> {
  /** Tokens of the scored actions, of all successful trajectories' actions; null: not countable. */
  tokens: Pair<number | null>;
  successfulTokens: Pair<number | null>;
  infinite: Record<Figures | 'llrSuccessA' | 'llrSuccessB', number>;
  unit: string;
}

/** Mean over trajectories of Σ_t −log π; a trajectory with one infinite term is left out and counted. */
export interface PerTrajectory extends Record<Figures, number | null> {
  trajectories: Pair<number>;
  infinite: Record<Figures, number>;
}

/** log π(action | ctx) from logProb, or from probs for discrete actions; undefined when neither exists. */
export function scorer(policy: AnyPolicy): Scorer | undefined {
  if (policy.logProb !== undefined) return policy.logProb.bind(policy);
  if (!isDiscrete(policy)) return undefined;
  const probs = policy.probs.bind(policy);
  return (ctx, action) => {
    const p = probs(ctx);
    return typeof action === 'number' && Number.isInteger(action) && action >= 0 && action < p.length
      ? Math.log(p[action])
      : Number.NEGATIVE_INFINITY;
  };
}

/** Running mean over finite terms (Neumaier-compensated, so that n equal terms average to exactly that
 * term: the NLL of every action under `random` is ln 4 to the last bit), with the count of the others. */
class FiniteMean {
  private sum = 0;
  private comp = 0;
  n = 0;
  infinite = 0;
  add(x: number): void {
    if (!Number.isFinite(x)) {
      this.infinite++;
      return;
    }
    const t = this.sum + x;
    this.comp += Math.abs(this.sum) >= Math.abs(x) ? this.sum - t + x : x - t + this.sum;
    this.sum = t;
    this.n++;
  }
  get mean(): number | null {
    return this.n > 0 ? (this.sum + this.comp) / this.n : null;
  }
  /** The compensated sum of the finite terms. */
  get total(): number {
    return this.sum + this.comp;
  }
}

/** Σ x / Σ w over the terms whose x is finite (x Neumaier-compensated, w whole counts), with the count
 * of the others: a left-out term's weight leaves the denominator too. */
class FiniteRatio {
  private readonly num = new FiniteMean();
  private den = 0;
  add(x: number, w: number): void {
    this.num.add(x);
    if (Number.isFinite(x)) this.den += w;
  }
  get infinite(): number {
    return this.num.infinite;
  }
  get ratio(): number | null {
    return this.num.n === 0 || this.den === 0 ? null : this.num.total / this.den;
  }
}

/** What writes actions in tokens (the transformer policy): eval/ cannot import policies/. */
interface TokenWriter {
  actionTokens(spec: EnvSpec, action: unknown): number[] | undefined;
}

function tokenWriter(p: AnyPolicy): TokenWriter | undefined {
  const w = p as Partial<TokenWriter>;
  return typeof w.actionTokens === 'function' ? (w as TokenWriter) : undefined;
}

/** n_t of TOKEN_UNIT: the trace's tokens (or log-probs), else the writer's rendering; undefined when
 * neither exists, or when the turn's text was written without tokens (a server that gave none: its
 * tokens are not the writer's). */
function tokenCount(turn: Turn, spec: EnvSpec, writer: TokenWriter | undefined): number | undefined {
  const trace = turn.trace;
  const written = trace?.tokens ?? trace?.logprobs;
  if (written !== undefined) return written.length;
  if (trace?.text !== undefined) return undefined;
  return writer?.actionTokens(spec, turn.action)?.length;
}

interface Scored {
  /** −log π_A and −log π_B over the actions. */
  nllA: FiniteMean;
  nllB: FiniteMean;
  llrSuccess: FiniteMean;
  actions: number;
  successful: number;
  /** The same per token (TOKEN_UNIT) and NLL per trajectory. */
  tokNllA: FiniteRatio;
  tokNllB: FiniteRatio;
  tokLlrSuccess: FiniteRatio;
  trajNllA: FiniteMean;
  trajNllB: FiniteMean;
  trajectories: number;
  tokens: number;
  successfulTokens: number;
  /** Every own turn had a token count; some turn was counted (the side is text). */
  countable: boolean;
  counted: boolean;
}

async function scoreTrajectories(
  views: EnvCache,
  trajectories: readonly Trajectory[],
  scoreA: Scorer,
  scoreB: Scorer,
  budgetAware: boolean,
  writer: TokenWriter | undefined,
): Promise<Scored> {
  const out: Scored = {
    nllA: new FiniteMean(),
    nllB: new FiniteMean(),
    llrSuccess: new FiniteMean(),
    actions: 0,
    successful: 0,
    tokNllA: new FiniteRatio(),
    tokNllB: new FiniteRatio(),
    tokLlrSuccess: new FiniteRatio(),
    trajNllA: new FiniteMean(),
    trajNllB: new FiniteMean(),
    trajectories: 0,
    tokens: 0,
    successfulTokens: 0,
    countable: true,
    counted: false,
  };
  for (const tr of trajectories) {
    const env = await views.get(tr.task);
    const revealBudget = tr.revealBudget || budgetAware;
    let llr = 0;
    let nllA = 0;
    let nllB = 0;
    let tokens = 0;
    for (let t = 0; t < tr.turns.length; t++) {
      const turn = tr.turns[t];
      if (turn.forced === true) continue;
      const ctx: TurnContext<unknown> = contextAt(tr, t, env, { revealBudget });
      let la = scoreA(ctx, turn.action);
      if (isPromise(la)) la = await la;
      let lb = scoreB(ctx, turn.action);
      if (isPromise(lb)) lb = await lb;
      out.nllA.add(-la);
      out.nllB.add(-lb);
      out.actions++;
      llr += la - lb;
      nllA -= la;
      nllB -= lb;
      const n = tokenCount(turn, env.spec, writer);
      if (n === undefined) out.countable = false;
      else {
        out.counted = true;
        tokens += n;
        out.tokNllA.add(-la, n);
        out.tokNllB.add(-lb, n);
      }
    }
    out.trajectories++;
    out.trajNllA.add(nllA);
    out.trajNllB.add(nllB);
    out.tokens += tokens;
    if (tr.outcome.success) {
      out.successful++;
      out.llrSuccess.add(llr);
      out.successfulTokens += tokens;
      out.tokLlrSuccess.add(llr, tokens);
    }
  }
  return out;
}

/** The per-token and per-trajectory figures of A's and B's scored trajectories (Likelihood's keys). */
function textFigures(A: Scored, B: Scored): { perToken: PerToken; perTrajectory: PerTrajectory } {
  const tok = (s: Scored, r: FiniteRatio) => (s.countable ? r.ratio : null);
  const count = (s: Scored, n: number) => (s.countable ? n : null);
  return {
    perToken: {
      nllAunderA: tok(A, A.tokNllA),
      nllAunderB: tok(A, A.tokNllB),
      llrSuccessA: tok(A, A.tokLlrSuccess),
      llrSuccessB: tok(B, B.tokLlrSuccess),
      nllBunderB: tok(B, B.tokNllB),
      nllBunderA: tok(B, B.tokNllA),
      tokens: { a: count(A, A.tokens), b: count(B, B.tokens) },
      successfulTokens: { a: count(A, A.successfulTokens), b: count(B, B.successfulTokens) },
      infinite: {
        nllAunderA: A.tokNllA.infinite,
        nllAunderB: A.tokNllB.infinite,
        llrSuccessA: A.tokLlrSuccess.infinite,
        llrSuccessB: B.tokLlrSuccess.infinite,
        nllBunderB: B.tokNllB.infinite,
        nllBunderA: B.tokNllA.infinite,
      },
      unit: TOKEN_UNIT,
    },
    perTrajectory: {
      nllAunderA: A.trajNllA.mean,
      nllAunderB: A.trajNllB.mean,
      nllBunderB: B.trajNllB.mean,
      nllBunderA: B.trajNllA.mean,
      trajectories: { a: A.trajectories, b: B.trajectories },
      infinite: {
        nllAunderA: A.trajNllA.infinite,
        nllAunderB: A.trajNllB.infinite,
        nllBunderB: B.trajNllB.infinite,
        nllBunderA: B.trajNllA.infinite,
      },
    },
  };
}

/** NLL and LLR figures for A's and B's trajectories; null when a policy can score no action. */
export async function likelihood(
  envs: EnvFactory,
  trajectoriesA: readonly Trajectory[],
  trajectoriesB: readonly Trajectory[],
  a: AnyPolicy,
  b: AnyPolicy,
): Promise<Likelihood | null> {
  const scoreA = scorer(a);
  const scoreB = scorer(b);
  if (scoreA === undefined || scoreB === undefined) return null;
  const aware = a.budgetAware || b.budgetAware;
  const writer = tokenWriter(a) ?? tokenWriter(b);
  const { A, B } = await withEnvs(envs.make, async (views) => ({
    A: await scoreTrajectories(views, trajectoriesA, scoreA, scoreB, aware, writer),
    B: await scoreTrajectories(views, trajectoriesB, scoreA, scoreB, aware, writer),
  }));
  return {
    nllAunderA: A.nllA.mean,
    nllAunderB: A.nllB.mean,
    llrSuccessA: A.llrSuccess.mean,
    llrSuccessB: B.llrSuccess.mean,
    nllBunderB: B.nllB.mean,
    nllBunderA: B.nllA.mean,
    actions: { a: A.actions, b: B.actions },
    successful: { a: A.successful, b: B.successful },
    infinite: {
      nllAunderA: A.nllA.infinite,
      nllAunderB: A.nllB.infinite,
      llrSuccessA: A.llrSuccess.infinite,
      llrSuccessB: B.llrSuccess.infinite,
      nllBunderB: B.nllB.infinite,
      nllBunderA: B.nllA.infinite,
    },
    note: LIKELIHOOD_NOTE,
    ...(A.counted || B.counted ? textFigures(A, B) : {}),
  };
}
