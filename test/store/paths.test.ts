// Output paths are refused before any work starts, naming the flag, the path and why.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { checkOutput } from '../../src/store/paths.ts';
import { turnwise } from '../cli/run.ts';

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
  for (const [args, re] of cases) {
    const r = await turnwise(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(r.stdout, '');
  }
  assert.deepEqual(readdirSync(dir).sort(), before);
  assert.equal(existsSync('/dev/null/x'), false);
});
