// A small pool of worker threads for CPU-bound jobs (ES fitness evaluations, large rollout batches).
// A job module exports `createHandler(init) => (job) => result`; results come back in job order, so a
// pool's output never depends on which worker finished first.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

const BOOT = new URL('./worker-boot.mjs', import.meta.url);

interface Pending {
  resolve: (x: unknown) => void;
  reject: (e: Error) => void;
}

export class WorkerPool<Job, Result> {
  private readonly workers: Worker[] = [];
  private readonly ready: Promise<void>[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: { job: Job; pending: Pending }[] = [];
  private readonly inflight = new Map<Worker, Pending>();
  private nextId = 0;
  private closed = false;

  /** `module`: file URL of the job module; `size` defaults to the machine's parallelism; `onEvent`
   * receives what a job posts as `{ event }` while it runs (its progress), in the order posted. */
  constructor(module: URL, init: unknown, size = availableParallelism(), onEvent?: (event: unknown) => void) {
    for (let i = 0; i < Math.max(1, size); i++) {
      const w = new Worker(BOOT, { workerData: { module: module.href, init } });
      this.workers.push(w);
      this.ready.push(
        new Promise((resolve, reject) => {
          const onReady = (m: { ready?: boolean }) => {
            if (m.ready) {
              w.off('message', onReady);
              w.on('message', (msg: { result?: Result; error?: string; event?: unknown }) => {
                if (msg.event !== undefined) onEvent?.(msg.event);
                else this.done(w, msg);
              });
              this.idle.push(w);
              this.pump();
              resolve();
            }
          };
          w.on('message', onReady);
          w.once('error', reject);
        }),
      );
      w.on('error', (e) => this.fail(w, e));
      w.on('exit', (code) => {
        if (!this.closed && code !== 0) this.fail(w, new Error(`worker exited with code ${code}`));
      });
    }
  }

  get size(): number {
    return this.workers.length;
  }

  run(job: Job): Promise<Result> {
    if (this.closed) return Promise.reject(new Error('pool is closed'));
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ job, pending: { resolve: resolve as (x: unknown) => void, reject } });
      this.pump();
    });
  }

  /** Runs every job; results in job order. */
  map(jobs: readonly Job[]): Promise<Result[]> {
    return Promise.all(jobs.map((j) => this.run(j)));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.ready);
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private pump(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const w = this.idle.pop()!;
      const { job, pending } = this.queue.shift()!;
      this.inflight.set(w, pending);
      w.postMessage({ id: this.nextId++, job });
    }
  }

  private done(w: Worker, msg: { result?: Result; error?: string }): void {
    const pending = this.inflight.get(w);
    this.inflight.delete(w);
    this.idle.push(w);
    if (pending) {
      if (msg.error !== undefined) pending.reject(new Error(msg.error));
      else pending.resolve(msg.result);
    }
    this.pump();
  }

  private fail(w: Worker, e: Error): void {
    const pending = this.inflight.get(w);
    this.inflight.delete(w);
    pending?.reject(e);
    for (const { pending: p } of this.queue.splice(0)) p.reject(e);
  }
}
