// Generation speed of one model in turnwise's engine and in llama.cpp, in the same run (the `llamaCpp`
// figure of `turnwise bench nn --json`; machine-dependent: printed, never asserted).
//
// The model: bench nn's transformer (nn/bench.ts BENCH_TRANSFORMER, the same seed: layers 2, d 128,
// heads 4, ctx 256, vocab 512), written as an F32 GGUF (export/gguf.ts) into a temporary directory and
// loaded by node-llama-cpp's prebuilt llama.cpp (CPU). Its vocabulary is the 256 bytes, 250 merges of two
// lowercase letters ("a"+"a", "a"+"b", …) and the 6 specials: the file needs a tokenizer of the model's
// 512 tokens, and the bench feeds token ids, never text, so which merges they are does not matter.
//
// Both engines generate greedily (temperature 0), from the same 16-token prompts (random ids, a fixed
// seed), `tokens` new tokens each, prefill included, at batch 1 and 16:
//   ours      nn/sampling.ts generate: the prompts in lockstep through the KV cache, on one gemm thread
//   llamaCpp  llama.cpp's own sampling (its greedy sampler) through LlamaContextSequence.evaluate, with
//             threads = 1 (on this model llama.cpp is fastest on one thread: with all cores each token
//             waits for the threads to wake); batch 16 is 16 sequences of one context generating
//             concurrently, which node-llama-cpp decodes as one batch per step. Batch 1 has a context
//             of its own (one sequence), so that its attention does not span 16 sequences' cache.
// A warm-up run of each, then `trials` timed trials of each engine, interleaved (ours, llama.cpp, ours,
// …) so that the load of the machine falls on both alike; each trial repeats the run for at least
// `trialSeconds`; the best trial is kept (as nn/bench.ts times things). Tokens/s = generated tokens
// (counted) per second. llamaCppDecode: the same tokens over llama.cpp's own decode time in the trial
// (its performance counters, llama_perf_context: prompt eval + eval), i.e. without node-llama-cpp's
// hand-off of each step to a worker thread and its sampler call — what llama.cpp itself spends.
//
// greedyTokensEqual: whether the two engines' greedy tokens after the batch-1 prompt are the same — a
// figure that can fail (same model, same prompt, greedy; the log-probs agree within 1e-4, so only a
// near tie could flip a token).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../core/rng.ts';
import { transformerGguf } from '../export/gguf.ts';
import { BENCH_TRANSFORMER, withThreads } from '../nn/bench.ts';
import { generate } from '../nn/sampling.ts';
import { MIN_VOCAB, Tokenizer } from '../nn/tokenizer.ts';
import { Transformer, type TransformerConfig } from '../nn/transformer.ts';
import { llama } from './runtime.ts';

type Llama = Awaited<ReturnType<typeof llama>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type LlamaContext = Awaited<ReturnType<LlamaModel['createContext']>>;

export interface LlamaBenchOptions {
  /** Prompt tokens (16). */
  prompt: number;
  /** New tokens per prompt (64). */
  tokens: number;
  /** Batch sizes ([1, 16]); the first is the one whose greedy tokens are compared. */
  batches: readonly number[];
  /** Least length of a timed trial, seconds. */
  trialSeconds: number;
  /** Timed trials per engine and batch (best kept). */
  trials: number;
  config: TransformerConfig;
}

export const LLAMA_BENCH: LlamaBenchOptions = {
  prompt: 16,
  tokens: 64,
  batches: [1, 16],
  trialSeconds: 0.2,
  trials: 3,
  config: BENCH_TRANSFORMER,
};

type ByBatch = Record<string, number>;

