// The rollout queue on a real Redis (redis-server on a free loopback port, started and stopped here),
// producer and BullMQ workers in this process: the same bytes as rollout() for specs and published
// checkpoints at successive versions; duplicate delivery (a job delivered again after it completed, a
// worker that lost its lock and plays on) counted once; a policy a worker cannot open, an env it cannot
// make, failing the batch with the worker's reason; an unreachable Redis refused in one line; what
// `queue status` sees. Worker deaths (SIGKILL) are test/cli/queue.test.ts's, with real processes.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { InputError } from '../../src/core/errors.ts';
import type { Policy, Task, Trajectory, TurnContext } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { TabularPolicy } from '../../src/policies/tabular.ts';
import { type BatchOptions, rollout } from '../../src/rollout/batch.ts';
import { batchJobs, type PolicyRef } from '../../src/rollout/queue.ts';
import {
  ATTEMPTS,
  connectRedis,
  INLINE_CHARS,
  parseQueueUrl,
  QUEUE_NAME,
  RedisRolloutQueue,
} from '../../src/rollout/queue-redis.ts';
import { queueStatus } from '../../src/rollout/queue-status.ts';
import { QueueWorker, type WorkerParts } from '../../src/rollout/queue-worker.ts';
import { freePort, MISSING, REDIS_SERVER, type RedisServer, SKIP, startRedis } from './redis.ts';

type AnyPolicy = Policy<unknown, unknown>;
const slippery4 = envConfig('frozenlake', { map: '4x4', slippery: true });
const random4 = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });

const lines = (ts: readonly Trajectory[]) => ts.map((t) => JSON.stringify(t));

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { wait, open };
}

/** Opens specs with the registry, and checkpoint files with the loaders — what `turnwise worker` does. */
const registry: WorkerParts = {
  openPolicy: async (ref, task) => makePolicy('spec' in ref ? ref.spec : ref.file, envs.spec(task)),
  makeEnv,
};

/** Workers whose policy first does `before(ctx)` (counts, waits), then acts as the registry's would. */
function actingAfter(before: (ctx: TurnContext<unknown>) => unknown): WorkerParts {
  return {
    openPolicy: async (r, task) => {
      const p = await registry.openPolicy(r, task);
      return {
        id: p.id,
        budgetAware: p.budgetAware,
        act: async (ctx) => {
          await before(ctx);
          return p.act(ctx);
        },
      } as AnyPolicy;
    },
    makeEnv,
  };
}

/** A batch of `policy` (its spec `spec`) through the queue. */
const queued = (q: RedisRolloutQueue, spec: string, opts: BatchOptions): Promise<Trajectory[]> =>
  q.runner({ policy: { id: (opts.policy as AnyPolicy).id, spec } })(opts);

