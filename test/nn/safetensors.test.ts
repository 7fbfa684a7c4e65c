// safetensors: the reference implementation's own byte-level vectors, round trips, refusals.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import {
  checkpointBytes,
  loadOptimizer,
  loadParameters,
  parseCheckpoint,
  readCheckpointFile,
  writeCheckpoint,
} from '../../src/nn/checkpoint.ts';
import { MLP } from '../../src/nn/layers.ts';
import { Adam } from '../../src/nn/optim.ts';
import { decodeSafetensors, encodeSafetensors } from '../../src/nn/safetensors.ts';
import { crossEntropy } from '../../src/nn/softmax.ts';
import { backward, noGrad, tensor } from '../../src/nn/tensor.ts';

const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const u64 = (n: number) => [n, 0, 0, 0, 0, 0, 0, 0];
const f32le = (xs: number[]) => [...new Uint8Array(Float32Array.from(xs).buffer)];

test('byte-identical to the reference writer (huggingface/safetensors tensor.rs tests)', () => {
  // test_serialization_forced_alignement: the 65-byte JSON is padded with 7 spaces to 72.
  const one = encodeSafetensors([
    ['attn0', { shape: [1, 1, 2, 3], data: Float32Array.of(0, 1, 2, 3, 4, 5) }],
  ]);
  const json = '{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}';
  assert.equal(json.length, 65);
  assert.deepEqual([...one], [...u64(72), ...ascii(json), ...ascii('       '), ...f32le([0, 1, 2, 3, 4, 5])]);
  assert.deepEqual([...one.subarray(-8)], [0, 0, 128, 64, 0, 0, 160, 64]); // 4.0f, 5.0f little-endian
  // test_serialization: a 64-byte JSON needs no padding.
  const two = encodeSafetensors([['attn.0', { shape: [1, 2, 3], data: Float32Array.of(0, 1, 2, 3, 4, 5) }]]);
  assert.deepEqual([...two.subarray(0, 8)], u64(64));
  // test_empty: `{}` padded to 8; metadata alone padded from 35 to 40.
  assert.deepEqual([...encodeSafetensors([])], [...u64(8), 123, 125, 32, 32, 32, 32, 32, 32]);
  const meta = encodeSafetensors([], { framework: 'pt' });
  assert.deepEqual(
    [...meta],
    [...u64(40), ...ascii('{"__metadata__":{"framework":"pt"}}'), 32, 32, 32, 32, 32],
  );
  // Tensors are laid out in name order whatever the input order, each right after the previous.
  const two3 = encodeSafetensors([
    ['b', { shape: [1], data: Float32Array.of(2) }],
    ['a', { shape: [2], data: Float32Array.of(0, 1) }],
  ]);
  const header = new TextDecoder().decode(
    two3.subarray(8, 8 + Number(new DataView(two3.buffer).getBigUint64(0, true))),
  );
  assert.equal(
    header.trimEnd(),
    '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}',
  );
  assert.equal((8 + header.length) % 8, 0);
});

test('round trip: values, shapes and metadata; subnormals, ±0, ±∞ and NaN survive bit for bit', () => {
  const data = Float32Array.of(
    1e-45,
    -0,
    0,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    Number.NaN,
    3.4e38,
  );
  const bytes = encodeSafetensors(
    [
      ['x', { shape: [7], data }],
      ['empty', { shape: [0, 3], data: new Float32Array(0) }],
    ],
    {
      config: '{"a":1}',
    },
  );
  const back = decodeSafetensors(bytes);
  assert.deepEqual(back.metadata, { config: '{"a":1}' });
  assert.deepEqual(back.tensors.get('empty')!.shape, [0, 3]);
  const x = back.tensors.get('x')!;
  assert.deepEqual(x.shape, [7]);
  assert.deepEqual(new Uint8Array(x.data.buffer), new Uint8Array(data.buffer));
});

test('a corrupted file is refused with one line naming the problem', () => {
  const good = encodeSafetensors([['w', { shape: [2, 2], data: Float32Array.of(1, 2, 3, 4) }]]);
  const n = Number(new DataView(good.buffer).getBigUint64(0, true));
  const withHeader = (json: string, dataBytes = 16) => {
    const h = new TextEncoder().encode(json);
    const out = new Uint8Array(8 + h.length + dataBytes);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    return out;
  };
  const cases: [string, Uint8Array, RegExp][] = [
    ['truncated to 5 bytes', good.subarray(0, 5), /shorter than the 8-byte header size/],
    ['cut inside the header', good.subarray(0, 20), /runs past the end of the file/],
    [
      'cut inside the data',
      good.subarray(0, good.length - 1),
      /cover 16 bytes of data but the file holds 15/,
    ],
    ['a byte appended', Uint8Array.from([...good, 0]), /file holds 17/],
    [
      'huge header size',
      Uint8Array.from([0, 0, 0, 0, 0, 1, 0, 0, ...good.subarray(8)]),
      /over the 100 MB limit/,
    ],
    ['not JSON', withHeader('{"w": nope}'), /not valid JSON/],
    ['not an object', withHeader('[1, 2]'), /does not start with \{/],
    [
      'F16 tensor',
      withHeader('{"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}', 8),
      /dtype "F16"; only F32/,
    ],
    [
      'size vs shape',
      withHeader('{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}}'),
      /do not hold shape \[2, 3\]/,
    ],
    [
      'a gap',
      withHeader(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}',
      ),
      /"b" starts at 8, expected 4/,
    ],
    ['metadata not strings', withHeader('{"__metadata__":{"n":1}}', 0), /__metadata__.n is not a string/],
  ];
  assert.equal(n % 8, 0);
  for (const [name, bytes, message] of cases) {
    assert.throws(
      () => decodeSafetensors(bytes, 'model.safetensors'),
      (e: unknown) =>
        e instanceof InputError &&
        message.test(e.message) &&
        !e.message.includes('\n') &&
        e.message.startsWith('model.safetensors: '),
      name,
    );
  }
});

