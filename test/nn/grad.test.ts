// Every op's gradient against central finite differences (see gradcheck.ts for the tolerance argument).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { CausalSelfAttention, LayerNorm, MLP } from '../../src/nn/layers.ts';
import {
  add,
  bmm,
  embedding,
  erf,
  gelu,
  layerNorm,
  linear,
  matmul,
  mean,
  mul,
  relu,
  scale,
  sub,
  sum,
  tanh,
} from '../../src/nn/ops.ts';
import { causalMask, concat, permute, reshape, slice } from '../../src/nn/shape-ops.ts';
import { crossEntropy, logProbsOf, logSoftmax, softmax } from '../../src/nn/softmax.ts';
import { backward, parameter, type Tensor } from '../../src/nn/tensor.ts';
import { gradCheck, randomData } from './gradcheck.ts';

let seed = 1;
const p = (...shape: number[]) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return parameter(randomData(n, seed++), shape);
};
const pAway = (...shape: number[]) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return parameter(randomData(n, seed++, 1, 0.05), shape);
};

function check(name: string, f: () => Tensor, inputs: Tensor[]) {
  const r = gradCheck(f, inputs);
  if (process.env.GRADCHECK_VERBOSE) console.log(name, r.worst.toFixed(3), r.relative.toExponential(1));
  assert.ok(r.worst <= 1, `${name}: ${r.where} (worst ${r.worst.toFixed(2)})`);
  assert.ok(r.relative < 5e-4, `${name}: relative error ${r.relative}`);
}

test('matmul and bmm: all four transpose variants', () => {
  for (const tA of [false, true]) {
    for (const tB of [false, true]) {
      const a = tA ? p(4, 3) : p(3, 4); // op(a) (3, 4)
      const b = tB ? p(5, 4) : p(4, 5); // op(b) (4, 5)
      check(`matmul tA=${tA} tB=${tB}`, () => matmul(a, b, tA, tB), [a, b]);
      const ga = tA ? p(2, 4, 3) : p(2, 3, 4);
      const gb = tB ? p(2, 5, 4) : p(2, 4, 5);
      check(`bmm tA=${tA} tB=${tB}`, () => bmm(ga, gb, tA, tB), [ga, gb]);
    }
  }
});

test('linear: x (B, T, in) · Wᵀ + b, with and without bias', () => {
  const x = p(2, 3, 5);
  const w = p(4, 5);
  const b = p(4);
  check('linear', () => linear(x, w, b), [x, w, b]);
  check('linear no bias', () => linear(x, w), [x, w]);
});

test('add, sub, mul: same shape, bias broadcast over rows, scalar', () => {
  const a = p(3, 4);
  const same = p(3, 4);
  const bias = p(4);
  const s = p(1);
  for (const [name, op] of [
    ['add', add],
    ['sub', sub],
    ['mul', mul],
  ] as const) {
    check(`${name} same`, () => op(a, same), [a, same]);
    check(`${name} bias`, () => op(a, bias), [a, bias]);
    check(`${name} scalar`, () => op(a, s), [a, s]);
  }
  check('scale', () => scale(a, -2.5), [a]);
});

test('erf to float32 accuracy (reference values: Python math.erf)', () => {
  for (const [x, want] of [
    [0, 0],
    [0.5, 0.5204998778130465],
    [1, 0.8427007929497149],
    [-2, -0.9953222650189527],
    [3.5, 0.9999992569016276],
  ]) {
    assert.ok(Math.abs(erf(x) - want) < 2e-7, `erf(${x}) = ${erf(x)}, want ${want}`);
  }
});

test('relu, tanh, gelu', () => {
  const x = pAway(3, 5);
  check('relu', () => relu(x), [x]);
  check('tanh', () => tanh(x), [x]);
  const wide = parameter(randomData(12, 99, 3), [12]);
  check('gelu', () => gelu(wide), [wide]);
});

