// The Llama ops (RMSNorm, SwiGLU, rotary, fused attention, masked cross-entropy) against finite
// differences (gradcheck.ts) and against plain double-precision references written from the formulas.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AttentionOptions, attention } from '../../src/nn/attention.ts';
import { rmsNorm, swiglu } from '../../src/nn/llama-ops.ts';
import { linear } from '../../src/nn/ops.ts';
import { ggufRopePermutation, rope } from '../../src/nn/rope.ts';
import { reshape } from '../../src/nn/shape-ops.ts';
import { crossEntropy } from '../../src/nn/softmax.ts';
import { backward, parameter, type Tensor } from '../../src/nn/tensor.ts';
import { gradCheck, randomData } from './gradcheck.ts';

let seed = 101;
const p = (...shape: number[]) =>
  parameter(
    randomData(
      shape.reduce((a, b) => a * b, 1),
      seed++,
    ),
    shape,
  );

function check(name: string, f: () => Tensor, inputs: Tensor[]) {
  const r = gradCheck(f, inputs);
  assert.ok(r.worst <= 1, `${name}: ${r.where} (worst ${r.worst.toFixed(2)})`);
  assert.ok(r.relative < 5e-4, `${name}: relative error ${r.relative}`);
}

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++)
    assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('rmsNorm: the formula, and finite differences for x and w', () => {
  const x = p(3, 6);
  const w = p(6);
  const y = rmsNorm(x, w, 1e-5);
  for (let r = 0; r < 3; r++) {
    let ms = 0;
    for (let d = 0; d < 6; d++) ms += x.data[r * 6 + d] ** 2 / 6;
    for (let d = 0; d < 6; d++) {
      const want = (x.data[r * 6 + d] / Math.sqrt(ms + 1e-5)) * w.data[d];
      assert.ok(Math.abs(y.data[r * 6 + d] - want) < 1e-6);
    }
  }
  check('rmsNorm', () => rmsNorm(x, w), [x, w]);
  const x3 = p(2, 2, 5);
  const w3 = p(5);
  check('rmsNorm (B, T, D)', () => rmsNorm(x3, w3, 1e-6), [x3, w3]);
});

test('swiglu: silu(gate)·up, and finite differences for both inputs', () => {
  const gate = parameter(randomData(12, seed++, 4), [3, 4]);
  const up = p(3, 4);
  const y = swiglu(gate, up);
  for (let i = 0; i < 12; i++) {
    const z = gate.data[i];
    assert.ok(Math.abs(y.data[i] - (z / (1 + Math.exp(-z))) * up.data[i]) < 1e-6);
  }
  check('swiglu', () => swiglu(gate, up), [gate, up]);
  // Saturation: no NaN at float32 extremes.
  const big = parameter(Float32Array.of(-1e30, 1e30, -100, 100), [4]);
  const one = parameter(Float32Array.of(1, 1, 1, 1), [4]);
  const silu = (z: number) => Math.fround(Math.fround(z) / (1 + Math.exp(-Math.fround(z))));
  assert.deepEqual([...swiglu(big, one).data], [-1e30, 1e30, -100, 100].map(silu));
});

/** HF Llama's rotary written from transformers' formulas: cos/sin of cat(freqs, freqs), rotate_half. */
function ropeReference(x: Float32Array, H: number, hd: number, positions: Int32Array, base: number) {
  const out = new Float64Array(x.length);
  const half = hd / 2;
  for (let n = 0; n < positions.length; n++) {
    for (let h = 0; h < H; h++) {
      const o = (n * H + h) * hd;
      for (let j = 0; j < hd; j++) {
        const i = j % half;
        const ang = positions[n] / base ** ((2 * i) / hd);
        const rotated = j < half ? -x[o + j + half] : x[o + j - half]; // rotate_half
        out[o + j] = x[o + j] * Math.cos(ang) + rotated * Math.sin(ang);
      }
    }
  }
  return out;
}

test('rope: HF rotate_half values, rotation invariants and finite differences', () => {
  const [B, T, H, hd] = [2, 3, 2, 8];
  const x = p(B, T, H, hd);
  const positions = Int32Array.from([0, 1, 2, 5, 6, 300]);
  const y = rope(x, positions, 10000);
  close(y.data, ropeReference(x.data, H, hd, positions, 10000), 2e-6, 'rope vs rotate_half');
  // Position 0 is the identity; every rotation keeps each pair's norm.
  for (let i = 0; i < H * hd; i++) assert.equal(y.data[i], x.data[i]);
  // q·k depends only on the distance m − n: rope(q, m)·rope(k, n) = rope(q, m + 7)·rope(k, n + 7).
  const q = p(1, 1, 1, hd);
  const k = p(1, 1, 1, hd);
  const dot = (m: number, n: number) => {
    const a = rope(q, Int32Array.of(m)).data;
    const b = rope(k, Int32Array.of(n)).data;
    let s = 0;
    for (let i = 0; i < hd; i++) s += a[i] * b[i];
    return s;
  };
  assert.ok(Math.abs(dot(9, 4) - dot(16, 11)) < 1e-5);
  assert.ok(Math.abs(dot(9, 4) - dot(4, 9)) > 1e-3, 'the score depends on the sign of the distance');
  check('rope', () => rope(x, positions, 10000), [x]);
  check('rope theta 500', () => rope(x, positions, 500), [x]);
});

