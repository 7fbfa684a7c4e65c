// A softmax table over discrete observations: π(a|s) = softmax(logits[s])_a. The policy of the
// tabular GRPO/PPO runs; its distribution depends on the state only, so it can be evaluated exactly.
import type { Action, Policy, TurnContext } from '../core/types.ts';
import { logProbOf, sampleFrom, softmaxInto } from './distribution.ts';

export class TabularPolicy implements Policy<unknown, number> {
  readonly id: string;
  readonly budgetAware = false;
  readonly nS: number;
  readonly nA: number;
  /** (nS, nA) row-major. */
  readonly logits: Float64Array;

  constructor(nS: number, nA: number, logits?: Float64Array, id = 'tabular') {
    if (logits !== undefined && logits.length !== nS * nA) {
      throw new RangeError(`tabular: expected ${nS * nA} logits, got ${logits.length}`);
    }
    this.nS = nS;
    this.nA = nA;
    this.logits = logits ?? new Float64Array(nS * nA);
    this.id = id;
  }

  private stateOf(ctx: TurnContext<unknown>): number {
    const s = ctx.observation;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 0 || s >= this.nS) {
      throw new Error(
        `policy ${this.id}: observation ${JSON.stringify(s)} is not a state in 0..${this.nS - 1}`,
      );
    }
    return s;
  }

  probsOf(s: number, out = new Float64Array(this.nA)): Float64Array {
    return softmaxInto(this.logits.subarray(s * this.nA, (s + 1) * this.nA), 1, out);
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    return this.probsOf(this.stateOf(ctx));
  }

  act(ctx: TurnContext<unknown>): Action<number> {
    return sampleFrom(this.probs(ctx), ctx);
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    return logProbOf(this.probs(ctx), action);
  }
}
