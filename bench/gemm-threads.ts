// Where splitting a product between threads starts to pay (src/nn/gemm.ts PARALLEL): for products from
// 2^16 to 2^24 multiply-adds, the best time over interleaved trials with 1 thread and with 2, and their
// ratio. Machine-dependent (and load-dependent: the load average is printed), never asserted in tests.
//   node --import tsx bench/gemm-threads.ts [--trials N]
import { loadavg } from 'node:os';
import { Rng } from '../src/core/rng.ts';
import { gemm, gemmParallelFrom, gemmPool, gemmThreads } from '../src/nn/gemm.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/gemm-threads.ts', {
  options: { trials: { type: 'string', default: '30' } },
});
const trials = Number(values.trials);

// (M, N, K): squares, and the shapes of the bench transformer's products (its Linear layers at
// 8 × 256 rows, and attention's 64-query blocks).
const SHAPES: [number, number, number][] = [
  [40, 40, 40],
  [64, 64, 64],
  [64, 256, 32],
  [80, 80, 80],
  [100, 100, 100],
  [128, 128, 128],
  [160, 160, 160],
  [256, 256, 256],
  [2048, 128, 128],
];

function fill(n: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 2 * rng.float() - 1;
  return out;
}

gemmParallelFrom(0); // split every product, to see where it pays
const pool = gemmPool();
if (pool !== undefined) pool.adaptive = false; // time the split itself
const rng = Rng.derive(0, 0x7e);
const rows = [];
for (const [M, N, K] of SHAPES) {
  const A = fill(M * K, rng);
  const B = fill(K * N, rng);
  const C = new Float32Array(M * N);
  const run = () => gemm(M, N, K, A, 0, false, B, 0, true, C, 0, false);
  // Enough calls per trial for ~5 ms of work at 25 GFLOP/s.
  const calls = Math.max(1, Math.round(5e-3 / ((2 * M * N * K) / 25e9)));
  const best: Record<number, number> = { 1: Infinity, 2: Infinity };
  for (let t = 0; t < trials; t++) {
    for (const threads of [1, 2]) {
      gemmThreads(threads);
      run();
      const t0 = performance.now();
      for (let c = 0; c < calls; c++) run();
      best[threads] = Math.min(best[threads], (performance.now() - t0) / calls);
    }
  }
  rows.push({
    shape: `${M}x${N}x${K}`,
    macs: M * N * K,
    ms1: Number(best[1].toFixed(4)),
    ms2: Number(best[2].toFixed(4)),
    speedup: Number((best[1] / best[2]).toFixed(2)),
  });
}
console.log(JSON.stringify({ loadavg: loadavg().map((x) => Number(x.toFixed(2))), rows }));
await gemmPool()?.close();
