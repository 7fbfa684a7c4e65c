// What the kill -9 tests of `turnwise train` share: a run started in its own process and killed once its
// metrics.jsonl has a number of lines (an event polled on the file, never a sleep), and a run directory's
// rows as the store holds them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { turnwise } from './run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));

/** Lines of a JSONL file (0 when it does not exist yet). */
export const lines = (path: string): number =>
  existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;

/** A training run's trajectories and metrics as stored, serialised for comparison. */
export function storeRows(run: string): { t: string; m: string; n: number } {
  const db = new Database(join(run, 'run.sqlite'), { readonly: true });
  const t = db.prepare('SELECT idx, iter, data FROM trajectories WHERE run = ? ORDER BY idx').all('train');
  const m = db.prepare('SELECT iter, key, value FROM metrics WHERE run = ? ORDER BY iter, key').all('train');
  db.close();
  return { t: JSON.stringify(t), m: JSON.stringify(m), n: t.length };
}

/** Runs `turnwise …args --out out` in a process of its own and SIGKILLs it once `out/metrics.jsonl` has
 * `iterations` lines; resolves with the lines it had when it died. */
export function killAfter(args: readonly string[], out: string, iterations: number): Promise<number> {
  const child = spawn(process.execPath, [BIN, ...args, '--out', out], { stdio: 'ignore' });
  return new Promise<number>((resolve, reject) => {
    const poll = setInterval(() => {
      if (lines(join(out, 'metrics.jsonl')) >= iterations) {
        clearInterval(poll);
        child.kill('SIGKILL');
      }
    }, 5);
    child.on('exit', () => {
      clearInterval(poll);
      resolve(lines(join(out, 'metrics.jsonl')));
    });
    child.on('error', reject);
  });
}

/** A resumed run equals the uninterrupted one: the same stored rows (`episodes` trajectories), the same
 * metrics.jsonl and the same policy bytes. */
export function assertSameRun(resumed: string, whole: string, episodes: number): void {
  const [a, b] = [storeRows(whole), storeRows(resumed)];
  assert.equal(b.n, episodes);
  assert.equal(b.t, a.t);
  assert.equal(b.m, a.m);
  assert.equal(
    readFileSync(join(resumed, 'metrics.jsonl'), 'utf8'),
    readFileSync(join(whole, 'metrics.jsonl'), 'utf8'),
  );
  assert.deepEqual(
    readFileSync(join(resumed, 'policy.safetensors')),
    readFileSync(join(whole, 'policy.safetensors')),
  );
}

/** `turnwise …flags` run whole into `dir/whole` and, into `dir/killed`, SIGKILLed once `killAt` iterations
 * are logged, then resumed: the resumed run's final evaluation, rows (`episodes`), metrics and policy must
 * be the whole run's. Returns the whole run's `--json` report and its directory. */
export async function assertKilledResumes(
  flags: readonly string[],
  dir: string,
  iters: number,
  killAt: number,
  episodes: number,
): Promise<{ report: { final: { exact: number } }; whole: string }> {
  const whole = join(dir, 'whole');
  const killed = join(dir, 'killed');
  const ref = await turnwise([...flags, '--out', whole, '--json']);
  assert.equal(ref.code, 0, ref.stderr);
  const partial = await killAfter(flags, killed, killAt);
  assert.ok(partial >= killAt && partial < iters, `killed after ${partial} iterations`);
  const res = await turnwise(['train', '--resume', killed, '--json']);
  assert.equal(res.code, 0, res.stderr);
  const report = JSON.parse(ref.stdout);
  assert.deepEqual(JSON.parse(res.stdout).final, report.final);
  assertSameRun(killed, whole, episodes);
  return { report, whole };
}