export interface LlamaCppBench {
  model: TransformerConfig & { params: number };
  /** Threads of each engine. */
  threads: number;
  promptTokens: number;
  newTokens: number;
  /** By batch: ours, llama.cpp through node-llama-cpp (wall time), and llama.cpp's decode alone (the
   * same tokens over its own decode time: without node-llama-cpp's per-step hand-off and sampling). */
  generateTokensPerSecond: { ours: ByBatch; llamaCpp: ByBatch; llamaCppDecode: ByBatch };
  /** ours ÷ llamaCpp, by batch (the goal: ≥ 0.5 at batch 1). */
  ratio: ByBatch;
  /** ours ÷ llamaCppDecode, by batch. */
  ratioToDecode: ByBatch;
  /** Tokens each engine generated in one run, by batch (batch × newTokens when neither stopped early). */
  generatedTokens: { ours: ByBatch; llamaCpp: ByBatch };
  greedyTokensEqual: boolean;
}

/** A tokenizer of exactly `vocab` tokens: bytes, merges of two lowercase letters, the specials. */
export function benchTokenizer(vocab: number): Tokenizer {
  const a = 'a'.charCodeAt(0);
  const merges: [number, number][] = [];
  for (let i = 0; i < 26 && merges.length < vocab - MIN_VOCAB; i++)
    for (let j = 0; j < 26 && merges.length < vocab - MIN_VOCAB; j++) merges.push([a + i, a + j]);
  if (merges.length !== vocab - MIN_VOCAB)
    throw new RangeError(`vocab ${vocab}: the bench tokenizer has ${MIN_VOCAB} to ${MIN_VOCAB + 676} tokens`);
  return new Tokenizer(merges);
}

/** Best-of-trials rates of a run: calls per wall-second and, when `decodeMs` reads the engine's own
 * compute time of the trial, calls per second of that time. */
class Timer {
  best = 0;
  bestDecode = 0;
  constructor(
    private readonly run: () => unknown,
    private readonly minSeconds: number,
    private readonly decodeMs?: { reset(): Promise<void>; read(): Promise<number> },
  ) {}
  async trial(): Promise<void> {
    await this.decodeMs?.reset();
    let n = 0;
    let elapsed = 0;
    const t0 = performance.now();
    do {
      await this.run();
      n++;
      elapsed = (performance.now() - t0) / 1000;
    } while (elapsed < this.minSeconds);
    this.best = Math.max(this.best, n / elapsed);
    if (this.decodeMs !== undefined)
      this.bestDecode = Math.max(this.bestDecode, n / ((await this.decodeMs.read()) / 1000));
  }
}

type Sequence = ReturnType<LlamaContext['getSequence']>;

/** Greedy generation of `tokens` after each prompt, on its own sequence (cleared first), concurrently. */
async function llamaGenerate(
  sequences: readonly Sequence[],
  prompts: readonly number[][],
  tokens: number,
): Promise<number[][]> {
  return Promise.all(
    prompts.map(async (prompt, i) => {
      const s = sequences[i];
      await s.clearHistory();
      const out: number[] = [];
      for await (const t of s.evaluate(prompt as never, { temperature: 0, yieldEogToken: true })) {
        out.push(t as number);
        if (out.length >= tokens) break;
      }
      return out;
    }),
  );
}

/**
 * llama.cpp's own decode time since the last call, in ms: its performance counters (prompt eval + eval,
 * llama_perf_context), which it prints through the log at level info and resets. The log level is raised
 * to info only while they print; the lines arrive through the event loop (a thread-safe function), so
 * they are awaited turn by turn.
 */
async function decodeMs(l: Llama, context: LlamaContext): Promise<number> {
  const [level, logger] = [l.logLevel, l.logger];
  const lines: string[] = [];
  l.logLevel = 'info' as Llama['logLevel'];
  l.logger = (_level, message) => {
    lines.push(message);
  };
  try {
    await context.printTimings();
    const ms = (what: RegExp) => {
      const line = lines.join('\n').match(what);
      return line === null ? undefined : Number(line[1]);
    };
    for (let turn = 0; turn < 100; turn++) {
      const prompt = ms(/prompt eval time =\s*([\d.]+) ms/);
      const evaluation = ms(/(?:^|\n|:)\s*eval time =\s*([\d.]+) ms/);
      if (prompt !== undefined && evaluation !== undefined) return prompt + evaluation;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`llama.cpp printed no timings: ${JSON.stringify(lines.join('\n'))}`);
  } finally {
    l.logLevel = level;
    l.logger = logger;
  }
}