/** llama.cpp's LLAMA_ROPE_TYPE_NORM (ggml_rope_ext mode 0): adjacent pairs (x[2i], x[2i+1]) rotated by
 * pos·base^(−2i/hd) — ggml-cpu's rope for the "normal" mode, written from its formula. */
function ropeAdjacent(x: Float32Array, H: number, hd: number, pos: number, base: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < hd / 2; i++) {
      const ang = pos * base ** ((-2 * i) / hd);
      const [a, b] = [x[h * hd + 2 * i], x[h * hd + 2 * i + 1]];
      out[h * hd + 2 * i] = a * Math.cos(ang) - b * Math.sin(ang);
      out[h * hd + 2 * i + 1] = a * Math.sin(ang) + b * Math.cos(ang);
    }
  }
  return out;
}

test("rope: the GGUF export permutation makes llama.cpp's adjacent-pair rope compute ours", () => {
  // Wq (H·hd, d) and Wk (Hkv·hd, d) as convert_hf_to_gguf permutes them (n_head for q, n_head_kv for k).
  const [H, Hkv, hd, d] = [4, 2, 8, 6];
  const wq = p(H * hd, d);
  const wk = p(Hkv * hd, d);
  const x = p(1, d);
  const gq = parameter(ggufRopePermutation(wq.data, H * hd, d, H), [H * hd, d]);
  const gk = parameter(ggufRopePermutation(wk.data, Hkv * hd, d, Hkv), [Hkv * hd, d]);
  for (const [m, n] of [
    [0, 0],
    [5, 2],
    [40, 39],
  ]) {
    const ours = {
      q: rope(reshape(linear(x, wq), [1, H, hd]), Int32Array.of(m), 10000).data,
      k: rope(reshape(linear(x, wk), [1, Hkv, hd]), Int32Array.of(n), 10000).data,
    };
    const ggml = {
      q: ropeAdjacent(linear(x, gq).data, H, hd, m, 10000),
      k: ropeAdjacent(linear(x, gk).data, Hkv, hd, n, 10000),
    };
    // Every head's rotated vector is ours with its rows permuted, so every score q_h·k_{h/2} agrees.
    for (let h = 0; h < H; h++) {
      const hk = Math.floor(h / (H / Hkv));
      let a = 0;
      let b = 0;
      for (let i = 0; i < hd; i++) {
        a += ours.q[h * hd + i] * ours.k[hk * hd + i];
        b += ggml.q[h * hd + i] * ggml.k[hk * hd + i];
      }
      assert.ok(Math.abs(a - b) < 1e-5, `head ${h} at (${m}, ${n}): ${a} vs ${b}`);
      for (let i = 0; i < hd / 2; i++) {
        assert.ok(Math.abs(ggml.q[h * hd + 2 * i] - ours.q[h * hd + i]) < 1e-5);
        assert.ok(Math.abs(ggml.q[h * hd + 2 * i + 1] - ours.q[h * hd + i + hd / 2]) < 1e-5);
      }
    }
  }
  // Without the permutation the two conventions disagree (the test would catch a missing step).
  const plain = ropeAdjacent(linear(x, wq).data, H, hd, 5, 10000);
  const ours = rope(reshape(linear(x, wq), [1, H, hd]), Int32Array.of(5), 10000).data;
  assert.ok(plain.some((v, i) => Math.abs(v - ours[i]) > 1e-3));
});

/** softmax(q kᵀ/√hd + mask) v in double, one (b, h, t) at a time, straight from the definition. */
function attentionReference(q: Tensor, k: Tensor, v: Tensor, o: AttentionOptions = {}): Float64Array {
  const [B, T, Hq, hd] = q.shape;
  const [, S, Hkv] = k.shape;
  const out = new Float64Array(q.size);
  for (let b = 0; b < B; b++) {
    const off =
      o.kvOffset === undefined ? S - T : typeof o.kvOffset === 'number' ? o.kvOffset : o.kvOffset[b];
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / (Hq / Hkv));
      for (let t = 0; t < T; t++) {
        const scores: number[] = [];
        const keys: number[] = [];
        for (let s = 0; s < S; s++) {
          if ((o.causal ?? true) && s > off + t) continue;
          if (o.keyMask !== undefined && o.keyMask[b * S + s] === 0) continue;
          let dot = 0;
          for (let i = 0; i < hd; i++)
            dot += q.data[((b * T + t) * Hq + h) * hd + i] * k.data[((b * S + s) * Hkv + hk) * hd + i];
          scores.push(dot / Math.sqrt(hd));
          keys.push(s);
        }
        if (keys.length === 0) continue;
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const z = e.reduce((a, c) => a + c, 0);
        for (let i = 0; i < hd; i++) {
          let acc = 0;
          keys.forEach((s, j) => {
            acc += (e[j] / z) * v.data[((b * S + s) * Hkv + hk) * hd + i];
          });
          out[((b * T + t) * Hq + h) * hd + i] = acc;
        }
      }
    }
  }
  return out;
}

