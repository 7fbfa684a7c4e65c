// What a sandbox worker runs (the runner module of isolated-pool.ts): one attempt per job, in the
// worker's own QuickJS module (loaded once; reloaded only after an attempt poisoned it), and the module's
// state after it, for the tests that check that nothing leaks inside a worker.
import {
  type AttemptRun,
  liveSandboxes,
  runAttempt,
  type SandboxLimits,
  sandboxLoads,
  sandboxMemoryBytes,
  sandboxModule,
  type TestCase,
} from './sandbox.ts';

export interface AttemptJob {
  code: string;
  name: string;
  tests: readonly TestCase[];
  seed: number;
  limits: SandboxLimits;
}

/** The worker's module after an attempt: runtimes alive (0), loads so far, wasm memory in bytes. */
export interface WorkerState {
  live: number;
  loads: number;
  memoryBytes: number;
}

export interface AttemptReply {
  run: AttemptRun;
  state: WorkerState;
}

export async function createHandler(): Promise<(job: AttemptJob) => Promise<AttemptReply>> {
  await sandboxModule();
  return async (job) => {
    const run = runAttempt(await sandboxModule(), job.code, job.name, job.tests, job.seed, job.limits);
    return {
      run,
      state: { live: liveSandboxes(), loads: sandboxLoads(), memoryBytes: sandboxMemoryBytes() },
    };
  };
}
