// The worker's side of the rollout queue (`turnwise worker`): BullMQ jobs of `turnwise-episodes`, each
// one episode (queue.ts playJob: the same seeds, budget and id as a local run). Its trajectory is the
// job's return value when it is small (stored by BullMQ with the completion, in one step), else written
// into the batch's results hash before the job completes — either way a result exists for every
// completion, and a rerun (after a stall, or a duplicate delivery) writes the same bytes again.
//
// A job whose policy cannot be opened, or whose env cannot be made, throws with the reason (naming this
// worker): BullMQ retries it, on this worker or another, then fails it with that reason, which the
// producer prints. What goes wrong inside an episode (the env or the policy raising) ends that episode
// with failure kind `error`, as it does in a local run.
//
// Lifecycle: the policy a job names is opened once per (policy, env configuration) and kept (a few at a
// time); a checkpoint is fetched from Redis by its hash into a private directory removed at close. Every
// env is closed after its episode. close() lets the episodes in flight finish.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Env, MaybePromise, Policy, Task, Trajectory } from '../core/types.ts';
import { type EpisodeJob, encodeTrajectory, playJob } from './queue.ts';
import {
  AGENT_QUEUE_NAME,
  asEpisodeJob,
  checkpointKey,
  connectRedis,
  INLINE_CHARS,
  KEEP_SECONDS,
  QUEUE_NAME,
  type QueueUrl,
  resultsKey,
  workerKey,
} from './queue-redis.ts';

type AnyPolicy = Policy<unknown, unknown>;
type AnyEnv = Env<unknown, unknown>;

/** How a worker opens what a job names (the composition layer's: the policy specs and the env registry). */
export interface WorkerParts {
  /** A policy from its spec, or from a checkpoint file (the worker's copy), for a task's env. */
  openPolicy(ref: { spec: string } | { file: string }, task: Task): Promise<AnyPolicy>;
  makeEnv(task: Task): MaybePromise<AnyEnv>;
  /** Outside agents' episodes (`harness run --queue`, the queue AGENT_QUEUE_NAME): taken only when
   * given (`turnwise worker --agents`), since each runs a job's shell command here. `play` returns the
   * episode's trajectory, or throws why it cannot run it; `close` when the worker stops. */
  agents?: {
    play(data: unknown, jobId: string): Promise<Trajectory>;
    close(): Promise<void>;
  };
}

export interface WorkerOptions {
  url: QueueUrl;
  /** Shown by `turnwise queue status` and recorded with each result. */
  name: string;
  /** Episodes in flight at once. */
  concurrency: number;
  /** How long a job's lock lasts unrenewed, in ms: a worker killed mid-episode has its episodes put
   * back after about this (BullMQ's lockDuration, and its stalled-check interval). Default 30000. */
  lockMs?: number;
  /** After each job: its id, and the reason when it failed. */
  onJob?: (jobId: string, failure?: string) => void;
}

/** Policies kept open at once. */
const OPEN_POLICIES = 8;

export class QueueWorker {
  readonly name: string;
  private readonly redis: Redis;
  private readonly worker: Worker;
  private readonly agentWorker: Worker | undefined;
  private readonly parts: WorkerParts;
  private readonly dir: string;
  private readonly policies = new Map<string, Promise<AnyPolicy>>();
  private closing: Promise<void> | undefined;

  private constructor(o: WorkerOptions, redis: Redis, parts: WorkerParts) {
    this.name = o.name;
    this.redis = redis;
    this.parts = parts;
    this.dir = mkdtempSync(join(tmpdir(), 'turnwise-worker-'));
    const lock = o.lockMs ?? 30_000;
    const consume = (
      queue: string,
      processor: (job: Job) => Promise<{ worker: string; trajectory?: string }>,
    ) => {
      const w = new Worker(queue, processor, {
        connection: redis,
        name: o.name,
        concurrency: o.concurrency,
        lockDuration: lock,
        stalledInterval: lock,
        maxStalledCount: 2,
        autorun: false,
      });
      w.on('error', () => {});
      w.on('completed', (job) => o.onJob?.(job.id ?? ''));
      w.on('failed', (job, e) => o.onJob?.(job?.id ?? '', e.message));
      return w;
    };
    this.worker = consume(QUEUE_NAME, (job) => this.process(job));
    const agents = parts.agents;
    if (agents !== undefined) this.agentWorker = consume(AGENT_QUEUE_NAME, (job) => this.agent(job, agents));
  }

  /** Connects (an unreachable Redis is refused in one line, as `--queue`), registers and starts. */
  static async start(o: WorkerOptions, parts: WorkerParts): Promise<QueueWorker> {
    const redis = await connectRedis(o.url);
    await redis
      .multi()
      .del(workerKey(o.name))
      .hset(workerKey(o.name), {
        host: hostname(),
        pid: process.pid,
        concurrency: o.concurrency,
        started: new Date().toISOString(),
        done: 0,
        failed: 0,
        agents: parts.agents === undefined ? 0 : 1,
      })
      .exec();
    const w = new QueueWorker(o, redis, parts);
    for (const x of [w.worker, w.agentWorker]) {
      if (x === undefined) continue;
      x.run().catch(() => {});
      await x.waitUntilReady();
    }
    return w;
  }

