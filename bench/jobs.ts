// Benches that run each (seed, arm) in a child process of its own: the parent re-runs its own script
// with `--job KEY` appended, `jobs` children at a time, and reads the JSON line each child prints on
// stdout (its result and the CPU-seconds it used). The children's stderr is the parent's. openBase is
// the check such a bench makes before its jobs start: a --base that does not open for the env.
import { spawn } from 'node:child_process';
import { InputError } from '../src/core/errors.ts';
import type { EnvSpec, Policy } from '../src/core/types.ts';
import { openPolicy } from '../src/policies/spec.ts';

/** The policy of `--base` (a checkpoint, a run directory's policy or a `transformer:from=` spec) for
 * the env, or one line through `fail` where it does not open for it (another env's policy, a damaged
 * file) — in the parent, before any job would die on it with a stack trace. */
export async function openBase(
  base: string,
  spec: EnvSpec,
  fail: (msg: string) => never,
): Promise<Policy<unknown, unknown>> {
  try {
    return await openPolicy(base, spec, '--base');
  } catch (e) {
    if (e instanceof InputError) fail(e.message);
    throw e;
  }
}

/** A child's stdout: what `--job KEY` computed, and its own CPU-seconds. */
export interface JobOutput<T> {
  result: T;
  cpuSeconds: number;
}

/** Prints a job's output as the parent reads it, then exits 0. */
export function finishJob<T>(result: T): never {
  const u = process.cpuUsage();
  console.log(JSON.stringify({ result, cpuSeconds: (u.user + u.system) / 1e6 } satisfies JobOutput<T>));
  process.exit(0);
}

/** Runs every key as `--job KEY` of this script, `jobs` at a time; results by key and the children's
 * CPU-seconds. A child that exits non-zero is reported through `fail`. */
export async function runJobs<T>(
  keys: readonly string[],
  jobs: number,
  fail: (msg: string) => never,
  onDone?: (key: string, result: T) => void,
): Promise<{ results: Map<string, T>; cpuSeconds: number }> {
  const queue = [...keys];
  const results = new Map<string, T>();
  let cpuSeconds = 0;
  const argv = process.argv.slice(2);
  const worker = async () => {
    for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
      const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...argv, '--job', key], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      child.stdout.on('data', (b: Buffer) => {
        text += b;
      });
      const code = await new Promise<number | null>((res) => child.on('close', res));
      if (code !== 0) fail(`job ${key} exited with ${code}`);
      const r = JSON.parse(text) as JobOutput<T>;
      results.set(key, r.result);
      cpuSeconds += r.cpuSeconds;
      onDone?.(key, r.result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
  return { results, cpuSeconds };
}
