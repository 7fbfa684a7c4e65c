// What is on the rollout queue now (`turnwise queue status`): its job counts, the workers connected to
// it (BullMQ names each worker's connection; turnwise keeps each one's host, concurrency and counts
// beside it), the runs with jobs waiting or running, and the stalled jobs — running, but with no live
// lock: their worker is gone, and the next stalled check (by any live worker) puts them back. The same
// for the queue of outside agents' episodes (`harness run --queue`), which only workers started with
// --agents take.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AGENT_QUEUE_NAME, QUEUE_NAME, workerKey } from './queue-redis.ts';

export interface WorkerStatus {
  name: string;
  host: string | null;
  pid: number | null;
  concurrency: number | null;
  /** Episodes this worker finished, and jobs it failed, since it started. */
  done: number;
  failed: number;
  /** It takes outside agents' episodes too (started with --agents). */
  agents: boolean;
  /** Seconds connected, and since its connection last sent a command. */
  age: number;
  idle: number;
}

export interface QueueJobs {
  queue: string;
  counts: { waiting: number; active: number; delayed: number; completed: number; failed: number };
  /** Runs with jobs waiting or running (from the job ids `run-<run>-task-…`). */
  runs: { run: string; waiting: number; active: number }[];
  stalled: string[];
}

/** The episodes' queue (its fields at the top), the workers, and the agents' queue. */
export interface QueueStatus extends QueueJobs {
  workers: WorkerStatus[];
  agentQueue: QueueJobs;
}

/** Jobs looked at to count the runs (the counts above are exact whatever the size). */
const RUN_SCAN = 10_000;

const runOf = (id: string | undefined): string | undefined =>
  /^run-(.+)-task--?\d+-sample-\d+-v\d+$/.exec(id ?? '')?.[1];

export async function queueStatus(redis: Redis): Promise<QueueStatus> {
  const queue = new Queue(QUEUE_NAME, { connection: redis });
  queue.on('error', () => {});
  try {
    const clients = await queue.getWorkers();
    const workers: WorkerStatus[] = [];
    for (const client of clients) {
      const raw = String(client.rawname ?? '');
      const at = raw.indexOf(':w:');
      const name = at < 0 ? '' : raw.slice(at + 3);
      const info = name === '' ? {} : await redis.hgetall(workerKey(name));
      const n = (x: string | undefined) => (x === undefined ? null : Number(x));
      workers.push({
        name,
        host: info.host ?? null,
        pid: n(info.pid),
        concurrency: n(info.concurrency),
        done: Number(info.done ?? 0),
        failed: Number(info.failed ?? 0),
        agents: info.agents === '1',
        age: Number(client.age ?? 0),
        idle: Number(client.idle ?? 0),
      });
    }
    // One connection per worker process serves its jobs; a worker shows once.
    const unique = [...new Map(workers.map((w) => [w.name, w])).values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    return { ...(await queueJobs(redis, queue)), workers: unique, agentQueue: await agentJobs(redis) };
  } finally {
    await queue.close().catch(() => {});
  }
}

async function agentJobs(redis: Redis): Promise<QueueJobs> {
  const queue = new Queue(AGENT_QUEUE_NAME, { connection: redis });
  queue.on('error', () => {});
  try {
    return await queueJobs(redis, queue);
  } finally {
    await queue.close().catch(() => {});
  }
}

/** A queue's counts, its runs with jobs, its stalled jobs. */
async function queueJobs(redis: Redis, queue: Queue): Promise<QueueJobs> {
  const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized');
  const runs = new Map<string, { run: string; waiting: number; active: number }>();
  const count = (id: string | undefined, what: 'waiting' | 'active') => {
    const run = runOf(id);
    if (run === undefined) return;
    const r = runs.get(run) ?? { run, waiting: 0, active: 0 };
    r[what]++;
    runs.set(run, r);
  };
  for (const job of await queue.getJobs(['waiting', 'prioritized'], 0, RUN_SCAN - 1))
    count(job?.id, 'waiting');
  const active = await queue.getJobs('active', 0, RUN_SCAN - 1);
  const stalled: string[] = [];
  for (const job of active) {
    if (job?.id === undefined) continue;
    count(job.id, 'active');
    if ((await redis.exists(`bull:${queue.name}:${job.id}:lock`)) === 0) stalled.push(job.id);
  }
  return {
    queue: queue.name,
    counts: {
      waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
      active: c.active ?? 0,
      delayed: c.delayed ?? 0,
      completed: c.completed ?? 0,
      failed: c.failed ?? 0,
    },
    runs: [...runs.values()].sort((a, b) => (a.run < b.run ? -1 : a.run > b.run ? 1 : 0)),
    stalled: stalled.sort(),
  };
}
