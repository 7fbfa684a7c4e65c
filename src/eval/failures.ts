// Failure breakdown (docs/methods.md §5, docs/architecture.md failure kinds): how episodes end when they do not
// succeed, and how many turns success and failure take. A policy whose failures move from
// `irreversible` (fell in a hole) to `budget` (ran out of turns) has learnt caution, not skill.
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';

export interface Failures {
  episodes: number;
  successes: number;
  /** Count of failed episodes by kind (every kind present, zeros included). */
  byKind: Record<FailureKind, number>;
  /** Mean turns used by successful / failed episodes (null when there are none). */
  meanTurnsSuccess: number | null;
  meanTurnsFailure: number | null;
}

export function failures(trajectories: readonly Trajectory[]): Failures {
  const byKind = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
  let successes = 0;
  let turnsSuccess = 0;
  let turnsFailure = 0;
  for (const t of trajectories) {
    const o = t.outcome;
    if (o.success) {
      successes++;
      turnsSuccess += o.turns;
    } else {
      byKind[o.failure ?? 'error']++;
      turnsFailure += o.turns;
    }
  }
  const failed = trajectories.length - successes;
  return {
    episodes: trajectories.length,
    successes,
    byKind,
    meanTurnsSuccess: successes > 0 ? turnsSuccess / successes : null,
    meanTurnsFailure: failed > 0 ? turnsFailure / failed : null,
  };
}
