// The in-process CLI runner (test/cli/run.ts: the fuzz suite and the refusal tables): the real CLI's
// main() in one long-lived process, one case after another, so a case costs milliseconds instead of a process start. Requests
// come on stdin as JSON lines {id, argv, cwd}; each answer goes to fd 3 as {id, code, stdout, stderr},
// with the case's stdout and stderr captured exactly as bin/turnwise.js would print them. A case that
// never ends (a command that starts working instead of refusing) is the parent's to time out.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { main } from '../../src/cli/main.ts';

interface Request {
  id: number;
  argv: string[];
  cwd: string;
}

type Write = typeof process.stdout.write;

async function run(r: Request): Promise<{ code: number; stdout: string; stderr: string }> {
  process.chdir(r.cwd);
  let stdout = '';
  let stderr = '';
  const [out, err] = [process.stdout.write, process.stderr.write];
  const listeners = process.stdout.listeners('error');
  const capture =
    (add: (s: string) => void): Write =>
    (chunk: unknown, ...rest: unknown[]) => {
      add(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      const cb = rest.find((x) => typeof x === 'function') as (() => void) | undefined;
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
      if (!listeners.includes(l)) process.stdout.off('error', l as (e: Error) => void);
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  const r = JSON.parse(line) as Request;
  const answer = await run(r);
  writeSync(3, `${JSON.stringify({ id: r.id, ...answer })}\n`);
}
