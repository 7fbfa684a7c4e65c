// Throughput of the engine (machine-dependent: printed by `turnwise bench nn`, never asserted).
//   matmul          GFLOP/s of square float32 products C = A·B (2n³ flops), one thread, best of 3 timed
//                   runs of ≥ 0.2 s each after a warm-up; `matmulThreads` the same on the engine's `threads`
//                   (gemmThreads(): the machine's cores), large products split between worker threads
//                   when that measures faster (nn/gemm-threads.ts)
//   mlpTrainStepsPerSecond  full Adam steps (forward, cross-entropy, backward, update) of the FrozenLake
//                   4x4 policy network — MLP 48→64→64→4, ReLU — on minibatches of 256, one thread
//   transformer     the Llama-layout transformer (nn/transformer.ts) at layers 2, d 128, heads 4, ctx 256,
//                   vocab 512: training tokens/s (forward, masked cross-entropy, backward, Adam on batches
//                   of 8 × 256 tokens), generation tokens/s with the KV cache at batch 1 and 64 (16-token
//                   prompts, 64 sampled tokens each, prefill included), and mfu: model FLOP/s of training
//                   ÷ the best square-matmul GFLOP/s of the same run on the same threads — one thread
//                   against `matmul`, and (`threads`) the engine's threads against `matmulThreads`. Model
//                   FLOPs per token are 6·N (N: parameters that pass through a product, the tied head
//                   once; Kaplan et al. 2020, PaLM App. B) plus causal attention's 6·layers·d·T (half of
//                   PaLM's 12·L·d·T: the masked upper triangle is not work the model needs). `cpu` is the
//                   cross-check by CPU time (every thread's, from process.cpuUsage): model GFLOP per
//                   CPU-second of the one-thread training ÷ matmul GFLOP per CPU-second — what a step makes
//                   of the CPU it gets, whatever the other processes on the machine take.
import { Rng } from '../core/rng.ts';
import { gemm, gemmKernel, gemmPool, gemmThreads, useSimd } from './gemm.ts';
import { MLP } from './layers.ts';
import { Adam } from './optim.ts';
import { generate } from './sampling.ts';
import { crossEntropy } from './softmax.ts';
import { backward, tensor } from './tensor.ts';
import { Transformer, type TransformerConfig, transformerConfig } from './transformer.ts';

export interface NnBench {
  matmul: Record<string, number>;
  /** `matmul` on `threads` threads (large products split between workers). */
  matmulThreads: Record<string, number>;
  threads: number;
  mlpTrainStepsPerSecond: number;
  /** The kernel behind `matmul`. */
  kernel: string;
  /** The scalar fallback (no WebAssembly SIMD) on the same sizes, for comparison. */
  matmulScalar: Record<string, number>;
  transformer: TransformerBench;
}

/** Training throughput against a matmul peak on the same threads. */
export interface TrainFigures {
  trainTokensPerSecond: number;
  /** trainGflops / peakGflops. */
  mfu: number;
  /** Model GFLOP/s of training (see the header) and the matmul peak it is divided by. */
  trainGflops: number;
  peakGflops: number;
}

/** The training on several threads (gemmThreads()) against the matmul peak on them. */
export interface ThreadsFigures extends TrainFigures {
  threads: number;
  /** Large products of that training split between threads, and those run on one thread because that
   * measured faster (the machine's cores were busy; nn/gemm-threads.ts). */
  parallel: { split: number; declined: number };
}

/** One thread's figures (as before threads existed), and the threads' figures beside them. */
export interface TransformerBench extends TrainFigures {
  config: TransformerConfig;
  params: number;
  /** By batch size: "1" and "64". */
  generateTokensPerSecond: Record<string, number>;
  /** Training on gemmThreads() threads against their peak (when that peak was given and threads > 1). */
  threads?: ThreadsFigures;
  /** CPU-time cross-check of the one-thread training (when a CPU-time peak was given): model GFLOP per
   * CPU-second of training, the matmul's GFLOP per CPU-second, and their ratio. */
  cpu?: { trainGflops: number; peakGflops: number; mfu: number };
}

function randomMatrix(n: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 2 * rng.float() - 1;
  return out;
}

/** Best-of-`trials` rate of `run` (calls per second), each trial running for at least minSeconds. */
export function rate(run: () => void, minSeconds: number, trials = 3): number {
  return measure(run, minSeconds, trials).perSecond;
}

/** rate(), and the calls per CPU-second over all trials (every thread's CPU time). */
function measure(
  run: () => void,
  minSeconds: number,
  trials = 3,
): { perSecond: number; perCpuSecond: number } {
  run();
  let best = 0;
  let calls = 0;
  const cpu0 = process.cpuUsage();
  for (let t = 0; t < trials; t++) {
    let n = 0;
    const t0 = performance.now();
    let elapsed = 0;
    do {
      run();
      n++;
      elapsed = (performance.now() - t0) / 1000;
    } while (elapsed < minSeconds);
    best = Math.max(best, n / elapsed);
    calls += n;
  }
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: best, perCpuSecond: calls / ((cpu.user + cpu.system) / 1e6) };
}

/** GFLOP/s of an n×n product, and its GFLOP per CPU-second. */
function matmulMeasure(n: number, minSeconds: number): { gflops: number; cpuGflops: number } {
  const rng = Rng.derive(n, 0xbe4c);
  const A = randomMatrix(n * n, rng);
  const B = randomMatrix(n * n, rng);
  const C = new Float32Array(n * n);
  const m = measure(() => gemm(n, n, n, A, 0, false, B, 0, false, C, 0, false), minSeconds);
  const flops = 2 * n ** 3;
  return { gflops: (m.perSecond * flops) / 1e9, cpuGflops: (m.perCpuSecond * flops) / 1e9 };
}

