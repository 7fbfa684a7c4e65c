// The capability guards of the policy contract (core/types.ts): a policy is `act` + `logProb`; whether
// it also exposes a discrete distribution or a batched act is asked here, never assumed by a cast.
// Also the checks that make a generic-looking stage say its scope (CleanRL's
// `assert isinstance(envs.single_action_space, Discrete)`): discrete actions are checked, not cast.
import { InputError } from './errors.ts';
import type { BatchedPolicy, DiscretePolicy, EnvSpec, EnvView, Policy } from './types.ts';

type AnyPolicy = Policy<unknown, unknown>;

/** The policy exposes π(·|ctx) over a discrete action space. */
export function isDiscrete(p: AnyPolicy): p is AnyPolicy & DiscretePolicy {
  return typeof (p as Partial<DiscretePolicy>).probs === 'function';
}

/** The policy exposes probs for many contexts at once. */
export function hasProbsBatch(
  p: AnyPolicy,
): p is AnyPolicy & DiscretePolicy & Required<Pick<DiscretePolicy, 'probsBatch'>> {
  return isDiscrete(p) && typeof p.probsBatch === 'function';
}

/** The policy acts in many episodes at once (the lockstep rollout). */
export function isBatched(p: AnyPolicy): p is AnyPolicy & BatchedPolicy {
  return typeof (p as Partial<BatchedPolicy>).actBatch === 'function';
}

/** The size of a discrete action space; refuses an env with text actions, naming `field` and `what`. */
export function discreteActionCount(spec: EnvSpec, field: string, what: string): number {
  if (typeof spec.actions !== 'number') {
    throw new InputError(
      field,
      spec.id,
      `${what} needs a discrete action space; env ${spec.id} has text actions`,
    );
  }
  return spec.actions;
}

/** A recorded action as an index of a discrete action space of size n; refuses anything else. */
export function discreteAction(action: unknown, n: number, where: string): number {
  if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action >= n) {
    throw new InputError(where, action, `expected a discrete action, an integer in [0, ${n})`);
  }
  return action;
}

/** The hashable state key of an observation: the env's own `stateKey`, else a number or string
 * observation itself, else its JSON. */
export function stateKeyOf<O>(env: EnvView<O>, o: O): string | number {
  if (env.stateKey !== undefined) return env.stateKey(o);
  if (typeof o === 'number' || typeof o === 'string') return o;
  return JSON.stringify(o);
}
