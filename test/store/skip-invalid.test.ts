// --skip-invalid at the readers: a bad line (malformed, off the schema, outside the env's spaces) is
// counted and skipped; without it the file is refused at that line, as before.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkSpacesOfRegistered, spacesOfRegistered } from '../../src/cli/options.ts';
import { iterateTrajectories, SkippedLines } from '../../src/store/jsonl.ts';
import { iterateOutcomes } from '../../src/store/outcomes.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-skip-'));
const clean = join(dir, 'clean.jsonl');
const r = spawnSync(process.execPath, [
  BIN,
  'rollout',
  ...['--map', '4x4', '--slippery', '--policy', 'oracle', '--episodes', '8', '--out', clean, '--json'],
]);
assert.equal(r.status, 0, r.stderr.toString());
const good = readFileSync(clean, 'utf8').split('\n').filter(Boolean);
assert.equal(good.length, 8);

// Line 3: not JSON; line 6: action 99 on a 4-action env; line 8: blank (not a line to skip);
// line 10: off the schema.
const bad = join(dir, 'bad.jsonl');
const outside = good[0].replace(/"action":\d+/, '"action":99');
assert.notEqual(outside, good[0]);
writeFileSync(
  bad,
  `${[good[0], good[1], '{not json', good[2], good[3], outside, good[4], '', good[5], '{"id":1}', good[6], good[7]].join('\n')}\n`,
);

const whole = (path: string, skipped?: SkippedLines) => [
  ...iterateTrajectories(path, '--in', checkSpacesOfRegistered, skipped),
];
const quick = (path: string, skipped?: SkippedLines) => [
  ...iterateOutcomes(path, '--in', spacesOfRegistered, checkSpacesOfRegistered, undefined, skipped),
];

test('without skipping, both readers refuse the first bad line by its number', () => {
  for (const read of [whole, quick])
    assert.throws(() => read(bad), { name: 'InputError', message: /bad\.jsonl:3: not valid JSON/ });
  const onlyOutside = join(dir, 'outside.jsonl');
  writeFileSync(onlyOutside, `${good[0]}\n${outside}\n`);
  for (const read of [whole, quick])
    assert.throws(() => read(onlyOutside), {
      name: 'InputError',
      message: /outside\.jsonl:2\.turns\.0\.action: got 99/,
    });
});

test('with skipping, both readers yield the valid lines and count the 3 bad ones, the first by line', () => {
  const a = new SkippedLines();
  const ts = whole(bad, a);
  assert.deepEqual(ts, whole(clean));
  assert.equal(a.count, 3);
  assert.equal(a.first?.line, 3);
  assert.match(a.first!.reason, /bad\.jsonl:3: not valid JSON/);
  const b = new SkippedLines();
  assert.deepEqual(quick(bad, b), quick(clean));
  assert.deepEqual(b.toJSON(), a.toJSON());
  assert.match(a.note(bad), /^skipped 3 invalid lines of .*bad\.jsonl; the first, line 3: .*not valid JSON/);
});

test('with skipping, a file with no valid line is still refused, saying how many were skipped', () => {
  const none = join(dir, 'none.jsonl');
  writeFileSync(none, `${outside}\n{}\n`);
  for (const read of [whole, quick]) {
    const s = new SkippedLines();
    assert.throws(() => read(none, s), {
      name: 'InputError',
      message:
        /^--in: got ".*none\.jsonl"; the file holds no valid trajectories \(2 lines skipped; the first, .*none\.jsonl:1\.turns\.0\.action: got 99/,
    });
    assert.equal(s.count, 2);
  }
});
