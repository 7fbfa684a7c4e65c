// The rollout queue on Redis, through BullMQ: the producer's side (`--queue redis://HOST:PORT` on
// rollout, eval, compare, train). A batch becomes one job per episode on the queue `turnwise-episodes`;
// `turnwise worker` processes (queue-worker.ts) play them and return each trajectory (a small one as the
// job's return value, a large one written into the batch's results hash); the producer learns of each
// completion from BullMQ's event stream, takes the result and reassembles the batch in episode order
// (queue.ts).
//
// Delivery is at least once: a worker that dies mid-episode loses its lock, BullMQ's stalled-job check
// (run by the other workers) puts the job back, and another worker plays it again; a job whose worker
// throws is retried up to ATTEMPTS times, then fails with the worker's reason, which ends the batch
// (one line on the producer). Results are idempotent (a rerun writes the same bytes under the same job
// id) and the producer takes one result per job id, so every episode counts once.
//
// Checkpoints travel through Redis, not a shared disk: the producer stores the bytes under their
// sha256 (`turnwise:checkpoint:<sha256>`, expiring after a day unused) and each job names the hash, so
// a worker on any machine loads exactly the weights of the job's version.
import { createHash, randomBytes } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import type { BatchOptions } from './batch.ts';
import {
  batchJobs,
  checkRunId,
  type EpisodeJob,
  type JobPolicy,
  type PolicyRef,
  Reassembly,
  type RemotePolicy,
  type RolloutQueue,
  type RolloutRunner,
} from './queue.ts';

/** The BullMQ queue every producer and worker meets on. */
export const QUEUE_NAME = 'turnwise-episodes';
/** The queue of outside agents' episodes (`harness run --queue`): only workers started with `--agents`
 * take them, since each runs the job's shell command on the worker's machine. */
export const AGENT_QUEUE_NAME = 'turnwise-agents';
/** Tries of a job before it fails (a worker that throws; a stalled job is rerun besides). */
export const ATTEMPTS = 3;
/** Seconds a published checkpoint and a batch's results stay in Redis without being touched. */
export const KEEP_SECONDS = 86_400;
/** A trajectory up to this many characters of JSON travels in its job's return value (and in the
 * completed event BullMQ streams, which keeps ~10 000 events); a longer one in the results hash. */
export const INLINE_CHARS = 8192;

export const resultsKey = (run: string): string => `turnwise:results:${run}`;
export const checkpointKey = (sha256: string): string => `turnwise:checkpoint:${sha256}`;
export const workerKey = (name: string): string => `turnwise:worker:${name}`;

/** A checked `redis://HOST:PORT[/DB]` address. */
export interface QueueUrl {
  url: string;
  host: string;
  port: number;
  db: number;
}

const URL_FORM = 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379';

