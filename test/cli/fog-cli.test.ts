// `turnwise calc fog`, `--fog` and `train --info-gain` as a user runs them: the JSON keys, a value
// the exhaustive-enumeration tests of test/theory/fog.test.ts do not reach (a radius that shows the
// whole 3x3 map at once: the belief value is the fully observed bound), the flags in --help, and
// one-line refusals (exit 2) before any work.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { turnwise } from './run.ts';

test('calc fog --json: its keys; at a radius that shows every cell the fog costs nothing', async () => {
  const r = await turnwise([
    'calc',
    'fog',
    '--size',
    '3',
    '--fog',
    '2',
    '--budget',
    '5',
    '--slippery',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(j), [
    'size',
    'radius',
    'p',
    'budget',
    'slippery',
    'hidden',
    'maps',
    'entropy',
    'fog',
    'oracle',
    'states',
  ]);
  assert.equal(j.hidden, 7);
  assert.equal(j.entropy, 0);
  assert.ok(Math.abs(j.fog - j.oracle) < 1e-12);
  const fogged = JSON.parse(
    (await turnwise(['calc', 'fog', '--size', '3', '--budget', '5', '--slippery', '--json'])).stdout,
  );
  assert.ok(fogged.fog < j.fog && fogged.oracle === j.oracle);
});

test('--fog and --info-gain are in --help; bad input is refused in one line, exit 2', async () => {
  const help = await turnwise(['train', '--help']);
  assert.match(help.stdout, /--fog <R>/);
  assert.match(help.stdout, /--info-gain <W>/);
  for (const [args, flag] of [
    [['calc', 'fog', '--size', '5'], '--size'],
    [['calc', 'fog', '--fog', '0'], '--fog'],
    [['calc', 'fog', '--budget', '500'], '--budget'],
    [['rollout', '--policy', 'random', '--episodes', '10', '--map', '8x8', '--fog', '1'], '--fog'],
    [['rollout', '--policy', 'random', '--episodes', '10', '--fog', 'x'], '--fog'],
    [['train', '--info-gain', '0.1', '--iters', '1'], 'config.infoGain'],
    [['train', '--fog', '1', '--info-gain', '3', '--iters', '1'], '--info-gain'],
  ] as const) {
    const r = await turnwise([...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^turnwise: [^\\n]*${flag}[^\\n]*: got [^\\n]*\\n$`), args.join(' '));
  }
});
