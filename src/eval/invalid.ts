// Invalid actions of a text policy: the one definition behind training's `rollout/invalid_rate`, the
// `invalidRate` of `eval`, `rollout --json` and `bc` of the transformer.
//
// A turn is invalid when the policy's output did not parse into an action of the env: the policy then
// records why in `trace.invalid` (the transformer and an `openai:` policy alike, with the parser they
// share), its action is one the env refuses (`info.valid = false`) and the agent is told the reason.
// An action that parses and that the env then refuses (a SQL error, an unknown table) is a tool error
// the env reports (`info.valid`, its failure kinds), not an invalid output. Forced turns (an expert's
// prefix, an injected error) are not the policy's and are not counted. A policy that writes no text
// (tabular, MLP, oracle) records no trace: its rate is 0.
import type { Trajectory, Turn } from '../core/types.ts';

/** The turn is the policy's own and its output did not parse into an action. */
export function isInvalidTurn(turn: Turn): boolean {
  return turn.forced !== true && turn.trace?.invalid !== undefined;
}

/** Invalid turns over the policy's own turns, one trajectory at a time. */
export class InvalidCount {
  /** The policy's own (non-forced) turns. */
  turns = 0;
  invalid = 0;
  /** Some own turn carried a trace: the policy writes text (the rate then means something). */
  text = false;

  add(t: Pick<Trajectory, 'turns'>): void {
    for (const turn of t.turns) {
      if (turn.forced === true) continue;
      this.turns++;
      if (turn.trace !== undefined) this.text = true;
      if (isInvalidTurn(turn)) this.invalid++;
    }
  }

  /** invalid / turns; 0 when there is no own turn. */
  get rate(): number {
    return this.turns === 0 ? 0 : this.invalid / this.turns;
  }

  /** The keys a report of a text policy carries (`eval --json`, `rollout --json`). */
  report(): InvalidReport {
    return { invalidRate: this.rate, invalid: { count: this.invalid, turns: this.turns } };
  }
}

export interface InvalidReport {
  invalidRate: number;
  invalid: { count: number; turns: number };
}

/** The fraction of the policy's own turns whose output did not parse (0 without own turns). */
export function invalidRate(trajectories: Iterable<Pick<Trajectory, 'turns'>>): number {
  const c = new InvalidCount();
  for (const t of trajectories) c.add(t);
  return c.rate;
}
