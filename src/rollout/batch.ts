// K samples per task over many tasks. Episode i = (task i / K, sample i mod K) gets its own streams
// derived from (run seed, task seed, sample index), so the trajectories are the same, byte for byte,
// whatever the concurrency or the order in which episodes finish. Synchronous envs and policies run
// in a plain loop; the first promise switches the rest of the batch to a bounded pool of `concurrency`
// episodes in flight. A policy with actBatch (a neural network) runs in lockstep instead (lockstep.ts).
import { InputError } from '../core/errors.ts';
import type { Env, MaybePromise, Policy, Task, Trajectory } from '../core/types.ts';
import { makeEnv as registryMakeEnv } from '../envs/index.ts';
import {
  checkBudget,
  type EpisodeOptions,
  episodeSeeds,
  isPromise,
  type Prefix,
  runEpisode,
} from './episode.ts';
import { runLockstep } from './lockstep.ts';

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
  makeEnv?: (task: Task) => AnyEnv;
  /** Called once per trajectory, in episode order (task-major, then sample). */
  onTrajectory?: (trajectory: Trajectory, index: number) => void;
  /** Episode ids are `${idPrefix}${task.seed}-${sample}` (default `r${runSeed}-`). */
  idPrefix?: string;
  /** Step episodes in lockstep with one actBatch() per turn (default: when the policy has actBatch and
   * is one object for all tasks). The trajectories are the same either way. */
  lockstep?: boolean;
  /** Episodes per lockstep wave (default 256); in lockstep it replaces `concurrency`, also for async envs. */
  lockstepWidth?: number;
  /** Expert-prefix guidance per episode (see EpisodeOptions.prefix); undefined = no prefix. */
  prefix?: (task: Task, sample: number) => Prefix<unknown> | undefined;
}

export function rollout(opts: BatchOptions): MaybePromise<Trajectory[]> {
  const { tasks, samples } = opts;
  if (!Number.isInteger(samples) || samples < 1)
    throw new InputError('samples', samples, 'expected an integer ≥ 1');
  const makeEnv = opts.makeEnv ?? registryMakeEnv;
  const policyFor = typeof opts.policy === 'function' ? opts.policy : () => opts.policy as AnyPolicy;
  const budgetFor = typeof opts.budget === 'function' ? opts.budget : () => opts.budget as number;
  if (typeof opts.budget === 'number') checkBudget(opts.budget);
  const concurrency = opts.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InputError('concurrency', concurrency, 'expected an integer ≥ 1');
  }
  const prefix = opts.idPrefix ?? `r${opts.runSeed}-`;
  const total = tasks.length * samples;
  const out: Trajectory[] = new Array(total);

  const episodeOptions = (i: number, policy: AnyPolicy): EpisodeOptions<unknown> => {
    const task = tasks[Math.floor(i / samples)];
    const sample = i % samples;
    const { envSeed, rng } = episodeSeeds(opts.runSeed, task.seed, sample);
    return {
      id: `${prefix}${task.seed}-${sample}`,
      task,
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
  if (single?.actBatch !== undefined && opts.lockstep !== false) {
    const width = opts.lockstepWidth ?? 256;
    if (!Number.isInteger(width) || width < 1)
      throw new InputError('lockstepWidth', width, 'expected an integer ≥ 1');
    const done = runLockstep({
      total,
      width,
      policy: single as AnyPolicy & Required<Pick<AnyPolicy, 'actBatch'>>,
      makeEnv: (i) => makeEnv(tasks[Math.floor(i / samples)]),
      episodeOptions: (i) => episodeOptions(i, single),
      emit: (i, t) => {
        out[i] = t;
        opts.onTrajectory?.(t, i);
      },
    });
    return isPromise(done) ? done.then(() => out) : out;
  }

  // Sync fast path: one env per task, reused across its samples.
  let env: AnyEnv | undefined;
  for (let i = 0; i < total; i++) {
    if (i % samples === 0) env = makeEnv(tasks[i / samples]);
    const r = start(i, env!);
    if (isPromise(r)) return finishAsync(opts, out, i, r, start, makeEnv, concurrency);
    out[i] = r;
    opts.onTrajectory?.(r, i);
  }
  return out;
}

async function finishAsync(
  opts: BatchOptions,
  out: Trajectory[],
  first: number,
  pending: Promise<Trajectory>,
  start: (i: number, env: AnyEnv) => MaybePromise<Trajectory>,
  makeEnv: (task: Task) => AnyEnv,
  concurrency: number,
): Promise<Trajectory[]> {
  const total = out.length;
  const done = new Uint8Array(total);
  let emitted = first;
  let next = first + 1;
  const settle = (i: number, t: Trajectory) => {
    out[i] = t;
    done[i] = 1;
    while (emitted < total && done[emitted]) {
      opts.onTrajectory?.(out[emitted], emitted);
      emitted++;
    }
  };
  const worker = async (initial?: [number, Promise<Trajectory>]) => {
    if (initial) settle(initial[0], await initial[1]);
    while (next < total) {
      const i = next++;
      // Concurrent episodes need their own env instances.
      settle(i, await start(i, makeEnv(opts.tasks[Math.floor(i / opts.samples)])));
    }
  };
  const workers = [worker([first, pending])];
  for (let w = 1; w < concurrency; w++) workers.push(worker());
  await Promise.all(workers);
  return out;
}
