// The GGUF file of the transformer (export/gguf.ts on nn/gguf.ts), read back by an independent reader
// written from the same specification — @huggingface/gguf — and checked against the model: the header,
// every metadata entry with its GGUF type, the tensor table (names in llama.cpp's order, shapes ne[0]
// first, types, offsets) and the tensor bytes at the offsets that reader reports. Also the number
// formats by brute force and theory: f16 round trips every half, Q8_0's error is at most half a step.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { GGMLQuantizationType, GGUFValueType, gguf } from '@huggingface/gguf';
import { Rng } from '../../src/core/rng.ts';
import { CHAT_TEMPLATE, ggufUnsupported, transformerGguf } from '../../src/export/gguf.ts';
import {
  decodeGguf,
  dequantizeQ8_0,
  encodeGguf,
  f16ToF32,
  f32ToF16,
  GgufError,
  gguf as meta,
  quantizeQ8_0,
  tensorValues,
} from '../../src/nn/gguf.ts';
import { ggufRopePermutation } from '../../src/nn/rope.ts';
import { Tokenizer } from '../../src/nn/tokenizer.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';

const dir = mkdtempSync(join(tmpdir(), 'tw-gguf-'));

function model(o: { kvHeads?: number; tiedHead?: boolean } = {}) {
  const tokenizer = Tokenizer.bytesOnly();
  const config = transformerConfig({ layers: 2, d: 32, heads: 4, vocab: tokenizer.vocabSize, ctx: 64, ...o });
  return { model: new Transformer(config, Rng.derive(3)), tokenizer };
}

