// The uniform policy over a discrete action space: log π(a) = −ln nA for every legal a.
import type { Action, DiscretePolicy, EnvSpec, TurnContext } from '../core/types.ts';

export function discreteActions(spec: EnvSpec): number {
  if (typeof spec.actions !== 'number') throw new Error(`env ${spec.id} has no discrete action space`);
  return spec.actions;
}

export class RandomPolicy implements DiscretePolicy {
  readonly id = 'random';
  readonly budgetAware = false;

  act(ctx: TurnContext<unknown>): Action<number> {
    const n = discreteActions(ctx.env.spec);
    return { action: ctx.rng.int(n), logp: -Math.log(n) };
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    const n = discreteActions(ctx.env.spec);
    return Number.isInteger(action) && action >= 0 && action < n ? -Math.log(n) : Number.NEGATIVE_INFINITY;
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    const n = discreteActions(ctx.env.spec);
    return new Float64Array(n).fill(1 / n);
  }
}