test('attention: matches the definition (causal, GQA, key mask, offsets, blocks past 64 rows)', () => {
  const cases: [string, number[], number[], AttentionOptions][] = [
    ['causal', [2, 5, 2, 4], [2, 5, 2, 4], {}],
    ['not causal', [1, 4, 2, 4], [1, 6, 2, 4], { causal: false }],
    ['GQA 4 over 2', [2, 5, 4, 4], [2, 5, 2, 4], {}],
    ['MQA 3 over 1', [1, 3, 3, 2], [1, 3, 1, 2], {}],
    ['cache: 3 queries after 4 keys', [1, 3, 2, 4], [1, 7, 2, 4], {}],
    ['per-element offsets (ragged cache)', [2, 2, 2, 4], [2, 6, 2, 4], { kvOffset: Int32Array.of(1, 4) }],
    [
      'padding key mask (left-padded element 1)',
      [2, 4, 2, 4],
      [2, 4, 2, 4],
      { keyMask: Uint8Array.of(1, 1, 1, 1, 0, 0, 1, 1) },
    ],
    ['two query blocks', [1, 70, 1, 4], [1, 70, 1, 4], {}],
  ];
  for (const [name, qs, ks, o] of cases) {
    const q = p(...qs);
    const k = p(...ks);
    const v = p(...ks);
    close(attention(q, k, v, o).data, attentionReference(q, k, v, o), 2e-6, name);
  }
});

test('attention: a query that sees no key outputs 0 and passes no gradient', () => {
  const q = p(1, 2, 1, 4);
  const k = p(1, 2, 1, 4);
  const v = p(1, 2, 1, 4);
  const y = attention(q, k, v, { keyMask: Uint8Array.of(0, 1) }); // row 0 sees only key 0, hidden
  assert.deepEqual([...y.data.subarray(0, 4)], [0, 0, 0, 0]);
  close(y.data.subarray(4), v.data.subarray(4), 0, 'row 1 sees key 1 alone');
  backward(y, new Float32Array(8).fill(1));
  assert.deepEqual([...q.grad!.subarray(0, 4)], [0, 0, 0, 0]);
  assert.ok([...q.grad!].every(Number.isFinite));
});

test('attention: finite differences for q, k and v', () => {
  const cases: [string, number[], number[], AttentionOptions][] = [
    ['causal', [2, 4, 2, 4], [2, 4, 2, 4], {}],
    ['GQA + key mask', [2, 3, 4, 2], [2, 3, 2, 2], { keyMask: Uint8Array.of(1, 1, 1, 0, 1, 1) }],
    ['cache offsets', [2, 2, 2, 4], [2, 5, 2, 4], { kvOffset: Int32Array.of(2, 3) }],
    ['not causal', [1, 3, 2, 4], [1, 4, 2, 4], { causal: false }],
    ['two query blocks', [1, 67, 1, 2], [1, 67, 1, 2], {}],
  ];
  for (const [name, qs, ks, o] of cases) {
    const q = p(...qs);
    const k = p(...ks);
    const v = p(...ks);
    check(`attention ${name}`, () => attention(q, k, v, o), [q, k, v]);
  }
});

test('crossEntropy with a mask: the mask-weighted mean; an all-zero mask gives 0, not NaN', () => {
  const x = p(4, 5);
  const targets = Int32Array.of(1, 0, 4, 2);
  const mask = Float32Array.of(1, 0, 1, 1);
  const l = crossEntropy(x, targets, mask).item();
  let want = 0;
  for (let r = 0; r < 4; r++) {
    if (mask[r] === 0) continue;
    const row = [...x.data.subarray(r * 5, r * 5 + 5)];
    const max = Math.max(...row);
    const lse = max + Math.log(row.reduce((a, c) => a + Math.exp(c - max), 0));
    want += (lse - row[targets[r]]) / 3;
  }
  assert.ok(Math.abs(l - want) < 1e-6, `${l} vs ${want}`);
  check('crossEntropy masked', () => crossEntropy(x, targets, mask), [x]);
  const none = crossEntropy(x, targets, new Float32Array(4));
  assert.equal(none.item(), 0);
  x.grad = null;
  backward(none);
  assert.deepEqual([...x.grad!], new Array(20).fill(0));
});
