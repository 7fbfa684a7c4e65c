// Throughput of the engine (machine-dependent: printed by `turnwise bench nn`, never asserted).
//   matmul          GFLOP/s of square float32 products C = A·B (2n³ flops), one core, best of 3 timed
//                   runs of ≥ 0.2 s each after a warm-up
//   mlpTrainStepsPerSecond  full Adam steps (forward, cross-entropy, backward, update) of the FrozenLake
//                   4x4 policy network — MLP 48→64→64→4, ReLU — on minibatches of 256
import { Rng } from '../core/rng.ts';
import { gemm, gemmKernel, useSimd } from './gemm.ts';
import { MLP } from './layers.ts';
import { Adam } from './optim.ts';
import { crossEntropy } from './softmax.ts';
import { backward, tensor } from './tensor.ts';

export interface NnBench {
  matmul: Record<string, number>;
  mlpTrainStepsPerSecond: number;
  /** The kernel behind `matmul`. */
  kernel: string;
  /** The scalar fallback (no WebAssembly SIMD) on the same sizes, for comparison. */
  matmulScalar: Record<string, number>;
}

function randomMatrix(n: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 2 * rng.float() - 1;
  return out;
}

/** Best-of-`trials` rate of `run` (calls per second), each trial running for at least minSeconds. */
function rate(run: () => void, minSeconds: number, trials = 3): number {
  run();
  let best = 0;
  for (let t = 0; t < trials; t++) {
    let calls = 0;
    const t0 = performance.now();
    let elapsed = 0;
    do {
      run();
      calls++;
      elapsed = (performance.now() - t0) / 1000;
    } while (elapsed < minSeconds);
    best = Math.max(best, calls / elapsed);
  }
  return best;
}

export function matmulGflops(n: number, minSeconds = 0.2): number {
  const rng = Rng.derive(n, 0xbe4c);
  const A = randomMatrix(n * n, rng);
  const B = randomMatrix(n * n, rng);
  const C = new Float32Array(n * n);
  return (rate(() => gemm(n, n, n, A, 0, false, B, 0, false, C, 0, false), minSeconds) * 2 * n ** 3) / 1e9;
}

export function mlpTrainStepsPerSecond(minSeconds = 0.5): number {
  const rng = Rng.derive(0, 0xbe4c);
  const net = new MLP([48, 64, 64, 4], rng);
  const opt = new Adam(net.namedParameters(), { lr: 1e-3 });
  const B = 256;
  const x = tensor(randomMatrix(B * 48, rng), [B, 48]);
  const y = Int32Array.from({ length: B }, () => rng.int(4));
  return rate(() => {
    opt.zeroGrad();
    backward(crossEntropy(net.forward(x), y));
    opt.step();
  }, minSeconds);
}

/** trialSeconds: length of each timed trial (shorter = faster, noisier). */
export function benchNn(sizes: readonly number[] = [64, 256, 512], trialSeconds = 0.2): NnBench {
  const round = (x: number) => Math.round(x * 100) / 100;
  const matmul: Record<string, number> = {};
  for (const n of sizes) matmul[n] = round(matmulGflops(n, trialSeconds));
  const mlp = Math.round(mlpTrainStepsPerSecond(2.5 * trialSeconds));
  const kernel = gemmKernel();
  const matmulScalar: Record<string, number> = {};
  const was = useSimd(false);
  try {
    for (const n of sizes) matmulScalar[n] = round(matmulGflops(n, trialSeconds));
  } finally {
    useSimd(was);
  }
  return { matmul, mlpTrainStepsPerSecond: mlp, kernel, matmulScalar };
}
