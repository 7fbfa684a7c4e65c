// The code env's attempts run in a pool of worker threads (isolated-pool.ts), never on the caller's
// thread: QuickJS polls its interrupt handler (fuel, the deadline) only between bytecodes, so one long
// native call — a sort, a split, a regular expression over a large string — runs past every limit the
// engine checks. The host gives an attempt its `deadlineMs` plus KILL_GRACE_MS (time for the engine's own
// checks to report a partial result first); past that the worker is terminated, the attempt fails as
// `timeout` (no test counted as run), and a fresh worker takes the next attempt.
//
// Per worker: a QuickJS module whose WebAssembly memory is at most WASM_MEMORY_PAGES.maximum (64 MiB),
// and a V8 heap of at most WORKER_HEAP_MB (results and messages crossing out of QuickJS are cut to
// maxOutput and ERROR_CHARS before they reach it). Workers: at most WORKERS, made when an attempt needs
// one; the pool is held by every code env from its first reset or step to close(), and its workers are
// terminated IDLE_MS (5 s) after none holds it.
import { availableParallelism } from 'node:os';
import { IsolatedPool } from '../isolated-pool.ts';
import type { AttemptRun } from './sandbox.ts';
import type { AttemptJob, AttemptReply, WorkerState } from './sandbox-runner.ts';

/** Time past an attempt's deadlineMs before its worker is terminated. */
export const KILL_GRACE_MS = 500;
/** V8 heap of a sandbox worker, in MB. */
export const WORKER_HEAP_MB = 96;
/** Sandbox workers at most. */
export const WORKERS = Math.max(1, Math.min(4, availableParallelism()));

export const sandboxPool = new IsolatedPool<AttemptJob, AttemptReply>({
  module: new URL('./sandbox-runner.ts', import.meta.url),
  isolation: 'thread',
  size: WORKERS,
  memoryMb: WORKER_HEAP_MB,
  name: 'sandbox worker',
});

const seen: WorkerState = { live: 0, loads: 0, memoryBytes: 0 };

/** The largest worker state any attempt reported in this process (since the last reset): runtimes left
 * alive after an attempt, module loads in one worker, wasm memory. */
export function sandboxWorkerState(): WorkerState {
  return { ...seen };
}

export function resetSandboxWorkerState(): void {
  seen.live = 0;
  seen.loads = 0;
  seen.memoryBytes = 0;
}

/** Runs an attempt in a sandbox worker; a worker stopped at the deadline or lost gives a failed attempt. */
export async function runIsolated(job: AttemptJob): Promise<AttemptRun> {
  const ran = await sandboxPool.run(job, job.limits.deadlineMs + KILL_GRACE_MS);
  if (ran.ok) {
    const s = ran.value.state;
    seen.live = Math.max(seen.live, s.live);
    seen.loads = Math.max(seen.loads, s.loads);
    seen.memoryBytes = Math.max(seen.memoryBytes, s.memoryBytes);
    return ran.value.run;
  }
  return {
    tests: job.tests.map(() => ({ status: 'not-run' })),
    error: { kind: ran.kind, message: ran.message },
    fuel: 0,
  };
}
