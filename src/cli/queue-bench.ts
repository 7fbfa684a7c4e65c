// `turnwise bench queue`: what the rollout queue buys and costs, in one run. A latency-bound policy — an
// oracle served by turnwise serve on loopback with a fixed delay before every answer, played through an
// openai: policy — rolls the same batch out in process, then through the queue with one `turnwise
// worker` process, then with two, each at the same concurrency; then the queue's own cost: one-episode
// batches of a policy that takes no time, one after another, through the queue and in process.
// Machine-dependent figures: printed, never asserted. Redis is a private redis-server started here on a
// free loopback port (or --queue's, which must have no other worker on it).
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { InputError } from '../core/errors.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../envs/index.ts';
import { makePolicy, openPolicy } from '../policies/spec.ts';
import { rollout } from '../rollout/batch.ts';
import { parseQueueUrl, type QueueUrl, RedisRolloutQueue } from '../rollout/queue-redis.ts';
import { startServer } from '../serve/openai.ts';

export interface QueueBenchOptions {
  /** The CLI's entry (bin/turnwise.js), which the workers are started with. */
  bin: string;
  tasks: number;
  samples: number;
  budget: number;
  /** Episodes in flight: in process, and in each worker. */
  concurrency: number;
  latencyMs: number;
  /** One-episode batches timed for the overhead. */
  overheadEpisodes: number;
  /** An existing Redis (else a private redis-server). */
  queue?: QueueUrl;
}

interface Figure {
  seconds: number;
  episodesPerSecond: number;
}

