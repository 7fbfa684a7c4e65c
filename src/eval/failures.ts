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

/** The breakdown accumulated one outcome at a time (a file is streamed, eval/recorded.ts; a batch in
 * memory goes through the same `add`). */
export class FailureTally {
  private episodes = 0;
  private successes = 0;
  private turnsSuccess = 0;
  private turnsFailure = 0;
  private readonly byKind = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<
    FailureKind,
    number
  >;

  add(o: Trajectory['outcome']): void {
    this.episodes++;
    if (o.success) {
      this.successes++;
      this.turnsSuccess += o.turns;
    } else {
      this.byKind[o.failure ?? 'error']++;
      this.turnsFailure += o.turns;
    }
  }

  result(): Failures {
    const failed = this.episodes - this.successes;
    return {
      episodes: this.episodes,
      successes: this.successes,
      byKind: { ...this.byKind },
      meanTurnsSuccess: this.successes > 0 ? this.turnsSuccess / this.successes : null,
      meanTurnsFailure: failed > 0 ? this.turnsFailure / failed : null,
    };
  }
}

export function failures(trajectories: readonly Trajectory[]): Failures {
  const tally = new FailureTally();
  for (const t of trajectories) tally.add(t.outcome);
  return tally.result();
}