test('an independent reader (@huggingface/gguf) reads the header, metadata and tensor table as written, and the tensor bytes at its offsets are the model', async () => {
  for (const variant of [{}, { kvHeads: 2, tiedHead: false }]) {
    const { model: m, tokenizer } = model(variant);
    const c = m.config;
    const file = join(dir, `m-${c.kvHeads}-${c.tiedHead}.gguf`);
    const bytes = transformerGguf(m, tokenizer, {
      name: 'tiny',
      type: 'f32',
      turnwise: { policy: '{"x":1}' },
    });
    writeFileSync(file, bytes);
    const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
    assert.equal(r.metadata.version, 3);
    assert.equal(r.littleEndian, true);
    const t = r.typedMetadata;
    const typed = (k: string) =>
      (t as Record<string, { value: unknown; type: GGUFValueType; subType?: GGUFValueType }>)[k];
    assert.deepEqual(typed('general.architecture'), { value: 'llama', type: GGUFValueType.STRING });
    for (const [k, v] of [
      ['llama.context_length', 64],
      ['llama.embedding_length', 32],
      ['llama.block_count', 2],
      ['llama.feed_forward_length', c.ffn],
      ['llama.attention.head_count', 4],
      ['llama.attention.head_count_kv', c.kvHeads],
      ['llama.rope.dimension_count', 8],
      ['general.file_type', 0],
    ] as const)
      assert.deepEqual(typed(k), { value: v, type: GGUFValueType.UINT32 }, k);
    assert.deepEqual(typed('llama.rope.freq_base'), { value: 10000, type: GGUFValueType.FLOAT32 });
    assert.equal(typed('llama.attention.layer_norm_rms_epsilon').type, GGUFValueType.FLOAT32);
    assert.ok(Math.abs((typed('llama.attention.layer_norm_rms_epsilon').value as number) - 1e-5) < 1e-11);
    assert.deepEqual(typed('tokenizer.ggml.model'), { value: 'gpt2', type: GGUFValueType.STRING });
    assert.deepEqual(typed('tokenizer.ggml.pre'), { value: 'gpt-2', type: GGUFValueType.STRING });
    const tokens = typed('tokenizer.ggml.tokens');
    assert.equal(tokens.type, GGUFValueType.ARRAY);
    assert.equal(tokens.subType, GGUFValueType.STRING);
    assert.equal((tokens.value as string[]).length, c.vocab);
    assert.equal((tokens.value as string[])[32], 'Ġ'); // the space byte in GPT-2's byte-to-unicode form
    assert.equal((tokens.value as string[])[10], 'Ċ');
    assert.equal((tokens.value as string[])[tokenizer.special['<|end|>']], '<|end|>');
    const types = typed('tokenizer.ggml.token_type');
    assert.equal(types.subType, GGUFValueType.INT32);
    assert.deepEqual(
      (types.value as number[])
        .map((x, i) => [i, x])
        .filter(([, x]) => x === 3)
        .map(([i]) => i),
      Object.values(tokenizer.special).sort((a, b) => a - b),
    );
    assert.deepEqual(typed('tokenizer.ggml.eot_token_id'), {
      value: tokenizer.special['<|end|>'],
      type: GGUFValueType.UINT32,
    });
    assert.deepEqual(typed('tokenizer.ggml.add_bos_token'), { value: false, type: GGUFValueType.BOOL });
    assert.equal(typed('tokenizer.chat_template').value, CHAT_TEMPLATE);
    assert.equal(typed('turnwise.policy').value, '{"x":1}');

    // The tensor table: llama.cpp's names, ne[0] first, F32, offsets aligned to 32.
    const names = r.tensorInfos.map((x) => x.name);
    const layer = (i: number) =>
      [
        'attn_norm',
        'attn_q',
        'attn_k',
        'attn_v',
        'attn_output',
        'ffn_norm',
        'ffn_gate',
        'ffn_up',
        'ffn_down',
      ].map((n) => `blk.${i}.${n}.weight`);
    assert.deepEqual(names, [
      'token_embd.weight',
      ...layer(0),
      ...layer(1),
      'output_norm.weight',
      ...(c.tiedHead ? [] : ['output.weight']),
    ]);
    const hd = c.d / c.heads;
    const byName = new Map(m.namedParameters());
    const expect: Record<string, [string, number?]> = {
      'token_embd.weight': ['model.embed_tokens.weight'],
      'output_norm.weight': ['model.norm.weight'],
      'output.weight': ['lm_head.weight'],
      'blk.1.attn_q.weight': ['model.layers.1.self_attn.q_proj.weight', c.heads],
      'blk.1.attn_k.weight': ['model.layers.1.self_attn.k_proj.weight', c.kvHeads],
      'blk.1.attn_v.weight': ['model.layers.1.self_attn.v_proj.weight'],
      'blk.0.ffn_down.weight': ['model.layers.0.mlp.down_proj.weight'],
    };
    for (const info of r.tensorInfos) {
      assert.equal(info.dtype, GGMLQuantizationType.F32, info.name);
      assert.equal(Number(info.offset) % 32, 0, info.name);
      const want = expect[info.name];
      if (want === undefined) continue;
      const p = byName.get(want[0]);
      assert.ok(p !== undefined, want[0]);
      assert.deepEqual(info.shape.map(Number), [...p.shape].reverse(), info.name);
      const at = Number(r.tensorDataOffset + info.offset);
      const data = new Float32Array(bytes.slice(at, at + 4 * p.size).buffer);
      const values =
        want[1] === undefined ? p.data : ggufRopePermutation(p.data, p.shape[0], p.shape[1], want[1]);
      assert.deepEqual(data, values, info.name);
    }
    assert.equal(hd, 8);
  }
});

test('the rope permutation of q/k rows: GGUF row h·hd + 2i + j is row h·hd + j·hd/2 + i (convert_hf_to_gguf)', () => {
  const rows = 8; // 2 heads of width 4
  const w = Float32Array.from({ length: rows * 2 }, (_, k) => Math.floor(k / 2)); // each row filled with its index
  const p = ggufRopePermutation(w, rows, 2, 2);
  assert.deepEqual(
    Array.from({ length: rows }, (_, r) => p[2 * r]),
    [0, 2, 1, 3, 4, 6, 5, 7],
  );
});

test('f16: every half round-trips through f32; rounding to nearest, ties to even; overflow to infinity', () => {
  for (let h = 0; h < 0x10000; h++) {
    const x = f16ToF32(h);
    if (Number.isNaN(x)) continue;
    assert.equal(f32ToF16(x), h, `half ${h.toString(16)}`);
  }
  assert.equal(f32ToF16(1), 0x3c00);
  assert.equal(f32ToF16(65504), 0x7bff);
  assert.equal(f32ToF16(2 ** -24), 0x0001);
  assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00); // tie → even
  assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02); // tie → even (up)
  assert.equal(f32ToF16(70000), 0x7c00);
  assert.equal(f32ToF16(-0), 0x8000);
});

