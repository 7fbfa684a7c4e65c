// The oracle policy: greedy on the env's exact Q*_h for h = the turns left (budget-aware), or on a fixed
// h = horizon (budget-blind, like an agent trained with one episode limit). Ties share the greedy
// mass equally; eps mixes in the uniform policy; temp replaces greedy by softmax(Q*/temp).
import type { Action, DiscretePolicy, Oracle, TurnContext } from '../core/types.ts';
import { logProbOf, sampleFrom, softmaxInto } from './distribution.ts';

export interface OracleOptions {
  /** Probability of a uniformly random action (0 ≤ eps ≤ 1). */
  eps?: number;
  /** Softmax temperature over Q* (> 0); absent = greedy. */
  temp?: number;
  /** Fixed lookahead h; absent = the turns left, which makes the policy budget-aware. */
  horizon?: number;
}

/** Ties within this absolute tolerance count as equally good (Q* values are probabilities here). */
const TIE = 1e-12;

export class OraclePolicy implements DiscretePolicy {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly options: OracleOptions;

  constructor(options: OracleOptions = {}, id?: string) {
    this.options = options;
    this.budgetAware = options.horizon === undefined;
    const parts = Object.entries(options)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${v}`);
    this.id = id ?? (parts.length > 0 ? `oracle:${parts.join(',')}` : 'oracle');
  }

  private oracle(ctx: TurnContext<unknown>): Oracle<unknown> {
    const oracle = ctx.env.oracle?.();
    if (oracle === undefined)
      throw new Error(`policy ${this.id}: env ${ctx.env.spec.id} has no exact oracle`);
    return oracle;
  }

  /** The lookahead used at this turn. */
  horizonAt(ctx: TurnContext<unknown>): number {
    const h = this.options.horizon ?? ctx.turnsLeft;
    if (h === undefined) {
      throw new Error(`policy ${this.id} acts on the turns left: reveal the budget or give horizon=`);
    }
    return h;
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    const oracle = this.oracle(ctx);
    const q = oracle.q(this.horizonAt(ctx), oracle.state(ctx.observation));
    const n = q.length;
    const p = new Float64Array(n);
    const { eps = 0, temp } = this.options;
    if (temp !== undefined) softmaxInto(q, temp, p);
    else {
      let max = Number.NEGATIVE_INFINITY;
      for (let a = 0; a < n; a++) if (q[a] > max) max = q[a];
      let ties = 0;
      for (let a = 0; a < n; a++) if (q[a] >= max - TIE) ties++;
      for (let a = 0; a < n; a++) p[a] = q[a] >= max - TIE ? 1 / ties : 0;
    }
    if (eps > 0) for (let a = 0; a < n; a++) p[a] = (1 - eps) * p[a] + eps / n;
    return p;
  }

  act(ctx: TurnContext<unknown>): Action<number> {
    return sampleFrom(this.probs(ctx), ctx);
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    return logProbOf(this.probs(ctx), action);
  }
}
