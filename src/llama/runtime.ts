// llama.cpp in process through node-llama-cpp (its prebuilt CPU build, loaded with
// getLlama({gpu: false, build: 'never'}): nothing is compiled or downloaded). What turnwise takes from it
// is the model's forward pass only — the next-token distribution after a token sequence — and its
// tokenizer; sampling, log-probs under τ and top-p, and the random stream are turnwise's own
// (nn/sampling.ts sampleRow), so a `gguf:` policy draws as the in-process transformer draws.
//
// A distribution row is log p of every vocabulary token under the model's softmax (temperature 1, no
// truncation: node-llama-cpp's probabilities after a sampler of top_k = the whole vocabulary, top_p 1,
// min_p 0), −∞ where the probability underflows float32.
//
// Determinism: a sequence's prompt is evaluated from an empty cache in one batch and its reply one token
// at a time, the same way whatever else runs, and decodes never share a batch: llama.cpp can decode
// several sequences of a context together, but a row computed in a batch shared with another sequence
// differs in its last bits from the row computed alone (measured on the FrozenLake agent, F32 cache: up
// to 4e-6 in log p on reply tokens), which would make the bytes of a run depend on its concurrency.
// Concurrent turns therefore queue for the context's sequences and their decodes run one at a time
// (test/policies/gguf.test.ts: the same bytes at concurrency 1 and 8).
import { InputError } from '../core/errors.ts';
import type { GgufModelInfo } from './gguf-check.ts';

type NodeLlama = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlama['getLlama']>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type LlamaContext = Awaited<ReturnType<LlamaModel['createContext']>>;
type LlamaContextSequence = ReturnType<LlamaContext['getSequence']>;

export interface RuntimeOptions {
  /** Context per sequence, in tokens. */
  ctx: number;
  /** Threads of llama.cpp's evaluation (0: all cores). */
  threads: number;
  /** Sequences decoded side by side (concurrent turns). */
  sequences: number;
  /** An F32 KV cache and attention without flash attention: what an F32 model needs to give turnwise's
   * own log-probs (llama.cpp's defaults, an F16 cache and CPU flash attention in F16, move them by up to
   * 0.09 nats on a 460-token prompt of the FrozenLake agent; F32 and no flash attention, by 1.5e-5). */
  precise: boolean;
}

const RAW = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;

let llamaPromise: Promise<Llama> | undefined;

/** The process's llama.cpp, loaded once (its log lines are kept, not printed: the library never prints). */
export async function llama(): Promise<Llama> {
  if (llamaPromise === undefined) {
    const m: NodeLlama = await import('node-llama-cpp');
    llamaPromise = m.getLlama({
      gpu: false,
      build: 'never',
      logLevel: m.LlamaLogLevel.error,
      logger: (_level, message) => {
        lastLog = message;
      },
    });
  }
  return llamaPromise;
}
let lastLog = '';

/** A model loaded in llama.cpp, with a pool of sequences. */
export class LlamaRuntime {
  readonly info: GgufModelInfo;
  readonly vocab: number;
  readonly ctx: number;
  private readonly model: LlamaModel;
  private readonly context: LlamaContext;
  private readonly free: LlamaContextSequence[];
  private readonly waiting: ((s: LlamaContextSequence) => void)[] = [];
  /** Serialises decodes: sequences never share a batch (see the header). */
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(info: GgufModelInfo, model: LlamaModel, context: LlamaContext) {
    this.info = info;
    this.model = model;
    this.context = context;
    this.vocab =
      (info.header.metadata.get('tokenizer.ggml.tokens')?.value as unknown[] | undefined)?.length ?? 0;
    this.ctx = context.contextSize;
    this.free = [];
    for (let i = 0; i < context.totalSequences; i++) this.free.push(context.getSequence());
  }

