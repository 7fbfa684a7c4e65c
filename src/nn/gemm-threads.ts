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
// Under load (more runnable threads than cores) a worker can be preempted in the middle of a block, and
// the caller then waits for it far longer than the block takes: a stall. After one, products run on the
// caller alone for a while (2, 4, … 1024 products as stalls repeat), then splitting is tried again — so
// two threads on a busy machine are not slower than one. The bits never depend on it.
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
/** A wait for the workers' last blocks longer than twice the caller's own time per block plus this (ms)
 * is a stall (see the header). */
const STALL_MS = 0.5;
const MAX_STRIKES = 10;

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
  /** Whether stalls make products run on the caller alone for a while (bench/gemm-threads.ts turns it
   * off to time the split itself). */
  backoff = true;
  /** Products split between threads, and products left to the caller alone after a stall. */
  split = 0;
  declined = 0;
  private strikes = 0;
  private skip = 0;

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

  /** Whether the next large product should be split: false for a while after a stall (see the header). */
  accepts(): boolean {
    if (this.skip === 0 || this.workersOnly || !this.backoff) return true;
    this.skip--;
    this.declined++;
    return false;
  }

  /** Runs chunk(desc, ci, scratch) for ci in [0, n) on this thread and the workers; returns when all are done. */
  run(n: number, chunk: (desc: number, ci: number, scratch: number) => void): void {
    this.spawn();
    this.split++;
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
    let own = 0;
    const t0 = performance.now();
    while (!this.workersOnly) {
      const cur = Atomics.load(ctl, NEXT);
      if (cur >= base + n) break;
      if (Atomics.compareExchange(ctl, NEXT, cur, cur + 1) !== cur) continue;
      try {
        chunk(desc, cur - base, scratch);
      } catch (e) {
        error ??= e;
      }
      own++;
      Atomics.add(ctl, DONE, 1);
    }
    // Blocks claimed by workers: wait until they are done (they notify on the last one).
    const t1 = performance.now();
    for (let spin = 0; Atomics.load(ctl, DONE) < n; spin++) {
      if (spin >= SPIN) {
        const d = Atomics.load(ctl, DONE);
        if (d < n) Atomics.wait(ctl, DONE, d, 1000);
      }
    }
    if (own > 0) this.recordWait(performance.now() - t1, (t1 - t0) / own);
    if (error !== undefined) throw error;
    if (Atomics.load(ctl, FAILED) !== 0) throw new Error('gemm: a worker thread failed on its block');
  }

  /** After a product: counts a stall (a wait for the workers far longer than the caller's own time per
   * block) and sets how many products to decline (called by run(); public for tests). */
  recordWait(waitedMs: number, blockMs: number): void {
    if (waitedMs > 2 * blockMs + STALL_MS) {
      this.strikes = Math.min(this.strikes + 1, MAX_STRIKES);
      this.skip = 2 ** this.strikes;
    } else if (this.strikes > 0) this.strikes--;
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
