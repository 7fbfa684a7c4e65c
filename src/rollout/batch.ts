// K samples per task over many tasks. Episode i = (task i / K, sample i mod K) gets its own streams
// derived from (run seed, task seed, sample index), so the trajectories are the same, byte for byte,
// whatever the concurrency or the order in which episodes finish. Synchronous envs and policies run
// in a plain loop; the first promise switches the rest of the batch to a bounded pool of `concurrency`
// episodes in flight. A batched policy (a neural network) runs in lockstep instead (lockstep.ts).
// Envs come from the caller's factory and are closed here, every one, on every path: the sync loop
// closes a task's env after its last sample, the async pool and lockstep after each episode or wave,
// and an exception closes whatever is open before it propagates.
import { InputError } from '../core/errors.ts';
import { isBatched } from '../core/policy.ts';
import type { Env, MaybePromise, Policy, Task, Trajectory } from '../core/types.ts';
import {
  checkBudget,
  type EpisodeOptions,
  episodeSeeds,
  isPromise,
  type Prefix,
  runEpisode,
} from './episode.ts';
import { closeEnv, runLockstep } from './lockstep.ts';

type AnyEnv = Env<unknown, unknown>;
type AnyPolicy = Policy<unknown, unknown>;

export interface BatchOptions {
  tasks: readonly Task[];
  /** K: samples per task. */
  samples: number;
  /** T, fixed or per episode (BudgetMix). */
  budget: number | ((task: Task, sample: number) => number);
  /** Tell the policy `turnsLeft`; defaults to whether the policy is budget-aware. */
  revealBudget?: boolean;
  runSeed: number;
  policy: AnyPolicy | ((task: Task) => AnyPolicy);
  /** Episodes in flight at once when the env or policy is asynchronous (default 8). */
  concurrency?: number;
  /** A fresh env for a task (an EnvFactory's `make`); the rollout closes every env it makes. */
  makeEnv: (task: Task) => MaybePromise<AnyEnv>;
  /** Called once per trajectory, in episode order (task-major, then sample). */
  onTrajectory?: (trajectory: Trajectory, index: number) => void;
  /** Keep the trajectories and return them (default true). With false they only stream through
   * onTrajectory and the result is empty: memory does not grow with the number of episodes (the
   * async pool holds only the episodes in flight and those waiting for an earlier one to finish). */
  keep?: boolean;
  /** Episode ids are `${idPrefix}${task.seed}-${sample}` (default `r${runSeed}-`). */
  idPrefix?: string;
  /** Step episodes in lockstep with one actBatch() per turn (default: when the policy is batched and
   * is one object for all tasks). The trajectories are the same either way. */
  lockstep?: boolean;
  /** Episodes per lockstep wave (default 256); in lockstep it replaces `concurrency`, also for async envs. */
  lockstepWidth?: number;
  /** Expert-prefix guidance per episode (see EpisodeOptions.prefix); undefined = no prefix. */
  prefix?: (task: Task, sample: number) => Prefix<unknown> | undefined;
}

