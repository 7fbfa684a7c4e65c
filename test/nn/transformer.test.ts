// The Llama-layout transformer: names and counts, seeded init, the whole model against finite
// differences, a tiny model overfitting one sequence, and the checkpoint round trip.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import { checkpointBytes } from '../../src/nn/checkpoint.ts';
import { Adam } from '../../src/nn/optim.ts';
import { crossEntropy } from '../../src/nn/softmax.ts';
import { backward, noGrad } from '../../src/nn/tensor.ts';
import { checkTransformerConfig, Transformer, transformerConfig } from '../../src/nn/transformer.ts';
import {
  loadTransformer,
  saveTransformer,
  transformerCheckpointBytes,
  transformerFromBytes,
} from '../../src/nn/transformer-checkpoint.ts';
import { gradCheck, randomData } from './gradcheck.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];

test("parameter names are HF Llama's, counts follow the layout, the tied head is the embedding", () => {
  const c = transformerConfig({ layers: 2, d: 16, heads: 4, kvHeads: 2, ffn: 24, vocab: 11, ctx: 8 });
  const m = new Transformer(c, Rng.derive(1));
  const names = m.namedParameters().map(([n]) => n);
  assert.deepEqual(names.slice(0, 10), [
    'model.embed_tokens.weight',
    'model.layers.0.input_layernorm.weight',
    'model.layers.0.self_attn.q_proj.weight',
    'model.layers.0.self_attn.k_proj.weight',
    'model.layers.0.self_attn.v_proj.weight',
    'model.layers.0.self_attn.o_proj.weight',
    'model.layers.0.post_attention_layernorm.weight',
    'model.layers.0.mlp.gate_proj.weight',
    'model.layers.0.mlp.up_proj.weight',
    'model.layers.0.mlp.down_proj.weight',
  ]);
  assert.equal(names.at(-1), 'model.norm.weight');
  const { d, ffn, vocab, layers } = c;
  const kv = 2 * (d / 4); // kvHeads · hd
  const perLayer = 2 * d + d * d + 2 * kv * d + d * d + 3 * d * ffn;
  assert.equal(m.parameterCount(), vocab * d + layers * perLayer + d);
  assert.equal(m.matmulParameterCount(), vocab * d + layers * (perLayer - 2 * d));
  assert.equal(m.head, m.embed);
  const untied = new Transformer({ ...c, tiedHead: false }, Rng.derive(1));
  assert.equal(untied.namedParameters().at(-1)![0], 'lm_head.weight');
  assert.equal(untied.parameterCount(), m.parameterCount() + vocab * d);
  assert.equal(transformerConfig({ layers: 1, d: 128, vocab: 5 }).ffn, 352); // 8·128/3 = 341.3 → 352
});

