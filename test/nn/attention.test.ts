// Attention over a packed batch whose rows share a prefix (prefixAttention, Transformer.hiddenPacked):
// each row's output is, bit for bit, attention() over that row written out whole; the gradient of every
// input equals, to float rounding, the gradient through the rows written out whole (the prefix's is the
// sum over the rows); finite differences; and packPrefix's layout.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { attention, layoutTokens, packPrefix, prefixAttention } from '../../src/nn/attention.ts';
import { embedding } from '../../src/nn/ops.ts';
import { reshape } from '../../src/nn/shape-ops.ts';
import { backward, noGrad, parameter, type Tensor } from '../../src/nn/tensor.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';
import { gradCheck, randomData } from './gradcheck.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];

/** Flat token indices of row b written out whole: the prefix's, then its own. */
function rowIndices(prefix: number, rows: readonly number[], b: number): Int32Array<ArrayBuffer> {
  let start = prefix;
  for (let i = 0; i < b; i++) start += rows[i];
  return Int32Array.from({ length: prefix + rows[b] }, (_, j) => (j < prefix ? j : start + j - prefix));
}

/** The largest |a − b| relative to the largest |b|. */
function relErr(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return d / m;
}

// Rows of different lengths: empty, one token, short, and one past a 64-row query block.
const cases = [
  { prefix: 3, rows: [5, 0, 1, 70] },
  { prefix: 0, rows: [4, 2] },
  { prefix: 66, rows: [2, 9] },
  { prefix: 5, rows: [] },
];

test('prefixAttention: each row is attention() over it written out whole, bit for bit; gradients equal that path’s', () => {
  let seed = 11;
  for (const { prefix, rows } of cases) {
    const layout = { prefix, rows };
    const N = layoutTokens(layout);
    const [Hq, Hkv, hd] = [4, 2, 6];
    const q = parameter(randomData(N * Hq * hd, seed++), [N, Hq, hd]);
    const k = parameter(randomData(N * Hkv * hd, seed++), [N, Hkv, hd]);
    const v = parameter(randomData(N * Hkv * hd, seed++), [N, Hkv, hd]);
    const w = randomData(N * Hq * hd, seed++);
    const y = prefixAttention(q, k, v, layout);
    backward(y, w);
    const packed = [q, k, v].map((x) => Float32Array.from(x.grad ?? []));
    for (const x of [q, k, v]) x.grad = null;
    // The same loss through the rows written out whole: the prefix's outputs weighed in the first row
    // only (or alone when there is no row), each row's own outputs in its row.
    const flat = (x: Tensor, H: number) => reshape(x, [N, H * hd]);
    const segments: Int32Array<ArrayBuffer>[] =
      rows.length === 0 ? [Int32Array.from({ length: prefix }, (_, j) => j)] : [];
    rows.forEach((_, b) => {
      segments.push(rowIndices(prefix, rows, b));
    });
    segments.forEach((idx, b) => {
      const n = idx.length;
      if (n === 0) return;
      const pick = (x: Tensor, H: number) => reshape(embedding(flat(x, H), idx), [1, n, H, hd]);
      const out = attention(pick(q, Hq), pick(k, Hkv), pick(v, Hkv), { causal: true, kvOffset: 0 });
      const wr = new Float32Array(n * Hq * hd);
      for (let j = 0; j < n; j++) {
        if (j < prefix && b > 0) continue;
        for (let i = 0; i < Hq * hd; i++) wr[j * Hq * hd + i] = w[idx[j] * Hq * hd + i];
        assert.deepEqual(
          bits(out.data.subarray(j * Hq * hd, (j + 1) * Hq * hd)),
          bits(y.data.subarray(idx[j] * Hq * hd, (idx[j] + 1) * Hq * hd)),
          `prefix ${prefix} rows [${rows}]: row ${b} token ${j}`,
        );
      }
      backward(out, wr);
    });
    [q, k, v].forEach((x, i) => {
      const e = relErr(packed[i], x.grad ?? new Float32Array(x.size));
      assert.ok(e < 1e-6, `prefix ${prefix} rows [${rows}]: ${'qkv'[i]} gradient off by ${e}`);
    });
  }
});