describe('the rollout queue on a real Redis', { skip: SKIP }, () => {
  let redis: RedisServer | undefined;
  let url: ReturnType<typeof parseQueueUrl>;
  const workers: QueueWorker[] = [];

  before(async () => {
    if (REDIS_SERVER === undefined) return; // CI without redis-server: each test fails, saying so
    redis = await startRedis();
    url = parseQueueUrl(redis.url);
  });

  // CI without redis-server: each test fails, saying so.
  beforeEach(() => {
    if (redis === undefined) throw new Error(MISSING);
  });

  after(async () => {
    for (const w of workers) await w.close();
    await redis?.stop();
  });

  async function startWorkers(
    n: number,
    parts: WorkerParts = registry,
    lockMs?: number,
  ): Promise<QueueWorker[]> {
    const started: QueueWorker[] = [];
    for (let i = 0; i < n; i++) {
      const w = await QueueWorker.start(
        { url, name: `w${workers.length + 1}`, concurrency: 3, lockMs },
        parts,
      );
      workers.push(w);
      started.push(w);
    }
    return started;
  }

  async function stopAll(): Promise<void> {
    for (const w of workers.splice(0)) await w.close();
  }

  /** The events stream's last id now: a QueueEvents reading from it misses nothing that follows. */
  async function lastEvent(): Promise<string> {
    const r = await connectRedis(url);
    const last = (await r.xrevrange(`bull:${QUEUE_NAME}:events`, '+', '-', 'COUNT', 1))[0]?.[0];
    r.disconnect();
    return last ?? '0-0';
  }

  async function flush(): Promise<void> {
    const r = await connectRedis(url);
    await r.flushall();
    r.disconnect();
  }

  test("two workers give rollout()'s bytes: specs on fixed and random maps, a lockstep network", async () => {
    await startWorkers(2);
    const q = await RedisRolloutQueue.open(url, { label: 'test' });
    try {
      for (const [config, spec] of [
        [slippery4, 'oracle:eps=0.2'],
        [random4, 'random'],
        [random4, 'mlp:hidden=16,seed=3'],
      ] as const) {
        const tasks = makeTasks(config, 12, 40);
        const policy = makePolicy(spec, envs.spec(tasks[0]));
        const opts = { tasks, samples: 4, budget: 40, runSeed: 3, policy, makeEnv };
        const local = rollout(opts) as Trajectory[];
        const emitted: number[] = [];
        const queued = await q.runner({ policy: { id: policy.id, spec } })({
          ...opts,
          onTrajectory: (_t, i) => emitted.push(i),
        });
        assert.deepEqual(lines(queued), lines(local), spec);
        assert.deepEqual(
          emitted,
          local.map((_, i) => i),
          'handed on once each, in episode order',
        );
      }
      assert.equal(q.counts.done, 3 * 48);
      assert.equal(q.counts.failed, 0);
      const per = Object.values(q.counts.workers);
      assert.equal(
        per.reduce((a, b) => a + b, 0),
        3 * 48,
      );
    } finally {
      await q.close();
      await stopAll();
    }
  });

  test('checkpoints travel by hash, one version per batch: each batch is the local run of its version', async () => {
    await startWorkers(2);
    const q = await RedisRolloutQueue.open(url, { label: 'ckpt', run: 'ckpt' });
    const seenIds: string[] = [];
    const eventsConn = new Redis({ host: '127.0.0.1', port: url.port, maxRetriesPerRequest: null });
    const events = new QueueEvents(QUEUE_NAME, { connection: eventsConn, lastEventId: await lastEvent() });
    events.on('added', ({ jobId }) => seenIds.push(jobId));
    await events.waitUntilReady();
    try {
      const tasks = makeTasks(slippery4, 8, 0);
      const spec = envs.spec(tasks[0]);
      for (const version of [1, 2]) {
        // A table of its own per version, like a training run's after each update.
        const logits = Float32Array.from({ length: 16 * 4 }, (_, i) => Math.sin(i * version) * 2);
        const policy = new TabularPolicy(16, 4, logits, 'runs/t1') as unknown as AnyPolicy;
        const ref: PolicyRef = {
          id: policy.id,
          checkpoint: (policy as unknown as TabularPolicy).checkpoint(spec.id),
        };
        const opts = { tasks, samples: 3, budget: 30, runSeed: 5, policy, makeEnv, idPrefix: `i${version}-` };
        const queued = await q.runner({ policy: ref, version })(opts);
        assert.deepEqual(lines(queued), lines(rollout(opts) as Trajectory[]), `version ${version}`);
      }
      assert.equal(seenIds.length, 2 * 24);
      assert.ok(
        seenIds.slice(0, 24).every((id) => /^run-ckpt\.1-task-\d+-sample-\d-v1$/.test(id)),
        seenIds[0],
      );
      assert.ok(
        seenIds.slice(24).every((id) => /^run-ckpt\.2-task-\d+-sample-\d-v2$/.test(id)),
        seenIds[24],
      );
    } finally {
      await events.close();
      eventsConn.disconnect();
      await q.close();
      await stopAll();
    }
    // Closing the producer removes the checkpoints it published and the batches' results.
    const r = await connectRedis(url);
    assert.deepEqual(await r.keys('turnwise:checkpoint:*'), []);
    assert.deepEqual(await r.keys('turnwise:results:*'), []);
    r.disconnect();
  });

  test('a trajectory too long for the completion event travels through the results hash, then is cleared', async () => {
    await flush();
    // A policy whose turns carry a long trace (a model's text): the trajectories pass INLINE_CHARS.
    const long = (p: AnyPolicy): AnyPolicy => ({
      id: p.id,
      budgetAware: p.budgetAware,
      act: (ctx) => {
        const a = p.act(ctx) as { action: unknown; logp: number };
        return { ...a, trace: { text: `${ctx.turn}:${'x'.repeat(3000)}` } };
      },
    });
    const parts: WorkerParts = {
      openPolicy: async (r, task) => long(await registry.openPolicy(r, task)),
      makeEnv,
    };
    await startWorkers(2, parts);
    const tasks = makeTasks(slippery4, 6, 0);
    const policy = long(makePolicy('random', envs.spec(tasks[0])));
    const opts = { tasks, samples: 2, budget: 20, runSeed: 4, policy, makeEnv };
    const local = rollout(opts) as Trajectory[];
    const long3 = local.filter((t) => JSON.stringify(t).length > INLINE_CHARS).length;
    assert.ok(long3 >= 6, `${long3} long trajectories`);
    const eventsConn = new Redis({ host: '127.0.0.1', port: url.port, maxRetriesPerRequest: null });
    const events = new QueueEvents(QUEUE_NAME, { connection: eventsConn, lastEventId: await lastEvent() });
    let inline = 0;
    let byHash = 0;
    events.on('completed', ({ returnvalue }) => {
      if (typeof (returnvalue as { trajectory?: unknown }).trajectory === 'string') inline++;
      else byHash++;
    });
    await events.waitUntilReady();
    const q = await RedisRolloutQueue.open(url, { run: 'long' });
    try {
      const queued = await q.runner({ policy: { id: policy.id, spec: 'random' } })(opts);
      assert.deepEqual(lines(queued), lines(local));
      const r = await connectRedis(url);
      assert.deepEqual(await r.keys('turnwise:results:*'), [], 'the batch cleared its results');
      r.disconnect();
    } finally {
      await q.close();
      await stopAll();
    }
    // Every completion was streamed before the batch ended; the events reader may still be behind.
    await new Promise<void>((resolve) => {
      const check = () =>
        inline + byHash >= 12 ? resolve() : events.once('completed', () => setImmediate(check));
      check();
    });
    await events.close();
    eventsConn.disconnect();
    assert.equal(byHash, long3);
    assert.equal(inline, 12 - long3);
  });

  test('a consumer that throws (a full disk under --out) ends the batch with its error, and its jobs are withdrawn', async () => {
    await flush();
    await startWorkers(1);
    const q = await RedisRolloutQueue.open(url, { run: 'throws' });
    const tasks = makeTasks(slippery4, 30, 0);
    const policy = makePolicy('random', envs.spec(tasks[0]));
    try {
      await assert.rejects(
        queued(q, 'random', {
          tasks,
          samples: 2,
          budget: 9,
          runSeed: 0,
          policy,
          makeEnv,
          onTrajectory: (_t, i) => {
            if (i === 3) throw new Error('ENOSPC: no space left on device');
          },
        }),
        /^Error: ENOSPC: no space left on device$/,
      );
    } finally {
      await q.close();
      await stopAll();
    }
    const r = await connectRedis(url);
    const s = await queueStatus(r);
    r.disconnect();
    assert.equal(s.counts.waiting, 0);
  });

  test('a job delivered again after it completed is played again and counted once', async () => {
    await flush();
    const tasks = makeTasks(random4, 4, 7);
    const policy = makePolicy('random', envs.spec(tasks[0]));
    const opts = { tasks, samples: 2, budget: 30, runSeed: 1, policy, makeEnv };
    const ref = { id: policy.id, spec: 'random' };
    const { jobs, order } = batchJobs(opts, 'dup.1', ref, 0);
    const [first, last] = [order[0], order.at(-1)!];
    // The last episode waits until the first has completed twice, so the batch is still open then.
    const twice = gate();
    const plays = new Map<string, number>();
    const parts = actingAfter(async (ctx) => {
      const key = `${ctx.task?.seed}-${ctx.sample}`;
      if (ctx.turn === 0) plays.set(key, (plays.get(key) ?? 0) + 1);
      if (key === `${jobs.get(last)!.task.seed}-${jobs.get(last)!.sample}`) await twice.wait;
    });
    await startWorkers(2, parts);
    const conn = new Redis({ host: '127.0.0.1', port: url.port, maxRetriesPerRequest: null });
    const other = new Queue(QUEUE_NAME, { connection: conn });
    const eventsConn = conn.duplicate();
    const events = new QueueEvents(QUEUE_NAME, { connection: eventsConn, lastEventId: await lastEvent() });
    let completions = 0;
    events.on('completed', ({ jobId }) => {
      if (jobId !== first) return;
      completions++;
      // The producer's add, repeated (a retried request, a second producer): the job is back.
      if (completions === 1)
        void other.add('episode', jobs.get(first), { jobId: first, removeOnComplete: true });
      else twice.open();
    });
    await events.waitUntilReady();
    const q = await RedisRolloutQueue.open(url, { run: 'dup' });
    try {
      const queued = await q.runner({ policy: ref })(opts);
      assert.deepEqual(lines(queued), lines(rollout(opts) as Trajectory[]));
      const f = jobs.get(first)!;
      assert.equal(plays.get(`${f.task.seed}-${f.sample}`), 2, 'the first episode was played twice');
      assert.equal(completions, 2);
      assert.equal(q.counts.duplicates, 1);
      assert.equal(q.counts.done, order.length);
    } finally {
      await q.close();
      await events.close();
      await other.close();
      conn.disconnect();
      eventsConn.disconnect();
      await stopAll();
    }
  });

  test('a worker that lost its lock plays on: the episode is rerun elsewhere, counted once', async () => {
    await flush();
    const tasks = makeTasks(slippery4, 3, 50);
    const policy = makePolicy('oracle:eps=0.3', envs.spec(tasks[0]));
    const opts = { tasks, samples: 2, budget: 30, runSeed: 8, policy, makeEnv };
    const ref = { id: policy.id, spec: 'oracle:eps=0.3' };
    const { jobs, order } = batchJobs(opts, 'lock.1', ref, 0);
    const victim = jobs.get(order[2])!;
    const victimKey = `${victim.task.seed}-${victim.sample}`;
    const held = gate();
    const started = gate();
    let plays = 0;
    const parts = actingAfter(async (ctx) => {
      if (`${ctx.task?.seed}-${ctx.sample}` !== victimKey || ctx.turn !== 0) return;
      plays++;
      // The first play stalls (a paused process, a partition) until the rerun has finished.
      if (plays === 1) {
        started.open();
        await held.wait;
      }
    });
    await startWorkers(2, parts, 1000);
    const q = await RedisRolloutQueue.open(url, { run: 'lock' });
    const conn = await connectRedis(url);
    try {
      const run = q.runner({ policy: ref })(opts);
      await started.wait;
      // Its lock is gone: the holder cannot renew it, and the stalled check puts the job back.
      await conn.del(`bull:${QUEUE_NAME}:${order[2]}:lock`);
      const queued = await run;
      held.open();
      assert.deepEqual(lines(queued), lines(rollout(opts) as Trajectory[]));
      assert.equal(plays, 2, 'the episode was played by its first holder and again');
      assert.ok(q.counts.retried >= 1, `retried ${q.counts.retried}`);
      assert.equal(q.counts.done, order.length);
    } finally {
      held.open();
      conn.disconnect();
      await q.close();
      await stopAll();
    }
  });

  test('a policy no worker can open fails the batch with the reason, in one line; its other jobs are withdrawn', async () => {
    await flush();
    const broken: WorkerParts = {
      openPolicy: async () => {
        throw new InputError('policy', 'gguf:/models/absent.gguf', 'no such file');
      },
      makeEnv,
    };
    await startWorkers(2, broken);
    const q = await RedisRolloutQueue.open(url, { run: 'broken' });
    const tasks = makeTasks(slippery4, 5, 0);
    const policy = makePolicy('random', envs.spec(tasks[0]));
    try {
      await assert.rejects(
        queued(q, 'random', { tasks, samples: 2, budget: 9, runSeed: 0, policy, makeEnv }),
        (e: Error) => {
          assert.ok(e instanceof InputError);
          assert.match(
            e.message,
            /^--queue: episode run-broken\.1-task-\d+-sample-\d-v0 failed: worker w\d+ cannot open the policy: policy: got "gguf:\/models\/absent\.gguf"; no such file$/,
          );
          assert.doesNotMatch(e.message, /\n/);
          return true;
        },
      );
      assert.equal(q.counts.failed, 1);
      assert.ok(q.counts.retried >= ATTEMPTS - 1, `retried ${q.counts.retried}`);
    } finally {
      await q.close();
      await stopAll();
    }
    const r = await connectRedis(url);
    const s = await queueStatus(r);
    r.disconnect();
    assert.equal(s.counts.waiting, 0, 'the batch left no job waiting');
    assert.deepEqual(s.runs, []);
  });

  test('an env a worker cannot make fails the batch with the reason', async () => {
    await flush();
    const parts: WorkerParts = {
      ...registry,
      makeEnv: (task: Task) => {
        if (task.seed === 2) throw new Error('the sandbox did not boot');
        return makeEnv(task);
      },
    };
    await startWorkers(1, parts);
    const q = await RedisRolloutQueue.open(url, { run: 'noenv' });
    const tasks = makeTasks(slippery4, 4, 0);
    const policy = makePolicy('random', envs.spec(tasks[0]));
    try {
      await assert.rejects(
        queued(q, 'random', { tasks, samples: 1, budget: 9, runSeed: 0, policy, makeEnv }),
        /^InputError: --queue: episode run-noenv\.1-task-2-sample-0-v0 failed: worker w\d+ cannot make env frozenlake: the sandbox did not boot$/,
      );
    } finally {
      await q.close();
      await stopAll();
    }
  });

  test('queue status: workers by name, runs with jobs, and a running job whose lock is gone as stalled', async () => {
    await flush();
    const hold = gate();
    const started = gate();
    const parts = actingAfter(async () => {
      started.open();
      await hold.wait;
    });
    await startWorkers(2, parts);
    const q = await RedisRolloutQueue.open(url, { run: 'status' });
    const conn = await connectRedis(url);
    const tasks = makeTasks(slippery4, 10, 0);
    const policy = makePolicy('random', envs.spec(tasks[0]));
    try {
      const run = queued(q, 'random', { tasks, samples: 1, budget: 5, runSeed: 0, policy, makeEnv });
      await started.wait;
      let s = await queueStatus(conn);
      assert.deepEqual(
        s.workers.map((w) => [w.name, w.concurrency, w.pid]),
        [
          ['w1', 3, process.pid],
          ['w2', 3, process.pid],
        ],
      );
      assert.equal(s.counts.waiting + s.counts.active, 10);
      assert.deepEqual(
        s.runs.map((r) => [r.run, r.waiting + r.active]),
        [['status.1', 10]],
      );
      assert.deepEqual(s.stalled, []);
      const active = (await new Queue(QUEUE_NAME, { connection: conn }).getActive())[0];
      const lock = `bull:${QUEUE_NAME}:${active.id}:lock`;
      const token = (await conn.get(lock))!;
      await conn.del(lock);
      s = await queueStatus(conn);
      assert.deepEqual(s.stalled, [active.id]);
      // The lock found again before any stalled check (theirs run every 30 s): no rerun.
      await conn.set(lock, token, 'PX', 30_000);
      assert.deepEqual((await queueStatus(conn)).stalled, []);
      hold.open();
      await run;
      s = await queueStatus(conn);
      assert.deepEqual(s.runs, []);
      assert.equal(
        s.workers.reduce((n, w) => n + w.done, 0),
        10,
      );
    } finally {
      hold.open();
      conn.disconnect();
      await q.close();
      await stopAll();
    }
  });

  test('an unreachable Redis is refused in one line, by the producer and by a worker', async () => {
    const port = await freePort();
    const dead = parseQueueUrl(`redis://127.0.0.1:${port}`);
    const want = `--queue: got "redis://127.0.0.1:${port}"; cannot reach Redis there (ECONNREFUSED); start redis-server or fix the address`;
    await assert.rejects(
      RedisRolloutQueue.open(dead),
      (e: Error) => e instanceof InputError && e.message === want,
    );
    await assert.rejects(
      QueueWorker.start({ url: dead, name: 'x', concurrency: 1 }, registry),
      (e: Error) => e instanceof InputError && e.message === want,
    );
  });
});

