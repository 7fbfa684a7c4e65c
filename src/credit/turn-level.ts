// Turn-level credit: a verifiable per-turn reward, normalised per turn index within the group, added to
// the outcome advantage:  A_{i,t} = A^O_i + λ·r̂_{i,t},  r̂_{i,t} = (r_{i,t} − mean_t r)/(std_t r + ε)
// Zeng et al. 2025, "Reinforcing Multi-Turn Reasoning in LLM Agents via Turn-Level Credit Assignment"
// (MT-GRPO), §4; docs/methods.md §3. (MT-GRPO puts its weight on the outcome term of the first turn; we
// follow docs/methods.md and weight the turn term, which keeps A^O comparable across methods.)
// `crest`: the outcome sets the sign and the turn signal only the magnitude (CrEST spirit): the sum is
// clipped at 0 so it never points against A^O, and a turn of a dead group (A^O = 0) gets 0.
// A^O is GRPO's advantage; the cohort at turn index t is every trajectory of the group that has a turn t.
import type { Trajectory, Turn } from '../core/types.ts';
import { type Advantages, DEFAULT_EPS, normalizePerTurnIndex, type OutcomeFn } from './common.ts';
import { grpoScores } from './grpo.ts';

/** A verifiable reward for one turn: something the env itself attests, never the oracle's values. */
export type TurnRewardFn = (turn: Turn, trajectory: Trajectory) => number;

/**
 * The default verifiable turn reward: the env's reward, −1 for a malformed or illegal action
 * (`info.valid === false`, the "valid tool call" signal of agent RL) and −1 for the turn that entered an
 * irreversible failure (`info.failure === 'irreversible'`, FrozenLake: falling into a hole). All three
 * are reported by the env on the turn itself; none needs the exact model.
 */
export const verifiableTurnReward: TurnRewardFn = (turn) =>
  turn.reward - (turn.info.valid === false ? 1 : 0) - (turn.info.failure === 'irreversible' ? 1 : 0);

export interface TurnLevelOptions {
  /** λ, weight of the normalised turn reward (default 1). */
  lambda?: number;
  /** Normalise by the std (+ε) at both levels (default true); false: mean-centred only. */
  std?: boolean;
  eps?: number;
  /** Magnitude-only (CrEST) variant: the outcome advantage decides the sign (default false). */
  crest?: boolean;
  /** r_{i,t} (default verifiableTurnReward). */
  turnReward?: TurnRewardFn;
  /** R_i (default: the trajectory's return). */
  outcome?: OutcomeFn;
}

export const TURN_LEVEL_DEFAULTS = { lambda: 1, std: true, eps: DEFAULT_EPS, crest: false } as const;

export function turnLevel(group: readonly Trajectory[], options: TurnLevelOptions = {}): Advantages {
  const lambda = options.lambda ?? TURN_LEVEL_DEFAULTS.lambda;
  const std = options.std ?? TURN_LEVEL_DEFAULTS.std;
  const eps = options.eps ?? TURN_LEVEL_DEFAULTS.eps;
  const reward = options.turnReward ?? verifiableTurnReward;
  const outcomeAdv = grpoScores(group, { std, eps, outcome: options.outcome });
  const turnAdv = normalizePerTurnIndex(
    group.map((traj) => traj.turns.map((turn) => reward(turn, traj))),
    std,
    eps,
  );
  return turnAdv.map((row, i) => {
    const aO = outcomeAdv[i];
    return row.map((rHat) => {
      const a = aO + lambda * rHat;
      if (!options.crest) return a;
      return aO > 0 ? Math.max(0, a) : aO < 0 ? Math.min(0, a) : 0;
    });
  });
}
