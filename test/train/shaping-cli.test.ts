// `turnwise train --shaping` and `turnwise study shaping` through the real CLI: a small shaped run end to
// end (its JSON against calc shaping's DP and against the plain run of the same seed), and one-line
// refusals (exit 2) before any work.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { inProcess, turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-shaping-cli-'));
const SMALL = ['--map', '4x4', '--slippery', '--policy', 'tabular', '--iters', '6', '--groups', '4'];
const SMALL_EVAL = [...SMALL, '--eval-episodes', '100', '--seed', '5'];

test('train --shaping progress:0.05 --vs-unshaped --json: true success, the DP’s shaped optimum, the gap', async () => {
  const r = await turnwise([
    'train',
    ...SMALL_EVAL,
    '--shaping',
    'progress:0.05',
    '--vs-unshaped',
    '--json',
    '--out',
    join(dir, 'progress'),
  ]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(j.shaping), [
    'kind',
    'coef',
    'success',
    'shapedOptimal',
    'optimum',
    'unshaped',
    'gap',
  ]);
  assert.equal(j.shaping.kind, 'progress');
  assert.equal(j.shaping.coef, 0.05);
  // The true success at the end is the final evaluation's exact figure.
  assert.equal(j.shaping.success, j.final.exact);
  // The shaped optimum and the optimum are calc shaping's, at the evaluation budget.
  const calc = await turnwise([
    'calc',
    'shaping',
    '--map',
    '4x4',
    '--slippery',
    '--kinds',
    'progress',
    '--coef',
    '0.05',
    '--json',
  ]);
  const row = JSON.parse(calc.stdout).rows[0];
  assert.equal(j.shaping.shapedOptimal, row.success);
  assert.equal(j.shaping.optimum, row.optimum);
  assert.ok(j.shaping.shapedOptimal < j.shaping.optimum);
  // The unshaped twin is the plain run of the same flags and seed.
  const plain = await turnwise(['train', ...SMALL_EVAL, '--json', '--out', join(dir, 'plain')]);
  assert.equal(plain.code, 0, plain.stderr);
  const p = JSON.parse(plain.stdout);
  assert.equal(p.shaping, undefined);
  assert.equal(p.last['train/shaping_gap'], undefined);
  assert.equal(j.shaping.unshaped.success, p.final.exact);
  assert.equal(j.shaping.gap, j.shaping.success - p.final.exact);
  // The learner's shaped return is in the metrics; the rollout metrics are the true ones.
  assert.equal(typeof j.last['train/shaping_gap'], 'number');
  assert.ok(j.last['train/shaping_gap'] >= 0, 'progress only ever adds');
  assert.ok(j.last['rollout/success'] >= 0 && j.last['rollout/success'] <= 1);
  // The table says the same in words.
  const text = await turnwise([
    'train',
    ...SMALL_EVAL,
    '--shaping',
    'progress:0.05',
    '--out',
    join(dir, 't'),
  ]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    new RegExp(
      `shaping progress:0.05: true success at the end ${j.final.exact.toFixed(4)}; the shaped-optimal policy's ${row.success.toFixed(4)}, the optimum 0.7442 \\(turnwise calc shaping\\)`,
    ),
  );
});

test('study shaping --json: under GRPO the potential row trains exactly as the unshaped one', async () => {
  const args = 'study shaping --map 4x4 --slippery --seeds 0,1 --iters 3 --kinds none,potential,step-penalty';
  const r = await turnwise([...args.split(' '), '--json']);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  const [none, potential, penalty] = j.rows;
  assert.deepEqual(
    j.rows.map((x: { kind: string }) => x.kind),
    ['none', 'potential', 'step-penalty'],
  );
  assert.equal(none.shapedOptimal, j.optimum);
  assert.equal(potential.shapedOptimal, j.optimum);
  // Potential-based shaping shifts each group's returns by one constant, R − c·Φ_100(0): GRPO's
  // advantages are the unshaped ones, and so is the run.
  for (const [i, x] of potential.perSeed.entries()) assert.ok(Math.abs(x - none.perSeed[i]) < 1e-12);
  assert.ok(Math.abs(potential.shapingGap + 0.1 * j.optimum) < 1e-9, 'gap −c·V*_100(0)');
  // The step penalty's shaped optimum is calc shaping's 0.035764 (docs/shaping.md).
  assert.ok(Math.abs(penalty.shapedOptimal - 0.035764) < 5e-7);
  assert.deepEqual(
    penalty.vsNone.value,
    (penalty.perSeed[0] - none.perSeed[0] + penalty.perSeed[1] - none.perSeed[1]) / 2,
  );
});

test('bad --shaping input: one line naming the field, exit 2, nothing written', async () => {
  const cases: [string[], string[]][] = [
    [
      ['--shaping', 'bogus'],
      ['--shaping', '"bogus"', 'potential | distance | progress | novelty | step-penalty'],
    ],
    [
      ['--shaping', 'progress:abc'],
      ['--shaping', '"progress:abc"'],
    ],
    [
      ['--shaping', 'progress:0'],
      ['--shaping', '(0, 10]'],
    ],
    [
      ['--shaping', 'novelty:11'],
      ['--shaping', '(0, 10]'],
    ],
    [['--shaping', 'progress:0.1:2'], ['--shaping']],
    [
      ['--env', 'sql', '--shaping', 'progress'],
      ['config.shaping', 'env.env is sql'],
    ],
    [
      ['--algo', 'es', '--shaping', 'potential'],
      ['config.shaping', 'algo es'],
    ],
    [['--set', 'shaping.kind=laps'], ['shaping.kind']],
    [['--set', 'shaping={"kind":"progress","coef":-1}'], ['shaping.coef']],
    [['--vs-unshaped'], ['--vs-unshaped', '--shaping']],
    [
      ['--shaping', 'novelty', '--queue', 'redis://127.0.0.1:1'],
      ['--queue', 'cannot go with --shaping'],
    ],
  ];
  for (const [args, words] of cases) {
    const out = join(dir, `bad-${args.join('').replace(/\W/g, '')}`);
    const r = await inProcess(['train', '--out', out, ...args]);
    const what = args.join(' ');
    assert.equal(r.code, 2, `${what}: ${r.stderr}`);
    assert.equal(r.stdout, '', what);
    assert.match(r.stderr, /^turnwise: [^\n]*\n$/, what);
    for (const w of words) assert.ok(r.stderr.includes(w), `${what}: ${r.stderr} does not name ${w}`);
    assert.equal(existsSync(out), false, what);
  }
  // A resumed run keeps its own shaping: the flag is refused with --resume.
  const resumed = await inProcess(['train', '--resume', join(dir, 'progress'), '--shaping', 'novelty']);
  assert.equal(resumed.code, 2);
  assert.match(resumed.stderr, /^turnwise: --resume: .*drop --shaping\n$/);
});
