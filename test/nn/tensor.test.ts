// The tape's bookkeeping: intermediate gradients live only during backward() and their buffers are
// reused, zeroed, by later passes — the parameters' gradients are what they were with fresh buffers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { linear, mul, sum, tanh } from '../../src/nn/ops.ts';
import { backward, parameter } from '../../src/nn/tensor.ts';
import { randomData } from './gradcheck.ts';

test('backward leaves no grad on intermediates, and the reused buffers come back zeroed', () => {
  const x = parameter(randomData(6 * 5, 1), [6, 5]);
  const w = parameter(randomData(4 * 5, 2), [4, 5]);
  const pass = () => {
    x.grad = null;
    w.grad = null;
    const h = linear(x, w); // (6, 4)
    const y = tanh(h);
    const loss = sum(mul(y, y));
    backward(loss);
    return { h, y, loss, gx: x.grad!.slice(), gw: w.grad!.slice() };
  };
  const first = pass();
  assert.equal(first.h.grad, null);
  assert.equal(first.y.grad, null);
  assert.deepEqual([...first.loss.grad!], [1]);
  // L = Σ tanh(h)², so ∂L/∂h = 2·tanh(h)·(1 − tanh²(h)) and ∂L/∂x = ∂L/∂h · W (in double, to float32 accuracy).
  for (let i = 0; i < 6; i++) {
    for (let k = 0; k < 5; k++) {
      let want = 0;
      for (let j = 0; j < 4; j++) {
        let h = 0;
        for (let m = 0; m < 5; m++) h += x.data[i * 5 + m] * w.data[j * 5 + m];
        const t = Math.tanh(h);
        want += 2 * t * (1 - t * t) * w.data[j * 5 + k];
      }
      assert.ok(Math.abs(first.gx[i * 5 + k] - want) < 1e-5, `∂x[${i}, ${k}]`);
    }
  }
  // The second pass takes the first pass's intermediate buffers (same shapes): stale values in them
  // would change the parameters' gradients.
  const second = pass();
  assert.deepEqual(second.gx, first.gx);
  assert.deepEqual(second.gw, first.gw);
});
