// Output paths are refused before any work starts, naming the flag, the path and why.
import assert from 'node:assert/strict';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { checkOutput } from '../../src/store/paths.ts';
import { firstSpawned, inProcess, turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-paths-'));
writeFileSync(join(dir, 'afile'), 'x');

test('checkOutput: what can be written passes, what cannot is refused with the reason', () => {
  const ok: [string, 'file' | 'dir'][] = [
    [join(dir, 'new.jsonl'), 'file'],
    [join(dir, 'afile'), 'file'],
    [join(dir, 'a', 'b', 'c'), 'dir'],
    [dir, 'dir'],
    ['/dev/null', 'file'],
  ];
  for (const [p, k] of ok) assert.doesNotThrow(() => checkOutput(p, '--out', k), p);
  const bad: [string, 'file' | 'dir', RegExp][] = [
    ['/dev/null/x', 'dir', /is under \/dev, a virtual file system/],
    ['/proc/self/x', 'dir', /is under \/proc, a virtual file system/],
    ['/sys/x.jsonl', 'file', /is under \/sys/],
    [join(dir, 'afile'), 'dir', /is a file; expected a directory/],
    [dir, 'file', /is a directory; expected a file/],
    [join(dir, 'afile', 'run'), 'dir', /afile is a file, not a directory/],
    [join(dir, 'missing', 'x.jsonl'), 'file', /its directory .*missing does not exist/],
    ['', 'file', /expected a path/],
  ];
  for (const [p, k, re] of bad) {
    assert.throws(
      () => checkOutput(p, '--out', k),
      (e: unknown) => e instanceof InputError && e.message.startsWith('--out: got ') && re.test(e.message),
      p,
    );
  }
});

test('every command that writes refuses a bad --out before working, and writes nothing', async () => {
  const cases: [string[], RegExp][] = [
    [
      ['study', 'budget', '--profile', 'quick', '--out', '/dev/null/x'],
      /^turnwise: --out: got "\/dev\/null\/x"; is under \/dev/,
    ],
    [
      ['train', '--map', '4x4', '--policy', 'tabular', '--out', '/proc/x'],
      /^turnwise: --out: got "\/proc\/x"; is under \/proc/,
    ],
    [
      [
        'bc',
        '--random',
        '--size',
        '4',
        '--train-seeds',
        '0:10',
        '--test-seeds',
        '100:110',
        '--out',
        join(dir, 'afile'),
      ],
      /--out: .*is a file; expected a directory/,
    ],
    [
      [
        'rollout',
        '--map',
        '4x4',
        '--policy',
        'random',
        '--episodes',
        '5',
        '--out',
        join(dir, 'nope', 'a.jsonl'),
      ],
      /--out: .*its directory .*nope does not exist/,
    ],
    [
      [
        'rollout',
        '--map',
        '4x4',
        '--policy',
        'random',
        '--episodes',
        '5',
        '--db',
        join(dir, 'afile', 'x.sqlite'),
      ],
      /--db: .*afile is a file, not a directory/,
    ],
  ];
  const done = join(dir, 'done');
  mkdirSync(done);
  writeFileSync(join(done, 'summary.json'), '{}');
  cases.push([
    ['study', 'budget', '--profile', 'quick', '--out', done],
    /--out: .*already holds a finished run \(summary\.json\); give another directory, or --force/,
  ]);
  const before = readdirSync(dir).sort();
  for (const [i, [args, re]] of cases.entries()) {
    const r = await firstSpawned(i, args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(r.stdout, '');
  }
  assert.deepEqual(readdirSync(dir).sort(), before);
  assert.equal(existsSync('/dev/null/x'), false);
});

test('an output that is an input of the same command — same path, hard link, symbolic link — is refused', () => {
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, '{}\n');
  linkSync(input, join(dir, 'hard.jsonl'));
  symlinkSync(input, join(dir, 'soft.jsonl'));
  const inputs = [
    ['--policy', undefined],
    ['--in', input],
  ] as const;
  for (const [out, how] of [
    [input, ''],
    [join(dir, '.', 'in.jsonl'), ''],
    [join(dir, 'hard.jsonl'), ` (${input}, the same file by a link)`],
    [join(dir, 'soft.jsonl'), ` (${input}, the same file by a link)`],
  ]) {
    assert.throws(
      () => checkOutput(out, '--out', 'file', inputs),
      (e: unknown) =>
        e instanceof InputError &&
        e.message ===
          `--out: got ${JSON.stringify(out)}; is the file --in reads${how}: writing it would replace the input; give another path`,
      out,
    );
  }
  // Another file, a file not there yet, and an input that is not there: no conflict.
  for (const out of [join(dir, 'afile'), join(dir, 'new-out.jsonl')])
    assert.doesNotThrow(() => checkOutput(out, '--out', 'file', inputs), out);
  assert.doesNotThrow(() => checkOutput(join(dir, 'afile'), '--out', 'file', [['--in', join(dir, 'gone')]]));
});

test('export --in F --out F (or a link to F) and rollout --policy replay:R --out R: refused (exit 2), files untouched', async () => {
  const file = join(dir, 'trajectories.jsonl');
  const made = await turnwise(['rollout', '--policy', 'random', '--episodes', '3', '--out', file]);
  assert.equal(made.code, 0, made.stderr);
  // The same episodes as a replay file: one line of actions per (task, sample).
  const replay = join(dir, 'replay.jsonl');
  writeFileSync(
    replay,
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Trajectory)
      .map(
        (t) => `${JSON.stringify({ task: t.task.seed, sample: 0, actions: t.turns.map((u) => u.action) })}\n`,
      )
      .join(''),
  );
  const before = [readFileSync(file), readFileSync(replay)];
  const link = join(dir, 'link.jsonl');
  symlinkSync(file, link);
  const runs = await Promise.all([
    inProcess(['export', '--in', file, '--format', 'openai', '--out', file]),
    inProcess(['export', '--in', file, '--format', 'openai', '--out', link]),
    inProcess(['rollout', '--policy', `replay:${replay}`, '--episodes', '3', '--out', replay]),
  ]);
  for (const r of runs) {
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^turnwise: --out: got "[^"]+"; is the file --(in|policy) reads[^\n]*; give another path\n$/,
    );
  }
  assert.deepEqual([readFileSync(file), readFileSync(replay)], before);
});
