// Throughput of the engine (machine-dependent: printed by `turnwise bench nn`, never asserted).
//   matmul          GFLOP/s of square float32 products C = A·B (2n³ flops), one core, best of 3 timed
//                   runs of ≥ 0.2 s each after a warm-up
//   mlpTrainStepsPerSecond  full Adam steps (forward, cross-entropy, backward, update) of the FrozenLake
//                   4x4 policy network — MLP 48→64→64→4, ReLU — on minibatches of 256
//   transformer     the Llama-layout transformer (nn/transformer.ts) at layers 2, d 128, heads 4, ctx 256,
//                   vocab 512: training tokens/s (forward, masked cross-entropy, backward, Adam on batches
//                   of 8 × 256 tokens), generation tokens/s with the KV cache at batch 1 and 64 (16-token
//                   prompts, 64 sampled tokens each, prefill included), and mfu: model FLOP/s of training
//                   ÷ the best square-matmul GFLOP/s of the same run (one core). Model FLOPs per token are
//                   6·N (N: parameters that pass through a product, the tied head once; Kaplan et al.
//                   2020, PaLM App. B) plus causal attention's 6·layers·d·T (half of PaLM's 12·L·d·T: the
//                   masked upper triangle is not work the model needs).
import { Rng } from '../core/rng.ts';
import { gemm, gemmKernel, useSimd } from './gemm.ts';
import { MLP } from './layers.ts';
import { Adam } from './optim.ts';
import { generate } from './sampling.ts';
import { crossEntropy } from './softmax.ts';
import { backward, tensor } from './tensor.ts';
import { Transformer, type TransformerConfig, transformerConfig } from './transformer.ts';

export interface NnBench {
  matmul: Record<string, number>;
  mlpTrainStepsPerSecond: number;
  /** The kernel behind `matmul`. */
  kernel: string;
  /** The scalar fallback (no WebAssembly SIMD) on the same sizes, for comparison. */
  matmulScalar: Record<string, number>;
  transformer: TransformerBench;
}

export interface TransformerBench {
  config: TransformerConfig;
  params: number;
  trainTokensPerSecond: number;
  /** By batch size: "1" and "64". */
  generateTokensPerSecond: Record<string, number>;
  /** trainGflops / peakGflops. */
  mfu: number;
  /** Model GFLOP/s of training (see the header) and the matmul peak it is divided by. */
  trainGflops: number;
  peakGflops: number;
}

function randomMatrix(n: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 2 * rng.float() - 1;
  return out;
}

/** Best-of-`trials` rate of `run` (calls per second), each trial running for at least minSeconds. */
export function rate(run: () => void, minSeconds: number, trials = 3): number {
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

export const BENCH_TRANSFORMER = transformerConfig({ layers: 2, d: 128, heads: 4, ctx: 256, vocab: 512 });

/** The transformer's figures (see the header) against a matmul peak measured in the same run. */
export function transformerBench(
  peakGflops: number,
  trialSeconds = 0.2,
  config: TransformerConfig = BENCH_TRANSFORMER,
  batch = 8,
): TransformerBench {
  const rng = Rng.derive(0, 0xbe4c);
  const model = new Transformer(config, rng);
  const opt = new Adam(model.namedParameters(), { lr: 1e-3 });
  const T = config.ctx;
  const ids = Int32Array.from({ length: batch * T }, () => rng.int(config.vocab));
  const targets = Int32Array.from({ length: batch * T }, () => rng.int(config.vocab));
  const mask = new Float32Array(batch * T).fill(1);
  const steps = rate(() => {
    opt.zeroGrad();
    backward(crossEntropy(model.forward(ids, [batch, T]), targets, mask));
    opt.step();
  }, trialSeconds);
  const trainTokensPerSecond = steps * batch * T;
  const flopsPerToken = 6 * model.matmulParameterCount() + 6 * config.layers * config.d * T;
  const trainGflops = (trainTokensPerSecond * flopsPerToken) / 1e9;
  const generateTokensPerSecond: Record<string, number> = {};
  for (const B of [1, 64]) {
    const prompts = Array.from({ length: B }, () => Array.from({ length: 16 }, () => rng.int(config.vocab)));
    const run = () =>
      generate(model, prompts, { maxTokens: 64, rngs: prompts.map((_, i) => Rng.derive(1, i)) });
    generateTokensPerSecond[B] = Math.round(rate(run, trialSeconds, B === 1 ? 3 : 1) * B * 64);
  }
  return {
    config,
    params: model.parameterCount(),
    trainTokensPerSecond: Math.round(trainTokensPerSecond),
    generateTokensPerSecond,
    mfu: Math.round((trainGflops / peakGflops) * 1000) / 1000,
    trainGflops: Math.round(trainGflops * 100) / 100,
    peakGflops: Math.round(peakGflops * 100) / 100,
  };
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
  const transformer = transformerBench(Math.max(...Object.values(matmul)), trialSeconds);
  return { matmul, mlpTrainStepsPerSecond: mlp, kernel, matmulScalar, transformer };
}
