// Checkpoint integrity: the checksum in __metadata__ catches a byte flipped anywhere in what the file
// means (tensor data, metadata), the file stays plain safetensors, and checkpoints written before the
// checksum (fixtures from turnwise f2fb840) still load.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import {
  CHECKSUM,
  checkpointBytes,
  encodeCheckpoint,
  loadParameters,
  parseCheckpoint,
  readCheckpointFile,
} from '../../src/nn/checkpoint.ts';
import { MLP } from '../../src/nn/layers.ts';
import { Adam } from '../../src/nn/optim.ts';
import { decodeSafetensors, encodeSafetensors } from '../../src/nn/safetensors.ts';
import { Tensor } from '../../src/nn/tensor.ts';
import { readPolicyCheckpoint } from '../../src/policies/checkpoint-file.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/pre-checksum/', import.meta.url));

function sample(): Uint8Array {
  const net = new MLP([3, 4, 2], Rng.derive(11), 'tanh');
  const opt = new Adam(net.namedParameters(), { lr: 0.01 });
  for (const [, p] of net.namedParameters()) p.grad = new Float32Array(p.size).fill(0.5);
  opt.step();
  return checkpointBytes(net.namedParameters(), { kind: 'mlp-policy', sizes: [3, 4, 2] }, opt, {
    note: 'x',
  });
}

/** Where the data section starts (8 + the header length). */
const dataStart = (b: Uint8Array) => 8 + Number(new DataView(b.buffer, b.byteOffset).getBigUint64(0, true));

const refused = (re: RegExp) => (e: unknown) =>
  e instanceof InputError && re.test(e.message) && !e.message.includes('\n');

test('the checksum is SHA-256 of the documented canonical JSON, then the data section', () => {
  const bytes = sample();
  const start = dataStart(bytes);
  // Recomputed by hand from the raw file, as another reader would.
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, start))) as Record<
    string,
    { shape: number[]; data_offsets: number[] } & Record<string, string>
  >;
  const meta = header.__metadata__ as unknown as Record<string, string>;
  assert.match(meta[CHECKSUM], /^sha256:[0-9a-f]{64}$/);
  const tensors = Object.keys(header)
    .filter((k) => k !== '__metadata__')
    .sort()
    .map((k) => [k, header[k].shape, header[k].data_offsets]);
  const metadata = Object.entries(meta)
    .filter(([k]) => k !== CHECKSUM)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  assert.deepEqual(
    metadata.map(([k]) => k),
    ['note', 'optimizer', 'turnwise'],
  );
  const hash = createHash('sha256')
    .update(JSON.stringify({ metadata, tensors }))
    .update(bytes.subarray(start))
    .digest('hex');
  assert.equal(meta[CHECKSUM], `sha256:${hash}`);
  // Still plain safetensors: the generic reader sees the same tensors; re-encoding them with the same
  // metadata (checksum included) gives the file back byte for byte.
  const plain = decodeSafetensors(bytes);
  assert.deepEqual([...encodeSafetensors(plain.tensors, plain.metadata)], [...bytes]);
});

