// A neural policy with its action distributions remembered. π(·|o) of an MLP policy is a function of
// the feature vector x(o) (and of the turns left when it is budget-aware) and of nothing else, and
// FrozenLake hands out one cached Float32Array per (map, state) — so that array is an exact key. The
// study asks for the same few (map, state) rows hundreds of thousands of times (Pass@(K,T) rollouts,
// M draws per state, recovery continuations, NLL/LLR scoring); remembering each row turns one network
// forward per question into one per distinct row.
//
// Exactness: the matmul kernel returns a row the same bits alone or inside a batch (nn/gemm.ts), and
// act() draws exactly as NeuralPolicy.actBatch does — ctx.rng.categorical over exp(log π), logp read
// from the same log-softmax — so a rollout with the memo is the rollout with the network, byte for
// byte (test/studies/budget.test.ts checks it). It has no actBatch: the sequential rollout path is
// the fast one once acting is a table lookup.
import type { Action, DiscretePolicy, TurnContext } from '../../core/types.ts';
import type { NeuralPolicy } from '../../policies/neural.ts';

interface Row {
  /** log π(·|o), as NeuralPolicy.logProbsBatch computes it. */
  lp: Float64Array;
  /** exp(lp), the weights actBatch draws from. */
  p: Float64Array;
}

export class MemoPolicy implements DiscretePolicy {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly inner: NeuralPolicy;
  /** Feature array → (turns left, or 0 when budget-blind) → row. Weak: maps that go are forgotten. */
  private readonly rows = new WeakMap<Float32Array, Map<number, Row>>();

  constructor(inner: NeuralPolicy, id?: string) {
    this.inner = inner;
    this.id = id ?? inner.id;
    this.budgetAware = inner.budgetAware;
  }

  /** The rows of ctx's feature array (made when `make`), and the key of ctx's row among them. */
  private slot(ctx: TurnContext<unknown>, make: boolean): [Map<number, Row> | undefined, number] {
    const f = ctx.env.features?.(ctx.observation);
    if (f === undefined) throw new Error(`policy ${this.id}: env ${ctx.env.spec.id} has no feature view`);
    let byH = this.rows.get(f);
    if (byH === undefined && make) {
      byH = new Map();
      this.rows.set(f, byH);
    }
    return [byH, this.budgetAware ? (ctx.turnsLeft ?? -1) : 0];
  }

  private row(ctx: TurnContext<unknown>): Row {
    const [byH, h] = this.slot(ctx, true) as [Map<number, Row>, number];
    let r = byH.get(h);
    if (r === undefined) {
      // The network itself refuses a budget-aware context without turnsLeft.
      const lp = this.inner.logProbsBatch([ctx]);
      r = { lp, p: Float64Array.from(lp, Math.exp) };
      byH.set(h, r);
    }
    return r;
  }

  act(ctx: TurnContext<unknown>): Action<number> {
    const r = this.row(ctx);
    const action = ctx.rng.categorical(r.p);
    return { action, logp: r.lp[action] };
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    return this.row(ctx).p.slice();
  }

  /**
   * Exact evaluation (eval/exact.ts) asks for every state of a map at once through this: once per map
   * and policy, for states play mostly never reaches. So the rows it has to compute are not
   * remembered (remembering them held every state of every held-out map, per policy: most of a run's
   * memory); rows already remembered are read. Computed in one batch, a row has the bits it has alone.
   */
  probsBatch(ctxs: readonly TurnContext<unknown>[]): Float64Array[] {
    const out: Float64Array[] = new Array(ctxs.length);
    const missing: number[] = [];
    ctxs.forEach((ctx, i) => {
      const [byH, h] = this.slot(ctx, false);
      const r = byH?.get(h);
      if (r === undefined) missing.push(i);
      else out[i] = r.p.slice();
    });
    if (missing.length > 0) {
      const lp = this.inner.logProbsBatch(missing.map((i) => ctxs[i]));
      const A = lp.length / missing.length;
      missing.forEach((i, k) => {
        out[i] = Float64Array.from(lp.subarray(k * A, (k + 1) * A), Math.exp);
      });
    }
    return out;
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    const r = this.row(ctx);
    return Number.isInteger(action) && action >= 0 && action < r.lp.length
      ? r.lp[action]
      : Number.NEGATIVE_INFINITY;
  }
}