/** The figures of the header, for `o` (LLAMA_BENCH: the figures bench nn prints). */
export async function llamaCppBench(o: LlamaBenchOptions = LLAMA_BENCH): Promise<LlamaCppBench> {
  const model = new Transformer(o.config, Rng.derive(0, 0xbe4c));
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-llama-bench-'));
  const path = join(dir, 'bench.gguf');
  const l = await llama();
  let loaded: LlamaModel | undefined;
  try {
    const file = transformerGguf(model, benchTokenizer(o.config.vocab), { name: 'bench', type: 'f32' });
    writeFileSync(path, file);
    loaded = await l.loadModel({ modelPath: path, gpuLayers: 0 });
    const rng = Rng.derive(2, 0xbe4c);
    const rates: LlamaCppBench['generateTokensPerSecond'] = { ours: {}, llamaCpp: {}, llamaCppDecode: {} };
    const generated: LlamaCppBench['generatedTokens'] = { ours: {}, llamaCpp: {} };
    let equal = false;
    for (const B of o.batches) {
      const prompts = Array.from({ length: B }, () =>
        Array.from({ length: o.prompt }, () => rng.int(o.config.vocab)),
      );
      const context = await loaded.createContext({
        contextSize: o.config.ctx,
        sequences: B,
        threads: 1,
        batchSize: Math.max(512, B * o.prompt),
        performanceTracking: true,
      });
      try {
        const rngs = prompts.map((_, i) => Rng.derive(1, i));
        let mine: number[][] = [];
        let theirs: number[][] = [];
        const runOurs = () =>
          withThreads(1, () => {
            const out = generate(model, prompts, { maxTokens: o.tokens, temperature: 0, rngs });
            mine = out.map((g) => g.tokens);
          });
        const sequences = prompts.map(() => context.getSequence());
        const runCpp = async () => {
          theirs = await llamaGenerate(sequences, prompts, o.tokens);
        };
        const timing = {
          reset: async () => void (await decodeMs(l, context)),
          read: () => decodeMs(l, context),
        };
        const ourTimer = new Timer(runOurs, o.trialSeconds);
        const cppTimer = new Timer(runCpp, o.trialSeconds, timing);
        runOurs();
        await runCpp();
        for (let t = 0; t < o.trials; t++) {
          await ourTimer.trial();
          await cppTimer.trial();
        }
        const count = (g: number[][]) => g.reduce((s, x) => s + x.length, 0);
        generated.ours[B] = count(mine);
        generated.llamaCpp[B] = count(theirs);
        rates.ours[B] = Math.round(ourTimer.best * generated.ours[B]);
        rates.llamaCpp[B] = Math.round(cppTimer.best * generated.llamaCpp[B]);
        rates.llamaCppDecode[B] = Math.round(cppTimer.bestDecode * generated.llamaCpp[B]);
        if (B === o.batches[0]) equal = JSON.stringify(mine[0]) === JSON.stringify(theirs[0]);
      } finally {
        await context.dispose();
      }
    }
    const ratio = (to: ByBatch): ByBatch =>
      Object.fromEntries(o.batches.map((B) => [B, Math.round((rates.ours[B] / to[B]) * 1000) / 1000]));
    return {
      model: { ...o.config, params: model.parameterCount() },
      threads: 1,
      promptTokens: o.prompt,
      newTokens: o.tokens,
      generateTokensPerSecond: rates,
      ratio: ratio(rates.llamaCpp),
      ratioToDecode: ratio(rates.llamaCppDecode),
      generatedTokens: generated,
      greedyTokensEqual: equal,
    };
  } finally {
    await loaded?.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}