export function rollout(opts: BatchOptions): MaybePromise<Trajectory[]> {
  const { tasks, samples, makeEnv } = opts;
  if (!Number.isInteger(samples) || samples < 1)
    throw new InputError('samples', samples, 'expected an integer ≥ 1');
  if (typeof makeEnv !== 'function') throw new InputError('makeEnv', makeEnv, 'expected an env factory');
  const policyFor = typeof opts.policy === 'function' ? opts.policy : () => opts.policy as AnyPolicy;
  const budgetFor = typeof opts.budget === 'function' ? opts.budget : () => opts.budget as number;
  if (typeof opts.budget === 'number') checkBudget(opts.budget);
  const concurrency = opts.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InputError('concurrency', concurrency, 'expected an integer ≥ 1');
  }
  const prefix = opts.idPrefix ?? `r${opts.runSeed}-`;
  const total = tasks.length * samples;
  const keep = opts.keep ?? true;
  const out: Trajectory[] = keep ? new Array(total) : [];

  const episodeOptions = (i: number, policy: AnyPolicy): EpisodeOptions<unknown> => {
    const task = tasks[Math.floor(i / samples)];
    const sample = i % samples;
    const { envSeed, rng } = episodeSeeds(opts.runSeed, task.seed, sample);
    return {
      id: `${prefix}${task.seed}-${sample}`,
      task,
      sample,
      budget: checkBudget(budgetFor(task, sample), 'budget'),
      revealBudget: opts.revealBudget ?? policy.budgetAware,
      envSeed,
      rng,
      prefix: opts.prefix?.(task, sample),
    };
  };
  const start = (i: number, env: AnyEnv) => {
    const policy = policyFor(tasks[Math.floor(i / samples)]);
    return runEpisode(env, policy, episodeOptions(i, policy));
  };

  const single = typeof opts.policy === 'function' ? undefined : opts.policy;
  if (single !== undefined && isBatched(single) && opts.lockstep !== false) {
    const width = opts.lockstepWidth ?? 256;
    if (!Number.isInteger(width) || width < 1)
      throw new InputError('lockstepWidth', width, 'expected an integer ≥ 1');
    const done = runLockstep({
      total,
      width,
      policy: single,
      makeEnv: (i) => makeEnv(tasks[Math.floor(i / samples)]),
      episodeOptions: (i) => episodeOptions(i, single),
      emit: (i, t) => {
        if (keep) out[i] = t;
        opts.onTrajectory?.(t, i);
      },
    });
    return isPromise(done) ? done.then(() => out) : out;
  }

  // Sync fast path: one env per task, reused across its samples, closed after the last one.
  const pool = (first: number, pending?: Promise<Trajectory>, env?: AnyEnv, made?: Promise<AnyEnv>) =>
    finishAsync(opts, out, first, start, concurrency, pending, env, made);
  let env: AnyEnv | undefined;
  for (let i = 0; i < total; i++) {
    if (i % samples === 0) {
      const made = makeEnv(tasks[i / samples]);
      if (isPromise(made)) return pool(i, undefined, undefined, made);
      env = made;
    }
    let r: MaybePromise<Trajectory>;
    try {
      r = start(i, env!);
    } catch (e) {
      // Bad options (refused before the episode starts): close, then let the error out.
      const closed = closeEnv(env!);
      if (isPromise(closed)) return closed.then(() => Promise.reject(e));
      throw e;
    }
    if (isPromise(r)) return pool(i + 1, r, env);
    if (keep) out[i] = r;
    opts.onTrajectory?.(r, i);
    if (i % samples === samples - 1 || i === total - 1) {
      const closed = closeEnv(env!);
      env = undefined;
      if (isPromise(closed)) return closed.then(() => (i + 1 < total ? pool(i + 1) : out));
    }
  }
  return out;
}

/**
 * The rest of a batch, `concurrency` episodes in flight, each with an env of its own (closed when its
 * episode ends). `pending` is the episode the sync loop had started (index first − 1) on `shared`,
 * the env of its task, closed when that episode ends; `made`, an env the sync loop asked for (for
 * episode `first`) and got as a promise.
 */
async function finishAsync(
  opts: BatchOptions,
  out: Trajectory[],
  first: number,
  start: (i: number, env: AnyEnv) => MaybePromise<Trajectory>,
  concurrency: number,
  pending?: Promise<Trajectory>,
  shared?: AnyEnv,
  made?: Promise<AnyEnv>,
): Promise<Trajectory[]> {
  const total = opts.tasks.length * opts.samples;
  const keep = opts.keep ?? true;
  // Finished episodes wait here until every earlier one has finished: emission is in episode order.
  const waiting = new Map<number, Trajectory>();
  let emitted = pending === undefined ? first : first - 1;
  let next = first;
  const settle = (i: number, t: Trajectory) => {
    waiting.set(i, t);
    for (let x = waiting.get(emitted); x !== undefined; x = waiting.get(emitted)) {
      waiting.delete(emitted);
      if (keep) out[emitted] = x;
      opts.onTrajectory?.(x, emitted);
      emitted++;
    }
  };
  const own = async (i: number) => {
    const env = await (i === first && made !== undefined
      ? made
      : opts.makeEnv(opts.tasks[Math.floor(i / opts.samples)]));
    try {
      return await start(i, env);
    } finally {
      await closeEnv(env);
    }
  };
  let failed = false;
  const worker = async (initial?: Promise<Trajectory>) => {
    if (initial !== undefined) {
      try {
        settle(first - 1, await initial);
      } finally {
        if (shared !== undefined) await closeEnv(shared);
      }
    }
    while (next < total && !failed) {
      const i = next++;
      try {
        settle(i, await own(i));
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const workers = [worker(pending)];
  for (let w = 1; w < concurrency; w++) workers.push(worker());
  // Every worker finishes (and closes its env) before an error propagates.
  const results = await Promise.allSettled(workers);
  const bad = results.find((r) => r.status === 'rejected');
  if (bad !== undefined) throw (bad as PromiseRejectedResult).reason;
  return out;
}
