// fileLines (every trajectory reader's line splitter) against the brute-force split of the whole file:
// the same lines with the same numbers, whatever falls on the 1 MiB chunk boundaries — a line longer
// than the buffer, a multi-byte character cut by a boundary, CRLF, blank lines, no final newline.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { fileLines, LineReader } from '../../src/store/jsonl.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-lines-'));
const MiB = 1 << 20;

function brute(path: string): [string, number][] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((l, i) => [l.trim(), i + 1] as [string, number])
    .filter(([l]) => l.length > 0);
}

function check(name: string, content: string | Buffer): [string, number][] {
  const path = join(dir, name);
  writeFileSync(path, content);
  const got = [...fileLines(path)];
  assert.deepEqual(
    got.map(([line, n]) => [line, n]),
    brute(path),
    name,
  );
  // The offsets and lengths read each line back (LineReader), and the bytes there are that line's.
  const bytes = readFileSync(path);
  const reader = new LineReader(path);
  for (const [line, , offset, length] of got) {
    assert.equal(reader.read(offset, length), line);
    assert.equal(bytes.toString('utf8', offset, offset + length).trim(), line);
    assert.ok(offset + length === bytes.length || bytes[offset + length] === 10);
  }
  reader.close();
  return got.map(([line, n]): [string, number] => [line, n]);
}

test('lines across chunk boundaries, a line longer than two chunks, multi-byte characters cut', () => {
  const ascii = 'x'.repeat(MiB - 3);
  // "é" (2 bytes), "€" (3), "𝄞" (4) placed so that a chunk boundary falls inside each.
  const lines = check(
    'boundaries.txt',
    `${ascii}é€𝄞\n${'y'.repeat(2.5 * MiB)}\n\n  spaced  \r\nlast€ without newline`,
  );
  assert.equal(lines.length, 4);
  assert.equal(lines[0][0].endsWith('é€𝄞'), true);
  assert.deepEqual(
    lines.map(([, n]) => n),
    [1, 2, 4, 5],
  );
  assert.equal(lines[2][0], 'spaced');
  assert.equal(lines[3][0], 'last€ without newline');
  for (let shift = 0; shift < 4; shift++) check(`cut${shift}.txt`, `${'a'.repeat(MiB - shift)}𝄞\nb\n`);
  check(
    'invalid-utf8.txt',
    Buffer.concat([Buffer.from('a'.repeat(MiB - 1)), Buffer.from([0xe2, 0x82, 0x0a, 0xff, 0x41, 0x0a])]),
  );
  check('empty.txt', '');
  check('newlines.txt', '\n\n\n');
  check('no-break-space.txt', '\u00a0{"a":1}\u00a0\n\ufeff{"b":2}\n');
});

test('random files of short and long lines: the same lines and numbers as the brute-force split', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.constantFrom('', ' ', '\r', 'é', '𝄞'),
          fc.nat(3 * MiB).map((n) => 'z'.repeat(n)),
        ),
        { maxLength: 8 },
      ),
      fc.boolean(),
      (parts, finalNewline) => {
        check('random.txt', parts.join('\n') + (finalNewline ? '\n' : ''));
      },
    ),
    { numRuns: 40 },
  );
});