test('--queue URLs: redis://HOST:PORT[/DB], anything else refused in one line', () => {
  assert.deepEqual(parseQueueUrl('redis://127.0.0.1:6390'), {
    url: 'redis://127.0.0.1:6390',
    host: '127.0.0.1',
    port: 6390,
    db: 0,
  });
  assert.deepEqual(parseQueueUrl('redis://queue.lab:7000/3'), {
    url: 'redis://queue.lab:7000/3',
    host: 'queue.lab',
    port: 7000,
    db: 3,
  });
  assert.deepEqual(parseQueueUrl('redis://[::1]:6379'), {
    url: 'redis://[::1]:6379',
    host: '::1',
    port: 6379,
    db: 0,
  });
  assert.equal(parseQueueUrl('redis://h').port, 6379);
  for (const [raw, why] of [
    ['127.0.0.1:6379', 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379'],
    ['http://127.0.0.1:6379', 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379'],
    ['redis://127.0.0.1:6379?x=1', 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379'],
    [
      'redis://u:p@127.0.0.1:6379',
      'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379 (no credentials in the URL)',
    ],
    [
      'redis://127.0.0.1:6379/16',
      'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379 (DB a number 0 to 15)',
    ],
    [
      'redis://127.0.0.1:6379/a',
      'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379 (DB a number 0 to 15)',
    ],
    ['redis://127.0.0.1:99999', 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379'],
  ])
    assert.throws(
      () => parseQueueUrl(raw),
      (e: Error) => e instanceof InputError && e.message === `--queue: got ${JSON.stringify(raw)}; ${why}`,
      raw,
    );
});
