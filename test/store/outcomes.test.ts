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

test('the fields around the turns in other valid or invalid forms: the same outcome or refusal', () => {
  const line = readFileSync(files[0], 'utf8').split('\n')[0];
  const o = JSON.parse(line).outcome;
  const cases = [
    // Valid forms the regular expressions of the quick way do not take (JSON.parse reads them).
    line.replace(/"id":"[^"]*"/, '"id":"a\\"b\\u00e9"'),
    line.replace('"policy":"oracle"', '"policy":"or\\/acle"'),
    line.replace('"budget":100', '"budget":1e2'),
    line.replace('"budget":100', '"budget":100.0'),
    line.replace(/"seed":\d+/, '"seed":-0'),
    line.replace(/"seed":\d+/, '"seed":-12'),
    line.replace('"params":{', '"params":{"extra":[1,{"a":2}],'),
    line.replace('"params":{', '"params":{"note":"a\\nb",'),
    line.replace(/"return":[^,]*/, '"return":1.5e3'),
    line.replace(/"return":[^,]*/, '"return":-0'),
    line.replace(/"failure":(null|"[^"]*")}}$/, '"failure":$1,"error":"x],\\"outcome\\":{"}}'),
    line.replace(/"failure":(null|"[^"]*")}}$/, '"failure":$1,"error":"plain"}}'),
    line.replace('"revealBudget":', ' "revealBudget":'),
    line.replace('"outcome":{"success"', '"outcome": {"success"'),
    // A key JSON.parse reads twice (the last wins), a __proto__ param (zod's to judge).
    line.replace('{"id"', '{"id":"x","id"'),
    line.replace('"params":{', '"params":{"__proto__":1,'),
    // Invalid ones there.
    line.replace(/"seed":\d+/, '"seed":9007199254740993'),
    line.replace(/"seed":\d+/, '"seed":01'),
    line.replace('"budget":100', '"budget":0'),
    line.replace('"params":{', '"params":{"a":,'),
    line.replace(/"id":"[^"]*"/, '"id":"a\tb"'),
    line.replace(/"turns":(\d+),"firstSuccessTurn"/, '"turns":0$1,"firstSuccessTurn"'),
    line.replace(/"firstSuccessTurn":(\d+|null)/, '"firstSuccessTurn":0'),
    line.replace(/"end":"[a-z]+"/, '"end":"done"'),
    line.replace(/"failure":(null|"[^"]*")}}$/, '"failure":"fell"}}'),
    line.replace(/}}$/, '},}'),
    line.replace(/}}$/, '}}}'),
  ];
  let refused = 0;
  for (const c of cases) {
    assert.notEqual(c, line);
    writeFileSync(join(dir, 'case.jsonl'), `${c}\n`);
    const { whole, quick } = read(join(dir, 'case.jsonl'));
    assert.deepEqual(quick, whole, c.slice(0, 200));
    assert.equal(JSON.stringify(quick), JSON.stringify(whole));
    if (typeof whole === 'string') refused++;
    else assert.equal(whole[0].outcome.turns, o.turns);
  }
  assert.equal(refused, 11);
});

test('consecutive lines with different params each get their own; equal params read alike', () => {
  const lines = readFileSync(files[2], 'utf8').split('\n').filter(Boolean);
  const other = lines[1].replace('"size":5', '"size":6');
  writeFileSync(join(dir, 'params.jsonl'), `${[lines[0], other, lines[2], lines[3]].join('\n')}\n`);
  const { whole, quick } = read(join(dir, 'params.jsonl'));
  assert.deepEqual(quick, whole);
  assert.ok(Array.isArray(quick));
  assert.deepEqual(
    quick.map((t) => t.task.params.size),
    [5, 6, 5, 5],
  );
});
