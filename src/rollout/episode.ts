// One episode: reset, then turns until the env terminates or the budget T is spent. The budget is
// enforced here, never by the env: an episode that reaches T turns without terminating is truncated
// and fails with kind `budget`. An exception from the env or the policy ends the episode with kind
// `error` instead of crashing the batch.
//
// Sizes: in an env with text actions (tool calls, whose observations and actions carry text from
// outside: a model, a sandbox, a database), an observation, an action (with its trace) or a step's info
// larger than MAX_TURN_CHARS characters of JSON, or a trajectory past MAX_TRAJECTORY_CHARS in all, ends
// the episode with kind `error` and the sizes in its message; the oversized turn is not recorded. So
// every trajectory can be written out (V8's strings stop at ~512 M characters; JSON.stringify throws
// past them) and one episode never takes the batch or the output file with it. Envs with discrete
// actions are not measured (their observations and actions are the env's own numbers), nor are turns
// without a trace there: the check costs nothing on their fast path.
//
// Envs and policies may be sync or async (MaybePromise). The episode is written once, as a state
// machine; plain values are fed straight back (no promise, no microtask: the sync fast path) and the
// driver switches to awaiting only when something actually is a promise.
import { ContextOverflow, InputError } from '../core/errors.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type {
  Action,
  Env,
  FailureKind,
  MaybePromise,
  Outcome,
  Policy,
  StepInfo,
  StepResult,
  Task,
  Trajectory,
  Turn,
  TurnContext,
} from '../core/types.ts';

export interface EpisodeOptions<O> {
  id: string;
  task: Task;
  budget: number;
  revealBudget: boolean;
  /** The sample index of the episode within its task (told to the policy as ctx.sample). */
  sample?: number;
  /** Seed given to env.reset. */
  envSeed: number;
  /** The policy's random stream for this episode. */
  rng: Rng;
  /** Continue from a saved state instead of resetting: the env is restored (and re-seeded with envSeed)
   * and the given turns count against the budget. */
  from?: { snapshot: unknown; observation: O; history: readonly Turn<O, unknown>[] };
  /** Expert-prefix guidance: the first `turns` turns are played by `policy` and recorded as `forced`
   * (excluded from policy losses). The expert is told the turns left when it is budget-aware. */
  prefix?: Prefix<O>;
}

export interface Prefix<O> {
  policy: Policy<O, unknown>;
  turns: number;
}

/** The seeds of episode (run, task, sample): independent streams for the env and the policy. */
export function episodeSeeds(
  runSeed: number,
  taskSeed: number,
  sample: number,
): { envSeed: number; rng: Rng } {
  return {
    envSeed: Rng.derive(runSeed, taskSeed, sample, STREAM.env).uint32(),
    rng: Rng.derive(runSeed, taskSeed, sample, STREAM.policy),
  };
}

export function checkBudget(budget: number, field = '--budget'): number {
  if (!Number.isInteger(budget) || budget < 1) throw new InputError(field, budget, 'expected an integer ≥ 1');
  return budget;
}

export function isPromise(x: unknown): x is Promise<unknown> {
  return typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function';
}

/** Largest observation, action (with its trace) or step info of one turn, in characters of JSON. */
export const MAX_TURN_CHARS = 1 << 22;
/** Largest trajectory (the sum over its observations, actions and infos), in characters of JSON. */
export const MAX_TRAJECTORY_CHARS = 1 << 26;

/** The length of JSON.stringify(v), counted up to `limit` (a count past it stops there: > limit). Keys
 * and strings count their characters (escapes not expanded), numbers their shortest form. */
export function jsonChars(v: unknown, limit = Number.POSITIVE_INFINITY): number {
  if (typeof v === 'string') return v.length + 2;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v).length;
  if (typeof v !== 'object' || v === null) return 4;
  let n = 1; // the opening bracket; each member adds its separator (a comma, or the closing bracket)
  if (Array.isArray(v)) {
    for (const x of v) {
      n += jsonChars(x, limit - n) + 1;
      if (n > limit) return n;
    }
  } else {
    for (const k in v) {
      const x = (v as Record<string, unknown>)[k];
      if (x === undefined || typeof x === 'function') continue;
      n += k.length + 4 + jsonChars(x, limit - n);
      if (n > limit) return n;
    }
  }
  return n === 1 ? 2 : n;
}