function trainedPair() {
  const net = new MLP([6, 16, 16, 3], Rng.derive(5), 'gelu');
  const opt = new Adam(net.namedParameters(), { lr: 0.01, weightDecay: 0.01, decoupled: true });
  const x = tensor(
    Float32Array.from({ length: 8 * 6 }, (_, i) => Math.sin(i)),
    [8, 6],
  );
  const y = Int32Array.from({ length: 8 }, (_, i) => i % 3);
  const stepOnce = (n: MLP, o: Adam) => {
    o.zeroGrad();
    backward(crossEntropy(n.forward(x), y));
    o.step();
  };
  for (let s = 0; s < 3; s++) stepOnce(net, opt);
  return { net, opt, x, stepOnce };
}

test('checkpoint: save → load gives bit-identical outputs, and training continues bit-identically', () => {
  const { net, opt, x, stepOnce } = trainedPair();
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-nn-'));
  const path = join(dir, 'model.safetensors');
  writeCheckpoint(path, checkpointBytes(net.namedParameters(), { sizes: [6, 16, 16, 3] }, opt));
  const ck = readCheckpointFile(path);
  assert.deepEqual(ck.config, { sizes: [6, 16, 16, 3] });
  assert.deepEqual(
    [...ck.params.keys()].sort(),
    net
      .namedParameters()
      .map(([n]) => n)
      .sort(),
  );
  assert.equal(ck.optimizer!.step, 3);
  assert.equal(ck.optimizer!.kind, 'adamw');

  const fresh = new MLP([6, 16, 16, 3], Rng.derive(99), 'gelu'); // different init, overwritten
  loadParameters(fresh.namedParameters(), ck.params, path);
  const out = (n: MLP) => noGrad(() => n.forward(x)).data;
  assert.deepEqual(new Uint8Array(out(fresh).buffer), new Uint8Array(out(net).buffer));

  const freshOpt = new Adam(fresh.namedParameters(), { lr: 0.01, weightDecay: 0.01, decoupled: true });
  loadOptimizer(freshOpt, ck.optimizer, path);
  stepOnce(net, opt);
  stepOnce(fresh, freshOpt);
  assert.deepEqual(new Uint8Array(out(fresh).buffer), new Uint8Array(out(net).buffer));
});

test('checkpoint: a mismatched model or file is refused with one line naming the tensor', () => {
  const { net, opt } = trainedPair();
  const bytes = checkpointBytes(net.namedParameters(), {}, opt);
  const ck = parseCheckpoint(bytes, 'ck.safetensors');
  const oneLine = (re: RegExp) => (e: unknown) =>
    e instanceof InputError && re.test(e.message) && !e.message.includes('\n');
  const wider = new MLP([6, 32, 16, 3], Rng.derive(1), 'gelu');
  assert.throws(
    () => loadParameters(wider.namedParameters(), ck.params, 'ck.safetensors'),
    oneLine(/^ck.safetensors: tensor "layers.0.weight" has shape \[16, 6\], the model expects \[32, 6\]$/),
  );
  const deeper = new MLP([6, 16, 16, 16, 3], Rng.derive(1), 'gelu');
  assert.throws(
    () => loadParameters(deeper.namedParameters(), ck.params, 'ck'),
    oneLine(/tensor "layers.2.weight" has shape \[3, 16\], the model expects \[16, 16\]/),
  );
  const partial = new Map(ck.params);
  partial.delete('layers.1.bias');
  assert.throws(
    () => loadParameters(net.namedParameters(), partial, 'ck'),
    oneLine(/tensor "layers.1.bias" is missing/),
  );
  const shallower = new MLP([6, 16, 3], Rng.derive(1), 'gelu');
  assert.throws(
    () => loadParameters(shallower.namedParameters(), ck.params, 'ck'),
    oneLine(/unexpected tensor "layers.2.bias"/),
  );
  const sgdLike = new Adam(net.namedParameters());
  assert.throws(
    () => loadOptimizer(sgdLike, ck.optimizer, 'ck'),
    oneLine(/optimizer state is adamw, not adam/),
  );
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-nn-'));
  const bad = join(dir, 'bad.safetensors');
  writeFileSync(bad, bytes.subarray(0, bytes.length - 4));
  assert.throws(() => readCheckpointFile(bad), oneLine(/bad.safetensors: not a valid safetensors file/));
  assert.throws(
    () => readCheckpointFile(join(dir, 'none.safetensors')),
    oneLine(/cannot read checkpoint \(ENOENT\)/),
  );
});
