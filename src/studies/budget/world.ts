// The worlds the budget study runs in (issue 11, point 6). A world is a way of making the study's
// FrozenLake maps and of cloning the base on them; every finding carries the world it was measured in.
//
// - `slippery`: Gymnasium's 1/3-slippery ice; the base cloned on the expert's own rollouts; the
//   policies see the map and their cell. Ordinary play already visits every state an injected error
//   leads to, so the paper's mechanism (RL learns what to do *after* an error) has nothing to show.
// - `narrow` — designed and written down here BEFORE it was ever run (NARROW_DESIGN, also in the
//   README): the paper's premise made literal. Little slip (the ice moves the intended way with
//   probability 0.9), so ordinary play stays near the expert's path; a base with good local judgement
//   and narrow coverage, cloned on the expert's *intended* path (its demonstrations are played on ice
//   that never slips, judged by the true, slippery Q*); RL sampling at τ = 1 (GRPO samples from π
//   itself), so that it meets its own slips and mistakes while training; and policies that observe
//   their last action and whether it went as intended (as an LLM sees its context): the observation
//   is the cell and a memory m ∈ {none, (action, moved as intended), (action, slipped)}.
//
// The `narrow` env is FrozenLake with that memory (memory-env.ts): a tabular MDP over (memory, cell)
// pairs, so every exact computation stays exact.
import { InputError } from '../../core/errors.ts';
import type { Env, EnvFactory, Task } from '../../core/types.ts';
import { type FrozenLakeWorld, frozenLakeWorld } from '../../envs/frozenlake/index.ts';
import { envs as registry } from '../../envs/index.ts';
import type { MoveClassifier } from '../../eval/states.ts';
import { INTENDED, intendedOutcome, MemoryEnv, memorySpec, SLIPPED } from './memory-env.ts';

/** Where every env of the study comes from: an env factory whose `make` is synchronous (the exact
 * stages read oracles directly). The registry (envs/index.ts's `envs`) is one; worldEnvs makes the others. */
export interface MakeEnv extends EnvFactory {
  make(task: Task): Env<unknown, unknown>;
}

export const WORLD_IDS = ['slippery', 'narrow'] as const;
export type WorldId = (typeof WORLD_IDS)[number];

/** What a world changes in the study's config (config.ts applies it). */
export interface WorldSettings {
  /** Probability that a move goes the intended way (Gymnasium's success_rate). */
  successRate: number;
  /** rollouts: the expert's own rollouts on the real ice; intended: on ice that never slips. */
  demos: 'rollouts' | 'intended';
  /** The policies observe their last action and whether it went as intended. */
  memory: boolean;
}

export const WORLD_SETTINGS: Record<WorldId, WorldSettings> = {
  slippery: { successRate: 1 / 3, demos: 'rollouts', memory: false },
  narrow: { successRate: 0.9, demos: 'intended', memory: true },
};

/** The pre-registered design of the second world: written before its first run, reported verbatim. */
export const NARROW_DESIGN = {
  premise:
    'A base with good local judgement but narrow coverage, in a world where normal play stays on its path, fine-tuned by RL that meets its own errors: the setting in which Zhu et al. 2026 find RL’s advantage at error states.',
  world:
    'FrozenLake random maps as in `slippery`, but the ice moves the intended way with probability 0.9 (each perpendicular way 0.05); the base is cloned on the expert’s intended path (its demonstrations played on ice that never slips, the expert judging by the true Q*); RL samples at τ = 1; every policy observes its last action and whether it moved as intended.',
  predictions: {
    'rl-beats-base': 'held: RL gains at T_train.',
    'error-contrast':
      'held: the base never saw off-path states (nor a slipped last move), RL met them in training, so RL’s win rate is higher at error states than at their pre-error states.',
    'recovery-did': 'held, for the same reason: RL’s exact gain is larger after an error.',
    'normal-states': 'not held: on the path RL and the base both copy good play (win ≈ ½).',
    'llr-sign': 'held: RL up-weights the on-path moves the base made when it succeeded.',
    'nll-plausible': 'held: RL’s actions stay close to the base’s own.',
    'lead-shrinks': 'not held (no mechanism specific to this world).',
    'lead-reverses': 'not held.',
    'training-curves': 'not held: RL’s actions improve step by step as its success rises.',
    'budgetmix-robust': 'not held (as in `slippery`).',
  } as Record<string, string>,
} as const;

/** The env factory of a world: the registry's FrozenLake, or its (memory, cell) version. With
 * `intendedOnly`, moves never slip (the `intended` demonstrations). */
export function worldEnvs(memory: boolean, intendedOnly = false): MakeEnv {
  if (!memory && !intendedOnly) return registry;
  return {
    make: (task) => new MemoryEnv(mapOf(task), intendedOnly),
    spec: (task) => memorySpec(registry.spec(task)),
    configure: registry.configure,
  };
}

/** The FrozenLake map of a task: the study's worlds are FrozenLake maps, and no other env is one. */
function mapOf(task: Task): FrozenLakeWorld {
  if (task.env !== 'frozenlake')
    throw new InputError(
      'task.env',
      task.env,
      'expected frozenlake (the budget study’s worlds are FrozenLake maps)',
    );
  return frozenLakeWorld(task);
}

/**
 * Whether a forced move went the intended way (issue 11, point 3: errors that move as intended and
 * errors that slip), read from the transition table. In the `narrow` world the memory of the state
 * reached says it (the outcome drawn, exactly). In `slippery` the observation is the cell alone: the
 * move went as intended when it reached the cell the intended outcome leads to — Gymnasium lists a
 * slippery move's outcomes as (a−1, a, a+1), the middle one intended; a slip that ends in the same cell
 * (against a wall) reaches the same state, so it counts as intended. On ice that never slips every move
 * is intended.
 */
export function movedAsIntended(memory: boolean): MoveClassifier {
  if (memory) {
    return (task, _observation, _action, next) => {
      const m = Math.floor((next as number) / mapOf(task).nS);
      return m >= INTENDED && m < SLIPPED;
    };
  }
  return (task, observation, action, next) => {
    const { offset, next: to } = mapOf(task).model;
    const sa = (observation as number) * 4 + action;
    return to[offset[sa] + intendedOutcome(offset[sa + 1] - offset[sa])] === next;
  };
}
