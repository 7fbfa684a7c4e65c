// The quick outcome reader (summary --in) agrees with the whole reader line for line: the same
// outcomes of valid files, the same refusal (line and field) of damaged ones — lines of real rollouts
// damaged at fast-check chosen characters, and by hand at the places the quick way looks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { checkSpacesOfRegistered, spacesOfRegistered } from '../../src/cli/options.ts';
import { iterateTrajectories } from '../../src/store/jsonl.ts';
import { iterateOutcomes } from '../../src/store/outcomes.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-outcomes-'));

function rolloutFile(name: string, args: string[]): string {
  const path = join(dir, name);
  const r = spawnSync(process.execPath, [BIN, 'rollout', ...args, '--out', path, '--json']);
  assert.equal(r.status, 0, r.stderr.toString());
  return path;
}

// Failures, successes, budget ends, −∞-free and random log-probs, two map sizes.
const files = [
  rolloutFile('oracle8.jsonl', ['--map', '8x8', '--slippery', '--policy', 'oracle', '--episodes', '40']),
  rolloutFile('random4.jsonl', [
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    'random',
    '--episodes',
    '40',
    '--budget',
    '12',
  ]),
  rolloutFile('randommaps.jsonl', [
    '--random',
    '--size',
    '5',
    '--policy',
    'oracle:eps=0.3',
    '--episodes',
    '30',
  ]),
];

/** Both readers over a file: the list of outcomes, or the message of the refusal. */
function read(path: string) {
  const whole = (() => {
    try {
      return [...iterateTrajectories(path, '--in', checkSpacesOfRegistered)].map(({ turns: _, ...r }) => r);
    } catch (e) {
      return (e as Error).message;
    }
  })();
  const quick = (() => {
    try {
      return [...iterateOutcomes(path, '--in', spacesOfRegistered, checkSpacesOfRegistered)];
    } catch (e) {
      return (e as Error).message;
    }
  })();
  return { whole, quick };
}

test('valid files: the quick reader returns exactly the outcomes of the whole one', () => {
  for (const f of files) {
    const { whole, quick } = read(f);
    assert.ok(Array.isArray(whole) && whole.length > 0);
    assert.deepEqual(quick, whole);
    assert.equal(JSON.stringify(quick), JSON.stringify(whole));
    // Every line of a file turnwise wrote takes the quick way (the whole way calls `check`).
    let slow = 0;
    for (const _ of iterateOutcomes(f, '--in', spacesOfRegistered, () => slow++));
    assert.equal(slow, 0);
  }
});

test('lines damaged at random characters: the same outcomes or the same refusal', () => {
  const lines = files.flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
  const damaged = join(dir, 'damaged.jsonl');
  let refused = 0;
  let runs = 0;
  fc.assert(
    fc.property(
      fc.nat(lines.length - 1),
      fc.array(
        fc.record({
          at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
          how: fc.constantFrom('replace', 'delete', 'insert'),
          ch: fc.constantFrom(...'0123456789-.,:{}[]"e+ntrufalsx9'.split('')),
        }),
        { minLength: 1, maxLength: 3 },
      ),
      (k, edits) => {
        let line = lines[k];
        for (const { at, how, ch } of edits) {
          const i = Math.floor(at * line.length);
          line =
            how === 'delete'
              ? line.slice(0, i) + line.slice(i + 1)
              : line.slice(0, i) + ch + line.slice(how === 'replace' ? i + 1 : i);
        }
        writeFileSync(damaged, `${lines[(k + 1) % lines.length]}\n${line}\n`);
        const { whole, quick } = read(damaged);
        runs++;
        if (typeof whole === 'string') refused++;
        assert.deepEqual(quick, whole, line);
      },
    ),
    { numRuns: 600 },
  );
  // Most single-character changes break a line; the ones that do not must agree too.
  assert.ok(refused > runs / 3 && refused < runs, `${refused} of ${runs} refused`);
});

test('damage where the quick way looks: an observation or action out of the spaces, a count, the ends', () => {
  const line = readFileSync(files[0], 'utf8').split('\n')[0];
  const cases = [
    line.replace('"observation":0,', '"observation":64,'),
    line.replace('"action":3,', '"action":4,'),
    line.replace(/"turns":(\d+)/, (_, n) => `"turns":${Number(n) + 1}`),
    line.replace('"budget":100', '"budget":10'),
    line.replace('"reward":0,', '"reward":1e999,'),
    line.replace(',"outcome":{', ',"outcome":{"extra":1,'),
    line.replace(',"turns":[', ',"x":1,"turns":['),
    `${line} `,
    `${line.slice(0, -1)},"more":1}`,
  ];
  for (const c of cases) {
    writeFileSync(join(dir, 'case.jsonl'), `${c}\n`);
    const { whole, quick } = read(join(dir, 'case.jsonl'));
    assert.deepEqual(quick, whole, c.slice(0, 200));
  }
  // The first two are refusals naming the field.
  writeFileSync(join(dir, 'case.jsonl'), `${cases[0]}\n`);
  assert.match(String(read(join(dir, 'case.jsonl')).quick), /case\.jsonl:1\.turns\.0\.observation: got 64/);
});
