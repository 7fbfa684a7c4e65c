// `turnwise harness run` as a child process, run asynchronously (the upstream it calls may live in the
// test's own process): the run's trajectories, read back once it has exited 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Trajectory } from '../../src/core/types.ts';

const BIN = resolve('bin/turnwise.js');

export async function harnessRun(
  out: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Trajectory[]> {
  const child = spawn(process.execPath, [BIN, 'harness', 'run', ...args, '--out', out, '--json'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const code = await new Promise((r) => child.on('exit', r));
  assert.equal(code, 0, stderr);
  return readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);
}
