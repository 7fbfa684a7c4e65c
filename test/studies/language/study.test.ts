// The language study end to end through the real CLI (`study budget --policy-kind transformer --profile
// quick`): an uninterrupted run, and a run killed with SIGKILL in the middle of its RL stage and started
// again with the same command, which reruns nothing that finished and ends with the same measurements
// and findings, byte for byte; `study verdicts --in` recomputes the stored findings; bad flags refused.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { turnwise } from '../../cli/run.ts';

const BIN = fileURLToPath(new URL('../../../bin/turnwise.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'tw-lang-'));
after(() => rmSync(root, { recursive: true, force: true }));

const study = (out: string) => [
  'study',
  'budget',
  '--policy-kind',
  'transformer',
  '--profile',
  'quick',
  '--out',
  out,
];

/** The summary without its clock readings. */
function stable(file: string): unknown {
  const s = JSON.parse(readFileSync(file, 'utf8'));
  return { ...s, seconds: 0, runs: s.runs.map((r: { seconds: unknown }) => ({ ...r, seconds: 0 })) };
}

test('the quick language study: killed mid-RL and resumed, it ends where the uninterrupted run ends', async () => {
  const whole = join(root, 'whole');
  const ran = await turnwise(study(whole));
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(
    ran.stdout,
    /^Budget study with language agents — profile quick: worlds frozenlake-text; seeds 0$/m,
  );
  assert.match(ran.stdout, /Findings across seeds/);
  for (const stage of [
    'tokenizer',
    'base',
    'seed 0 rl',
    'seed 0 budgetmix',
    'seed 0 temperature',
    'seed 0 measure',
  ])
    assert.match(ran.stderr, new RegExp(`frozenlake-text ${stage}: started`));
  assert.match(ran.stderr, /seed 0 rl: 1\/2, ETA \d+ s/);

  // Killed once RL's first iteration is recorded (its progress line), then the same command again.
  const cut = join(root, 'cut');
  const child = spawn(process.execPath, [BIN, ...study(cut)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr });
  const closed = new Promise((resolve) => child.on('close', resolve));
  for await (const line of lines) {
    if (/seed 0 rl: 1\/2/.test(line)) {
      child.kill('SIGKILL');
      break;
    }
  }
  await closed;
  const again = await turnwise(study(cut));
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /frozenlake-text tokenizer: done before \(resumed\)/);
  assert.match(again.stderr, /frozenlake-text base: done before \(resumed\)/);
  assert.match(again.stderr, /seed 0 rl: started — resuming from its checkpoint/);
  assert.doesNotMatch(again.stderr, /seed 0 rl: 1\/2/); // iteration 1 is not run again
  assert.deepEqual(stable(join(cut, 'summary.json')), stable(join(whole, 'summary.json')));
  const text = (s: string) => s.replace(/time: .*/, '').replace(/report: .*/, '');
  assert.equal(text(again.stdout), text(ran.stdout));

  // A finished study is not overwritten; the same command again is refused in one line.
  const twice = await turnwise(study(cut));
  assert.equal(twice.code, 2);
  assert.match(twice.stderr, /^turnwise: --out: got ".*cut"; already holds a finished language study/);

  // The verdicts recomputed from the stored measurements are the stored findings.
  const v = await turnwise(['study', 'verdicts', '--in', join(whole, 'summary.json'), '--json']);
  assert.equal(v.code, 0, v.stderr);
  assert.deepEqual(
    JSON.parse(v.stdout),
    JSON.parse(readFileSync(join(whole, 'summary.json'), 'utf8')).findings,
  );
});

test('bad flags of the language study are refused in one line before any work', async () => {
  const cases: [string[], RegExp][] = [
    [['--policy-kind', 'lstm'], /^turnwise: --policy-kind: got "lstm"; expected mlp or transformer\n$/],
    [
      ['--policy-kind', 'transformer', '--profile', 'full'],
      /^turnwise: --profile: got "full"; expected one of quick, default, paper/,
    ],
    [
      ['--policy-kind', 'transformer', '--worlds', 'slippery'],
      /^turnwise: --worlds: got "slippery"; expected distinct language worlds of: frozenlake-text, sql, tools, code/,
    ],
    [
      ['--policy-kind', 'transformer', '--parallel', '0'],
      /^turnwise: --parallel: got "0"; expected a positive integer/,
    ],
    [
      ['--policy-kind', 'transformer', '--set', 'rl.iters=3'],
      /^turnwise: --set: got "rl.iters=3"; not taken with --policy-kind transformer/,
    ],
    [['--policy-kind', 'transformer', '--seeds', '0,0'], /^turnwise: --seeds: got "0,0"; expected distinct/],
  ];
  for (const [args, want] of cases) {
    const r = await turnwise(['study', 'budget', ...args, '--out', join(root, 'never')]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want);
    assert.equal(r.stderr.split('\n').length, 2, r.stderr);
  }
});
