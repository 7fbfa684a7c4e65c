// The in-process CLI runner (test/cli/run.ts: the fuzz suite and the refusal tables): the main() of
// src/cli/main.ts, loaded as bin/turnwise.js loads it — the precompiled copy in dist/ brought up to date
// by bin/precompile.js, the sources through tsx when dist/ cannot be written or TURNWISE_SOURCE=1 asks
// for them — in one long-lived process, one case after another, so a case costs milliseconds instead of
// a process start. Every command goes through main.ts, `summary` too (bin/ gives it summary-main.ts;
// test/cli/summary-entry.test.ts holds the two to the same output). Plain JavaScript, started without
// tsx, for the reason bin/ is: loading tsx and its hooks would triple the worker's start (~0.9 s, not ~0.3).
//
// Requests come on stdin as JSON lines {id, argv, cwd, env}; a case runs in its cwd with exactly its env
// as process.env (what a child spawned with that env would see); each answer goes to fd 3 as
// {id, code, stdout, stderr}, with the case's stdout and stderr captured exactly as bin/turnwise.js would
// print them. A case that never ends (a command that starts working instead of refusing) is the
// parent's to time out.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** main() as bin/turnwise.js loads it: from dist/ brought up to date, else from the sources through tsx. */
async function loadMain() {
  if (process.env.TURNWISE_SOURCE !== '1') {
    try {
      const { precompile } = await import('../../bin/precompile.js');
      await precompile();
      return (await import('../../dist/cli/main.js')).main;
    } catch {
      // dist/ cannot be written or loaded: the sources, as bin/ falls back to them.
    }
  }
  (await import('tsx/esm/api')).register();
  return (await import('../../src/cli/main.ts')).main;
}
/** @type {(argv: string[]) => Promise<number>} */
const main = await loadMain();

/**
 * process.env made exactly `env`: a variable the test set or removed since this process started counts.
 * @param {Record<string, string>} env
 */
function useEnv(env) {
  for (const k of Object.keys(process.env)) if (!Object.hasOwn(env, k)) delete process.env[k];
  Object.assign(process.env, env);
}

/** @param {{ id: number, argv: string[], cwd: string, env: Record<string, string> }} r */
async function run(r) {
  process.chdir(r.cwd);
  useEnv(r.env);
  let stdout = '';
  let stderr = '';
  const [out, err] = [process.stdout.write, process.stderr.write];
  const listeners = process.stdout.listeners('error');
  /** @param {(s: string) => void} add */
  const capture =
    (add) =>
    /** @param {unknown} chunk @param {unknown[]} rest */
    (chunk, ...rest) => {
      add(
        typeof chunk === 'string' ? chunk : Buffer.from(/** @type {Uint8Array} */ (chunk)).toString('utf8'),
      );
      const cb = /** @type {(() => void) | undefined} */ (rest.find((x) => typeof x === 'function'));
      cb?.();
      return true;
    };
  process.stdout.write = capture((s) => (stdout += s));
  process.stderr.write = capture((s) => (stderr += s));
  try {
    const code = await main(r.argv);
    return { code, stdout, stderr };
  } catch (e) {
    // main() never throws: this is a bug of main itself, reported as such.
    return { code: -1, stdout, stderr: `${stderr}main() threw: ${e instanceof Error ? e.stack : String(e)}` };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    // main() adds an EPIPE handler to stdout on every call: keep one case's from piling up.
    for (const l of process.stdout.listeners('error'))
      if (!listeners.includes(l)) process.stdout.off('error', /** @type {(e: Error) => void} */ (l));
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  const r = JSON.parse(line);
  const answer = await run(r);
  writeSync(3, `${JSON.stringify({ id: r.id, ...answer })}\n`);
}
