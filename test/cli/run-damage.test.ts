// A run directory damaged at chosen bytes of each of its files — as a crash or a disk could leave it —
// either resumes to exactly the undisturbed run or is refused with exit 2, one line, naming the file;
// racing resumes cannot both write; --restart starts over deliberately.
import assert from 'node:assert/strict';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { envs } from '../../src/envs/index.ts';
import { decodeSafetensors, encodeSafetensors } from '../../src/nn/safetensors.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { inProcess, turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-damage-'));
const ARGS = [
  'train',
  ...['--map', '4x4', '--slippery', '--policy', 'tabular', '--iters', '60', '--groups', '4'],
  ...['--seed', '7', '--checkpoint-every', '10', '--eval-episodes', '100'],
];

const rows = (run: string) => {
  const db = new Database(join(run, 'run.sqlite'), { readonly: true });
  const t = db.prepare('SELECT idx, iter, data FROM trajectories WHERE run = ? ORDER BY idx').all('train');
  const m = db.prepare('SELECT iter, key, value FROM metrics WHERE run = ? ORDER BY iter, key').all('train');
  db.close();
  return JSON.stringify({ t, m });
};

const whole = join(dir, 'whole');
const partial = join(dir, 'partial');
let copies = 0;
const copyOf = (from: string) => {
  const d = join(dir, `copy-${copies++}`);
  cpSync(from, d, { recursive: true });
  return d;
};

/** The same run, stopped after iteration 33 as if killed there (checkpoint at 29, rows to 33). */
async function setUp(): Promise<void> {
  if (existsSync(partial)) return;
  const ref = await turnwise([...ARGS, '--out', whole, '--json']);
  assert.equal(ref.code, 0, ref.stderr);
  const config = parseTrainConfig(JSON.parse(readFileSync(join(whole, 'config.json'), 'utf8')));
  await trainPolicyGradient({ config, envs, out: partial, stopAfter: 33 });
  assert.equal(readFileSync(join(partial, 'metrics.jsonl'), 'utf8').trim().split('\n').length, 34);
}

/**
 * Resumes `run`: exactly the undisturbed run, or a one-line refusal naming `file`. A case expected to be
 * refused runs in the shared worker; one that may resume (and train) in a process of its own.
 */
