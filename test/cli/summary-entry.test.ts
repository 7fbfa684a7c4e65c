// bin/turnwise.js runs `summary` through src/cli/summary-main.ts (only that command loaded): the same
// stdout, stderr and exit code as through main.ts with every command (run in the shared worker of
// test/cli/run.ts's inProcess, which loads main.ts for every command), for help, bad flags, bad files
// and real output.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { inProcess, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-summary-entry-'));

test('summary through its own entry = summary through main.ts', async () => {
  const file = join(dir, 'f.jsonl');
  const made = await turnwise([
    ...['rollout', '--map', '4x4', '--slippery', '--policy', 'random', '--episodes', '5'],
    ...['--out', file, '--json'],
  ]);
  assert.equal(made.code, 0, made.stderr);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, '{"id":1}\n');
  const cases = [
    ['summary', '--in', file],
    ['summary', '--in', file, '--json'],
    ['summary', '--help'],
    ['summary'],
    ['summary', '--in', bad],
    ['summary', '--in', bad, '--skip-invalid', '--json'],
    ['summary', '--in', join(dir, 'missing.jsonl')],
    ['summary', '--in', file, '--jsn'],
    ['summary', '--in', file, '--price', 'x'],
    ['summary', 'extra', '--in', file],
  ];
  const runs = await Promise.all(cases.flatMap((c) => [turnwise(c), inProcess(c)]));
  const codes = new Set<number | null>();
  cases.forEach((c, i) => {
    assert.deepEqual(runs[2 * i], runs[2 * i + 1], c.join(' '));
    codes.add(runs[2 * i].code);
  });
  assert.deepEqual([...codes].sort(), [0, 2]);
  assert.match(runs[0].stdout, /^policy\s+episodes/);
});
