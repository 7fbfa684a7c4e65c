// Credit between two agents that share one outcome: a planner that makes one choice at the start of an
// episode (a waypoint) and an executor that acts after it. Each estimator maps a group of episodes of
// one task (the same map, K samples) to one advantage for the planner's turn and one for every executor
// turn of each episode (docs/methods-measured.md "Credit between two agents").
//   shared:          A^P_i = A^E_i = (R_i − mean R) / (std R + ε)                      (GRPO on the team)
//   per-agent:       A^P_i = (R̄_{w_i} − R̄) / (std R + ε),  R̄_w the mean outcome of the episodes that
//                    chose w;  A^E_i = GRPO over the subgroup that shares w_i (only the executor varies)
//   counterfactual:  A^P_i = R_i − Σ_w π(w|s) R_i(w),  R_i(w) the outcome of episode i replayed with
//                    waypoint w under the same random streams; A^E_i as shared (only the planner's
//                    credit differs from shared: the executor's per-agent subgroups are mostly of one
//                    episode when the planner's choices are spread, and a subgroup of one gives 0)
// The counterfactual baseline is COMA's (Foerster et al. 2018, "Counterfactual Multi-Agent Policy
// Gradients", eq. 4), the difference reward of Wolpert & Tumer 2002 taken in expectation over the
// planner's own policy: it does not depend on the waypoint drawn (R_i(·) is fixed by the streams), so
// the planner's gradient stays unbiased, and it is not divided by the group's std — a group whose
// samples all failed still tells the planner which waypoints would have succeeded.
// credit/ never steps an env: the replays arrive as numbers.
import { DEFAULT_EPS, mean, normalize, populationStd } from './common.ts';

export const AGENT_CREDITS = ['shared', 'per-agent', 'counterfactual'] as const;
export type AgentCredit = (typeof AGENT_CREDITS)[number];

/** What credit needs of one two-agent episode. */
export interface PairEpisode {
  /** The planner's choice (a waypoint index). */
  choice: number;
  /** The shared outcome R_i. */
  outcome: number;
  /** R_i(w) for every choice w, replayed from the same state under the same streams (counterfactual). */
  replays?: ArrayLike<number>;
  /** π(w | s) of the planner for every choice w (counterfactual). */
  probs?: ArrayLike<number>;
}

/** The planner's advantage (one per episode) and the executor's (the same for each of its turns). */
export interface PairAdvantages {
  planner: number[];
  executor: number[];
}

/** R̄ over the episodes of the group that made the same choice, per episode. */
function choiceMeans(group: readonly PairEpisode[]): number[] {
  const sum = new Map<number, { s: number; n: number }>();
  for (const e of group) {
    const m = sum.get(e.choice) ?? { s: 0, n: 0 };
    m.s += e.outcome;
    m.n++;
    sum.set(e.choice, m);
  }
  return group.map((e) => {
    const m = sum.get(e.choice)!;
    return m.s / m.n;
  });
}

/** The executor's per-agent credit: GRPO within each subgroup sharing the planner's choice. */
export function executorGroupCredit(group: readonly PairEpisode[], eps = DEFAULT_EPS): number[] {
  const out = new Array<number>(group.length).fill(0);
  const byChoice = new Map<number, number[]>();
  group.forEach((e, i) => {
    byChoice.set(e.choice, [...(byChoice.get(e.choice) ?? []), i]);
  });
  for (const members of byChoice.values()) {
    const z = normalize(
      members.map((i) => group[i].outcome),
      true,
      eps,
    );
    members.forEach((i, k) => {
      out[i] = z[k];
    });
  }
  return out;
}

/** The planner's per-agent credit: its choice's mean outcome in the group against the group's mean. */
export function plannerGroupCredit(group: readonly PairEpisode[], eps = DEFAULT_EPS): number[] {
  const R = group.map((e) => e.outcome);
  const sd = populationStd(R);
  if (group.length < 2 || sd === 0) return new Array<number>(group.length).fill(0);
  const mu = mean(R);
  return choiceMeans(group).map((m) => (m - mu) / (sd + eps));
}

/** The planner's counterfactual credit R_i − Σ_w π(w|s) R_i(w). Refuses an episode whose replay of its
 * own choice is not its outcome: the replays did not share its streams. */
export function counterfactualCredit(e: PairEpisode): number {
  const { replays, probs } = e;
  if (replays === undefined || probs === undefined)
    throw new Error('counterfactual credit needs the replays and the planner probabilities');
  if (replays.length !== probs.length)
    throw new Error(`${replays.length} replays for ${probs.length} choices`);
  if (replays[e.choice] !== e.outcome)
    throw new Error(
      `the replay of the chosen waypoint ${e.choice} gave ${replays[e.choice]}, the episode ${e.outcome}: not the same streams`,
    );
  let b = 0;
  for (let w = 0; w < probs.length; w++) b += probs[w] * replays[w];
  return e.outcome - b;
}

/** Both agents' advantages for one group of episodes of the same task. */
export function pairCredit(
  group: readonly PairEpisode[],
  credit: AgentCredit,
  eps = DEFAULT_EPS,
): PairAdvantages {
  const shared = () =>
    normalize(
      group.map((e) => e.outcome),
      true,
      eps,
    );
  if (credit === 'shared') {
    const z = shared();
    return { planner: z, executor: [...z] };
  }
  if (credit === 'per-agent')
    return { planner: plannerGroupCredit(group, eps), executor: executorGroupCredit(group, eps) };
  return { planner: group.map(counterfactualCredit), executor: shared() };
}
