// What a `gguf:` model is, read from its header before llama.cpp loads it (nn/gguf.ts reads the header
// through positional reads; no tensor data is touched), so that bad input is refused in one line before
// any work: a missing file, a file that is not GGUF, an architecture llama.cpp does not generate text
// with, or a model and context that do not fit in the memory the machine has free.
//
// Architectures: LLM_ARCH_NAMES of the llama.cpp that node-llama-cpp 3.21.1 bundles (src/llama-arch.cpp);
// the encoders, embedding models, vision towers, speech models and draft heads among them do not
// generate text and are refused by name (NOT_GENERATIVE), any name not in the list as unknown.
//
// Memory: the weights (the file's tensor bytes; llama.cpp maps them) plus the KV cache at the context
// asked for (2 · layers · ctx · kv_heads · head_width values, F32 for an all-F32 model and F16, llama.cpp's
// default cache type, otherwise) plus
// the logits of one batch; refused when that exceeds what the OS reports available (os.freemem(), which
// is MemAvailable on Linux).
import { existsSync, statSync } from 'node:fs';
import { freemem } from 'node:os';
import { InputError } from '../core/errors.ts';
import { GgufError, type GgufFile, readGgufHeader } from '../nn/gguf.ts';

const ARCHITECTURES =
  `llama llama4 deci falcon grok gpt2 gptj gptneox mpt baichuan starcoder refact bloom stablelm qwen
qwen2 qwen2moe qwen2vl qwen3 qwen3moe qwen3next qwen3vl qwen3vlmoe qwen35 qwen35moe qwen4exp phi2 phi3 phimoe plamo
plamo2 plamo3 codeshell orion internlm2 minicpm minicpm3 gemma gemma2 gemma3 gemma3n gemma4 starcoder2 mamba mamba2
jamba falcon-h1 xverse command-r cohere2 cohere2moe dbrx olmo olmo2 olmoe muse-glimmer openelm arctic deepseek
deepseek2 deepseek2-ocr deepseek32 deepseek4 chatglm glm4 glm4moe glm-dsa bitnet t5 jais jais2 nemotron nemotron_h
nemotron_h_moe exaone exaone4 exaone-moe rwkv6 rwkv6qwen2 rwkv7 arwkv7 granite granitemoe granitehybrid
graniteswitch granite_swa chameleon plm bailingmoe bailingmoe2 bailingmoe3 dots1 dots3note arcee afmoe laguna
ernie4_5 ernie4_5-moe hunyuan-moe hunyuan-dense hunyuan_vl hy_v3 smollm3 gpt-oss lfm2 lfm2moe dream smallthinker
llada llada-moe seed_oss grovemoe apertus minimax-01 minimax-m2 minimax-m3 cogvlm rnd1 pangu-embedded mistral3
mistral4 paddleocr mimo2 step35 maincoder kimi-linear kimi-k3 talkie mellum nanbeige`
    .split(/\s+/)
    .filter((a) => a !== '');

/** In llama.cpp's list, but no text generation: encoders, embeddings, vision, speech, draft heads. */
const NOT_GENERATIVE =
  `clip bert modern-bert nomic-bert nomic-bert-moe neo-bert jina-bert-v2 jina-bert-v3 eurobert
t5encoder wavtokenizer-dec gemma-embedding llama-embed gemma4-assistant eagle3 dflash qwen3tts pockettts`
    .split(/\s+/)
    .filter((a) => a !== '');

export const GENERATIVE_ARCHITECTURES: ReadonlySet<string> = new Set(ARCHITECTURES);

const MiB = 1024 * 1024;

/** What the header says of a model, and what running it at `ctx` needs. */
export interface GgufModelInfo {
  path: string;
  architecture: string;
  name: string | undefined;
  /** The context the model was trained for (`{arch}.context_length`), when stated. */
  trainedContext: number | undefined;
  layers: number | undefined;
  /** Bytes of the tensors. */
  weightBytes: number;
  /** Bytes of the KV cache at the context asked for (0 when the header does not say the shape). */
  kvBytes: number;
  /** Every tensor F32 (general.file_type 0): run with an F32 KV cache and no flash attention, so that
   * its log-probs are the model's (llama/runtime.ts `precise`). */
  allF32: boolean;
  header: GgufFile;
}

