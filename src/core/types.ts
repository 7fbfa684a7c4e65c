// The shared vocabulary of turnwise. Everything else speaks these types; this file imports nothing
// but the RNG type. See docs/architecture.md "Core contracts".
import type { Rng } from './rng.ts';

export type MaybePromise<T> = T | Promise<T>;

/**
 * Why an episode failed (the seeds' taxonomy), and who decides it:
 * - `budget`: T turns passed without the task ending — the rollout loop (rollout/episode.ts), or the
 *   recording proxy when it refuses the (T+1)-th model call; never the env.
 * - `invalid-action`: tool misuse, a malformed or illegal action that ended the episode — the env
 *   (`info.failure`; a malformed action that does not end it is only `info.valid = false`).
 * - `irreversible`: the agent entered a dead state (a FrozenLake hole) — the env.
 * - `wrong-answer`: the task ended without success and the env named no other kind (a submitted answer
 *   that the checker refused) — the env, or the rollout loop by default for a terminated failure.
 * - `misperception`: the agent acted on a state that is not there (a table, file, function or document
 *   that does not exist) — the env, which alone knows its state.
 * - `context`: the prompt outgrew the model's context window — the policy (a text policy or an
 *   endpoint that answers "context length exceeded") by throwing a `ContextOverflow` (core/errors.ts),
 *   which the rollout loop records under this kind.
 * - `error`: the env or the policy raised anything else — the rollout loop.
 */
export type FailureKind =
  | 'budget'
  | 'invalid-action'
  | 'irreversible'
  | 'wrong-answer'
  | 'misperception'
  | 'context'
  | 'error';
export const FAILURE_KINDS: readonly FailureKind[] = [
  'budget',
  'invalid-action',
  'irreversible',
  'wrong-answer',
  'misperception',
  'context',
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
  /** A tool env's tools (its actions are `ToolCall`s), as JSON schemas: the same objects feed an LLM
   * policy's `tools`, the text protocol and MCP. */
  tools?: readonly ToolSchema[];
  /** The env offers a gold path and a menu of valid actions (`EnvView.scripted`), from which the
   * scripted `oracle`, `oracle:eps=` and `random` policies act (tool envs without an exact oracle). */
  scripted?: boolean;
  /** How a chat model is asked for a discrete action (policies/chat.ts); absent: the env has no chat
   * encoding and LLM policies refuse it. */
  chat?: ChatSpec;
}

/** A discrete action space as chat models see it: the task in words, and one tool whose one string
 * argument names the action (`move(direction: Left|Down|Right|Up)`), or the name in `<answer>` tags. */
export interface ChatSpec {
  /** The system prompt's description of the task and of the text view. */
  instructions: string;
  /** The tool's name and its argument's name. */
  tool: string;
  argument: string;
  /** The name of each action index, length spec.actions. */
  names: readonly string[];
}

