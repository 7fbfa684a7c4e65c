// The quick outcome reader past its cache of counted patterns (LIMITS.counted = 0 from the start of
// this process): the turns matched by the one any-count pattern and counted apart agree with the whole
// reader too — on valid files, and on lines whose turn count or turns were damaged.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkSpacesOfRegistered, spacesOfRegistered } from '../../src/cli/options.ts';
import { iterateTrajectories } from '../../src/store/jsonl.ts';
import { iterateOutcomes, LIMITS } from '../../src/store/outcomes.ts';

LIMITS.counted = 0;
const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-uncounted-'));
const file = join(dir, 'f.jsonl');
const r = spawnSync(process.execPath, [
  BIN,
  ...['rollout', '--map', '4x4', '--slippery', '--policy', 'random', '--episodes', '30'],
  ...['--out', file, '--json'],
]);
assert.equal(r.status, 0, r.stderr.toString());

function read(path: string) {
  const attempt = <T>(f: () => T) => {
    try {
      return f();
    } catch (e) {
      return (e as Error).message;
    }
  };
  return {
    whole: attempt(() =>
      [...iterateTrajectories(path, '--in', checkSpacesOfRegistered)].map(({ turns: _, ...x }) => x),
    ),
    quick: attempt(() => [...iterateOutcomes(path, '--in', spacesOfRegistered, checkSpacesOfRegistered)]),
  };
}

test('no counted patterns: valid lines still take the quick way, damaged ones agree', () => {
  const { whole, quick } = read(file);
  assert.ok(Array.isArray(whole) && whole.length === 30);
  assert.deepEqual(quick, whole);
  let slow = 0;
  for (const _ of iterateOutcomes(file, '--in', spacesOfRegistered, () => slow++));
  assert.equal(slow, 0);
  const line = readFileSync(file, 'utf8').split('\n')[0];
  const n = JSON.parse(line).outcome.turns;
  const cases = [
    line.replace(/"turns":(\d+),"firstSuccessTurn"/, `"turns":${n + 1},"firstSuccessTurn"`),
    line.replace(/"turns":(\d+),"firstSuccessTurn"/, `"turns":${n - 1},"firstSuccessTurn"`),
    line.replace('"action":', '"action":7,"x":'),
    line.replace(/"observation":\d+/, '"observation":16'),
  ];
  for (const c of cases) {
    assert.notEqual(c, line);
    writeFileSync(join(dir, 'case.jsonl'), `${c}\n`);
    const x = read(join(dir, 'case.jsonl'));
    assert.equal(typeof x.whole, 'string', c.slice(0, 200));
    assert.deepEqual(x.quick, x.whole);
  }
});