/** What Episode.next returns when the episode is over. */
export const DONE: unique symbol = Symbol('done');
const RESET = 0;
const ACT = 1;
const STEP = 2;

/**
 * The episode as an explicit state machine: `next(value)` takes the result of the last request (the
 * reset observation, the policy's action, the env's step) and returns the next request — a value or a
 * promise — or DONE. An explicit machine (not a generator) so that the lockstep driver
 * (rollout/lockstep.ts) can hold many episodes and feed each one its slice of a batched policy call.
 */
export class Episode<O, A> {
  private readonly env: Env<O, A>;
  private readonly policy: Policy<O, A>;
  private readonly o: EpisodeOptions<O>;
  private readonly turns: Turn<O, A>[] = [];
  private readonly ctx: TurnContext<O>;
  private phase = RESET;
  private t = 0;
  private obs!: O;
  private act!: Action<A>;
  private ret = 0;
  private firstSuccessTurn: number | null = null;
  private end: Outcome['end'] = 'truncated';
  private lastInfo: StepInfo = {};
  private error: string | undefined;
  /** Whether the pending action came from the prefix policy. */
  private forced = false;
  /** The episode ended because the policy's context window was full. */
  private overflow = false;
  /** Whether turns are measured (see the header), and their characters so far. */
  private readonly measured: boolean;
  private chars = 0;

  constructor(env: Env<O, A>, policy: Policy<O, A>, o: EpisodeOptions<O>) {
    this.env = env;
    this.policy = policy;
    this.o = o;
    // One context object per episode, updated each turn (the loop waits for act() before moving on).
    this.ctx = {
      observation: undefined as O,
      history: this.turns,
      turn: 0,
      turnsLeft: undefined,
      rng: o.rng,
      env,
      task: o.task,
    };
    if (o.sample !== undefined) this.ctx.sample = o.sample;
    this.measured = env.spec.actions === 'text';
  }

  /** Refuses a turn's part past MAX_TURN_CHARS or a trajectory past MAX_TRAJECTORY_CHARS (throws: the
   * episode ends with kind `error`). */
  private measure(what: string, value: unknown): void {
    const n = jsonChars(value, MAX_TURN_CHARS);
    if (n > MAX_TURN_CHARS) {
      throw new Error(
        `turn ${this.t}: the ${what} is ${jsonChars(value)} characters of JSON (limit ${MAX_TURN_CHARS} per observation, action or step info)`,
      );
    }
    this.chars += n;
    if (this.chars > MAX_TRAJECTORY_CHARS) {
      throw new Error(
        `turn ${this.t}: the trajectory reached ${this.chars} characters of JSON (limit ${MAX_TRAJECTORY_CHARS})`,
      );
    }
  }

  start(): unknown {
    try {
      const from = this.o.from;
      if (from === undefined) return this.env.reset(this.o.envSeed);
      if (this.env.restore === undefined) throw new Error(`env ${this.env.spec.id} cannot restore snapshots`);
      this.env.restore(from.snapshot, this.o.envSeed);
      for (const turn of from.history as readonly Turn<O, A>[]) {
        this.turns.push(turn);
        this.ret += turn.reward;
        if (this.firstSuccessTurn === null && turn.info.success === true) this.firstSuccessTurn = turn.t + 1;
      }
      this.t = this.turns.length;
      return from.observation;
    } catch (e) {
      return this.fail(e);
    }
  }

