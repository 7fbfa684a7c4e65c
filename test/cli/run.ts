// Runs the real CLI as a user would: `turnwise(args)` starts bin/turnwise.js in a child process;
// `inProcess(argv, cwd)` runs the same main(), loaded as bin/ loads it, in one long-lived worker process
// (test/cli/main-worker.js), a case after another, with this process's environment at the time of the
// call — for tables of refusals, where a process per case would cost a start-up each. What only a
// process of its own shows (that bin/ itself prints nothing more, stdin, signals, a lock held until
// exit) needs turnwise().
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const WORKER = fileURLToPath(new URL('./main-worker.js', import.meta.url));
const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node ARGS` in a child process (cwd and extra environment optional), stdin given `input`. */
export function node(
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: o.cwd,
      env: { ...process.env, NO_COLOR: '1', ...o.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(o.input ?? '');
  });
}

export function turnwise(args: string[], input?: string): Promise<Ran> {
  return node([BIN, ...args], { input });
}

/** A case that has not answered after this long started working instead of refusing: it is killed. */
export const CASE_MS = 15_000;

let worker: ChildProcess | undefined;
/** The cases each worker has been given and not answered. */
const pending = new Map<ChildProcess, Map<number, (r: Ran) => void>>();
let nextId = 0;
/** What a command wrote around the capture (it should be nothing): kept for failure messages. */
export let strayOutput = '';

/** A case's environment: this process's as it is now, as turnwise() passes it (no TURNWISE_DEBUG stacks). */
const caseEnv = () => ({ ...process.env, NO_COLOR: '1', TURNWISE_DEBUG: '' });

function startWorker(): ChildProcess {
  // Started from the repository, as bin/ would be from anywhere; each case then runs in its own cwd.
  const w = spawn(process.execPath, [WORKER], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: caseEnv(),
  });
  const waiting = new Map<number, (r: Ran) => void>();
  pending.set(w, waiting);
  const fd3 = w.stdio[3] as NodeJS.ReadableStream;
  createInterface({ input: fd3 }).on('line', (line) => {
    const { id, code, stdout, stderr } = JSON.parse(line) as Ran & { id: number };
    waiting.get(id)?.({ code, stdout, stderr });
    waiting.delete(id);
  });
  w.stdout?.on('data', (d) => (strayOutput += d));
  w.stderr?.on('data', (d) => (strayOutput += d));
  w.on('exit', (code, signal) => {
    if (worker === w) worker = undefined;
    pending.delete(w);
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      resolve({
        code: null,
        stdout: '',
        stderr: `(the worker exited: ${code ?? signal}) ${strayOutput.slice(-500)}`,
      });
    }
  });
  return w;
}

/**
 * Runs argv through the CLI's main() in the shared worker, in directory `cwd` (default: this process's)
 * with this process's environment as it is now, exactly as bin/turnwise.js would print it. A case that
 * does not answer in CASE_MS kills the worker (the next case starts a new one). The worker is stopped
 * when the test file ends.
 */
export function inProcess(argv: string[], cwd = process.cwd()): Promise<Ran> {
  worker ??= startWorker();
  const w = worker;
  const id = nextId++;
  const waiting = pending.get(w)!;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      w.kill('SIGKILL');
      if (worker === w) worker = undefined;
      resolve({ code: null, stdout: '', stderr: `(still running after ${CASE_MS} ms: it started working)` });
    }, CASE_MS);
    waiting.set(id, (r) => {
      clearTimeout(timer);
      resolve(r);
    });
    w.stdin?.write(`${JSON.stringify({ id, argv, cwd, env: caseEnv() })}\n`);
  });
}

/**
 * Row `i` of a refusal table: row 0 through bin/turnwise.js — a real process exits 2 with exactly the one
 * line, nothing printed around it by bin/ itself — every other row in the shared worker.
 */
export const firstSpawned = (i: number, args: string[]): Promise<Ran> =>
  i === 0 ? turnwise(args) : inProcess(args);

after(() => worker?.kill());
