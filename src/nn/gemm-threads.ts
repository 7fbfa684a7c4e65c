// Worker threads that share gemm's WebAssembly memory and run the same `chunk` function on it, so a
// large product uses several cores. Which thread computes a block never changes its bits: a block's
// every element is computed by the same instructions whoever runs it (gemm-wasm.ts), so the result is
// the same at any thread count.
//
// Protocol (control words in a SharedArrayBuffer, Atomics only — no messages on the hot path):
//   the main thread writes a product's descriptor, then publishes a job under a seqlock (SEQ odd while
//   it writes BASE/END, even after) and wakes the workers (Atomics.notify). Blocks are claimed by
//   compare-and-swap on NEXT within [BASE, END) — by the workers and by the main thread itself, which
//   never waits for a worker to start: if the workers are slow to wake (a loaded machine), the main
//   thread simply claims every block. It then waits (Atomics.wait) until DONE counts every block, so a
//   block a worker claimed is finished before the descriptor is rewritten. NEXT only grows across jobs,
//   so a worker that wakes late, holding an old job's range, can claim nothing of a new one.
//
// Whether splitting pays is measured, not assumed. On a busy machine the workers may get no core of
// their own: the kernel's fair scheduler gives a process (its session) a share of the CPU, and a second
// thread then only splits that share — it slows the caller's other work and, preempted mid-block, makes
// the caller wait. So each product shape is timed both ways, split and on the caller alone, and a split
// also measures the process's parallelism (CPU time ÷ wall time, every thread's CPU); a shape runs split
// only while that is faster and at least MIN_PARALLELISM cores really worked on it, and the other way is
// timed again every EXPLORE-th product of the shape (running averages follow the machine's load). Only
// the speed depends on it, never the bits.
//
// Lifecycle: workers start on the first parallel product, are unref()'d (they never keep the process
// alive) and leave by themselves after IDLE_MS without work; the next parallel product starts them again.
import { Worker } from 'node:worker_threads';
import type { WasmMemory, WasmModule } from './gemm-wasm.ts';

const SEQ = 0; // job sequence under a seqlock: odd while the main thread writes BASE/END
const NEXT = 1; // next block to claim (grows across jobs; reset to 0 when past RESET_AT)
const BASE = 2; // the job's blocks are NEXT values [BASE, END)
const END = 3;
const DONE = 4; // blocks finished in this job
const FAILED = 5; // a worker's block threw
const STOP = 6; // set by close(): workers leave
const WORKER_BLOCKS = 7; // blocks computed by workers since the pool started (wraps at 2³¹)
const ALIVE = 8; // ALIVE + slot: 1 while worker `slot` runs
const RESET_AT = 1 << 30;
/** A worker leaves after this long without a job (ms). */
export const IDLE_MS = 10_000;
/** Spins on DONE before sleeping on it: the other threads' last blocks usually end within this. */
const SPIN = 2000;
/** A shape's slower way is timed again every EXPLORE-th product of that shape. */
const EXPLORE = 16;
/** CPU time ÷ wall time a split product must reach (on average) to count as parallel. */
export const MIN_PARALLELISM = 1.5;
/** Weight of a new time in a shape's running averages. */
const EMA = 0.25;
/** Shapes remembered (the averages are forgotten past it: a training run has a few dozen). */
const MAX_SHAPES = 4096;