test('same seed, same bytes; the residual projections start smaller', () => {
  const c = transformerConfig({ layers: 2, d: 16, heads: 2, vocab: 9, ctx: 8 });
  const a = new Transformer(c, Rng.derive(5)).namedParameters();
  const b = new Transformer(c, Rng.derive(5)).namedParameters();
  const other = new Transformer(c, Rng.derive(6)).namedParameters();
  a.forEach(([n, t], i) => {
    assert.deepEqual(bits(t.data), bits(b[i][1].data), n);
  });
  assert.notDeepEqual(bits(a[0][1].data), bits(other[0][1].data));
  const std = (x: Float32Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
  const m = new Transformer(transformerConfig({ layers: 4, d: 64, heads: 4, vocab: 64 }), Rng.derive(2));
  assert.ok(Math.abs(std(m.blocks[0].wq.data) - 0.02) < 0.001);
  assert.ok(Math.abs(std(m.blocks[0].wo.data) - 0.02 / Math.sqrt(8)) < 0.0005);
});

test('bad configs are refused with the field named', () => {
  const ok = transformerConfig({ layers: 1, d: 8, heads: 2, vocab: 5 });
  const refuse = (patch: Record<string, unknown>, re: RegExp) =>
    assert.throws(
      () => checkTransformerConfig({ ...ok, ...patch }),
      (e: unknown) => e instanceof InputError && re.test((e as Error).message),
    );
  refuse({ d: 12, heads: 4 }, /^transformer\.d: got 12; a multiple of 2·heads \(8\)/);
  refuse({ kvHeads: 3 }, /^transformer\.kvHeads: got 3; a divisor of heads \(2\)/);
  refuse({ layers: 0 }, /^transformer\.layers: got 0; an integer in/);
  refuse({ vocab: 2.5 }, /^transformer\.vocab: got 2\.5/);
  refuse({ tiedHead: 'yes' }, /^transformer\.tiedHead: got "yes"; true or false/);
  refuse({ dropout: 0.1 }, /^transformer\.dropout: got 0\.1; no such field/);
});

test('the whole model against finite differences (GQA, untied head, ragged key mask)', () => {
  const c = transformerConfig({
    layers: 2,
    d: 8,
    heads: 2,
    kvHeads: 1,
    ffn: 8,
    vocab: 7,
    ctx: 8,
    tiedHead: false,
  });
  const m = new Transformer(c, Rng.derive(3));
  // Weights of order 1 (the 0.02 init would leave every gradient tiny next to the FD tolerance).
  m.parameters().forEach((p, i) => {
    p.data.set(randomData(p.size, 200 + i, 0.6));
  });
  const ids = Int32Array.of(1, 4, 6, 0, 2, 2, 5, 3);
  const keyMask = Uint8Array.of(1, 1, 1, 1, 0, 1, 1, 1); // row 1 is left-padded by one token
  const positions = Int32Array.of(0, 1, 2, 3, 0, 0, 1, 2);
  // h = 3e-3, not the default 1e-2: through two layers of RMSNorm the loss is curved enough that the
  // central difference's truncation error (h²·f'''/6) at 1e-2 reaches ~2% on some embedding entries;
  // at 3e-3 it is 10× smaller while float32 rounding (~1e-7·|L|/h) stays far below the tolerance.
  const r = gradCheck(() => m.forward(ids, [2, 4], { keyMask, positions }), m.parameters(), { h: 3e-3 });
  assert.ok(r.worst <= 1, r.where);
  assert.ok(r.relative < 5e-4, `relative ${r.relative}`);
});

test('a tiny model overfits one sequence: loss → ~0 in 150 Adam steps', () => {
  const c = transformerConfig({ layers: 2, d: 32, heads: 4, vocab: 16, ctx: 32 });
  const m = new Transformer(c, Rng.derive(0));
  const rng = Rng.derive(9);
  const seq = Int32Array.from({ length: 25 }, () => rng.int(16));
  const input = seq.subarray(0, 24);
  const targets = seq.slice(1);
  const opt = new Adam(m.namedParameters(), { lr: 1e-2 });
  let first = 0;
  let loss = 0;
  for (let step = 0; step < 150; step++) {
    opt.zeroGrad();
    const l = crossEntropy(m.forward(input, [1, 24]), targets);
    loss = l.item();
    if (step === 0) first = loss;
    backward(l);
    opt.step();
  }
  assert.ok(Math.abs(first - Math.log(16)) < 0.1, `initial loss ${first} vs ln 16`);
  assert.ok(loss < 0.02, `final loss ${loss}`);
});

test('save/load round trip: same config, same tensors, same logits bit for bit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tw-transformer-'));
  for (const tiedHead of [true, false]) {
    const c = transformerConfig({
      layers: 2,
      d: 16,
      heads: 4,
      kvHeads: 2,
      vocab: 13,
      ctx: 16,
      tiedHead,
      ropeTheta: 500,
    });
    const m = new Transformer(c, Rng.derive(4));
    const opt = new Adam(m.namedParameters(), { lr: 1e-3 });
    const ids = Int32Array.of(3, 1, 4, 1, 5, 9);
    opt.zeroGrad();
    backward(crossEntropy(m.forward(ids, [1, 6]), Int32Array.of(1, 4, 1, 5, 9, 2)));
    opt.step();
    const path = join(dir, `m-${tiedHead}.safetensors`);
    saveTransformer(path, m, opt, { note: 'hello' });
    const { model, checkpoint } = loadTransformer(path);
    assert.deepEqual(model.config, c);
    assert.equal(checkpoint.metadata.note, 'hello');
    assert.equal(checkpoint.optimizer?.step, 1);
    assert.equal(model.head === model.embed, tiedHead);
    const before = noGrad(() => m.forward(ids, [2, 3])).data;
    const after = noGrad(() => model.forward(ids, [2, 3])).data;
    assert.deepEqual(bits(after), bits(before));
    assert.deepEqual(
      bits(transformerFromBytes(transformerCheckpointBytes(m), 'mem').embed.data),
      bits(m.embed.data),
    );
  }
  // Refusals: another kind of checkpoint, and a tensor of the wrong shape.
  const mlp = join(dir, 'mlp.safetensors');
  writeFileSync(mlp, checkpointBytes([], { kind: 'mlp' }));
  assert.throws(() => loadTransformer(mlp), /not a transformer checkpoint/);
  const m = new Transformer(transformerConfig({ layers: 1, d: 8, heads: 2, vocab: 5 }), Rng.derive(0));
  const bytes = checkpointBytes(m.namedParameters(), { arch: 'llama', ...m.config, vocab: 6 });
  assert.throws(
    () => transformerFromBytes(bytes, 'x.safetensors'),
    /model\.embed_tokens\.weight.*shape \[5, 8\].*\[6, 8\]/,
  );
});
