// What the text of a trajectory file may hold, checked by the one line reader (fileLines) and the
// schema: a line is at most LINE_LIMIT bytes (an unbounded stream is refused with its line number, not
// read until memory runs out), valid UTF-8 (never silently turned into U+FFFD), names of well-formed
// Unicode (two policies that print the same are not two rows), and numbers a double holds (1e400 is
// named as an overflow, not "got null"). Each refusal is one line, exit 2, or a skipped line.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { fileLines, LINE_LIMIT, SkippedLines } from '../../src/store/jsonl.ts';
import { inProcess, turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-file-text-'));

/** fileLines' lines of a file with a lowered LINE_LIMIT. */
function lines(path: string, limit: number, skipped?: SkippedLines): string[] {
  const saved = LINE_LIMIT.bytes;
  LINE_LIMIT.bytes = limit;
  try {
    return [...fileLines(path, '--in', { skipped })].map(([line]) => line);
  } finally {
    LINE_LIMIT.bytes = saved;
  }
}

const refusal = (message: string) => (e: unknown) => e instanceof InputError && e.message === message;

test('a line longer than LINE_LIMIT is refused with its number: within a chunk, across chunks, and at the end', () => {
  const short = join(dir, 'short.jsonl');
  writeFileSync(short, `{"a":1}\n{"b":2}\n${'x'.repeat(5000)}\n{"c":3}\n`);
  assert.throws(
    () => lines(short, 1000),
    refusal(
      `${short}:3: line longer than 1000 bytes, the longest a line may be (is --in a trajectory file?)`,
    ),
  );
  assert.equal(lines(short, 5000).length, 4, 'a line of exactly the limit is read');
  // Longer than the 1 MiB buffer: the buffer grows, up to the limit, then the line is refused.
  const long = join(dir, 'long.jsonl');
  writeFileSync(long, `{"a":1}\n${'y'.repeat(3 << 20)}`);
  assert.throws(
    () => lines(long, 2 << 20),
    refusal(
      `${long}:2: line longer than ${2 << 20} bytes, the longest a line may be (is --in a trajectory file?)`,
    ),
  );
  assert.equal(lines(long, 3 << 20)[1].length, 3 << 20);
});

test('an unbounded stream (/dev/zero: no newline, ever) is refused once the limit is read, not read forever', () => {
  assert.throws(
    () => lines('/dev/zero', 4 << 20),
    refusal(
      `/dev/zero:1: line longer than ${4 << 20} bytes, the longest a line may be (is --in a trajectory file?)`,
    ),
  );
});

test('a line that is not valid UTF-8 is refused with its number, or skipped and counted', () => {
  const path = join(dir, 'latin1.jsonl');
  writeFileSync(
    path,
    Buffer.concat([Buffer.from('{"p":"ok"}\n{"p":"r'), Buffer.from([0xff]), Buffer.from('x"}\n{"p":"é"}\n')]),
  );
  const message = `${path}:2: not valid UTF-8 (a trajectory file is UTF-8 text, as JSON is)`;
  assert.throws(() => lines(path, 1000), refusal(message));
  const skipped = new SkippedLines();
  assert.deepEqual(lines(path, 1000, skipped), ['{"p":"ok"}', '{"p":"é"}']);
  assert.deepEqual(skipped.toJSON(), { count: 1, first: { line: 2, reason: message } });
});

/** A file of `n` FrozenLake trajectories whose policy (or return) is rewritten as raw bytes. */
async function rewritten(name: string, edits: ((line: Buffer) => Buffer)[]): Promise<string> {
  const base = join(dir, `${name}-base.jsonl`);
  const r = await turnwise([
    'rollout',
    '--policy',
    'random',
    '--episodes',
    String(edits.length),
    '--out',
    base,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const src = readFileSync(base).toString('latin1').trim().split('\n');
  const path = join(dir, `${name}.jsonl`);
  writeFileSync(
    path,
    Buffer.concat(src.map((l, i) => Buffer.concat([edits[i](Buffer.from(l, 'latin1')), Buffer.from('\n')]))),
  );
  return path;
}
const policy = (bytes: Buffer) => (line: Buffer) => {
  const s = line.toString('latin1');
  const at = s.indexOf('"policy":"random"');
  return Buffer.concat([line.subarray(0, at + 10), bytes, line.subarray(at + 16)]);
};

test('summary: invalid UTF-8 or a lone surrogate in a policy name is refused, not printed as look-alike rows', async () => {
  // Line 1: the byte 0xFF; line 2: U+FFFD itself (a valid name); line 3: the escape \udcff (what
  // Python's surrogateescape writes for 0xFF). Before, they made the rows "r�x 2" and "r�x 1".
  const path = await rewritten('names', [
    policy(Buffer.from([0x72, 0xff, 0x78])),
    policy(Buffer.from('r\u{fffd}x', 'utf8')),
    policy(Buffer.from('r\\udcffx')),
  ]);
  const [refused, skipping] = await Promise.all([
    inProcess(['summary', '--in', path]),
    turnwise(['summary', '--in', path, '--skip-invalid', '--json']),
  ]);
  assert.equal(refused.code, 2);
  assert.equal(refused.stdout, '');
  assert.equal(
    refused.stderr,
    `turnwise: ${path}:1: not valid UTF-8 (a trajectory file is UTF-8 text, as JSON is)\n`,
  );
  assert.equal(skipping.code, 0, skipping.stderr);
  const s = JSON.parse(skipping.stdout);
  assert.deepEqual(Object.keys(s.policies), ['r\u{fffd}x']);
  assert.equal(s.skipped.count, 2);
  const lone = await rewritten('lone', [policy(Buffer.from('r\\udcffx'))]);
  const r = await turnwise(['summary', '--in', lone]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    `turnwise: ${lone}:1.policy: got "r\\udcffx"; not well-formed Unicode: a lone surrogate (\\ud800–\\udfff)\n`,
  );
});

test('a return of 1e400 is named as the overflow it is, not "got null"', async () => {
  const ret = (to: string) => (line: Buffer) =>
    Buffer.from(line.toString('latin1').replace(/"return":[^,]*/, `"return":${to}`), 'latin1');
  const [plus, minus] = await Promise.all([
    rewritten('plus', [ret('1e400')]),
    rewritten('minus', [ret('-1e400')]),
  ]);
  const runs = await Promise.all([
    inProcess(['summary', '--in', plus]),
    inProcess(['eval', '--in', minus, '--K', '1', '--T', '5']),
  ]);
  assert.deepEqual(
    runs.map((r) => [r.code, r.stderr]),
    [
      [
        2,
        `turnwise: ${plus}:1.outcome.return: got a number beyond the largest double, ±1.8e308 (it reads as Infinity); expected a finite number\n`,
      ],
      [
        2,
        `turnwise: ${minus}:1.outcome.return: got a number beyond the largest double, ±1.8e308 (it reads as -Infinity); expected a finite number\n`,
      ],
    ],
  );
});
