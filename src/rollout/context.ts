// What a policy saw at turn t of a recorded trajectory, rebuilt: the observation, the turns before it
// (the history a chat policy builds its prompt from), the turn index, the turns left when the budget
// was revealed, and the env's views. Training (re-scoring turns for PPO ratios, the KL reference), the
// likelihood diagnostics and behaviour cloning all score through this one function, so that they score
// exactly what act() received (test/rollout/context.test.ts compares it with what act() was given).
import { Rng } from '../core/rng.ts';
import type { EnvView, Trajectory, Turn, TurnContext } from '../core/types.ts';

export interface ContextOptions {
  /** Tell the scored policy the turns left. Default: whether the trajectory was rolled out with the
   * budget revealed. A budget-aware policy scoring another policy's budget-blind trajectory needs
   * `true`: it is asked what it would do at that turn of an episode with that budget. */
  revealBudget?: boolean;
}

/** Scoring does not draw: one fixed stream stands in for the episode's policy stream. */
const SCORING_RNG = Rng.derive(0);

/** A decision point: the observation, the turns before it, the episode's budget. */
export interface DecisionPoint<O> {
  observation: O;
  history: readonly Turn<O, unknown>[];
  budget: number;
  /** The turn index (default: the history's length; a recorded turn's own `t` otherwise). */
  turn?: number;
}

/**
 * The context act() receives at a decision point — exactly as rollout/episode.ts builds it: the turn
 * index is the history's length, `turnsLeft` is the budget minus it when revealed. `contextAt` and the
 * step-level diagnostics (which act at sampled states) both build contexts here.
 */
export function decisionContext<O>(
  point: DecisionPoint<O>,
  env: EnvView<O>,
  reveal: boolean,
  rng = SCORING_RNG,
): TurnContext<O> {
  const turn = point.turn ?? point.history.length;
  return {
    observation: point.observation,
    history: point.history,
    turn,
    turnsLeft: reveal ? point.budget - turn : undefined,
    rng,
    env,
  };
}

/**
 * A recorded turn's context. The history is the turns before t, sliced on first read: Markov policies
 * (tables, MLPs) never read it, and training rebuilds the context of every turn of every batch, so an
 * eager copy would make re-scoring quadratic in the episode length for nothing.
 */
class RecordedContext<O> implements TurnContext<O> {
  readonly observation: O;
  readonly turn: number;
  readonly turnsLeft: number | undefined;
  readonly rng: TurnContext<O>['rng'];
  readonly env: EnvView<O>;
  readonly #turns: readonly Turn<O, unknown>[];
  readonly #t: number;
  #history: readonly Turn<O, unknown>[] | undefined;

  constructor(
    turns: readonly Turn<O, unknown>[],
    t: number,
    budget: number,
    reveal: boolean,
    env: EnvView<O>,
  ) {
    const turn = turns[t];
    this.observation = turn.observation;
    this.turn = turn.t;
    this.turnsLeft = reveal ? budget - turn.t : undefined;
    this.rng = SCORING_RNG;
    this.env = env;
    this.#turns = turns;
    this.#t = t;
  }

  get history(): readonly Turn<O, unknown>[] {
    this.#history ??= this.#turns.slice(0, this.#t);
    return this.#history;
  }
}

/** The context `act()` received at turn t (0 ≤ t < turns.length) of `trajectory`: what
 * decisionContext gives at that turn's decision point, with the turn's own index. */
export function contextAt<O>(
  trajectory: Trajectory<O, unknown>,
  t: number,
  env: EnvView<O>,
  options: ContextOptions = {},
): TurnContext<O> {
  const turns = trajectory.turns;
  if (!Number.isInteger(t) || t < 0 || t >= turns.length) {
    throw new RangeError(`contextAt: turn ${t} of a trajectory with ${turns.length} turns`);
  }
  return new RecordedContext(
    turns,
    t,
    trajectory.budget,
    options.revealBudget ?? trajectory.revealBudget,
    env,
  );
}

/** contextAt for every turn of a trajectory. */
export function contextsOf<O>(
  trajectory: Trajectory<O, unknown>,
  env: EnvView<O>,
  options: ContextOptions = {},
): TurnContext<O>[] {
  return trajectory.turns.map((_, t) => contextAt(trajectory, t, env, options));
}