/** A tool as an LLM function declaration (OpenAI's `function` shape; MCP's name/description/inputSchema). */
export interface ToolSchema {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/**
 * What scripted policies ask of a tool env (policies/scripted.ts): the next action on the gold path and
 * a finite menu of valid actions, both functions of the turns taken so far in the episode. The menu
 * holds distinct actions (by JSON), every one accepted by the env (`info.valid !== false`).
 */
export interface ScriptedView<A = unknown> {
  /** The gold path's next action after these turns (the oracle's choice). */
  goldAction(history: readonly Turn<unknown, unknown>[]): A;
  /** Valid actions (the random policy's uniform menu; the eps-oracle's detours, gold excluded). */
  validActions(history: readonly Turn<unknown, unknown>[]): readonly A[];
}

export interface StepInfo {
  success?: boolean;
  failure?: FailureKind;
  /** false: the action was malformed or illegal; the env did not move. */
  valid?: boolean;
  /** A trajectory of several agents: whose turn it is (`turnwise train-pair`: planner, executor). */
  agent?: string;
  /** false: an agent's decision that did not step the env (the planner's waypoint); readers check the
   * env's action space only on the turns that step it. */
  step?: boolean;
  /** Env-specific extras (a per-turn quality signal, clues): kept in files as they are. */
  [extra: string]: unknown;
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
  /**
   * A hashable key of the *state* an observation shows — what GiGPO's anchor groups, the diagnostics'
   * state sampling and caches compare. FrozenLake: the cell. A chat env: the state part of its
   * observation (the tables, the files), never the whole history. Absent: the observation itself when
   * it is a number or a string, else its JSON (see `stateKeyOf` in core/policy.ts).
   */
  stateKey?(o: O): string | number;
  /** The gold path and menu of valid actions of a tool env (when `spec.scripted`). */
  scripted?(): ScriptedView;
  /** Of an env whose tools answer a call the same way whatever the episode did before (search): what
   * world-model rehearsal learns its tools' answers from, and the env answering from what was learned. */
  toolAnswers?(): ToolAnswers;
}

/** A tool env's answers as a world model learns them (train/rehearsal-tools.ts). The env keeps its own
 * logic — parsing, the offers of a choice variant, its clue accounting — and only what its tools answer
 * comes from the model. */
export interface ToolAnswers {
  /** The call a recorded turn made, as a key, and what the tools answered it (plain data), read from the
   * turn and the observation after it (`next`: the next turn's; undefined after the last turn). Undefined
   * when the turn made no call the tools answered (a malformed one) or its answer was not recorded. */
  answerOf(turn: Turn, next: unknown): { key: string; answer: unknown } | undefined;
  /** A new env of the same task whose tools answer from `lookup`. A call `lookup` has no answer for
   * (undefined) halts the episode: terminated, reward 0, `info.halted` true. */
  imagine(lookup: (key: string) => unknown): Env<unknown, unknown>;
}

export interface Env<O, A> extends EnvView<O> {
  reset(seed: number): MaybePromise<O>;
  step(action: A): MaybePromise<StepResult<O>>;
  /** A plain-data copy of the whole state, RNG included, so that `restore` continues identically. */
  snapshot?(): unknown;
  /** Restores a snapshot; with `seed`, the env's randomness is then re-seeded, so that K continuations
   * branched from one state differ (same-state sampling, error injection). */
  restore?(snapshot: unknown, seed?: number): void;
  /** Releases what the env holds (a SQLite connection, a sandbox, a process). The rollout calls it
   * once for every env it made, on every path — also when an episode throws (Gymnasium's `close`). */
  close?(): MaybePromise<void>;
}

/**
 * How envs are made for tasks: the registry (envs/index.ts) or a user's own factory. The composition
 * layers (cli/, studies/) pass one to rollout, training and the diagnostics, which never reach the
 * registry themselves. `make` may be asynchronous (a sandbox that boots); whoever calls `make` closes.
 */
export interface EnvFactory {
  make(task: Task): MaybePromise<Env<unknown, unknown>>;
  /** The spec of a task's env without an instance (action space, views, default budget). */
  spec(task: Task): EnvSpec;
  /** Validates an env configuration and returns its canonical params (throws InputError). Absent:
   * configurations are taken as they are. */
  configure?(config: EnvConfig): EnvConfig;
  /** A module URL exporting this factory as `envs` — how worker threads (ES) rebuild it. Absent: the
   * factory cannot cross a thread boundary, and threaded code refuses it. */
  readonly module?: string;
}

/** What a text or LLM policy records beside its parsed action. Every field is optional: a policy
 * records what it has (a remote model its usage and latency, an in-process text policy its tokens). */
export interface TurnTrace {
  /** The raw text of the action as the model produced it, before parsing into `action`. */
  text?: string;
  /** Token ids of the action (the completion), when the policy has them. */
  tokens?: number[];
  /** log π of each action token, same length as `tokens` (−∞ is written as null in JSON). */
  logprobs?: number[];
  /** Per action token, its most probable alternatives under the same distribution (id and log π,
   * most probable first), when the policy was asked for them (`gguf:…,top_logprobs=k`). */
  topLogprobs?: { id: number; logprob: number }[][];
  /** The model's name and, where the server says it, its version (a fingerprint, a checkpoint hash). */
  model?: string;
  modelVersion?: string;
  /** Token usage of the call: prompt (input), completion (output), cached prompt tokens. */
  usage?: { prompt: number; completion: number; cached?: number };
  /** Wall time of the call in milliseconds. */
  latencyMs?: number;
  /** Why generation stopped (OpenAI's finish_reason: stop, length, tool_calls, …). */
  finishReason?: string;
  /** Retries the call needed before it succeeded. */
  retries?: number;
  /** The HTTP status of the answer, and why each retried attempt failed (`HTTP 429`, `timeout …`). */
  status?: number;
  errors?: string[];
  /** Why the raw output is not an action (no tool call, unknown tool, bad arguments, empty message);
   * the turn's action is then one the env refuses (`valid: false`) and the agent is told this reason. */
  invalid?: string;
}

export interface Turn<O = unknown, A = unknown> {
  /** 0-based turn index. */
  t: number;
  /** The observation the action was taken in. */
  observation: O;
  action: A;
  reward: number;
  /** Log-probability of `action` under the acting policy (behaviour log-prob); for a text policy the
   * sum of its action tokens' log-probs. */
  logp: number;
  info: StepInfo;
  /** True when the action was imposed (an expert prefix, an injected error) rather than chosen by the
   * policy; such turns are excluded from policy losses. Absent otherwise. */
  forced?: boolean;
  /** What an LLM turn carries besides the action; absent for discrete policies. */
  trace?: TurnTrace;
}

/** What a policy sees at a turn. The rollout reuses one object per episode and updates it between
 * turns: read what you need during act(), do not keep the object. `rollout/context.ts` (`contextAt`)
 * rebuilds it from a trajectory for scoring. */
export interface TurnContext<O> {
  observation: O;
  /** The turns before this one, in order (a chat policy builds its prompt from them). */
  history: readonly Turn<O, unknown>[];
  /** 0-based index of the turn about to be taken. */
  turn: number;
  /** Turns left including this one; only present when the rollout reveals the budget. */
  turnsLeft?: number;
  /** The episode's policy stream (independent of the env's). */
  rng: Rng;
  env: EnvView<O>;
  /** The episode's task and sample index, when the rollout knows them (a `replay:` policy looks its
   * actions up by them); absent for contexts rebuilt for scoring. */
  task?: Task;
  sample?: number;
}

export interface Action<A> {
  action: A;
  logp: number;
  /** Recorded on the turn as `trace`. */
  trace?: TurnTrace;
}

/** A structured action: a tool call (name and JSON arguments), as LLM agents emit them. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * The core policy contract: act, and score an action. Discrete and batched abilities are separate
 * capabilities (`DiscretePolicy`, `BatchedPolicy`) found by the type guards of core/policy.ts.
 */
export interface Policy<O, A> {
  readonly id: string;
  /** True when the policy uses `turnsLeft`: it must then be run with the budget revealed, and prefix-mode
   * Pass@(K,T) is not valid for it. */
  readonly budgetAware: boolean;
  act(ctx: TurnContext<O>): MaybePromise<Action<A>>;
  /** log π(action | context) — for NLL, likelihood ratios and PPO ratios. Absent for a policy that
   * cannot score (a black-box agent, a replay); diagnostics that need it refuse such a policy. */
  logProb?(ctx: TurnContext<O>, action: A): MaybePromise<number>;
}

/** A policy over a discrete action space (`spec.actions` a number) that exposes its whole
 * distribution. Policies whose distribution depends only on the observation and turnsLeft can be
 * evaluated exactly through it. */
export interface DiscretePolicy<O = unknown> extends Policy<O, number> {
  /** π(·|ctx), length spec.actions. */
  probs(ctx: TurnContext<O>): ArrayLike<number>;
  /** probs() for many contexts at once (one batched forward for a neural policy). */
  probsBatch?(ctxs: readonly TurnContext<O>[]): ArrayLike<number>[];
}

/** A policy that acts in many episodes at once (one batched forward for a neural policy); the rollout
 * then steps its episodes in lockstep. `actBatch` must return what act() would for each context, in
 * order — each action drawn from its own ctx.rng — so that lockstep and sequential rollouts are
 * identical. An element that is an Error is what act() would have thrown for that context (a text
 * policy's ContextOverflow): it ends that episode alone. */
export interface BatchedPolicy<O = unknown, A = unknown> extends Policy<O, A> {
  actBatch(ctxs: readonly TurnContext<O>[]): MaybePromise<(Action<A> | Error)[]>;
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

/** What a replay cache keeps of one request to a model endpoint (policies/openai reads it, store/
 * replay-cache writes it): the raw response body, and the retries and latency it took (replayed as
 * they were, so a replayed trajectory equals the recorded one byte for byte). */
export interface CachedResponse {
  body: string;
  retries: number;
  latencyMs: number;
  /** The answer's HTTP status and why the retried attempts failed (absent in files before them). */
  status?: number;
  errors?: string[];
}