  next(value: unknown): unknown {
    try {
      if (this.phase === STEP) {
        const res = value as StepResult<O>;
        const { t, act } = this;
        if (this.measured) {
          this.measure('observation', res.observation);
          this.measure('step info', res.info);
        }
        const turn: Turn<O, A> = {
          t,
          observation: this.obs,
          action: act.action,
          reward: res.reward,
          logp: act.logp,
          info: res.info,
        };
        if (this.forced) turn.forced = true;
        if (act.trace !== undefined) turn.trace = act.trace;
        this.turns.push(turn);
        this.ret += res.reward;
        if (this.firstSuccessTurn === null && res.info.success === true) this.firstSuccessTurn = t + 1;
        this.obs = res.observation;
        this.t = t + 1;
        if (res.terminated) {
          this.end = 'terminated';
          this.lastInfo = res.info;
          return DONE;
        }
        return this.requestAct();
      }
      if (this.phase === ACT) {
        this.act = value as Action<A>;
        if (this.measured || this.act.trace !== undefined)
          this.measure(
            'action',
            this.act.trace === undefined ? this.act.action : [this.act.action, this.act.trace],
          );
        this.phase = STEP;
        return this.env.step(this.act.action);
      }
      this.obs = value as O; // RESET
      if (this.measured) this.measure('observation', this.obs);
      return this.requestAct();
    } catch (e) {
      return this.fail(e);
    }
  }

  private requestAct(): unknown {
    const { t, ctx } = this;
    const budget = this.o.budget;
    if (t >= budget) return DONE;
    this.phase = ACT;
    ctx.observation = this.obs;
    ctx.turn = t;
    const prefix = this.o.prefix;
    this.forced = prefix !== undefined && t < prefix.turns;
    if (this.forced) {
      ctx.turnsLeft = this.o.revealBudget || prefix!.policy.budgetAware ? budget - t : undefined;
      return prefix!.policy.act(ctx);
    }
    ctx.turnsLeft = this.o.revealBudget ? budget - t : undefined;
    return this.policy.act(ctx);
  }

  /** Ends the episode on an exception: kind `context` when the policy says its prompt outgrew the
   * model's context window (a truncation, not a crash), `error` for anything else. */
  fail(e: unknown): typeof DONE {
    this.end = e instanceof ContextOverflow ? 'truncated' : 'error';
    this.overflow = e instanceof ContextOverflow;
    this.error = e instanceof Error ? e.message : String(e);
    return DONE;
  }

  result(): Trajectory<O, A> {
    const { end, firstSuccessTurn } = this;
    const success = end !== 'error' && firstSuccessTurn !== null;
    let failure: FailureKind | null = null;
    if (!success) {
      if (end === 'error') failure = 'error';
      else if (end === 'terminated') failure = this.lastInfo.failure ?? 'wrong-answer';
      else failure = this.overflow ? 'context' : 'budget';
    }
    const outcome: Outcome = {
      success,
      return: this.ret,
      turns: this.turns.length,
      firstSuccessTurn: success ? firstSuccessTurn : null,
      end,
      failure,
    };
    if (this.error !== undefined) outcome.error = this.error;
    const o = this.o;
    return {
      id: o.id,
      task: o.task,
      policy: this.policy.id,
      budget: o.budget,
      revealBudget: o.revealBudget,
      turns: this.turns,
      outcome,
    };
  }
}

async function finishAsync<O, A>(ep: Episode<O, A>, pending: Promise<unknown>): Promise<Trajectory<O, A>> {
  let req: unknown = pending;
  while (req !== DONE) {
    if (isPromise(req)) {
      let value: unknown;
      try {
        value = await req;
      } catch (e) {
        req = ep.fail(e);
        continue;
      }
      req = ep.next(value);
    } else req = ep.next(req);
  }
  return ep.result();
}

/** Checks the options and returns the episode machine, not yet started (the lockstep rollout drives
 * many at once). */
export function createEpisode<O, A>(
  env: Env<O, A>,
  policy: Policy<O, A>,
  options: EpisodeOptions<O>,
): Episode<O, A> {
  checkBudget(options.budget, 'budget');
  if (policy.budgetAware && !options.revealBudget) {
    throw new InputError(
      'revealBudget',
      false,
      `policy ${policy.id} acts on the turns left; reveal the budget`,
    );
  }
  return new Episode(env, policy, options);
}

/** Plays one episode; returns a plain Trajectory when env and policy are synchronous. */
export function runEpisode<O, A>(
  env: Env<O, A>,
  policy: Policy<O, A>,
  options: EpisodeOptions<O>,
): MaybePromise<Trajectory<O, A>> {
  const ep = createEpisode(env, policy, options);
  let req = ep.start();
  while (req !== DONE) {
    if (isPromise(req)) return finishAsync(ep, req);
    req = ep.next(req);
  }
  return ep.result();
}