test('one byte flipped at chosen offsets of the data or the metadata: refused, checksum mismatch', () => {
  const bytes = sample();
  const start = dataStart(bytes);
  const ck = parseCheckpoint(bytes, 'ck.safetensors');
  const size = bytes.length - start;
  // The first and last data bytes, a low mantissa byte mid-tensor (the value stays finite and close:
  // nothing but the checksum can tell), the optimizer's buffers (the last tensors by name), and a
  // sign bit.
  const offsets = [start, bytes.length - 1, start + 4 * 5, start + size - 4 * 3, start + 4 * 7 + 3];
  for (const at of offsets) {
    for (const mask of [0x01, 0x80]) {
      const damaged = Uint8Array.from(bytes);
      damaged[at] ^= mask;
      const values = decodeSafetensors(damaged).tensors;
      // The damaged value is an ordinary finite number: only the checksum stands between it and a load.
      for (const t of values.values()) assert.ok(t.data.every(Number.isFinite));
      assert.throws(
        () => parseCheckpoint(damaged, 'ck.safetensors'),
        refused(
          /^ck\.safetensors: checksum mismatch: the contents hash to sha256:[0-9a-f]{12}…, the file records "sha256:[0-9a-f]{12}"…; the file is damaged$/,
        ),
        `offset ${at - start} of the data, mask ${mask}`,
      );
    }
  }
  // A digit of the metadata (the optimizer's step) changed: valid JSON, a plausible value, refused.
  const text = new TextDecoder().decode(bytes);
  const at = text.indexOf('\\"step\\":1') + '\\"step\\":'.length;
  assert.ok(at > 20);
  const stepped = Uint8Array.from(bytes);
  stepped[at] = '2'.charCodeAt(0);
  assert.equal(JSON.parse(decodeSafetensors(stepped).metadata.optimizer).step, 2);
  assert.throws(() => parseCheckpoint(stepped, 'ck'), refused(/^ck: checksum mismatch/));
  // A flipped checksum digit is a mismatch too.
  const sum = Uint8Array.from(bytes);
  const c = text.indexOf('sha256:') + 7;
  sum[c] = sum[c] === 0x30 ? 0x31 : 0x30;
  assert.throws(() => parseCheckpoint(sum, 'ck'), refused(/checksum mismatch/));
  // Untouched: loads, every value as saved.
  const again = parseCheckpoint(bytes, 'ck');
  assert.equal(again.optimizer!.step, 1);
  for (const [name, t] of ck.params)
    assert.deepEqual(new Uint8Array(again.params.get(name)!.data.buffer), new Uint8Array(t.data.buffer));
});

test('the file loaders refuse a damaged file naming it (readCheckpointFile, --policy files and run dirs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-ck-'));
  const bytes = sample();
  const damaged = Uint8Array.from(bytes);
  damaged[dataStart(bytes) + 9] ^= 0x04;
  const file = join(dir, 'm.safetensors');
  writeFileSync(file, damaged);
  assert.throws(() => readCheckpointFile(file), refused(/m\.safetensors: checksum mismatch/));
  assert.throws(() => readPolicyCheckpoint(file), refused(/m\.safetensors: checksum mismatch/));
  // A run directory's policy.safetensors, and a file without the extension (probed as safetensors).
  writeFileSync(join(dir, 'policy.safetensors'), damaged);
  assert.throws(() => readPolicyCheckpoint(dir), refused(/policy\.safetensors: checksum mismatch/));
  writeFileSync(join(dir, 'model.bin'), damaged);
  assert.throws(() => readPolicyCheckpoint(join(dir, 'model.bin')), refused(/model\.bin: checksum mismatch/));
  writeFileSync(file, bytes);
  assert.equal(readPolicyCheckpoint(file)?.checkpoint.optimizer?.step, 1);
});

test('checkpoints written before the checksum (turnwise f2fb840) still load', () => {
  for (const name of ['policy.safetensors', 'checkpoint.safetensors']) {
    const path = join(FIXTURES, name);
    const ck = readCheckpointFile(path);
    assert.equal(ck.metadata[CHECKSUM], undefined);
    assert.ok(ck.params.size > 0);
    for (const t of ck.params.values()) assert.ok(t.data.length > 0 && t.data.every(Number.isFinite));
  }
  // The policy: a 16-state × 4-action table (4x4 FrozenLake); loads into a module of that shape.
  const policy = readCheckpointFile(join(FIXTURES, 'policy.safetensors'));
  assert.deepEqual((policy.config as { kind: string }).kind, 'tabular-policy');
  const [[name, saved]] = [...policy.params];
  assert.deepEqual(saved.shape, [16, 4]);
  const table = new Tensor(new Float32Array(64), [16, 4]);
  loadParameters([[name, table]], policy.params, 'fixture');
  assert.deepEqual(table.data, saved.data);
  // The training state: iteration 3 of 4, 64 trajectories, with the Adam state.
  const state = readCheckpointFile(join(FIXTURES, 'checkpoint.safetensors'));
  assert.deepEqual(
    [(state.config as { iter: number }).iter, (state.config as { nextIndex: number }).nextIndex],
    [3, 64],
  );
  // Sealed by today's writer, the same tensors and metadata load to the same values, now verified.
  const raw = decodeSafetensors(readFileSync(join(FIXTURES, 'checkpoint.safetensors')));
  const sealed = parseCheckpoint(encodeCheckpoint(raw.tensors, raw.metadata), 'sealed');
  assert.match(sealed.metadata[CHECKSUM], /^sha256:/);
  assert.deepEqual(sealed.params, state.params);
  assert.deepEqual(sealed.config, state.config);
});
