// The rollout queue: where a batch's episodes run. In process (rollout() itself, what every command does
// without --queue), or as jobs on a queue that `turnwise worker` processes consume (queue-redis.ts,
// BullMQ on Redis). Either way a batch is the same list of episodes: episode i = (task i / K, sample
// i mod K) with its seeds derived from (run seed, task seed, sample) (episode.ts), so who plays it, and
// when, changes no byte of its trajectory.
//
// A job is plain data — the task, the policy as a spec or a published checkpoint, the budget, the seeds,
// the run and the policy version — and its id is deterministic, `run-<run>-task-<seed>-sample-<k>-v<n>`,
// so a retried or duplicated delivery is recognised: the producer takes the first result of each id,
// and reassembles the batch in episode order (Reassembly), whatever order the results arrive in.
import { InputError } from '../core/errors.ts';
import type { Env, MaybePromise, Policy, Task, Trajectory } from '../core/types.ts';
import { type BatchOptions, rollout } from './batch.ts';
import { checkBudget, episodeSeeds, isPromise, runEpisode } from './episode.ts';
import { closeEnv } from './lockstep.ts';

type AnyPolicy = Policy<unknown, unknown>;
type AnyEnv = Env<unknown, unknown>;

/** What a worker opens to act as a batch's policy: a spec every worker can open the same way
 * (`random`, `oracle:eps=0.2`, `openai:URL#MODEL`), or the bytes of a checkpoint, which the queue
 * publishes (by content hash) for the workers to load. `id` is the policy's id, recorded on each
 * trajectory as a local run records it. */
export type PolicyRef = { id: string; spec: string } | { id: string; checkpoint: Uint8Array };

/** The policy of a batch as workers know it, and its version (a training iteration; 0 for a policy
 * that does not change). Every job of a batch names the same version, so a batch never mixes two. */
export interface RemotePolicy {
  policy: PolicyRef;
  version?: number;
}

/** How a stage runs a batch: rollout() in process, or through a queue. Trajectories in episode order. */
export type RolloutRunner = (opts: BatchOptions) => Promise<Trajectory[]>;

export interface RolloutQueue {
  /** `in-process`, or the queue's URL. */
  readonly where: string;
  /** A runner for batches of the policy `remote` names (the in-process queue runs opts.policy itself). */
  runner(remote: RemotePolicy): RolloutRunner;
  /** Releases connections; a queue is closed by whoever opened it, on every path. */
  close(): Promise<void>;
}

/** The default: every episode in this process, exactly as rollout() runs it. */
export const IN_PROCESS: RolloutQueue = {
  where: 'in-process',
  runner: () => async (opts) => rollout(opts),
  close: async () => {},
};

/** The policy of a job: a spec, or the sha256 of a checkpoint the producer published. */
export type JobPolicy = { id: string; spec: string } | { id: string; checkpoint: string };

/** One episode as a job: everything a worker needs, as plain JSON. */
export interface EpisodeJob {
  /** The batch's run id (results are keyed by it). */
  run: string;
  task: Task;
  sample: number;
  budget: number;
  revealBudget: boolean;
  runSeed: number;
  /** The trajectory's id (`${idPrefix}${task.seed}-${sample}`, as rollout() names it). */
  id: string;
  policy: JobPolicy;
  version: number;
}

/** Characters a run id may hold: BullMQ refuses `:` in job ids, and these need no quoting anywhere. */
const RUN_ID = /^[A-Za-z0-9._-]{1,100}$/;

export function checkRunId(run: string, field = 'run'): string {
  if (!RUN_ID.test(run)) throw new InputError(field, run, 'expected 1 to 100 of A-Z a-z 0-9 . _ -');
  return run;
}

/** The job id of episode (task seed, sample) of a run at a policy version. */
export function jobId(run: string, taskSeed: number, sample: number, version: number): string {
  return `run-${run}-task-${taskSeed}-sample-${sample}-v${version}`;
}

/** A batch as jobs: one per distinct episode, and the job id of every episode index. Two episodes of a
 * batch with the same task seed and sample are the same episode (same task, seeds, budget) and share
 * one job; the same id for different content would be a bug, and is refused. */
export function batchJobs(
  opts: BatchOptions,
  run: string,
  policy: JobPolicy,
  version: number,
): { jobs: Map<string, EpisodeJob>; order: string[] } {
  const { tasks, samples } = opts;
  if (!Number.isInteger(samples) || samples < 1)
    throw new InputError('samples', samples, 'expected an integer ≥ 1');
  if (typeof opts.policy === 'function')
    throw new Error('a queued batch has one policy for every task (a function of the task cannot travel)');
  if (opts.prefix !== undefined) throw new Error('a queued batch cannot carry expert prefixes');
  if (opts.policy.id !== policy.id)
    throw new Error(`the queued batch's policy is ${opts.policy.id}, its reference names ${policy.id}`);
  const budgetFor = typeof opts.budget === 'function' ? opts.budget : () => opts.budget as number;
  const revealBudget = opts.revealBudget ?? opts.policy.budgetAware;
  const prefix = opts.idPrefix ?? `r${opts.runSeed}-`;
  const jobs = new Map<string, EpisodeJob>();
  const order: string[] = [];
  for (let i = 0; i < tasks.length * samples; i++) {
    const task = tasks[Math.floor(i / samples)];
    const sample = i % samples;
    const job: EpisodeJob = {
      run,
      task,
      sample,
      budget: checkBudget(budgetFor(task, sample), 'budget'),
      revealBudget,
      runSeed: opts.runSeed,
      id: `${prefix}${task.seed}-${sample}`,
      policy,
      version,
    };
    const id = jobId(run, task.seed, sample, version);
    const same = jobs.get(id);
    if (same !== undefined && JSON.stringify(same) !== JSON.stringify(job))
      throw new Error(`job ${id} stands for two different episodes`);
    jobs.set(id, job);
    order.push(id);
  }
  return { jobs, order };
}

