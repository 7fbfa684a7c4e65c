// Optimizers against hand-computed updates, and their state through a save/restore.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Adam, clipGradNorm, SGD } from '../../src/nn/optim.ts';
import { parameter } from '../../src/nn/tensor.ts';

const close = (got: number, want: number, tol = 1e-6) =>
  assert.ok(Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)), `${got} vs ${want}`);

test('Adam: two steps by hand (lr 0.1, β 0.9/0.999, ε 1e-8)', () => {
  const theta = parameter(Float32Array.of(1), [1]);
  const opt = new Adam([['theta', theta]], { lr: 0.1 });
  // Step 1, g = 0.5: m = 0.1·0.5 = 0.05, v = 0.001·0.25 = 2.5e-4; m̂ = 0.05/0.1 = 0.5,
  // v̂ = 2.5e-4/0.001 = 0.25; θ = 1 − 0.1·0.5/(√0.25 + 1e-8) = 0.900000002.
  theta.grad = Float32Array.of(0.5);
  opt.step();
  close(theta.data[0], 0.900000002);
  // Step 2, g = −1: m = 0.9·0.05 − 0.1 = −0.055, v = 0.999·2.5e-4 + 0.001 = 1.24975e-3;
  // m̂ = −0.055/(1 − 0.81) = −0.289474, v̂ = 1.24975e-3/(1 − 0.998001) = 0.625188;
  // θ = 0.900000002 + 0.1·0.289474/(√0.625188 + 1e-8) = 0.936610354.
  theta.grad = Float32Array.of(-1);
  opt.step();
  close(theta.data[0], 0.9366103542);
  assert.equal(opt.stepCount, 2);
});

test('weight decay: L2 (Adam) adds λθ to g, decoupled (AdamW) shrinks θ first', () => {
  // One step from θ = 2 with g = 0.5, λ = 0.1, lr = 0.1. The first Adam step moves by lr·sign(g)
  // whatever |g| (m̂/√v̂ = g/|g|), so the two differ only by the decay:
  // AdamW: θ = 2·(1 − 0.01) − 0.1 = 1.88; Adam+L2: g' = 0.7 and θ = 2 − 0.1 = 1.9.
  const a = parameter(Float32Array.of(2), [1]);
  const w = parameter(Float32Array.of(2), [1]);
  const adam = new Adam([['a', a]], { lr: 0.1, weightDecay: 0.1 });
  const adamw = new Adam([['w', w]], { lr: 0.1, weightDecay: 0.1, decoupled: true });
  a.grad = Float32Array.of(0.5);
  w.grad = Float32Array.of(0.5);
  adam.step();
  adamw.step();
  close(a.data[0], 1.9000000014);
  close(w.data[0], 1.880000002);
});

test('SGD: plain and with momentum (buffer = first gradient, then μb + g)', () => {
  const x = parameter(Float32Array.of(1), [1]);
  const opt = new SGD([['x', x]], { lr: 0.5, momentum: 0.9 });
  x.grad = Float32Array.of(2);
  opt.step(); // b = 2, x = 1 − 1 = 0
  close(x.data[0], 0);
  x.grad = Float32Array.of(1);
  opt.step(); // b = 1.8 + 1 = 2.8, x = −1.4
  close(x.data[0], -1.4);
  const y = parameter(Float32Array.of(1), [1]);
  const plain = new SGD([['y', y]], { lr: 0.25, weightDecay: 1 });
  y.grad = Float32Array.of(2);
  plain.step(); // d = 2 + 1·1 = 3, y = 1 − 0.75
  close(y.data[0], 0.25);
});

test('clipGradNorm: scales to the max norm only when above it, returns the norm before', () => {
  const a = parameter(new Float32Array(2), [2]);
  const b = parameter(new Float32Array(1), [1]);
  a.grad = Float32Array.of(3, 0);
  b.grad = Float32Array.of(4);
  assert.equal(clipGradNorm([a, b], 10), 5);
  assert.deepEqual([...a.grad, ...b.grad], [3, 0, 4]);
  assert.equal(clipGradNorm([a, b], 1), 5);
  close(a.grad[0], 0.6 / (1 + 2e-7), 1e-6);
  close(b.grad[0], 0.8, 1e-6);
});

test('optimizer state: restoring into a fresh optimizer continues bit-identically', () => {
  const make = () => parameter(Float32Array.of(0.3, -0.7, 1.1), [3]);
  const grads = [
    Float32Array.of(0.1, -0.2, 0.3),
    Float32Array.of(-0.5, 0.4, 0.05),
    Float32Array.of(1, 1, -1),
  ];
  const a = make();
  const optA = new Adam([['p', a]], { lr: 0.01, weightDecay: 0.01, decoupled: true });
  for (const g of grads.slice(0, 2)) {
    a.grad = g.slice();
    optA.step();
  }
  const b = parameter(a.data.slice(), [3]);
  const optB = new Adam([['p', b]], { lr: 0.01, weightDecay: 0.01, decoupled: true });
  optB.loadState(structuredClone(optA.state()));
  a.grad = grads[2].slice();
  b.grad = grads[2].slice();
  optA.step();
  optB.step();
  assert.deepEqual([...b.data], [...a.data]);
  assert.equal(optB.stepCount, 3);
  assert.throws(() => new SGD([['p', b]], { lr: 1 }).loadState(optA.state()), /not sgd/);
  const state = optA.state();
  state.buffers[0][1] = new Float32Array(2);
  assert.throws(() => optB.loadState(state), /2 values, parameter has 3/);
});