test('Q8_0: each value comes back within half a quantisation step d = f16(max|x|/127) of its block', () => {
  const rng = Rng.derive(9);
  const x = Float32Array.from({ length: 32 * 50 }, (_, i) =>
    i < 32 ? 0 : (rng.float() - 0.5) * 2 ** (i % 7),
  );
  const q = quantizeQ8_0(x);
  assert.equal(q.length, 50 * 34);
  const y = dequantizeQ8_0(q, x.length);
  for (let b = 0; b < 50; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
    const d = f16ToF32(f32ToF16(amax / 127));
    for (let j = 0; j < 32; j++) {
      const err = Math.abs(y[b * 32 + j] - x[b * 32 + j]);
      // half a step, plus what the f16 scale's rounding moves the farthest value (|q| ≤ 127).
      assert.ok(
        err <= d / 2 + 127 * Math.abs(d - amax / 127) + 1e-7,
        `block ${b} value ${j}: error ${err}, d ${d}`,
      );
    }
  }
  assert.ok(y.slice(0, 32).every((v) => v === 0));
});

test('a Q8_0 file: matrices in Q8_0, norms in F32, file type 7; a width that is not whole blocks is refused', async () => {
  const { model: m, tokenizer } = model();
  assert.equal(ggufUnsupported(m, 'q8_0'), undefined);
  const file = join(dir, 'q8.gguf');
  const bytes = transformerGguf(m, tokenizer, { name: 'tiny', type: 'q8_0' });
  writeFileSync(file, bytes);
  const r = await gguf(file, { allowLocalFile: true });
  assert.equal((r.metadata as Record<string, unknown>)['general.file_type'], 7);
  for (const t of r.tensorInfos)
    assert.equal(
      t.dtype,
      t.name.endsWith('norm.weight') ? GGMLQuantizationType.F32 : GGMLQuantizationType.Q8_0,
      t.name,
    );
  const ours = decodeGguf(readFileSync(file));
  const emb = tensorValues(ours, bytes, 'token_embd.weight');
  assert.deepEqual(emb.shape, [m.config.vocab, 32]);
  const src = m.namedParameters().find(([n]) => n === 'model.embed_tokens.weight')?.[1].data as Float32Array;
  let worst = 0;
  let amax = 0;
  for (let i = 0; i < src.length; i++) {
    worst = Math.max(worst, Math.abs(src[i] - emb.data[i]));
    amax = Math.max(amax, Math.abs(src[i]));
  }
  // At most half a step of the widest block (d = max|x|/127), plus the f16 scale's rounding.
  assert.ok(worst <= (amax / 254) * 1.01 && worst > 0, `Q8_0 worst error ${worst}, max |x| ${amax}`);
  const odd = transformerConfig({ layers: 1, d: 48, heads: 4, vocab: tokenizer.vocabSize });
  assert.match(String(ggufUnsupported(new Transformer(odd, Rng.derive(1)), 'q8_0')), /blocks of 32/);
});

test('the reader refuses what is not GGUF, a truncated file and an unknown version, naming what is wrong', () => {
  const good = encodeGguf(new Map([['general.architecture', meta.str('llama')]]), [
    { name: 'w', shape: [2, 32], data: new Float32Array(64), type: 'F32' },
  ]);
  assert.equal(decodeGguf(good).tensors[0].bytes, 256);
  assert.throws(
    () => decodeGguf(new TextEncoder().encode('{"not": "gguf", "padding": "................"}')),
    (e) => {
      assert.ok(e instanceof GgufError);
      assert.match(e.message, /magic "GGUF"/);
      return true;
    },
  );
  assert.throws(() => decodeGguf(good.subarray(0, good.length - 100)), /truncated/);
  const v9 = good.slice();
  new DataView(v9.buffer).setUint32(4, 9, true);
  assert.throws(() => decodeGguf(v9), /version 9/);
  assert.throws(() => decodeGguf(good.subarray(0, 10)), /shorter than a GGUF header/);
});