export interface QueueBench {
  policy: string;
  latencyMs: number;
  episodes: number;
  concurrency: number;
  budget: number;
  local: Figure;
  workers1: Figure;
  workers2: Figure;
  /** workers2 ÷ workers1 episodes/s (goal ≥ 1.8). */
  speedup: number;
  /** The queued batches gave the local trajectories (each call's wall time, latencyMs, aside). */
  sameTrajectories: boolean;
  /** A policy that takes no time, one worker playing one episode at a time: the wall time the queue
   * adds per episode over a batch of `episodes` (goal ≤ 2 ms), and the round trip of a one-episode
   * batch (adding its job, the worker's turn, the producer reading the result, clearing the batch). */
  overhead: {
    episodes: number;
    localSeconds: number;
    queueSeconds: number;
    msPerEpisode: number;
    roundTrip: { batches: number; localMs: number; queueMs: number };
  };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

/** A redis-server of this run's own, on a free loopback port, saving nothing. */
async function privateRedis(): Promise<{ url: QueueUrl; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.on('error', (e) =>
      reject(
        InputError.raw(
          '--queue',
          `missing, and no redis-server to start (${(e as NodeJS.ErrnoException).code}): install it (apt-get install redis-server) or give --queue redis://HOST:PORT`,
        ),
      ),
    );
    child.stdout.on('data', (d) => {
      log += d;
      if (log.includes('Ready to accept connections')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${log}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url: parseQueueUrl(`redis://127.0.0.1:${port}`),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A `turnwise worker` process, once it listens. */
async function startWorker(
  bin: string,
  url: QueueUrl,
  name: string,
  concurrency: number,
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [bin, 'worker', '--queue', url.url, '--name', name, '--concurrency', String(concurrency)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      log += d;
      if (log.includes('listening on')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`worker ${name} exited (${code}): ${log}`)));
  });
  return child;
}

/** One-episode batches timed for the round trip. */
const ROUND_TRIPS = 50;

async function stopWorker(w: ChildProcess): Promise<void> {
  const exited = new Promise((r) => w.once('exit', r));
  w.kill('SIGTERM');
  await exited;
}

async function timed(
  run: () => Promise<Trajectory[]>,
): Promise<{ seconds: number; trajectories: Trajectory[] }> {
  const t0 = performance.now();
  const trajectories = await run();
  return { seconds: (performance.now() - t0) / 1000, trajectories };
}

/** A trajectory without its calls' wall times (the one thing two runs through HTTP do not share). */
const comparable = (ts: readonly Trajectory[]) =>
  JSON.stringify(ts, (k, v) => (k === 'latencyMs' ? undefined : v));

export async function queueBench(o: QueueBenchOptions): Promise<QueueBench> {
  const config = envConfig('frozenlake', { map: '4x4', slippery: true });
  const env = makeEnv({ ...config, seed: 0 });
  const served = makePolicy('oracle:eps=0.2', env.spec);
  const redis = o.queue === undefined ? await privateRedis() : { url: o.queue, stop: async () => {} };
  let queue: RedisRolloutQueue;
  try {
    queue = await RedisRolloutQueue.open(redis.url, { label: 'bench' });
  } catch (e) {
    await redis.stop();
    throw e;
  }
  const server = await startServer({ policy: served, env, latencyMs: o.latencyMs, envParams: config.params });
  const spec = `openai:${server.url}#${served.id},concurrency=1024,retries=0`;
  const client = await openPolicy(spec, env.spec);
  const workers: ChildProcess[] = [];
  try {
    const tasks = makeTasks(config, o.tasks, 0);
    const warm = makeTasks(config, 2 * o.concurrency, 1_000_000);
    const batch = (ts: Task[], samples = o.samples) => ({
      tasks: ts,
      samples,
      budget: o.budget,
      runSeed: 1,
      policy: client,
      concurrency: o.concurrency,
      makeEnv: envs.make,
    });
    await rollout(batch(warm, 1));
    const local = await timed(async () => rollout(batch(tasks)));

    const run = queue.runner({ policy: { id: client.id, spec } });
    workers.push(await startWorker(o.bin, redis.url, 'bench-1', o.concurrency));
    await run(batch(warm, 1));
    const one = await timed(() => run(batch(tasks)));
    workers.push(await startWorker(o.bin, redis.url, 'bench-2', o.concurrency));
    await run(batch(warm, 2));
    const two = await timed(() => run(batch(tasks)));

    // The queue's own cost, with a policy that takes no time and one worker playing one episode at a
    // time: a batch of them (per episode, amortised), and one-episode batches in turn (a round trip).
    for (const w of workers.splice(0)) await stopWorker(w);
    workers.push(await startWorker(o.bin, redis.url, 'bench-overhead', 1));
    const random = makePolicy('random', env.spec);
    const fast = queue.runner({ policy: { id: random.id, spec: 'random' } });
    const plain = (ts: Task[]) => ({
      tasks: ts,
      samples: 1,
      budget: o.budget,
      runSeed: 2,
      policy: random,
      makeEnv,
    });
    const many = makeTasks(config, o.overheadEpisodes, 2_000_000);
    await fast(plain(many.slice(0, 50)));
    rollout(plain(many));
    const localMany = await timed(async () => rollout(plain(many)));
    const queuedMany = await timed(() => fast(plain(many)));
    const few = many.slice(0, ROUND_TRIPS);
    let localMs = 0;
    let queueMs = 0;
    for (const t of few) {
      let t0 = performance.now();
      rollout(plain([t]));
      localMs += performance.now() - t0;
      t0 = performance.now();
      await fast(plain([t]));
      queueMs += performance.now() - t0;
    }
    const n = o.tasks * o.samples;
    const figure = (s: number): Figure => ({ seconds: s, episodesPerSecond: n / s });
    return {
      policy: `${spec.replace(/,.*$/, '')} (oracle:eps=0.2 served with --latency ${o.latencyMs}ms)`,
      latencyMs: o.latencyMs,
      episodes: n,
      concurrency: o.concurrency,
      budget: o.budget,
      local: figure(local.seconds),
      workers1: figure(one.seconds),
      workers2: figure(two.seconds),
      speedup: one.seconds / two.seconds,
      sameTrajectories:
        comparable(one.trajectories) === comparable(local.trajectories) &&
        comparable(two.trajectories) === comparable(local.trajectories),
      overhead: {
        episodes: many.length,
        localSeconds: localMany.seconds,
        queueSeconds: queuedMany.seconds,
        msPerEpisode: ((queuedMany.seconds - localMany.seconds) * 1000) / many.length,
        roundTrip: { batches: few.length, localMs: localMs / few.length, queueMs: queueMs / few.length },
      },
    };
  } finally {
    for (const w of workers) await stopWorker(w);
    await queue.close();
    await server.close();
    await env.close?.();
    await redis.stop();
  }
}