test('prefixAttention: finite differences for q, k and v (GQA, a row of 0 tokens)', () => {
  const layout = { prefix: 3, rows: [2, 0, 4] };
  const N = layoutTokens(layout);
  const q = parameter(randomData(N * 4 * 4, 51), [N, 4, 4]);
  const k = parameter(randomData(N * 2 * 4, 52), [N, 2, 4]);
  const v = parameter(randomData(N * 2 * 4, 53), [N, 2, 4]);
  const r = gradCheck(() => prefixAttention(q, k, v, layout), [q, k, v]);
  assert.ok(r.worst <= 1, `${r.where} (worst ${r.worst.toFixed(2)})`);
  assert.ok(r.relative < 5e-4, `relative error ${r.relative}`);
});

test('packPrefix: the longest common prefix once, then each sequence’s rest; at() finds every token', () => {
  const seqs = [
    [7, 1, 2, 3, 4],
    [7, 1, 2, 9],
    [7, 1, 2],
  ];
  const p = packPrefix(seqs);
  assert.deepEqual(p.layout, { prefix: 3, rows: [2, 1, 0] });
  assert.deepEqual([...p.ids], [7, 1, 2, 3, 4, 9]);
  seqs.forEach((s, b) => {
    s.forEach((id, j) => {
      assert.equal(p.ids[p.at(b, j)], id);
    });
  });
  assert.deepEqual(packPrefix([[4, 5]]).layout, { prefix: 2, rows: [0] });
  assert.deepEqual(packPrefix([[1], [2]]).layout, { prefix: 0, rows: [1, 1] });
});

test('hiddenPacked: a shared prefix read by rows of different lengths gives hidden()’s bits and its gradients', () => {
  const c = transformerConfig({ layers: 2, d: 16, heads: 4, kvHeads: 2, ffn: 32, vocab: 13, ctx: 96 });
  const model = new Transformer(c, Rng.derive(5));
  const rng = Rng.derive(6);
  const prefix = Array.from({ length: 4 }, () => rng.int(13));
  const seqs = [9, 1, 0, 75].map((n) => [...prefix, ...Array.from({ length: n }, () => rng.int(13))]);
  seqs[1][4] = seqs[0][4] === 3 ? 4 : 3; // rows 0 and 1 part after the prefix
  const p = packPrefix(seqs);
  assert.deepEqual(p.layout, { prefix: 4, rows: [9, 1, 0, 75] });
  const params = model.namedParameters().map(([, t]) => t);
  const N = layoutTokens(p.layout);
  const w = randomData(N * c.vocab, 8);
  // Packed: the logits of every packed token, weighed by w.
  const packedLogits = model.logits(model.hiddenPacked(p.ids, p.layout));
  backward(packedLogits, w);
  const packedGrads = params.map((t) => Float32Array.from(t.grad ?? []));
  for (const t of params) t.grad = null;
  // Written out whole (each sequence its own row, padded), the prefix's tokens weighed in row 0 only.
  const T = Math.max(...seqs.map((s) => s.length));
  const ids = new Int32Array(seqs.length * T);
  seqs.forEach((s, b) => {
    ids.set(s, b * T);
  });
  const whole = model.forward(ids, [seqs.length, T]); // (B·T, vocab)
  const ww = new Float32Array(whole.size);
  seqs.forEach((s, b) => {
    s.forEach((_, j) => {
      const i = p.at(b, j);
      if (j < p.layout.prefix && b > 0) return;
      for (let x = 0; x < c.vocab; x++) ww[(b * T + j) * c.vocab + x] = w[i * c.vocab + x];
      assert.deepEqual(
        bits(whole.data.subarray((b * T + j) * c.vocab, (b * T + j + 1) * c.vocab)),
        bits(packedLogits.data.subarray(i * c.vocab, (i + 1) * c.vocab)),
        `row ${b} token ${j}`,
      );
    });
  });
  backward(whole, ww);
  params.forEach((t, i) => {
    const e = relErr(packedGrads[i], t.grad ?? new Float32Array(t.size));
    assert.ok(e < 1e-5, `${model.namedParameters()[i][0]}: gradient off by ${e}`);
  });
  // Under noGrad too (the learner's log-probs).
  const again = noGrad(() => model.logits(model.hiddenPacked(p.ids, p.layout)));
  assert.deepEqual(bits(again.data), bits(packedLogits.data));
});