// The worker: CommonJS evaluated in the thread (no file, no loader to resolve).
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { module, memory, control, slot, desc, scratch, idleMs } = workerData;
const ctl = new Int32Array(control);
const { chunk } = new WebAssembly.Instance(module, { env: { mem: memory } }).exports;
for (;;) {
  let s, base, end;
  do {
    s = Atomics.load(ctl, ${SEQ});
    base = Atomics.load(ctl, ${BASE});
    end = Atomics.load(ctl, ${END});
  } while ((s & 1) !== 0 || Atomics.load(ctl, ${SEQ}) !== s);
  if (Atomics.load(ctl, ${STOP}) !== 0) break;
  for (;;) {
    const cur = Atomics.load(ctl, ${NEXT});
    if (cur < base || cur >= end || Atomics.load(ctl, ${STOP}) !== 0) break;
    if (Atomics.compareExchange(ctl, ${NEXT}, cur, cur + 1) !== cur) continue;
    try {
      chunk(desc, cur - base, scratch);
    } catch {
      Atomics.store(ctl, ${FAILED}, 1);
    }
    Atomics.add(ctl, ${WORKER_BLOCKS}, 1);
    if (Atomics.add(ctl, ${DONE}, 1) + 1 === end - base) Atomics.notify(ctl, ${DONE});
  }
  if (Atomics.wait(ctl, ${SEQ}, s, idleMs) === 'timed-out') break;
}
Atomics.store(ctl, ${ALIVE} + slot, 0);
`;

export interface PoolMemory {
  module: WasmModule;
  memory: WasmMemory;
  /** Byte address of the descriptor `chunk` reads. */
  desc: number;
  /** Byte address of thread t's scratch. */
  scratch: (t: number) => number;
}

export class ChunkPool {
  private readonly ctl = new Int32Array(new SharedArrayBuffer(64 * 4));
  private readonly workers = new Map<number, Worker>();
  private readonly mem: PoolMemory;
  private readonly exits = new Map<Worker, Promise<void>>();
  /** Threads including the caller's. */
  private threads: number;
  /** How long a worker started from now on stays without work (ms). */
  idleMs = IDLE_MS;
  /** For tests: the calling thread claims no block, so that the workers compute every one. */
  workersOnly = false;
  /** Whether products are split only when splitting measured faster (see the header); off, every
   * product offered is split (bench/gemm-threads.ts times the split itself). */
  adaptive = true;
  /** Products split between threads, and products run on the caller alone because that measured faster. */
  split = 0;
  declined = 0;
  /** Per shape: running averages of ms split and alone (NaN until timed) and of a split's parallelism,
   * and products seen. */
  private readonly shapes = new Map<string, { split: number; alone: number; par: number; seen: number }>();

  constructor(mem: PoolMemory, threads: number) {
    this.mem = mem;
    this.threads = threads;
  }

  get size(): number {
    return this.threads;
  }

  /** Workers currently running (for tests: they leave when idle or closed). */
  get alive(): number {
    let n = 0;
    for (let s = 1; s < 64 - ALIVE; s++) n += Atomics.load(this.ctl, ALIVE + s);
    return n;
  }

  /** Blocks the workers have computed (for tests: a parallel product really was shared). */
  get workerBlocks(): number {
    return Atomics.load(this.ctl, WORKER_BLOCKS);
  }

  resize(threads: number): void {
    this.threads = threads;
  }

  /** Whether to split the next product of this shape (see the header); call record() with its time. */
  choose(shape: string): boolean {
    if (this.workersOnly || !this.adaptive) return true;
    let s = this.shapes.get(shape);
    if (s === undefined) {
      if (this.shapes.size >= MAX_SHAPES) this.shapes.clear();
      s = { split: Number.NaN, alone: Number.NaN, par: Number.NaN, seen: 0 };
      this.shapes.set(shape, s);
    }
    s.seen++;
    if (Number.isNaN(s.split)) return true;
    if (Number.isNaN(s.alone)) return false;
    const faster = s.split < s.alone && s.par >= MIN_PARALLELISM;
    return s.seen % EXPLORE === 0 ? !faster : faster;
  }

  /** The wall time (ms) a product of this shape took, split or alone, and for a split the process's CPU
   * time (ms, every thread's) meanwhile. */
  record(shape: string, split: boolean, ms: number, cpuMs = 0): void {
    if (split) this.split++;
    else this.declined++;
    const s = this.shapes.get(shape);
    if (s === undefined) return;
    const avg = (was: number, x: number) => (Number.isNaN(was) ? x : was + EMA * (x - was));
    if (!split) s.alone = avg(s.alone, ms);
    else {
      s.split = avg(s.split, ms);
      s.par = avg(s.par, ms > 0 ? cpuMs / ms : 1);
    }
  }

  /** Runs chunk(desc, ci, scratch) for ci in [0, n) on this thread and the workers; returns when all are done. */
  run(n: number, chunk: (desc: number, ci: number, scratch: number) => void): void {
    this.spawn();
    const ctl = this.ctl;
    const s = Atomics.load(ctl, SEQ);
    Atomics.store(ctl, SEQ, s + 1);
    let base = Atomics.load(ctl, NEXT);
    if (base > RESET_AT) {
      base = 0;
      Atomics.store(ctl, NEXT, 0);
    }
    Atomics.store(ctl, BASE, base);
    Atomics.store(ctl, END, base + n);
    Atomics.store(ctl, DONE, 0);
    Atomics.store(ctl, FAILED, 0);
    Atomics.store(ctl, SEQ, s + 2);
    Atomics.notify(ctl, SEQ);
    const { desc } = this.mem;
    const scratch = this.mem.scratch(0);
    let error: unknown;
    while (!this.workersOnly) {
      const cur = Atomics.load(ctl, NEXT);
      if (cur >= base + n) break;
      if (Atomics.compareExchange(ctl, NEXT, cur, cur + 1) !== cur) continue;
      try {
        chunk(desc, cur - base, scratch);
      } catch (e) {
        error ??= e;
      }
      Atomics.add(ctl, DONE, 1);
    }
    // Blocks claimed by workers: wait until they are done (they notify on the last one).
    for (let spin = 0; Atomics.load(ctl, DONE) < n; spin++) {
      if (spin >= SPIN) {
        const d = Atomics.load(ctl, DONE);
        if (d < n) Atomics.wait(ctl, DONE, d, 1000);
      }
    }
    if (error !== undefined) throw error;
    if (Atomics.load(ctl, FAILED) !== 0) throw new Error('gemm: a worker thread failed on its block');
  }

  /** Starts the workers that are not running. */
  private spawn(): void {
    for (let slot = 1; slot < this.threads; slot++) {
      if (Atomics.load(this.ctl, ALIVE + slot) === 1) continue;
      Atomics.store(this.ctl, ALIVE + slot, 1);
      const { module, memory, desc } = this.mem;
      const w = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          module,
          memory,
          control: this.ctl.buffer,
          slot,
          desc,
          scratch: this.mem.scratch(slot),
          idleMs: this.idleMs,
        },
      });
      w.unref();
      this.workers.set(slot, w);
      this.exits.set(w, new Promise((resolve) => w.once('exit', () => resolve())));
      // A worker that fails to start (or dies) turns the threads off rather than being restarted forever.
      w.on('error', () => {
        this.threads = 1;
      });
      w.on('exit', () => {
        this.exits.delete(w);
        if (this.workers.get(slot) !== w) return;
        this.workers.delete(slot);
        Atomics.store(this.ctl, ALIVE + slot, 0);
      });
    }
  }

  /** Resolves when every worker running now has left (idle, or closed); they keep the process alive
   * until then (an unref()'d worker alone would let the event loop end with the promise pending). */
  async exited(): Promise<void> {
    for (const w of this.exits.keys()) w.ref();
    await Promise.all(this.exits.values());
  }

  /** Stops every worker and waits until they have left (the next parallel product starts them again). */
  async close(): Promise<void> {
    const exits = this.exited();
    Atomics.store(this.ctl, STOP, 1);
    Atomics.notify(this.ctl, SEQ);
    await exits;
    Atomics.store(this.ctl, STOP, 0);
  }
}
