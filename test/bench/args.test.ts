// bench/args.ts, the bench scripts' flags: its refusals and usage in process (readBenchArgs with
// parseArgs's own `args`), and every bench/*.ts that reads its flags through it run as a user runs it —
// an unknown flag is one line on stderr and exit code 2, `--help` the usage and exit 0, both before the
// bench starts any work (no bench here would exit on its own for a long while if it had). The benches are
// found by reading bench/, so a new one is covered without change; one that calls parseArgs itself fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readBenchArgs } from '../../bench/args.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BENCH = join(ROOT, 'bench');
const sources = readdirSync(BENCH)
  .filter((f) => f.endsWith('.ts') && f !== 'args.ts')
  .sort()
  .map((f) => ({ file: `bench/${f}`, text: readFileSync(join(BENCH, f), 'utf8') }));
const benches = sources.filter((s) => /\bbenchArgs\(/.test(s.text)).map((s) => s.file);

// ---------------------------------------------------------------------------------------------------------
// The helper in process.

const options = {
  seeds: { type: 'string', default: '1,2,3' },
  dir: { type: 'string' },
  pair: { type: 'boolean', default: false },
} as const;
const read = (...args: string[]) => readBenchArgs('bench/x.ts', { options, args });

test('an unknown option: its flag and the known ones', () => {
  const all = 'expected one of --seeds, --dir, --pair, --help';
  assert.deepEqual(read('--bogus-flag'), { refusal: `bench/x.ts: --bogus-flag: unknown option; ${all}` });
  assert.deepEqual(read('--seeds', '4', '--bogus=3'), {
    refusal: `bench/x.ts: --bogus: unknown option; ${all}`,
  });
  assert.deepEqual(read('-x'), { refusal: `bench/x.ts: -x: unknown option; ${all}` });
  // A name every object has is still unknown.
  assert.deepEqual(read('--constructor'), { refusal: `bench/x.ts: --constructor: unknown option; ${all}` });
});

test('a flag without its value, or with a switch as its value', () => {
  assert.deepEqual(read('--pair', '--seeds'), {
    refusal: 'bench/x.ts: --seeds: missing its value; expected --seeds <value>',
  });
  assert.deepEqual(read('--seeds', '--pair'), {
    refusal:
      'bench/x.ts: --seeds: got "--pair", an option; expected a value (one starting with - is written --seeds=VALUE)',
  });
  // What the message suggests is accepted.
  assert.deepEqual(read('--seeds=-1'), { parsed: parseArgs({ options, args: ['--seeds=-1'] }) });
});

test('a value given to a switch, on one line whatever it holds', () => {
  assert.deepEqual(read('--pair=yes'), {
    refusal: 'bench/x.ts: --pair: got "yes"; expected no value (--pair is a switch)',
  });
  assert.deepEqual(read('--pair=a\nb'), {
    refusal: 'bench/x.ts: --pair: got "a\\nb"; expected no value (--pair is a switch)',
  });
});

test('a positional argument, alone or after --', () => {
  const none = 'expected none (the options are --seeds, --dir, --pair, --help)';
  assert.deepEqual(read('run'), { refusal: `bench/x.ts: positional argument: got "run"; ${none}` });
  assert.deepEqual(read('--seeds', '1', '--', '--x'), {
    refusal: `bench/x.ts: positional argument: got "--x"; ${none}`,
  });
});

test('valid flags: exactly what parseArgs returns, with no help key', () => {
  for (const args of [[], ['--seeds', '4,5', '--pair'], ['--dir=d', '--seeds', '-']]) {
    const r = read(...args);
    assert.deepEqual(r, { parsed: parseArgs({ options, args }) });
    assert.ok('parsed' in r && !Object.hasOwn(r.parsed.values, 'help'));
  }
  // A config that allows positionals keeps them.
  const r = readBenchArgs('bench/x.ts', { options, args: ['a', '--pair'], allowPositionals: true });
  assert.deepEqual(r, { parsed: parseArgs({ options, args: ['a', '--pair'], allowPositionals: true }) });
});

test('--help and -h: the usage line and every option with its default', () => {
  const usage = [
    'usage: node --import tsx bench/x.ts [options]',
    '  --seeds <value>  default 1,2,3',
    '  --dir <value>',
    '  --pair           default false',
    '  --help, -h       this list',
    '',
  ].join('\n');
  assert.deepEqual(read('--help'), { help: usage });
  assert.deepEqual(read('--seeds', '9', '-h'), { help: usage });
  const multiple = readBenchArgs('bench/m.ts', {
    options: { case: { type: 'string', multiple: true } },
    args: ['-h'],
  });
  assert.deepEqual(multiple, {
    help: 'usage: node --import tsx bench/m.ts [options]\n  --case <value>  repeatable\n  --help, -h      this list\n',
  });
});

test("a bench's own help option is left to it; another option's -h is not taken", () => {
  const own = { help: { type: 'string' } } as const;
  assert.deepEqual(readBenchArgs('bench/x.ts', { options: own, args: ['--help', 'topic'] }), {
    parsed: parseArgs({ options: own, args: ['--help', 'topic'] }),
  });
  const host = { host: { type: 'string', short: 'h' } } as const;
  assert.deepEqual(readBenchArgs('bench/x.ts', { options: host, args: ['-h', 'x'] }), {
    parsed: parseArgs({ options: host, args: ['-h', 'x'] }),
  });
  assert.deepEqual(readBenchArgs('bench/x.ts', { options: host, args: ['--help'] }), {
    help: 'usage: node --import tsx bench/x.ts [options]\n  --host, -h <value>\n  --help              this list\n',
  });
});

test('an error that is not about the arguments is not turned into a refusal', () => {
  const bad = { n: { type: 'number' } } as unknown as Record<string, { type: 'string' }>;
  assert.throws(() => readBenchArgs('bench/x.ts', { options: bad, args: [] }), {
    code: 'ERR_INVALID_ARG_TYPE',
  });
});

// ---------------------------------------------------------------------------------------------------------
// Every bench, run.

test('every bench that reads flags reads them through bench/args.ts', () => {
  assert.ok(benches.length > 0, 'no bench/*.ts calls benchArgs');
  const direct = sources.filter((s) => /\bparseArgs\b/.test(s.text)).map((s) => s.file);
  assert.deepEqual(direct, [], 'these call node:util parseArgs themselves, not benchArgs');
});

/** A generous bound that only stops a bench which went on to real work from hanging the test. */
const KILL_AFTER_MS = 120_000;

function run(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('each bench: --bogus-flag is one line and exit 2, --help the usage and exit 0', {
  concurrency: 2,
}, async (t) => {
  await Promise.all(
    benches.map((file) =>
      t.test(file, async () => {
        const bad = await run(file, ['--bogus-flag']);
        const what = `${file} --bogus-flag: exit ${bad.code}, stderr ${JSON.stringify(bad.stderr)}`;
        assert.equal(bad.code, 2, `${what} (null: it did not stop, and was killed)`);
        assert.equal(bad.stdout, '', what);
        assert.match(bad.stderr, /^[^\n]+\n$/, `${what}: not exactly one line`);
        assert.match(
          bad.stderr,
          /^bench\/[\w-]+\.ts: --bogus-flag: unknown option; expected one of --/,
          what,
        );
        assert.doesNotMatch(bad.stderr, /^\s*at /m, what);

        const help = await run(file, ['--help']);
        const said = `${file} --help: exit ${help.code}, stderr ${JSON.stringify(help.stderr)}`;
        assert.equal(help.code, 0, said);
        assert.equal(help.stdout.split('\n')[0], `usage: node --import tsx ${file} [options]`, said);
        assert.match(help.stdout, /^ {2}--help, -h +this list$/m, said);
        assert.equal(help.stderr, '', said);
      }),
    ),
  );
});