test('softmax, logSoftmax, logProbsOf, crossEntropy (hard, soft, weighted)', () => {
  const x = p(3, 5);
  check('softmax', () => softmax(x), [x]);
  check('logSoftmax', () => logSoftmax(x), [x]);
  const actions = Int32Array.from([4, 0, 2]);
  check('logProbsOf', () => logProbsOf(x, actions), [x]);
  check('crossEntropy hard', () => crossEntropy(x, actions), [x]);
  const soft = Float32Array.from([0.5, 0.5, 0, 0, 0, 0.1, 0.2, 0.3, 0.4, 0, 0, 0, 1, 0, 0]);
  check('crossEntropy soft', () => crossEntropy(x, soft), [x]);
  check('crossEntropy weighted', () => crossEntropy(x, actions, Float32Array.from([1, 2, 0.5])), [x]);
});

test('sum, mean', () => {
  const x = p(2, 3, 2);
  check('sum', () => sum(x), [x]);
  check('mean', () => mean(x), [x]);
});

test('embedding: gather with scatter-add, repeated ids accumulate', () => {
  const table = p(5, 3);
  const ids = Int32Array.from([1, 4, 1, 0, 1, 3]);
  check('embedding', () => embedding(table, ids, [2, 3]), [table]);
});

test('layerNorm: x, γ, β', () => {
  const x = p(4, 6);
  const gamma = p(6);
  const beta = p(6);
  check('layerNorm', () => layerNorm(x, gamma, beta), [x, gamma, beta]);
});

test('concat, slice, reshape, permute along every axis', () => {
  const a = p(2, 3, 4);
  const b = p(2, 1, 4);
  const c = p(2, 3, 2);
  check('concat axis 1', () => concat([a, b], 1), [a, b]);
  check('concat last', () => concat([a, c]), [a, c]);
  check('concat axis 0', () => concat([a, a], 0), [a]);
  check('slice last', () => slice(a, 1, 3), [a]);
  check('slice axis 1', () => slice(a, 1, 2, 1), [a]);
  check('slice axis 0', () => slice(a, 1, 2, 0), [a]);
  check('reshape', () => reshape(mul(a, a), [6, 4]), [a]);
  check('permute', () => permute(a, [2, 0, 1]), [a]);
});

test('causal mask under softmax: no gradient flows from the future', () => {
  const x = p(2, 4, 4);
  check('softmax∘causalMask', () => softmax(causalMask(x)), [x]);
  const y = softmax(causalMask(x));
  assert.equal(y.data[1], 0); // row 0 attends to position 0 only
  assert.ok(Math.abs(y.data[0] - 1) < 1e-7);
});

test('causal self-attention block, layer norm and MLP end to end', () => {
  const rng = Rng.derive(3);
  const attn = new CausalSelfAttention(8, 2, rng);
  const x = p(2, 3, 8);
  check('attention', () => attn.forward(x), [x, ...attn.parameters()]);
  const ln = new LayerNorm(8);
  const mlp = new MLP([8, 6, 3], rng, 'gelu');
  check('ln → mlp', () => mlp.forward(ln.forward(x)), [x, ...ln.parameters(), ...mlp.parameters()]);
});

test('the checker catches a wrong gradient: 1% too large, or two elements swapped', () => {
  const x = p(3, 4);
  const w = p(2, 4);
  const f = () => linear(x, w);
  assert.ok(gradCheck(f, [x, w]).worst <= 1);
  const scaled = gradCheck(f, [x, w], {
    corrupt: (g, k) => {
      if (k === 1) for (let i = 0; i < g.length; i++) g[i] *= 1.01;
    },
  });
  assert.ok(scaled.worst > 1, `1% error not caught: ${scaled.worst}`);
  const swapped = gradCheck(f, [x, w], {
    corrupt: (g, k) => {
      if (k === 0) [g[0], g[1]] = [g[1], g[0]];
    },
  });
  assert.ok(swapped.worst > 1, `swap not caught: ${swapped.worst}`);
});

test('the tape: a tensor used twice accumulates both paths; leaves accumulate across passes', () => {
  const x = parameter(Float32Array.from([1.5, -2]), [2]);
  // L = Σ (x ⊙ x + 3x) → ∂L/∂x = 2x + 3
  backward(sum(add(mul(x, x), scale(x, 3))));
  assert.deepEqual([...x.grad!], [6, -1]);
  backward(sum(x));
  assert.deepEqual([...x.grad!], [7, 0]);
  const y = sum(x);
  backward(y);
  assert.throws(() => backward(y), /already consumed/);
});
