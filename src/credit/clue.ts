// Clue credit (ABSeeker spirit; docs/methods.md §3): a turn of an information-seeking episode is credited
// by the clues it newly acquired towards the answer, not by the episode's outcome alone:
//   A_{i,t} = 1[t answers]·A^O_i + λ·(n_{i,t} − ρ·1[n_{i,t} = 0 ∧ t is not a correct answer]) / N_i
// n_{i,t}: the clues of the answer's chain that turn t newly acquired; N_i: the clues the answer needs;
// A^O_i: GRPO's outcome advantage (R_i − mean R)/(std R + ε) over the group, given to the answer turn
// only; λ (lambda, default 1) weighs the clue term, ρ (penalty, default 1) is the cost of a turn that
// brought nothing new — a redundant search or open, a malformed call, a wrong answer — in clues.
// "Traced back from the final answer": the clues that count are those of the chain the gold answer needs
// (the search env's clue accounting, envs/search/task.ts: locate:e_i, fact:e_i.r_i for each hop), each
// once, at the turn that first showed it — a fact read about another entity counts for nothing. So a
// useful turn inside a failed trajectory is credited positively, whatever the outcome, and a redundant
// turn inside a successful one negatively; only the answer turn carries the outcome.
// The clues are read from what the trajectory stores: each turn's info.clues (the chain's clue ids the
// turn newly acquired) and info.cluesNeeded; a trajectory without them (another env) is refused.
import { InputError } from '../core/errors.ts';
import type { Trajectory, Turn } from '../core/types.ts';
import { type Advantages, DEFAULT_EPS, type OutcomeFn } from './common.ts';
import { grpoScores } from './grpo.ts';

export interface ClueOptions {
  /** λ, weight of the clue term (default 1). */
  lambda?: number;
  /** ρ, the cost of a turn that acquired no new clue, in clues (default 1). */
  penalty?: number;
  /** Divide the outcome advantage by the group std (+ε) (default true). */
  std?: boolean;
  eps?: number;
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export const CLUE_DEFAULTS = { lambda: 1, penalty: 1, std: true, eps: DEFAULT_EPS } as const;

/** What clue credit reads of a turn: the new chain clues, the clues needed, and whether it answered. */
export function clueReading(
  turn: Turn,
  trajectory: Trajectory,
): { acquired: number; needed: number; answered: boolean; correct: boolean } {
  const { clues, cluesNeeded, tool, success } = turn.info as {
    clues?: unknown;
    cluesNeeded?: unknown;
    tool?: unknown;
    success?: unknown;
  };
  if (!Array.isArray(clues) || typeof cluesNeeded !== 'number' || cluesNeeded <= 0)
    throw new InputError(
      '--method',
      'clue',
      `needs trajectories with clue accounting (info.clues and info.cluesNeeded, as the search env records); turn ${turn.t} of ${trajectory.id} (${trajectory.task.env}) has none`,
    );
  const answered = tool === 'answer';
  return { acquired: clues.length, needed: cluesNeeded, answered, correct: answered && success === true };
}

export function clue(group: readonly Trajectory[], options: ClueOptions = {}): Advantages {
  const lambda = options.lambda ?? CLUE_DEFAULTS.lambda;
  const rho = options.penalty ?? CLUE_DEFAULTS.penalty;
  const aO = grpoScores(group, {
    std: options.std ?? CLUE_DEFAULTS.std,
    eps: options.eps ?? CLUE_DEFAULTS.eps,
    outcome: options.outcome,
  });
  return group.map((traj, i) =>
    traj.turns.map((turn) => {
      const r = clueReading(turn, traj);
      const nothing = r.acquired === 0 && !r.correct ? 1 : 0;
      return (r.answered ? aO[i] : 0) + (lambda * (r.acquired - rho * nothing)) / r.needed;
    }),
  );
}
