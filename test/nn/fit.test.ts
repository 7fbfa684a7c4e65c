// The engine learns: an MLP fits XOR and a three-class spiral to near-zero loss.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { MLP } from '../../src/nn/layers.ts';
import { Adam } from '../../src/nn/optim.ts';
import { crossEntropy } from '../../src/nn/softmax.ts';
import { backward, tensor } from '../../src/nn/tensor.ts';

function fit(net: MLP, x: Float32Array, inputs: number, y: Int32Array, steps: number, lr: number): number {
  const opt = new Adam(net.namedParameters(), { lr });
  const X = tensor(x, [y.length, inputs]);
  let loss = Number.NaN;
  for (let s = 0; s < steps; s++) {
    opt.zeroGrad();
    const l = crossEntropy(net.forward(X), y);
    loss = l.item();
    backward(l);
    opt.step();
  }
  return loss;
}

function accuracy(net: MLP, x: Float32Array, inputs: number, y: Int32Array): number {
  const logits = net.forward(tensor(x, [y.length, inputs])).data;
  const C = logits.length / y.length;
  let hits = 0;
  for (let r = 0; r < y.length; r++) {
    let best = 0;
    for (let c = 1; c < C; c++) if (logits[r * C + c] > logits[r * C + best]) best = c;
    if (best === y[r]) hits++;
  }
  return hits / y.length;
}

test('XOR: a 2-8-2 tanh MLP reaches cross-entropy < 0.01', () => {
  const x = Float32Array.of(0, 0, 0, 1, 1, 0, 1, 1);
  const y = Int32Array.of(0, 1, 1, 0);
  const net = new MLP([2, 8, 2], Rng.derive(0), 'tanh');
  const loss = fit(net, x, 2, y, 300, 0.05);
  assert.ok(loss < 0.01, `loss ${loss}`);
  assert.equal(accuracy(net, x, 2, y), 1);
});

test('three interleaved spirals: a 2-64-64-3 ReLU MLP reaches loss < 0.05 and 100% accuracy', () => {
  // CS231n's spiral data (class k, point i at radius r, angle 4(k + r) + noise), without the innermost
  // tenth where the three arms meet at the origin and identical inputs would carry different labels.
  const n = 60;
  const K = 3;
  const rng = Rng.derive(11);
  const x = new Float32Array(n * K * 2);
  const y = new Int32Array(n * K);
  for (let k = 0; k < K; k++) {
    for (let i = 0; i < n; i++) {
      const r = 0.1 + (0.9 * i) / n;
      const t = 4 * (k + r) + 0.1 * rng.normal();
      const p = k * n + i;
      x[2 * p] = r * Math.sin(t);
      x[2 * p + 1] = r * Math.cos(t);
      y[p] = k;
    }
  }
  const net = new MLP([2, 64, 64, 3], Rng.derive(1), 'relu');
  assert.equal(net.parameterCount(), 2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3);
  const loss = fit(net, x, 2, y, 800, 0.01);
  assert.ok(loss < 0.05, `loss ${loss}`);
  assert.equal(accuracy(net, x, 2, y), 1);
});
