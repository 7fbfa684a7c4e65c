// The CLI keeps every honest episode whatever one hostile episode does, and --out holds every episode
// finished before a crash (issue 21 §2): a program whose results swell to tens of MB once made the whole
// run end with "internal error" and an empty --out; a run killed mid-way left nothing either (the file
// was written in 1 MiB chunks and at the end).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { codeWorld } from '../../../src/envs/code/index.ts';
import { envConfig } from '../../../src/envs/index.ts';
import { turnwise } from '../../cli/run.ts';

const BIN = fileURLToPath(new URL('../../../bin/turnwise.js', import.meta.url));
const world = (seed: number) => codeWorld({ ...envConfig('code', {}), seed });
const call = (name: string, code: string) => ({ name, arguments: { code } });
const honest = (seed: number) => {
  const ref = world(seed).problem.reference;
  return { task: seed, sample: 0, actions: [call('run_tests', ref), call('submit', ref)] };
};

/** `rollout --env code --policy replay:FILE --tasks 3 --out OUT`, and more flags. */
const rollout = (file: string, out: string, ...more: string[]) => [
  'rollout',
  '--env',
  'code',
  '--policy',
  `replay:${file}`,
  '--tasks',
  '3',
  '--out',
  out,
  ...more,
];

function replayFile(lines: unknown[]): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-code-out-'));
  const file = join(dir, 'replay.jsonl');
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n'));
  return { dir, file };
}

test('CLI: an episode whose program returns tens of MB does not take the run or --out with it', async () => {
  const fn = world(1).problem.name;
  // Results of 10 MB for the three visible examples (the first tests run), past a cut inside the sandbox
  // (String.prototype.slice replaced): 30 MB an observation, 18 times — past what JSON.stringify can
  // write as one line.
  const big = `String.prototype.slice = function () { return String(this); };\nconst Y = 'y'.repeat(1e7);\nlet n = 0;\nfunction ${fn}() { return n++ < 3 ? Y : 0; }`;
  const hostile = {
    task: 1,
    sample: 0,
    actions: [...Array(18).fill(call('run_tests', big)), call('submit', big)],
  };
  const { dir, file } = replayFile([honest(0), hostile, honest(2)]);
  const out = join(dir, 'out.jsonl');
  const r = await turnwise(rollout(file, out, '--budget', '20', '--json'));
  assert.equal(r.code, 0, r.stderr);
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  assert.equal(lines.length, 3);
  const outcomes = lines.map(
    (l) => (JSON.parse(l) as { outcome: { success: boolean; turns: number } }).outcome,
  );
  assert.deepEqual(
    outcomes.map((o) => [o.success, o.turns]),
    [
      [true, 2],
      [false, 19],
      [true, 2],
    ],
  );
  assert.ok(lines[1].length < 200_000, `the hostile trajectory is ${lines[1].length} characters`);
});

// Before the fix the third episode ran for many minutes in the CLI's thread: the timeout makes that a failure.
test('CLI: a run killed mid-way leaves --out with every episode finished before it', {
  timeout: 120_000,
}, async () => {
  const fn = world(2).problem.name;
  // Episode 3 spends its attempt in one native call (about 5.5 s to the host's deadline): the run is
  // killed then, after two episodes finished.
  const slow = `function ${fn}() { return 'a'.repeat(1e6).indexOf('a'.repeat(1e4) + 'b'); }`;
  const { dir, file } = replayFile([
    honest(0),
    honest(1),
    { task: 2, sample: 0, actions: [call('run_tests', slow), call('submit', slow)] },
  ]);
  const out = join(dir, 'out.jsonl');
  writeFileSync(out, '');
  const child = spawn(process.execPath, [BIN, ...rollout(file, out, '--concurrency', '1')], {
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const lines = () =>
    readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l !== '').length;
  // Wait (on file events, not on a clock) until two trajectories are in the file, or the run ends.
  const watcher = watch(out);
  const twoLines = new Promise<'two'>((resolve) => {
    watcher.on('change', () => {
      if (lines() >= 2) resolve('two');
    });
  });
  const first = await Promise.race([twoLines, exited.then(() => 'exit' as const)]);
  watcher.close();
  child.kill('SIGKILL');
  await exited;
  assert.equal(first, 'two', 'the run ended before its finished episodes reached --out');
  const text = readFileSync(out, 'utf8');
  assert.ok(text.endsWith('\n'));
  const kept = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { task: { seed: number }; outcome: { success: boolean } });
  assert.deepEqual(
    kept.map((t) => [t.task.seed, t.outcome.success]),
    [
      [0, true],
      [1, true],
    ],
  );
});
