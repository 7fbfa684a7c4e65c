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

/** The summary, one trajectory at a time: what a streaming rollout keeps instead of its trajectories. */
export class SummaryAccumulator {
  private n = 0;
  private successes = 0;
  private turns = 0;
  private turnsSuccess = 0;
  private readonly failures: Partial<Record<FailureKind, number>> = {};

  constructor() {
    for (const k of FAILURE_KINDS) this.failures[k] = 0;
  }

  add(t: Pick<Trajectory, 'outcome'>): void {
    this.n++;
    this.turns += t.outcome.turns;
    if (t.outcome.success) {
      this.successes++;
      this.turnsSuccess += t.outcome.turns;
    } else if (t.outcome.failure !== null)
      this.failures[t.outcome.failure] = (this.failures[t.outcome.failure] ?? 0) + 1;
  }

  result(): BatchSummary {
    const { n, successes } = this;
    return {
      episodes: n,
      success: n > 0 ? successes / n : 0,
      meanTurns: n > 0 ? this.turns / n : 0,
      meanTurnsSuccess: successes > 0 ? this.turnsSuccess / successes : null,
      failures: { ...this.failures },
    };
  }
}

export function summarize(trajectories: Iterable<Trajectory>): BatchSummary {
  const acc = new SummaryAccumulator();
  for (const t of trajectories) acc.add(t);
  return acc.result();
}