export function matmulGflops(n: number, minSeconds = 0.2): number {
  return matmulMeasure(n, minSeconds).gflops;
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

/** Runs fn with `n` gemm threads, then restores the setting. */
export function withThreads<T>(n: number, fn: () => T): T {
  const was = gemmThreads(n);
  try {
    return fn();
  } finally {
    gemmThreads(was);
  }
}

/**
 * The transformer's figures (see the header) on one thread against the one-thread matmul peak measured in
 * the same run; with `opts.threadsPeak` (the peak on gemmThreads() threads), also the training on those
 * threads against it, and with `opts.cpuPeak` (matmul GFLOP per CPU-second) the CPU-time cross-check.
 */
export function transformerBench(
  peakGflops: number,
  trialSeconds = 0.2,
  config: TransformerConfig = BENCH_TRANSFORMER,
  batch = 8,
  opts: { threadsPeak?: number; cpuPeak?: number } = {},
): TransformerBench {
  const rng = Rng.derive(0, 0xbe4c);
  const model = new Transformer(config, rng);
  const opt = new Adam(model.namedParameters(), { lr: 1e-3 });
  const T = config.ctx;
  const ids = Int32Array.from({ length: batch * T }, () => rng.int(config.vocab));
  const targets = Int32Array.from({ length: batch * T }, () => rng.int(config.vocab));
  const mask = new Float32Array(batch * T).fill(1);
  const step = () => {
    opt.zeroGrad();
    backward(crossEntropy(model.forward(ids, [batch, T]), targets, mask));
    opt.step();
  };
  const flopsPerToken = 6 * model.matmulParameterCount() + 6 * config.layers * config.d * T;
  const figures = (stepsPerSecond: number, peak: number): TrainFigures => {
    const tokens = stepsPerSecond * batch * T;
    const gflops = (tokens * flopsPerToken) / 1e9;
    return {
      trainTokensPerSecond: Math.round(tokens),
      mfu: Math.round((gflops / peak) * 1000) / 1000,
      trainGflops: Math.round(gflops * 100) / 100,
      peakGflops: Math.round(peak * 100) / 100,
    };
  };
  const train = withThreads(1, () => measure(step, trialSeconds));
  let cpu: TransformerBench['cpu'];
  if (opts.cpuPeak !== undefined) {
    const cpuGflops = (train.perCpuSecond * batch * T * flopsPerToken) / 1e9;
    cpu = {
      trainGflops: Math.round(cpuGflops * 100) / 100,
      peakGflops: Math.round(opts.cpuPeak * 100) / 100,
      mfu: Math.round((cpuGflops / opts.cpuPeak) * 1000) / 1000,
    };
  }
  let threads: ThreadsFigures | undefined;
  const pool = gemmThreads() > 1 && opts.threadsPeak !== undefined ? gemmPool() : undefined;
  if (pool !== undefined) {
    const [split, declined] = [pool.split, pool.declined];
    const perSecond = measure(step, trialSeconds).perSecond;
    threads = {
      threads: gemmThreads(),
      ...figures(perSecond, opts.threadsPeak!),
      parallel: { split: pool.split - split, declined: pool.declined - declined },
    };
  }
  const generateTokensPerSecond: Record<string, number> = {};
  withThreads(1, () => {
    for (const B of [1, 64]) {
      const prompts = Array.from({ length: B }, () =>
        Array.from({ length: 16 }, () => rng.int(config.vocab)),
      );
      const run = () =>
        generate(model, prompts, { maxTokens: 64, rngs: prompts.map((_, i) => Rng.derive(1, i)) });
      generateTokensPerSecond[B] = Math.round(rate(run, trialSeconds, B === 1 ? 3 : 1) * B * 64);
    }
  });
  return {
    config,
    params: model.parameterCount(),
    ...figures(train.perSecond, peakGflops),
    generateTokensPerSecond,
    ...(threads === undefined ? {} : { threads }),
    ...(cpu === undefined ? {} : { cpu }),
  };
}

/** trialSeconds: length of each timed trial (shorter = faster, noisier). */
export function benchNn(sizes: readonly number[] = [64, 256, 512], trialSeconds = 0.2): NnBench {
  const round = (x: number) => Math.round(x * 100) / 100;
  const threads = gemmThreads();
  const matmul: Record<string, number> = {};
  let cpuPeak = 0;
  withThreads(1, () => {
    for (const n of sizes) {
      const m = matmulMeasure(n, trialSeconds);
      matmul[n] = round(m.gflops);
      cpuPeak = Math.max(cpuPeak, m.cpuGflops);
    }
  });
  const matmulThreads: Record<string, number> = {};
  for (const n of sizes) matmulThreads[n] = round(matmulGflops(n, trialSeconds));
  const mlp = withThreads(1, () => Math.round(mlpTrainStepsPerSecond(2.5 * trialSeconds)));
  const kernel = gemmKernel();
  const matmulScalar: Record<string, number> = {};
  const was = useSimd(false);
  try {
    for (const n of sizes) matmulScalar[n] = round(matmulGflops(n, trialSeconds));
  } finally {
    useSimd(was);
  }
  const best = (r: Record<string, number>) => Math.max(...Object.values(r));
  const transformer = transformerBench(best(matmul), trialSeconds, BENCH_TRANSFORMER, 8, {
    threadsPeak: best(matmulThreads),
    cpuPeak,
  });
  return { matmul, matmulThreads, threads, mlpTrainStepsPerSecond: mlp, kernel, matmulScalar, transformer };
}
