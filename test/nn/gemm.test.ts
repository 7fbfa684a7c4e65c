// The matmul kernel: the SIMD path and the scalar path agree bit for bit, both are accurate, and a
// row of the product does not depend on the other rows (batched and single forwards agree).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gemm, gemmKernel, gemmScalar, KC } from '../../src/nn/gemm.ts';
import { randomData } from './gradcheck.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];

test('Node 20 runs the WebAssembly SIMD kernel', () => {
  assert.equal(gemmKernel(), 'wasm-simd128');
});

test('SIMD and scalar paths give the same bits for every transpose and edge shape', () => {
  let seed = 0;
  // Shapes straddle the 4×8 register tile, the 64-row block and the 256-deep k-block.
  for (const [M, N, K] of [
    [37, 29, KC + 44],
    [64, 8, 300],
    [130, 17, 33],
    [5, 70, 2 * KC + 1],
  ]) {
    for (const tA of [false, true]) {
      for (const tB of [false, true]) {
        for (const accumulate of [false, true]) {
          const A = randomData(M * K, seed++);
          const B = randomData(K * N, seed++);
          const C0 = randomData(M * N, seed++);
          const simd = C0.slice();
          const scalar = C0.slice();
          gemm(M, N, K, A, 0, tA, B, 0, tB, simd, 0, accumulate);
          gemmScalar(M, N, K, A, 0, tA, B, 0, tB, scalar, 0, accumulate);
          assert.deepEqual(
            bits(simd),
            bits(scalar),
            `M=${M} N=${N} K=${K} tA=${tA} tB=${tB} acc=${accumulate}`,
          );
          let worst = 0;
          for (let i = 0; i < M; i++) {
            for (let j = 0; j < N; j++) {
              let s = accumulate ? C0[i * N + j] : 0;
              for (let k = 0; k < K; k++)
                s += (tA ? A[k * M + i] : A[i * K + k]) * (tB ? B[j * K + k] : B[k * N + j]);
              worst = Math.max(worst, Math.abs(s - simd[i * N + j]));
            }
          }
          // float32 accumulation over K ≤ 513 terms of size ≤ 1: well under 1e-4.
          assert.ok(worst < 1e-4, `error ${worst}`);
        }
      }
    }
  }
});

test('a row of the product is the same computed alone or inside a batch', () => {
  const [M, N, K] = [200, 64, 48];
  const A = randomData(M * K, 1);
  const B = randomData(N * K, 2); // a Linear weight (N, K): x · Wᵀ
  const all = new Float32Array(M * N);
  gemm(M, N, K, A, 0, false, B, 0, true, all, 0, false);
  for (const i of [0, 3, 4, 117, 199]) {
    const one = new Float32Array(N);
    gemm(1, N, K, A, i * K, false, B, 0, true, one, 0, false);
    assert.deepEqual(bits(one), bits(all.subarray(i * N, (i + 1) * N)), `row ${i}`);
  }
});