  /**
   * Loads a checked model (llama/gguf-check.ts); llama.cpp's own refusal of the file is an InputError
   * naming `field` and the path, with llama.cpp's last log line.
   */
  static async open(info: GgufModelInfo, o: RuntimeOptions, field: string): Promise<LlamaRuntime> {
    const l = await llama();
    let model: LlamaModel;
    try {
      model = await l.loadModel({ modelPath: info.path, gpuLayers: 0 });
    } catch (e) {
      throw new InputError(field, info.path, `llama.cpp refused the model: ${why(e)}`);
    }
    let context: LlamaContext;
    try {
      context = await model.createContext({
        contextSize: o.ctx,
        sequences: o.sequences,
        threads: o.threads,
        batchSize: Math.min(o.ctx, 2048),
        ...(o.precise
          ? { flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' }
          : {}),
      } as Parameters<LlamaModel['createContext']>[0]);
    } catch (e) {
      await model.dispose();
      throw new InputError(
        field,
        info.path,
        `llama.cpp could not make a context of ${o.ctx} tokens: ${why(e)}`,
      );
    }
    return new LlamaRuntime(info, model, context);
  }

  /** Token ids of text, special tokens parsed (what a chat template renders), no BOS added. */
  tokenize(text: string): number[] {
    return [...this.model.tokenize(text, true)];
  }

  /** Token ids of text as the model writes it: special tokens' texts are ordinary text (not parsed). */
  tokenizeText(text: string): number[] {
    return [...this.model.tokenize(text, false)];
  }

  /** Whether llama.cpp counts the token special (control or unknown: written by name). */
  isSpecial(id: number): boolean {
    return this.model.isSpecialToken(id as never);
  }

  /** The text of token ids (special tokens written out). */
  detokenize(ids: readonly number[], specials = false): string {
    return this.model.detokenize(ids as never, specials);
  }

  /** Whether llama.cpp ends a generation on this token (EOS, EOT, <|end|> and its kin). */
  isEog(id: number): boolean {
    return this.model.isEogToken(id as never);
  }

  /** A token's text as llama.cpp writes it alone (specials included). */
  tokenText(id: number): string {
    return this.model.detokenize([id as never], true);
  }

  private async acquire(): Promise<LlamaContextSequence> {
    const s = this.free.pop();
    if (s !== undefined) return s;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(s: LlamaContextSequence): void {
    const next = this.waiting.shift();
    if (next !== undefined) next(s);
    else this.free.push(s);
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Distribution rows (log p over the vocabulary) after each of `tokens[from…]`, evaluated on `s`. */
  private async rows(
    s: LlamaContextSequence,
    tokens: readonly number[],
    from: number,
  ): Promise<Float32Array[]> {
    const input = tokens.map((t, i) =>
      i >= from ? ([t, { generateNext: { probabilities: true, options: RAW } }] as const) : t,
    );
    const out = await this.serial(() => s.controlledEvaluate(input as never));
    const rows: Float32Array[] = [];
    for (let i = from; i < tokens.length; i++) {
      const probs = out[i]?.next.probabilities;
      if (probs === undefined) throw new Error(`llama.cpp gave no distribution after token ${i}`);
      const row = new Float32Array(this.vocab).fill(Number.NEGATIVE_INFINITY);
      for (const [id, p] of probs) if (id < this.vocab) row[id] = Math.log(p);
      rows.push(row);
    }
    return rows;
  }

  /**
   * One generation: the prompt from an empty cache, then `next(row)` is asked for each token to feed
   * (undefined ends it). Returns nothing; the caller keeps what it drew.
   */
  async generate(prompt: readonly number[], next: (row: Float32Array) => number | undefined): Promise<void> {
    const s = await this.acquire();
    try {
      await s.clearHistory();
      let [row] = await this.rows(s, prompt, prompt.length - 1);
      for (;;) {
        const token = next(row);
        if (token === undefined) return;
        [row] = await this.rows(s, [token], 0);
      }
    } finally {
      this.release(s);
    }
  }

  /** Teacher forcing: the distribution rows before each token of `reply`, after `prompt`. */
  async score(prompt: readonly number[], reply: readonly number[]): Promise<Float32Array[]> {
    if (reply.length === 0) return [];
    const s = await this.acquire();
    try {
      await s.clearHistory();
      const all = [...prompt, ...reply.slice(0, -1)];
      return await this.rows(s, all, prompt.length - 1);
    } finally {
      this.release(s);
    }
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}

function why(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  const line = m.split('\n')[0];
  return lastLog !== '' && !line.includes(lastLog.trim()) ? `${line} (${lastLog.trim()})` : line;
}
