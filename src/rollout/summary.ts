// The plain summary of a batch of trajectories (what `turnwise rollout` prints).
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';

export interface BatchSummary {
  episodes: number;
  /** Fraction of episodes that succeeded. */
  success: number;
  /** Mean turns per episode (all episodes). */
  meanTurns: number;
  /** Mean turns of the successful episodes (null when none succeeded). */
  meanTurnsSuccess: number | null;
  failures: Partial<Record<FailureKind, number>>;
}

export function summarize(trajectories: readonly Trajectory[]): BatchSummary {
  let successes = 0;
  let turns = 0;
  let turnsSuccess = 0;
  const failures: Partial<Record<FailureKind, number>> = {};
  for (const k of FAILURE_KINDS) failures[k] = 0;
  for (const t of trajectories) {
    turns += t.outcome.turns;
    if (t.outcome.success) {
      successes++;
      turnsSuccess += t.outcome.turns;
    } else if (t.outcome.failure !== null)
      failures[t.outcome.failure] = (failures[t.outcome.failure] ?? 0) + 1;
  }
  const n = trajectories.length;
  return {
    episodes: n,
    success: n > 0 ? successes / n : 0,
    meanTurns: n > 0 ? turns / n : 0,
    meanTurnsSuccess: successes > 0 ? turnsSuccess / successes : null,
    failures,
  };
}
