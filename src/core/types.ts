// The shared vocabulary of turnwise. Everything else speaks these types; this file imports nothing
// but the RNG type. See DESIGN.md "Core contracts".
import type { Rng } from './rng.ts';

export type MaybePromise<T> = T | Promise<T>;

/** Why an episode failed. `budget` is decided by the rollout loop, the others by the env (or the loop
 * when the env or policy throws). */
export type FailureKind = 'budget' | 'invalid-action' | 'irreversible' | 'wrong-answer' | 'error';
export const FAILURE_KINDS: readonly FailureKind[] = [
  'budget',
  'invalid-action',
  'irreversible',
  'wrong-answer',
  'error',
];

export interface EnvSpec {
  /** Registry id, e.g. `frozenlake`. */
  id: string;
  /** Size of a discrete action space, or `text` for free-form actions (LLM tools). */
  actions: number | 'text';
  /** Whether the env exposes an exact oracle (`Env.oracle()`). */
  oracle: boolean;
  /** Whether `snapshot()`/`restore()` are available. */
  snapshots: boolean;
  /** Number of distinct discrete observations (Gymnasium's `Discrete(n)`), when finite. */
  observations?: number;
  /** Length of the vectors `features()` returns, when the env has a feature view. */
  features?: number;
  /** Gymnasium's registered episode limit for this configuration (used as the default budget). */
  maxTurns?: number;
}

export interface StepInfo {
  success?: boolean;
  failure?: FailureKind;
  /** false: the action was malformed or illegal; the env did not move. */
  valid?: boolean;
}

export interface StepResult<O> {
  observation: O;
  reward: number;
  /** The task ended by itself (success or an irreversible failure). Truncation by the budget is the
   * rollout's business, never the env's (Gymnasium's terminated vs truncated). */
  terminated: boolean;
  info: StepInfo;
}

/**
 * An exact finite-horizon model of an env (FrozenLake: dynamic programming over (state, turns left)).
 * `h` is the number of turns left, including the one about to be taken; V_0 = 0.
 */
export interface Oracle<O = unknown> {
  readonly nS: number;
  readonly nA: number;
  /** The largest h the tables cover (they grow on demand). */
  readonly horizon: number;
  /** States an episode may start in, uniformly (FrozenLake: the S cells). */
  readonly starts: readonly number[];
  /** The state index of an observation, and back. */
  state(o: O): number;
  observation(s: number): O;
  /** Q*_h(s, ·) — a read-only view, length nA. */
  q(h: number, s: number): Float64Array;
  /** V*_h(s) = max_a Q*_h(s, a). */
  v(h: number, s: number): number;
  /**
   * Exact evaluation of a (possibly budget-aware) stochastic policy π_h(a|s):
   * returns V^π and Q^π for every h ≤ horizon, laid out [h][s] and [h][s][a] row-major.
   */
  evaluate(pi: TabularPolicyFn, horizon: number): PolicyValues;
}

/** π_h(·|s) as a probability vector of length nA; it may return a shared buffer. */
export type TabularPolicyFn = (h: number, s: number) => ArrayLike<number>;

export interface PolicyValues {
  horizon: number;
  nS: number;
  nA: number;
  /** V^π_h(s) at [h * nS + s]. */
  V: Float64Array;
  /** Q^π_h(s,a) at [(h * nS + s) * nA + a]. */
  Q: Float64Array;
}

/** What a policy may see of the env besides the observation: its spec and its views. */
export interface EnvView<O> {
  readonly spec: EnvSpec;
  text?(o: O): string;
  /** A feature vector for neural policies; may be a cached, shared array: do not mutate. */
  features?(o: O): Float32Array;
  oracle?(): Oracle<O>;
}

export interface Env<O, A> extends EnvView<O> {
  reset(seed: number): MaybePromise<O>;
  step(action: A): MaybePromise<StepResult<O>>;
  /** A plain-data copy of the whole state, RNG included, so that `restore` continues identically. */
  snapshot?(): unknown;
  /** Restores a snapshot; with `seed`, the env's randomness is then re-seeded, so that K continuations
   * branched from one state differ (same-state sampling, error injection). */
  restore?(snapshot: unknown, seed?: number): void;
}

export interface Turn<O = unknown, A = unknown> {
  /** 0-based turn index. */
  t: number;
  /** The observation the action was taken in. */
  observation: O;
  action: A;
  reward: number;
  /** Log-probability of `action` under the acting policy (behaviour log-prob). */
  logp: number;
  info: StepInfo;
  /** True when the action was imposed (an expert prefix, an injected error) rather than chosen by the
   * policy; such turns are excluded from policy losses. Absent otherwise. */
  forced?: boolean;
}

/** What a policy sees at a turn. The rollout reuses one object per episode and updates it between
 * turns: read what you need during act(), do not keep the object. */
export interface TurnContext<O> {
  observation: O;
  history: readonly Turn<O, unknown>[];
  /** 0-based index of the turn about to be taken. */
  turn: number;
  /** Turns left including this one; only present when the rollout reveals the budget. */
  turnsLeft?: number;
  /** The episode's policy stream (independent of the env's). */
  rng: Rng;
  env: EnvView<O>;
}

export interface Action<A> {
  action: A;
  logp: number;
}

export interface Policy<O, A> {
  readonly id: string;
  /** True when the policy uses `turnsLeft`: it must then be run with the budget revealed, and prefix-mode
   * Pass@(K,T) is not valid for it. */
  readonly budgetAware: boolean;
  act(ctx: TurnContext<O>): MaybePromise<Action<A>>;
  /** log π(action | context) — for NLL, likelihood ratios and PPO ratios. */
  logProb?(ctx: TurnContext<O>, action: A): MaybePromise<number>;
  /** The whole action distribution, for discrete action spaces (length = spec.actions). Policies whose
   * distribution depends only on the observation and turnsLeft can be evaluated exactly through it. */
  probs?(ctx: TurnContext<O>): ArrayLike<number>;
  /** probs() for many contexts at once (one batched forward for a neural policy); exact evaluation
   * uses it when present. */
  probsBatch?(ctxs: readonly TurnContext<O>[]): ArrayLike<number>[];
  /** Acts in many episodes at once (one batched forward for a neural policy); the rollout then steps
   * its episodes in lockstep. Must return what act() would for each context, in order — in particular
   * each action drawn from its own ctx.rng — so that lockstep and sequential rollouts are identical. */
  actBatch?(ctxs: readonly TurnContext<O>[]): MaybePromise<Action<A>[]>;
}

/** How an env is made: a registry id and its parameters (plain JSON). */
export interface EnvConfig {
  env: string;
  params: Record<string, unknown>;
}

/** One task = an env configuration plus a seed; for generated tasks (random maps) the seed picks the map. */
export interface Task extends EnvConfig {
  seed: number;
}

export interface Outcome {
  success: boolean;
  /** Undiscounted sum of rewards. */
  return: number;
  turns: number;
  /** 1-based turn count at which success happened, null when it never did. */
  firstSuccessTurn: number | null;
  end: 'terminated' | 'truncated' | 'error';
  failure: FailureKind | null;
  /** The message of the exception when `end` is `error`. */
  error?: string;
}

export interface Trajectory<O = unknown, A = unknown> {
  id: string;
  task: Task;
  policy: string;
  budget: number;
  revealBudget: boolean;
  turns: Turn<O, A>[];
  outcome: Outcome;
}