  private async process(job: Job): Promise<{ worker: string; trajectory?: string }> {
    let data: EpisodeJob;
    let env: AnyEnv;
    let policy: AnyPolicy;
    try {
      data = asEpisodeJob(job.data);
      policy = await this.policy(data);
    } catch (e) {
      await this.count('failed');
      throw new Error(`worker ${this.name} cannot open the policy: ${(e as Error).message}`);
    }
    try {
      env = await this.parts.makeEnv(data.task);
    } catch (e) {
      await this.count('failed');
      throw new Error(`worker ${this.name} cannot make env ${data.task.env}: ${(e as Error).message}`);
    }
    let trajectory: Trajectory;
    try {
      trajectory = await playJob(data, policy, env);
    } catch (e) {
      // Refused before the episode started (an episode's own errors end it with kind `error`).
      await this.count('failed');
      throw new Error(`worker ${this.name}: ${(e as Error).message}`);
    }
    return this.result(data.run, job, trajectory);
  }

  /** An outside agent's episode (its job's data read by `agents.play`). */
  private async agent(
    job: Job,
    agents: NonNullable<WorkerParts['agents']>,
  ): Promise<{ worker: string; trajectory?: string }> {
    const run = (job.data as { run?: unknown } | null)?.run;
    let trajectory: Trajectory;
    try {
      if (typeof run !== 'string') throw new Error('the job names no run');
      trajectory = await agents.play(job.data, job.id ?? '');
    } catch (e) {
      await this.count('failed');
      throw new Error(`worker ${this.name}: ${(e as Error).message}`);
    }
    return this.result(run, job, trajectory);
  }

  /** A job's result: its trajectory as the return value when small, else in the batch's results hash. */
  private async result(
    run: string,
    job: Job,
    trajectory: Trajectory,
  ): Promise<{ worker: string; trajectory?: string }> {
    const wire = encodeTrajectory(trajectory);
    if (wire.length <= INLINE_CHARS) {
      void this.count('done');
      return { worker: this.name, trajectory: wire };
    }
    const key = resultsKey(run);
    await this.redis
      .multi()
      .hset(key, job.id ?? '', wire)
      .expire(key, KEEP_SECONDS)
      .hincrby(workerKey(this.name), 'done', 1)
      .exec();
    return { worker: this.name };
  }

  private async count(what: 'done' | 'failed'): Promise<void> {
    await this.redis.hincrby(workerKey(this.name), what, 1).catch(() => 0);
  }

  /** The job's policy, opened once per (policy, env configuration); a failed open is not kept. */
  private policy(job: EpisodeJob): Promise<AnyPolicy> {
    const ref = job.policy;
    const key = JSON.stringify([ref, job.task.env, job.task.params]);
    let p = this.policies.get(key);
    if (p === undefined) {
      p =
        'spec' in ref
          ? this.parts.openPolicy({ spec: ref.spec }, job.task)
          : this.checkpoint(ref.checkpoint, job.task);
      p.catch(() => this.policies.delete(key));
      if (this.policies.size >= OPEN_POLICIES) this.policies.delete(this.policies.keys().next().value!);
      this.policies.set(key, p);
    }
    return p;
  }

  /** A published checkpoint: fetched by its hash, checked, written to this worker's directory, opened. */
  private async checkpoint(sha256: string, task: Task): Promise<AnyPolicy> {
    const bytes = await this.redis.getBuffer(checkpointKey(sha256));
    if (bytes === null)
      throw new Error(
        `checkpoint ${sha256.slice(0, 12)}… is not in Redis (expired, or its producer is gone)`,
      );
    if (createHash('sha256').update(bytes).digest('hex') !== sha256)
      throw new Error(`checkpoint ${sha256.slice(0, 12)}… arrived with other bytes`);
    const file = join(this.dir, `${sha256}.safetensors`);
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(`${file}.part`, bytes);
    renameSync(`${file}.part`, file);
    return this.parts.openPolicy({ file }, task);
  }

  /** Stops taking jobs, lets those in flight finish, disconnects, removes the checkpoint copies. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const workers = [this.worker, this.agentWorker].filter((w) => w !== undefined);
      if (this.redis.status === 'ready') {
        await Promise.all(workers.map((w) => w.close().catch(() => {})));
        await this.redis.del(workerKey(this.name)).catch(() => 0);
      } else {
        // Redis is gone: nothing in flight can finish (its result could not be written); the jobs go
        // back to the queue as stalled once it is back.
        this.redis.disconnect();
        await Promise.all(workers.map((w) => w.close(true).catch(() => {})));
      }
      this.redis.disconnect();
      await this.parts.agents?.close().catch(() => {});
      rmSync(this.dir, { recursive: true, force: true });
    })();
    return this.closing;
  }
}
