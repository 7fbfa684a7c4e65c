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
import { isDiscrete } from '../core/policy.ts';
import type { EnvFactory, MaybePromise, Policy, Trajectory, TurnContext } from '../core/types.ts';
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
}

interface Scored {
  /** −log π_A and −log π_B over the actions. */
  nllA: FiniteMean;
  nllB: FiniteMean;
  llrSuccess: FiniteMean;
  actions: number;
  successful: number;
}

async function scoreTrajectories(
  views: EnvCache,
  trajectories: readonly Trajectory[],
  scoreA: Scorer,
  scoreB: Scorer,
  budgetAware: boolean,
): Promise<Scored> {
  const out: Scored = {
    nllA: new FiniteMean(),
    nllB: new FiniteMean(),
    llrSuccess: new FiniteMean(),
    actions: 0,
    successful: 0,
  };
  for (const tr of trajectories) {
    const env = await views.get(tr.task);
    const revealBudget = tr.revealBudget || budgetAware;
    let llr = 0;
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
    }
    if (tr.outcome.success) {
      out.successful++;
      out.llrSuccess.add(llr);
    }
  }
  return out;
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
  const { A, B } = await withEnvs(envs.make, async (views) => ({
    A: await scoreTrajectories(views, trajectoriesA, scoreA, scoreB, aware),
    B: await scoreTrajectories(views, trajectoriesB, scoreA, scoreB, aware),
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
  };
}
