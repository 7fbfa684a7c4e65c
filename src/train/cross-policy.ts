// Cross-policy sampling (docs/methods.md §4, AgentRL spirit): within a trajectory each action comes from the
// current policy or, with probability q, from a stale snapshot of it. The acting policy's log-prob is
// what the trajectory records, so the PPO ratio π_new/π_behaviour stays correct for both kinds of turn.
// The coin is drawn from the episode's own RNG before the action, in the same order whether the
// episode acts alone or in a lockstep batch, so trajectories do not depend on the rollout path.
import { isBatched } from '../core/policy.ts';
import type { Action, BatchedPolicy, MaybePromise, Policy, TurnContext } from '../core/types.ts';
import { isPromise } from '../rollout/episode.ts';

type AnyPolicy = Policy<unknown, unknown>;

export class CrossPolicy implements BatchedPolicy<unknown, unknown> {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly current: AnyPolicy;
  readonly stale: AnyPolicy;
  readonly q: number;

  constructor(current: AnyPolicy, stale: AnyPolicy, q: number) {
    this.current = current;
    this.stale = stale;
    this.q = q;
    this.id = current.id;
    this.budgetAware = current.budgetAware || stale.budgetAware;
  }

  act(ctx: TurnContext<unknown>): MaybePromise<Action<unknown>> {
    return ctx.rng.float() < this.q ? this.stale.act(ctx) : this.current.act(ctx);
  }

  logProb(ctx: TurnContext<unknown>, action: unknown): MaybePromise<number> {
    if (this.current.logProb === undefined) throw new Error(`policy ${this.current.id} cannot score actions`);
    return this.current.logProb(ctx, action);
  }

  actBatch(ctxs: readonly TurnContext<unknown>[]): MaybePromise<(Action<unknown> | Error)[]> {
    const useStale = ctxs.map((c) => c.rng.float() < this.q);
    const part = (policy: AnyPolicy, pick: boolean) => {
      const mine = ctxs.filter((_, i) => useStale[i] === pick);
      if (mine.length === 0) return [];
      return isBatched(policy) ? policy.actBatch(mine) : mine.map((c) => policy.act(c));
    };
    const merge = (fresh: (Action<unknown> | Error)[], old: (Action<unknown> | Error)[]) => {
      let i = 0;
      let j = 0;
      return useStale.map((s) => (s ? old[j++] : fresh[i++]));
    };
    const fresh = part(this.current, false);
    const old = part(this.stale, true);
    if (isPromise(fresh) || isPromise(old) || fresh.some(isPromise) || old.some(isPromise)) {
      return Promise.all([
        Promise.all(fresh as MaybePromise<Action<unknown> | Error>[]),
        Promise.all(old as MaybePromise<Action<unknown> | Error>[]),
      ]).then(([f, o]) => merge(f, o));
    }
    return merge(fresh as (Action<unknown> | Error)[], old as (Action<unknown> | Error)[]);
  }
}