async function resumeOrRefuse(
  run: string,
  file: string,
  expect?: 'resumed' | 'refused',
): Promise<'resumed' | 'refused'> {
  const argv = ['train', '--resume', run];
  const r = await (expect === 'refused' ? inProcess(argv) : turnwise(argv));
  if (r.code === 0) {
    assert.equal(
      readFileSync(join(run, 'metrics.jsonl'), 'utf8'),
      readFileSync(join(whole, 'metrics.jsonl'), 'utf8'),
    );
    assert.equal(rows(run), rows(whole));
    assert.deepEqual(
      readFileSync(join(run, 'policy.safetensors')),
      readFileSync(join(whole, 'policy.safetensors')),
    );
    return 'resumed';
  }
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.ok(r.stderr.includes(file), `${file}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /internal error|at .*\.ts:\d+/);
  assert.equal(existsSync(join(run, 'lock')), false);
  return 'refused';
}

type Damage = [file: string, what: string, damage: (path: string) => void, expect?: 'resumed' | 'refused'];

const truncateAt =
  (frac: number, delta = 0) =>
  (p: string) =>
    truncateSync(p, Math.max(0, Math.floor(statSync(p).size * frac) + delta));
const flipAt = (frac: number) => (p: string) => {
  const b = readFileSync(p);
  const i = Math.floor(b.length * frac);
  b[i] ^= 0xff;
  writeFileSync(p, b);
};

/** The first byte of the data section of a safetensors file (after the 8-byte length and the header). */
const dataStart = (b: Buffer) => 8 + Number(b.readBigUInt64LE(0));
/** Flips `mask` in the lowest (little-endian) byte of the float32 at `frac` of the data section: the
 * value stays finite and close, so only the checksum can tell. */
const flipData =
  (frac: number, mask = 0x01) =>
  (p: string) => {
    const b = readFileSync(p);
    const start = dataStart(b);
    b[start + 4 * Math.floor(((b.length - start) / 4) * frac)] ^= mask;
    writeFileSync(p, b);
  };
/** The file as a checkpoint of turnwise before checksums were recorded: the same, without one. */
const withoutChecksum = (p: string) => {
  const { tensors, metadata } = decodeSafetensors(readFileSync(p));
  assert.match(metadata.checksum, /^sha256:/);
  delete metadata.checksum;
  writeFileSync(p, encodeSafetensors(tensors, metadata));
};

test('each run file damaged at chosen bytes: resumed exactly or refused naming the file', async () => {
  await setUp();
  const cases: Damage[] = [
    // Derived from the store: any prefix, or trailing garbage, is rebuilt on resume.
    ['metrics.jsonl', 'empty', truncateAt(0), 'resumed'],
    ['metrics.jsonl', 'cut mid-line', truncateAt(0.5, 7), 'resumed'],
    ['metrics.jsonl', 'garbage appended', (p) => appendFileSync(p, '{"iter":3\0\0\0'), 'resumed'],
    ['config.json', 'cut in half', truncateAt(0.5), 'refused'],
    ['config.json', 'empty', truncateAt(0), 'refused'],
    ['checkpoint.safetensors', 'cut in its header', (p) => truncateSync(p, 12), 'refused'],
    ['checkpoint.safetensors', 'one byte short', truncateAt(1, -1), 'refused'],
    ['checkpoint.safetensors', 'header byte flipped', (p) => flipAt(0)(p) ?? undefined, 'refused'],
    // A byte flipped inside the tensor data: the first tensor, mid-file, an optimizer buffer near the end.
    ['checkpoint.safetensors', 'first data byte flipped', flipData(0), 'refused'],
    ['checkpoint.safetensors', 'a data byte flipped mid-file', flipData(0.5, 0x08), 'refused'],
    ['checkpoint.safetensors', 'a data byte flipped near the end', flipData(0.97, 0x40), 'refused'],
    // Written before checksums were recorded: resumes exactly, as it did.
    ['checkpoint.safetensors', 'without a checksum (older turnwise)', withoutChecksum, 'resumed'],
    // The policy alone is not read by a resume, which writes it anew.
    ['policy.safetensors', 'a data byte flipped', flipData(0.5), 'resumed'],
    ['run.sqlite', 'cut to 100 bytes', (p) => truncateSync(p, 100), 'refused'],
    ['run.sqlite', 'cut in half', truncateAt(0.5)],
    ['run.sqlite', 'a byte flipped mid-file', flipAt(0.5)],
  ];
  const outcomes: string[] = [];
  // Two at a time: each resume that may train is a process of its own.
  for (let i = 0; i < cases.length; i += 2) {
    const batch = cases.slice(i, i + 2);
    const results = await Promise.all(
      batch.map(async ([file, what, damage, expect]) => {
        const run = copyOf(partial);
        damage(join(run, file));
        const got = await resumeOrRefuse(run, file, expect);
        if (expect !== undefined) assert.equal(got, expect, `${file} ${what}`);
        return `${file} ${what}: ${got}`;
      }),
    );
    outcomes.push(...results);
  }
  assert.equal(outcomes.length, cases.length);
});

test('a policy file with a tensor byte flipped is refused wherever it is loaded, naming it', async () => {
  await setUp();
  const run = copyOf(whole);
  flipData(0.5)(join(run, 'policy.safetensors'));
  const uses = [
    ['rollout', '--map', '4x4', '--slippery', '--policy', run, '--episodes', '3'],
    ['eval', '--map', '4x4', '--slippery', '--policy', join(run, 'policy.safetensors'), '--tasks', '2'],
  ];
  for (const args of uses) {
    const r = await inProcess(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^turnwise: .*policy\.safetensors: checksum mismatch: .*; the file is damaged\n$/);
    assert.equal(r.stdout, '');
  }
});

test('racing resumes of one run: one writes, the others are refused at once; the result is exact', async () => {
  await setUp();
  const run = copyOf(partial);
  const results = await Promise.all([0, 1, 2].map(() => turnwise(['train', '--resume', run])));
  const codes = results.map((r) => r.code);
  assert.ok(codes.includes(0), codes.join(','));
  for (const r of results) {
    if (r.code === 0) continue;
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^turnwise: --resume: got ".*"; is in use by process \d+ on /);
  }
  assert.equal(
    readFileSync(join(run, 'metrics.jsonl'), 'utf8'),
    readFileSync(join(whole, 'metrics.jsonl'), 'utf8'),
  );
  assert.equal(rows(run), rows(whole));
});

test('--restart starts a damaged or existing run over: the same run as one made fresh', async () => {
  await setUp();
  const broken = copyOf(partial);
  truncateSync(join(broken, 'checkpoint.safetensors'), 20);
  const refused = await turnwise(['train', '--resume', broken]);
  assert.equal(refused.code, 2);
  assert.match(
    refused.stderr,
    /checkpoint\.safetensors: .*; to start the run over: train --resume .* --restart$/m,
  );
  const restarted = await turnwise(['train', '--resume', broken, '--restart']);
  assert.equal(restarted.code, 0, restarted.stderr);
  assert.equal(rows(broken), rows(whole));
  assert.equal(
    readFileSync(join(broken, 'metrics.jsonl'), 'utf8'),
    readFileSync(join(whole, 'metrics.jsonl'), 'utf8'),
  );
  // --out of an existing run: refused, then replaced with --restart (other files in it stay).
  const existing = copyOf(partial);
  writeFileSync(join(existing, 'notes.txt'), 'mine');
  const again = await turnwise([...ARGS, '--out', existing]);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /already holds a run; .*--restart/);
  const replaced = await turnwise([...ARGS, '--out', existing, '--restart']);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.equal(rows(existing), rows(whole));
  assert.equal(readFileSync(join(existing, 'notes.txt'), 'utf8'), 'mine');
});