/**
 * A worker's side of a job: the episode exactly as rollout() plays episode (task, sample) — the same
 * seeds, budget and id — on an env of its own, closed on every path. `policy` is what the job's policy
 * reference opened to; the trajectory records the job's policy id (a checkpoint loaded from a worker's
 * copy would otherwise name the copy's path).
 */
export function playJob(job: EpisodeJob, policy: AnyPolicy, env: AnyEnv): MaybePromise<Trajectory> {
  const { envSeed, rng } = episodeSeeds(job.runSeed, job.task.seed, job.sample);
  const finish = (t: Trajectory): Trajectory => {
    if (t.policy !== job.policy.id) t.policy = job.policy.id;
    return t;
  };
  let played: MaybePromise<Trajectory>;
  try {
    played = runEpisode(env, policy, {
      id: job.id,
      task: job.task,
      sample: job.sample,
      budget: job.budget,
      revealBudget: job.revealBudget,
      envSeed,
      rng,
    });
  } catch (e) {
    const closed = closeEnv(env);
    if (isPromise(closed)) return closed.then(() => Promise.reject(e));
    throw e;
  }
  if (isPromise(played))
    return played.then(
      async (t) => {
        await closeEnv(env);
        return finish(t);
      },
      async (e) => {
        await closeEnv(env);
        throw e;
      },
    );
  const closed = closeEnv(env);
  return isPromise(closed) ? closed.then(() => finish(played)) : finish(played);
}

// The wire form of a trajectory: JSON, with the numbers JSON cannot hold (−∞ log-probs, NaN, −0) tagged,
// so that the producer holds the same values a local run holds — and writes the same bytes.
const NUM = '\u0000num';

export function encodeTrajectory(t: Trajectory): string {
  return JSON.stringify(t, (_k, v) =>
    typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))
      ? { [NUM]: Object.is(v, -0) ? '-0' : String(v) }
      : v,
  );
}

export function decodeTrajectory(s: string): Trajectory {
  return JSON.parse(s, (_k, v) =>
    typeof v === 'object' && v !== null && typeof v[NUM] === 'string' ? Number(v[NUM]) : v,
  ) as Trajectory;
}

/**
 * The producer's side: results arrive in any order, possibly more than once; each job id counts once,
 * and trajectories are handed on in episode order (onTrajectory, and the kept array) — what rollout()
 * would have produced.
 */
export class Reassembly {
  private readonly order: readonly string[];
  private readonly slots = new Map<string, number[]>();
  private readonly got: (string | undefined)[];
  private readonly out: Trajectory[];
  private readonly keep: boolean;
  private readonly onTrajectory?: (t: Trajectory, i: number) => void;
  private next = 0;
  /** Results taken (one per job id) and results ignored (a job id seen before). */
  taken = 0;
  duplicates = 0;

  constructor(order: readonly string[], opts: Pick<BatchOptions, 'keep' | 'onTrajectory'>) {
    this.order = order;
    order.forEach((id, i) => {
      const s = this.slots.get(id);
      if (s === undefined) this.slots.set(id, [i]);
      else s.push(i);
    });
    this.got = new Array(order.length);
    this.keep = opts.keep ?? true;
    this.out = this.keep ? new Array(order.length) : [];
    this.onTrajectory = opts.onTrajectory;
  }

  /** Whether the result of `id` is still awaited (false for ids of other batches, and once taken). */
  awaits(id: string): boolean {
    const s = this.slots.get(id);
    return s !== undefined && this.got[s[0]] === undefined;
  }

  /** Takes the result (wire form) of job `id`; false when it was taken before or is not this batch's. */
  settle(id: string, wire: string): boolean {
    if (!this.awaits(id)) {
      this.duplicates++;
      return false;
    }
    this.taken++;
    for (const i of this.slots.get(id)!) this.got[i] = wire;
    for (let w = this.got[this.next]; w !== undefined; w = this.got[this.next]) {
      // Each episode its own object, as a local run gives it (two episodes may share a job).
      const t = decodeTrajectory(w);
      this.got[this.next] = '';
      if (this.keep) this.out[this.next] = t;
      this.onTrajectory?.(t, this.next);
      this.next++;
    }
    return true;
  }

  /** Job ids whose results are still awaited. */
  missing(): string[] {
    return [...this.slots.keys()].filter((id) => this.awaits(id));
  }

  get complete(): boolean {
    return this.next === this.order.length;
  }

  get result(): Trajectory[] {
    return this.out;
  }
}