export function parseQueueUrl(raw: string, field = '--queue'): QueueUrl {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new InputError(field, raw, URL_FORM);
  }
  if (u.protocol !== 'redis:' || u.hostname === '' || u.search !== '' || u.hash !== '')
    throw new InputError(field, raw, URL_FORM);
  if (u.username !== '' || u.password !== '')
    throw new InputError(field, raw, `${URL_FORM} (no credentials in the URL)`);
  const port = u.port === '' ? 6379 : Number(u.port);
  const path = u.pathname.replace(/^\//, '');
  const db = path === '' ? 0 : Number(path);
  if (!/^\d{0,2}$/.test(path) || !Number.isInteger(db) || db > 15)
    throw new InputError(field, raw, `${URL_FORM} (DB a number 0 to 15)`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  return { url: `redis://${u.host}${db === 0 ? '' : `/${db}`}`, host, port, db };
}

/**
 * A connection to the queue's Redis, checked before any work: unreachable (or not answering PING within
 * two seconds) is bad input of `field`, one line. Once connected it reconnects on its own, and commands
 * wait for it (maxRetriesPerRequest null, as BullMQ requires of its connections).
 */
export async function connectRedis(q: QueueUrl, field = '--queue'): Promise<Redis> {
  let connected = false;
  let failure: Error | undefined;
  const redis = new Redis({
    host: q.host,
    port: q.port,
    db: q.db,
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: null,
    // No retry before the first connection: an address that does not answer is refused now.
    retryStrategy: (times) => (connected ? Math.min(times * 200, 2000) : null),
  });
  redis.on('error', (e: Error) => {
    failure ??= e;
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (e) {
    redis.disconnect();
    const err = failure ?? (e as Error);
    const code = (err as NodeJS.ErrnoException).code ?? err.message;
    throw new InputError(
      field,
      q.url,
      `cannot reach Redis there (${code}); start redis-server or fix the address`,
    );
  }
  connected = true;
  return redis;
}

export interface QueueCounts {
  /** Jobs this producer added, finished, started, put back (a failed try, a stalled job), failed. */
  added: number;
  done: number;
  active: number;
  retried: number;
  failed: number;
  /** Duplicate results ignored (a job id whose result was taken before). */
  duplicates: number;
  /** Episodes finished per worker name. */
  workers: Record<string, number>;
}

export interface RedisQueueOptions {
  /** The producer's run id (jobs are `run-<run>.<batch>-task-…`); default `<label>-<8 hex>`. */
  run?: string;
  /** What the default run id starts with (the command). */
  label?: string;
  /** The BullMQ queue (default QUEUE_NAME). */
  queueName?: string;
  /** Called after every event of this producer's jobs (the CLI's progress line). */
  onProgress?: (counts: Readonly<QueueCounts>) => void;
}

/** Where a batch's results go: each job id's first result taken once (Reassembly is one). */
export interface ResultSink {
  /** Whether the result of `id` is still awaited. */
  awaits(id: string): boolean;
  /** Takes the result (wire form) of `id`; false when it was not awaited. */
  settle(id: string, wire: string): boolean;
  /** Job ids still awaited. */
  missing(): string[];
  readonly complete: boolean;
}

interface Batch {
  run: string;
  sink: ResultSink;
  resolve: () => void;
  reject: (e: Error) => void;
  settled: boolean;
}

export class RedisRolloutQueue implements RolloutQueue {
  readonly where: string;
  readonly run: string;
  private readonly redis: Redis;
  private readonly eventsRedis: Redis;
  private readonly queue: Queue;
  private readonly events: QueueEvents;
  /** Every awaited job id, with its batch. */
  private readonly pending = new Map<string, Batch>();
  private readonly published = new Set<string>();
  private readonly onProgress?: (counts: Readonly<QueueCounts>) => void;
  private batches = 0;
  private closed = false;
  readonly counts: QueueCounts = {
    added: 0,
    done: 0,
    active: 0,
    retried: 0,
    failed: 0,
    duplicates: 0,
    workers: {},
  };

  private constructor(
    url: QueueUrl,
    redis: Redis,
    eventsRedis: Redis,
    lastEventId: string,
    name: string,
    o: RedisQueueOptions,
  ) {
    this.where = url.url;
    this.redis = redis;
    this.eventsRedis = eventsRedis;
    this.run = checkRunId(o.run ?? `${o.label ?? 'run'}-${randomBytes(4).toString('hex')}`);
    this.onProgress = o.onProgress;
    this.queue = new Queue(name, { connection: redis });
    this.queue.on('error', () => {});
    // From the stream's last event as it was before any job was added: no completion can be missed.
    this.events = new QueueEvents(name, { connection: eventsRedis, lastEventId });
    this.events.on('error', () => {});
    this.events.on('completed', ({ jobId, returnvalue }) => this.completed(jobId, returnvalue));
    this.events.on('failed', ({ jobId, failedReason }) => this.failed(jobId, failedReason));
    this.events.on('active', ({ jobId }) => {
      if (this.pending.has(jobId)) this.tick('active', 1);
    });
    this.events.on('waiting', ({ jobId, prev }) => {
      if (prev === 'active' && this.pending.has(jobId)) {
        this.counts.active--;
        this.tick('retried', 1);
      }
    });
  }

  /** Connects (refusing an unreachable Redis in one line, `field`) and starts listening. */
  static async open(url: QueueUrl, o: RedisQueueOptions = {}, field = '--queue'): Promise<RedisRolloutQueue> {
    const redis = await connectRedis(url, field);
    let eventsRedis: Redis;
    try {
      eventsRedis = await connectRedis(url, field);
    } catch (e) {
      redis.disconnect();
      throw e;
    }
    const name = o.queueName ?? QUEUE_NAME;
    const last = (await redis.xrevrange(`bull:${name}:events`, '+', '-', 'COUNT', 1))[0]?.[0];
    const q = new RedisRolloutQueue(url, redis, eventsRedis, last ?? '0-0', name, o);
    await q.events.waitUntilReady();
    return q;
  }

  runner(remote: RemotePolicy): RolloutRunner {
    return (opts) => this.rollout(opts, remote);
  }

  /** One batch through the queue: its jobs added, their results reassembled in episode order. */
  async rollout(opts: BatchOptions, remote: RemotePolicy): Promise<Trajectory[]> {
    if (this.closed) throw new Error('the rollout queue is closed');
    const run = `${this.run}.${++this.batches}`;
    const policy = await this.publish(remote.policy);
    const { jobs, order } = batchJobs(opts, run, policy, remote.version ?? 0);
    if (order.length === 0) return [];
    const reassembly = new Reassembly(order, opts);
    await this.submit(run, jobs, 'episode', reassembly);
    return reassembly.result;
  }

  /**
   * Jobs of one batch (`run`, their results hash's key) onto the queue, their results into `sink` as
   * they complete; resolves when the sink is complete, rejects with the first failed job's reason (or
   * the abort). Jobs not finished then are withdrawn (those being played are left to finish). With
   * `replaceFailed` (a resumed run whose job ids are those of its earlier tries), a job id the queue
   * still holds as failed is put back fresh; one still waiting or active is left to deliver its result.
   */
  async submit(
    run: string,
    jobs: ReadonlyMap<string, object>,
    jobName: string,
    sink: ResultSink,
    o: { signal?: AbortSignal; replaceFailed?: boolean } = {},
  ): Promise<void> {
    const signal = o.signal;
    if (this.closed) throw new Error('the rollout queue is closed');
    if (jobs.size === 0) return;
    let batch!: Batch;
    const done = new Promise<void>((resolve, reject) => {
      batch = { run, sink, resolve, reject, settled: false };
    });
    const onAbort = () => this.end(batch, signal?.reason ?? new Error('aborted'));
    for (const id of jobs.keys()) this.pending.set(id, batch);
    try {
      if (signal?.aborted) throw signal.reason;
      signal?.addEventListener('abort', onAbort, { once: true });
      const entries = [...jobs];
      for (let i = 0; i < entries.length; i += 1000) {
        const chunk = entries.slice(i, i + 1000);
        if (o.replaceFailed)
          for (const [jobId] of chunk) {
            const old = await this.queue.getJob(jobId);
            if (old !== undefined && (await old.isFailed())) await old.remove();
          }
        await this.queue.addBulk(
          chunk.map(([jobId, data]) => ({
            name: jobName,
            data,
            opts: { jobId, attempts: ATTEMPTS, removeOnComplete: true, removeOnFail: { age: 3600 } },
          })),
        );
      }
      this.tick('added', jobs.size);
      await done;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      for (const id of jobs.keys()) this.pending.delete(id);
      if (!sink.complete) await this.withdraw(sink.missing());
      await this.redis.del(resultsKey(run));
    }
  }

  /** The job's form of a policy: a spec as it is; a checkpoint stored under its hash (kept a day). */
  private async publish(ref: PolicyRef): Promise<JobPolicy> {
    if ('spec' in ref) return { id: ref.id, spec: ref.spec };
    const sha = createHash('sha256').update(ref.checkpoint).digest('hex');
    const key = checkpointKey(sha);
    const set = await this.redis.set(key, Buffer.from(ref.checkpoint), 'EX', KEEP_SECONDS, 'NX');
    if (set === 'OK') this.published.add(key);
    else await this.redis.expire(key, KEEP_SECONDS);
    return { id: ref.id, checkpoint: sha };
  }

  private tick(what: 'added' | 'active' | 'retried' | 'failed', n: number): void {
    this.counts[what] += n;
    this.onProgress?.(this.counts);
  }

  private completed(jobId: string, returnvalue: unknown): void {
    const batch = this.pending.get(jobId);
    if (batch === undefined || batch.settled) return;
    if (!batch.sink.awaits(jobId)) {
      this.counts.duplicates++;
      return;
    }
    const value = returnvalue as { worker?: unknown; trajectory?: unknown } | null;
    const worker = typeof value?.worker === 'string' ? value.worker : undefined;
    if (typeof value?.trajectory === 'string') {
      this.take(batch, jobId, value.trajectory, worker);
      return;
    }
    this.redis.hget(resultsKey(batch.run), jobId).then(
      (wire) => {
        if (batch.settled) return;
        if (wire === null) this.end(batch, new Error(`episode ${jobId} completed without a result in Redis`));
        else this.take(batch, jobId, wire, worker);
      },
      (e: Error) => this.end(batch, e),
    );
  }

  /** A job's result into its batch: counted once, the batch ended when it is whole. */
  private take(batch: Batch, jobId: string, wire: string, worker: string | undefined): void {
    let taken: boolean;
    try {
      taken = batch.sink.settle(jobId, wire);
    } catch (e) {
      // The caller's onTrajectory threw (a full disk under --out): the batch ends with it.
      this.end(batch, e as Error);
      return;
    }
    if (!taken) {
      this.counts.duplicates++;
      return;
    }
    this.counts.done++;
    this.counts.active--;
    if (worker !== undefined) this.counts.workers[worker] = (this.counts.workers[worker] ?? 0) + 1;
    this.onProgress?.(this.counts);
    if (batch.sink.complete) this.end(batch);
  }

  private failed(jobId: string, reason: string): void {
    const batch = this.pending.get(jobId);
    if (batch === undefined || batch.settled || !batch.sink.awaits(jobId)) return;
    this.counts.active--;
    this.tick('failed', 1);
    this.end(
      batch,
      InputError.raw('--queue', `episode ${jobId} failed: ${reason.replace(/\s*\n\s*/g, ' ')}`),
    );
  }

  private end(batch: Batch, error?: Error): void {
    if (batch.settled) return;
    batch.settled = true;
    if (error === undefined) batch.resolve();
    else batch.reject(error);
  }

  /** Removes the jobs of a batch that ended early (jobs being played are left to finish). */
  private async withdraw(ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.queue.remove(id).catch(() => 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.events.close().catch(() => {});
    if (this.published.size > 0) await this.redis.del(...this.published).catch(() => 0);
    await this.queue.close().catch(() => {});
    this.redis.disconnect();
    this.eventsRedis.disconnect();
  }
}

/** The job data a worker reads back, checked: the producer and the worker may be different versions. */
export function asEpisodeJob(x: unknown): EpisodeJob {
  const j = x as Partial<EpisodeJob> | null;
  const ok =
    typeof j === 'object' &&
    j !== null &&
    typeof j.run === 'string' &&
    typeof j.id === 'string' &&
    typeof j.task === 'object' &&
    j.task !== null &&
    typeof j.task.env === 'string' &&
    Number.isInteger(j.task.seed) &&
    Number.isInteger(j.sample) &&
    Number.isInteger(j.budget) &&
    typeof j.revealBudget === 'boolean' &&
    Number.isInteger(j.runSeed) &&
    Number.isInteger(j.version) &&
    typeof j.policy === 'object' &&
    j.policy !== null &&
    typeof j.policy.id === 'string' &&
    (typeof (j.policy as { spec?: unknown }).spec === 'string' ||
      /^[0-9a-f]{64}$/.test(String((j.policy as { checkpoint?: unknown }).checkpoint)));
  if (!ok) throw new Error(`not an episode job this worker can read: ${JSON.stringify(x).slice(0, 200)}`);
  return j as EpisodeJob;
}
