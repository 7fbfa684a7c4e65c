// A pool of isolated runners for untrusted work that the host must be able to stop whatever the work
// does: the code env's QuickJS attempts (worker threads) and the sql env's queries (child processes).
// A limit that the limited engine checks itself (QuickJS's interrupt handler, a deadline between SQLite
// rows) is only as good as the engine's cooperation: one long native call — a sort in QuickJS, one
// aggregate step in SQLite — runs past it and blocks the thread it runs on. Here every job runs in a
// runner, and the host holds the deadline: when it passes, the runner is terminated (a worker thread:
// `terminate()`, which V8 delivers inside JavaScript and WebAssembly; a child process: SIGKILL, which
// stops native code too) and a fresh runner replaces it on the next job. The main thread's event loop
// never waits for a job, so other episodes, `serve` and `mcp` go on meanwhile.
//
// Memory is capped per runner: a worker thread's V8 heap by `resourceLimits` (the QuickJS module's
// WebAssembly memory has its own fixed maximum); a child process's data segment by RLIMIT_DATA (`ulimit
// -d`, which counts what malloc takes: SQLite's memory), so an allocation past it fails inside the
// runner (SQLite's "out of memory") instead of growing the machine's memory, and its V8 heap by
// --max-old-space-size. Windows has no `ulimit`: there only the V8 heap is capped.
//
// Runners are reused (one job at a time each; a job waits for a free runner, and its deadline starts when
// it is handed to one); one that is stopped or lost is replaced at once. Lifecycle: envs `acquire()` the
// pool when they start and `release()` it when closed; once no env has held it for IDLE_MS, every runner
// is terminated — a runner costs about a second to start (the TypeScript loader and the engine), and a
// training loop or a study closes all its envs between two rollouts. Idle runners and that timer never
// keep the process alive (a run ends when its work does); busy runners do.
import { type ChildProcess, spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const BOOT = new URL('./isolated-boot.mjs', import.meta.url);

/** How long runners outlive the last env that held their pool, in ms. */
export const IDLE_MS = 5000;

export interface PoolOptions {
  /** The runner module (a file URL): it exports `createHandler(): MaybePromise<(job) => result>`. */
  module: URL;
  /** 'thread': a worker thread; 'process': a child process (needed to stop native code). */
  isolation: 'thread' | 'process';
  /** Runners at most (jobs beyond wait for a free one). */
  size: number;
  /** Memory cap per runner, in MB (see the header for what it counts). */
  memoryMb: number;
  /** What a runner is called in messages ('sandbox worker', 'query process'). */
  name: string;
  /** How long runners outlive the last holder, in ms (default IDLE_MS). */
  idleMs?: number;
}

/** How a job ended: its handler's value, or stopped by the host at its deadline, or its runner died. */
export type Ran<R> = { ok: true; value: R } | { ok: false; kind: 'timeout' | 'crash'; message: string };

interface Job {
  id: number;
  job: unknown;
  deadlineMs: number;
  resolve: (r: Ran<unknown>) => void;
  reject: (e: Error) => void;
}

type Reply = { ready?: boolean; id?: number; result?: unknown; error?: string };

/** One worker thread or child process running the boot file; one job at a time. */
class Runner {
  state: 'starting' | 'idle' | 'busy' | 'stopping' | 'gone' = 'starting';
  /** Closed by the pool (not stopped at a deadline, not lost): not to be replaced. */
  retired = false;
  private readonly thread: Worker | undefined;
  private readonly child: ChildProcess | undefined;
  private current: { job: Job; timer: NodeJS.Timeout } | null = null;
  private stopping: string | null = null;
  private failure = '';
  private readonly exited: Promise<void>;

  /** `onIdle` when it can take a job (started, or done with one); `onGone` when it has exited, with the
   * reason when it never started. */
  constructor(
    private readonly o: PoolOptions,
    private readonly onIdle: () => void,
    onGone: (r: Runner, startError?: Error) => void,
  ) {
    const onMessage = (m: Reply) => {
      if (m.ready !== true) return this.finish(m);
      this.state = 'idle';
      this.unref();
      onIdle();
    };
    let resolveExited!: () => void;
    this.exited = new Promise((resolve) => {
      resolveExited = resolve;
    });
    const exit = (how: string) => {
      if (this.state === 'gone') return;
      const started = this.state !== 'starting';
      this.state = 'gone';
      const why =
        this.stopping ??
        `the ${o.name} ${this.failure === '' ? `exited (${how})` : `failed: ${this.failure}`}`;
      const c = this.current;
      this.current = null;
      if (c !== null) {
        clearTimeout(c.timer);
        c.job.resolve({ ok: false, kind: 'crash', message: why });
      }
      resolveExited();
      onGone(this, started ? undefined : new Error(why));
    };
    if (o.isolation === 'thread') {
      const w = new Worker(BOOT, {
        workerData: { module: o.module.href },
        execArgv: [], // not the parent's flags (--input-type, --test …): the boot file sets up the loader
        resourceLimits: { maxOldGenerationSizeMb: o.memoryMb, maxYoungGenerationSizeMb: 16 },
      });
      w.on('message', onMessage);
      w.on('error', (e) => {
        this.failure = e.message;
      });
      w.on('exit', (code) => exit(`code ${code}`));
      this.thread = w;
    } else {
      const args = [
        `--max-old-space-size=${Math.max(16, o.memoryMb >> 1)}`,
        fileURLToPath(BOOT),
        o.module.href,
      ];
      const options = {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'] as ('ignore' | 'pipe' | 'ipc')[],
        serialization: 'advanced' as const,
      };
      // `exec` replaces the shell, so the child's pid is node's and a kill reaches it.
      const c =
        process.platform === 'win32'
          ? spawn(process.execPath, args, options)
          : spawn(
              '/bin/sh',
              ['-c', `ulimit -d ${o.memoryMb * 1024} && exec "$0" "$@"`, process.execPath, ...args],
              options,
            );
      if (c.stderr instanceof Socket) c.stderr.unref(); // read while it runs, never waited for
      c.stderr?.setEncoding('utf8');
      c.stderr?.on('data', (d: string) => {
        // Kept for a runner that fails to start (a broken install), never shown for a job.
        if (this.state === 'starting' && this.failure.length < 2000) this.failure += d;
      });
      c.on('message', onMessage);
      c.on('error', (e) => exit(e.message));
      c.on('exit', (code, signal) => exit(signal === null ? `code ${code}` : `signal ${signal}`));
      this.child = c;
    }
  }

  /** Hands the runner a job; its deadline starts now. */
  start(job: Job): void {
    this.state = 'busy';
    this.ref();
    const timer = setTimeout(() => {
      this.stopping = `it ran past ${job.deadlineMs} ms and its ${this.o.name} was stopped`;
      this.current = null;
      this.state = 'stopping';
      job.resolve({ ok: false, kind: 'timeout', message: this.stopping });
      void this.terminate();
    }, job.deadlineMs);
    this.current = { job, timer };
    const message = { id: job.id, job: job.job };
    if (this.thread !== undefined) this.thread.postMessage(message);
    else this.child?.send(message);
  }

  private finish(m: Reply): void {
    const c = this.current;
    if (c === null || c.job.id !== m.id) return;
    this.current = null;
    clearTimeout(c.timer);
    this.state = 'idle';
    this.unref();
    if (m.error === undefined) c.job.resolve({ ok: true, value: m.result });
    else c.job.reject(new Error(`${this.o.name}: ${m.error}`));
    this.onIdle();
  }

  // Busy runners keep the process alive (a job is awaited); idle ones do not.
  private ref(): void {
    this.thread?.ref();
    this.child?.ref();
    this.child?.channel?.ref();
  }

  private unref(): void {
    this.thread?.unref();
    this.child?.unref();
    this.child?.channel?.unref();
  }

  /** Closes the runner (a job in flight ends as `crash`); resolves when it has exited. */
  kill(): Promise<void> {
    this.retired = true;
    this.stopping ??= `the ${this.o.name} was closed`;
    return this.terminate();
  }

  private terminate(): Promise<void> {
    if (this.state !== 'gone') {
      this.ref(); // its exit is awaited
      if (this.thread !== undefined) void this.thread.terminate();
      else this.child?.kill('SIGKILL');
    }
    return this.exited;
  }
}

export class IsolatedPool<J, R> {
  private readonly runners = new Set<Runner>();
  private readonly queue: Job[] = [];
  private users = 0;
  private nextId = 0;
  private closing: Promise<void> = Promise.resolve();
  private started = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly closeWaiters: (() => void)[] = [];

  constructor(private readonly o: PoolOptions) {}

  /** Runners alive now (0 once the pool is drained). */
  get live(): number {
    return this.runners.size;
  }

  /** Runners started so far (a replaced runner counts again). */
  get starts(): number {
    return this.started;
  }

  /** Runs `job` in a runner; the host stops it `deadlineMs` after a runner took it. Rejects only when
   * no runner can start or the handler threw (a fault of ours, not of the job's content). */
  run(job: J, deadlineMs: number): Promise<Ran<R>> {
    return new Promise<Ran<R>>((resolve, reject) => {
      const id = this.nextId++;
      this.queue.push({ id, job, deadlineMs, resolve: resolve as (r: Ran<unknown>) => void, reject });
      this.pump();
    });
  }

  /** An env holds the pool from when it is made until it is closed. */
  acquire(): void {
    this.users++;
  }

  release(): void {
    this.users = Math.max(0, this.users - 1);
    this.closeWhenUnused();
  }

  /** Resolves once a pool that no env holds has no runner left (it terminates them now instead of after
   * IDLE_MS): tests check that nothing is left behind. */
  async drained(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    if (this.users === 0) await this.close();
  }

  /** Terminates every runner now (jobs in flight end as `crash`). */
  close(): Promise<void> {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const all = [...this.runners].map((r) => r.kill());
    const waiting = this.closeWaiters.splice(0);
    this.closing = Promise.all(all).then(() => {
      for (const resolve of waiting) resolve();
    });
    return this.closing;
  }

  /** Resolves when the pool next closes its runners (after IDLE_MS without a holder, or close()); while
   * someone waits, the idle timer keeps the process alive. */
  whenClosed(): Promise<void> {
    this.idleTimer?.ref();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  private closeWhenUnused(): void {
    if (this.users > 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      const busy = [...this.runners].some((r) => r.state === 'busy');
      if (this.users === 0 && this.queue.length === 0 && !busy) void this.close();
    }, this.o.idleMs ?? IDLE_MS);
    if (this.closeWaiters.length === 0) this.idleTimer.unref();
  }

  private pump(): void {
    for (const r of this.runners) {
      if (this.queue.length === 0) return;
      if (r.state === 'idle') r.start(this.queue.shift()!);
    }
    let starting = 0;
    for (const r of this.runners) if (r.state === 'starting') starting++;
    while (this.queue.length > starting && this.runners.size < this.o.size) {
      this.spawn();
      starting++;
    }
  }

  private spawn(): void {
    const r = new Runner(
      this.o,
      () => {
        this.pump();
        this.closeWhenUnused();
      },
      (gone, startError) => {
        this.runners.delete(gone);
        // A runner that cannot start fails the job waiting first (an env error), not every job at once.
        if (startError !== undefined) this.queue.shift()?.reject(startError);
        // A runner stopped or lost while envs hold the pool is replaced now, so that its start-up is
        // not added to the next job's wait.
        else if (this.users > 0 && !gone.retired) this.spawn();
        this.pump();
        this.closeWhenUnused();
      },
    );
    this.started++;
    this.runners.add(r);
  }
}
