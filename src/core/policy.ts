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

/**
 * Refuses a recorded trajectory whose observations or actions its env cannot have: an observation
 * outside a finite observation space, or a discrete action outside the action space that the env did
 * not mark invalid (an invalid action is a legitimate record: `info.valid = false`). `where` names the
 * line (file:line) for the message.
 */
export function checkInSpaces(
  t: {
    turns: readonly { observation: unknown; action: unknown; info: { valid?: boolean; step?: boolean } }[];
  },
  spec: EnvSpec,
  where: string,
): void {
  t.turns.forEach((turn, i) => {
    const o = turn.observation;
    if (
      spec.observations !== undefined &&
      (typeof o !== 'number' || !Number.isInteger(o) || o < 0 || o >= spec.observations)
    ) {
      throw new InputError(
        `${where}.turns.${i}.observation`,
        o,
        `env ${spec.id} has observations 0..${spec.observations - 1}`,
      );
    }
    const a = turn.action;
    // A turn with info.step false is an agent's decision that did not step the env (a planner's
    // waypoint, train/pair.ts): its action is not the env's.
    if (typeof spec.actions === 'number' && turn.info.valid !== false && turn.info.step !== false) {
      if (typeof a !== 'number' || !Number.isInteger(a) || a < 0 || a >= spec.actions) {
        throw new InputError(
          `${where}.turns.${i}.action`,
          a,
          `env ${spec.id} has actions 0..${spec.actions - 1} (an action it refused is recorded with info.valid = false)`,
        );
      }
    }
  });
}
