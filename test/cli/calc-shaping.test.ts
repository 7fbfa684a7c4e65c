// `turnwise calc shaping` as a user runs it: the issue-27 contract on 4x4 slippery through the real CLI,
// its JSON keys, and one-line refusals (exit 2) before any work. The figures themselves are checked
// against an independent brute-force DP in test/theory/shaping.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { turnwise } from './run.ts';

test('calc shaping --map 4x4 --slippery --json: potential-based rows change nothing and lose nothing', async () => {
  const r = await turnwise(['calc', 'shaping', '--map', '4x4', '--slippery', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(j), ['map', 'slippery', 'budget', 'cells', 'optimum', 'rows']);
  assert.equal(j.budget, 100);
  assert.ok(Math.abs(j.optimum - 0.7442) < 5e-5, `V*_100 = ${j.optimum} (docs/methods.md §6: 0.7442)`);
  assert.deepEqual(
    j.rows.map((row: { kind: string }) => row.kind),
    ['potential', 'distance', 'progress', 'novelty', 'step-penalty'],
  );
  for (const row of j.rows) {
    if (row.potentialBased) {
      assert.equal(row.changed, 0, row.kind);
      assert.ok(Math.abs(row.loss) <= 1e-9, `${row.kind} loses ${row.loss}`);
    } else
      assert.ok(row.changed > 0 && row.loss > 0, `${row.kind}: ${row.changed} changed, loss ${row.loss}`);
  }
});

test('calc shaping refuses bad flags in one line, exit 2', async () => {
  for (const [args, flag] of [
    [['--coef', 'x'], '--coef'],
    [['--kinds', 'potential,foo'], '--kinds'],
    [['--budget', '0'], '--budget'],
    [['--size', '4'], '--size'],
    [['--random', '--map', '8x8'], '--map'],
  ] as const) {
    const r = await turnwise(['calc', 'shaping', ...args]);
    assert.equal(r.code, 2, args.join(' '));
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^turnwise: ${flag}: got .*\\n$`));
  }
});