const num = (f: GgufFile, key: string): number | undefined => {
  const v = f.metadata.get(key)?.value;
  if (Array.isArray(v)) return typeof v[0] === 'number' ? Math.max(...(v as number[])) : undefined;
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;
};

/** The model's context for a run: the one asked for, else the trained one capped at 4096 (a long-context
 * model's full window would allocate gigabytes of cache the episodes never use). */
export function runContext(info: GgufModelInfo, asked: number | undefined): number {
  return asked ?? Math.min(info.trainedContext ?? 4096, 4096);
}

/**
 * Reads and checks a GGUF file for a `gguf:` policy; InputError naming `field` and the path when it is
 * missing, not GGUF (or damaged), of an architecture that does not generate text, or too large for the
 * memory available at context `ctx` (the trained context, capped, when undefined).
 */
export function checkGgufModel(path: string, field: string, ctx?: number): GgufModelInfo {
  if (!existsSync(path)) throw new InputError(field, path, 'no such file (a GGUF model file)');
  if (!statSync(path).isFile()) throw new InputError(field, path, 'is not a file (a GGUF model file)');
  let header: GgufFile;
  try {
    header = readGgufHeader(path);
  } catch (e) {
    if (e instanceof GgufError) throw new InputError(field, path, e.message);
    throw e;
  }
  const arch = header.metadata.get('general.architecture')?.value;
  if (typeof arch !== 'string')
    throw new InputError(
      field,
      path,
      'a GGUF file without general.architecture: not a model llama.cpp loads',
    );
  if (NOT_GENERATIVE.includes(arch))
    throw new InputError(
      field,
      path,
      `architecture ${arch} does not generate text (an encoder, embedding, vision or speech model)`,
    );
  if (!GENERATIVE_ARCHITECTURES.has(arch))
    throw new InputError(
      field,
      path,
      `architecture ${JSON.stringify(arch)} is not one the bundled llama.cpp runs`,
    );
  let weightBytes = 0;
  for (const t of header.tensors) weightBytes += Math.max(0, t.bytes);
  const layers = num(header, `${arch}.block_count`);
  const info: GgufModelInfo = {
    path,
    architecture: arch,
    name: header.metadata.get('general.name')?.value as string | undefined,
    trainedContext: num(header, `${arch}.context_length`),
    layers,
    weightBytes,
    kvBytes: 0,
    allF32: header.tensors.every((t) => t.type === 0),
    header,
  };
  const n = runContext(info, ctx);
  const heads = num(header, `${arch}.attention.head_count`);
  const kvHeads = num(header, `${arch}.attention.head_count_kv`) ?? heads;
  const width = num(header, `${arch}.embedding_length`);
  const headWidth =
    num(header, `${arch}.attention.key_length`) ?? (width && heads ? width / heads : undefined);
  if (layers !== undefined && kvHeads !== undefined && headWidth !== undefined)
    info.kvBytes = 2 * layers * n * kvHeads * headWidth * (info.allF32 ? 4 : 2);
  const vocab = (header.metadata.get('tokenizer.ggml.tokens')?.value as unknown[] | undefined)?.length ?? 0;
  const need = weightBytes + info.kvBytes + 4 * vocab * 512 + 64 * MiB;
  const free = freemem();
  if (need > free)
    throw new InputError(
      field,
      path,
      `needs about ${Math.ceil(need / MiB)} MiB (weights ${Math.ceil(weightBytes / MiB)} MiB, KV cache ${Math.ceil(info.kvBytes / MiB)} MiB at ctx ${n}); ${Math.floor(free / MiB)} MiB is available — a smaller ctx= or model`,
    );
  return info;
}
