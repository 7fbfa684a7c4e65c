// The language agent as a GGUF file of the Llama architecture (`turnwise export --format gguf`), laid out
// as llama.cpp's loader reads LLM_ARCH_LLAMA (src/llama-arch.cpp tensor names, src/llama-model.cpp
// hyperparameters), written from the GGUF specification (nn/gguf.ts), not by a converter script:
//
//   tensors   token_embd.weight; per layer blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output,
//             ffn_norm, ffn_gate, ffn_up, ffn_down}.weight; output_norm.weight; output.weight only when
//             the head is untied (llama.cpp then uses token_embd as the head). attn_q and attn_k rows are
//             permuted for llama.cpp's adjacent-pair rope (nn/rope.ts ggufRopePermutation), as
//             convert_hf_to_gguf.py does for an HF Llama. Norms stay F32 in every file type.
//   llama.*   context_length, embedding_length, block_count, feed_forward_length, attention.head_count,
//             attention.head_count_kv, rope.dimension_count, rope.freq_base,
//             attention.layer_norm_rms_epsilon, vocab_size — with the types llama.cpp expects.
//   tokenizer the byte-level BPE as a "gpt2" vocabulary with pre-tokenizer "gpt-2", its merges, the
//             specials as control tokens (nn/tokenizer.ts ggufMetadata), and tokenizer.chat_template: a
//             Jinja template that renders a conversation exactly as Tokenizer.encodeChat does.
//   turnwise.policy the prompt format the agent was trained with (mode, budget awareness, τ, p, the
//             env), so that a `gguf:` policy prompts it as turnwise did.
//
// File types: F32 (general.file_type 0, exact), or Q8_0 (7, "mostly Q8_0": every matrix in blocks of 32
// with an f16 scale; needs a model width and MLP width that are multiples of 32).

import { encodeGguf, type GgmlTypeName, type GgufTensorIn, type GgufValue, gguf } from '../nn/gguf.ts';
import { ggufRopePermutation } from '../nn/rope.ts';
import type { Tokenizer } from '../nn/tokenizer.ts';
import type { Transformer } from '../nn/transformer.ts';

export const GGUF_FILE_TYPES = ['f32', 'q8_0'] as const;
export type GgufFileType = (typeof GGUF_FILE_TYPES)[number];

/** The chat template of Tokenizer.encodeChat: <|role|>text<|end|> per message, then the opened
 * <|assistant|> when a generation is asked for. Jinja as HF chat templates are (messages,
 * add_generation_prompt); no whitespace outside the tags, so the render is exactly the encoded text. */
export const CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}";

/** ggml's LLAMA_FTYPE values for general.file_type. */
const FILE_TYPE_ID: Record<GgufFileType, number> = { f32: 0, q8_0: 7 };

export interface GgufExportOptions {
  /** general.name. */
  name: string;
  type: GgufFileType;
  /** turnwise.* entries (strings), e.g. the policy's prompt format as JSON. */
  turnwise?: Record<string, string>;
}

/** Why a model cannot be written as `type` (one line), or undefined when it can. */
export function ggufUnsupported(model: Transformer, type: GgufFileType): string | undefined {
  const c = model.config;
  if (type === 'q8_0' && (c.d % 32 !== 0 || c.ffn % 32 !== 0))
    return `Q8_0 stores rows in blocks of 32 values; this model's width is ${c.d} and MLP width ${c.ffn}`;
  return undefined;
}

/** The tensors of a model under llama.cpp's names, in the order convert_hf_to_gguf writes them. */
export function ggufTensors(model: Transformer, type: GgufFileType): GgufTensorIn[] {
  const c = model.config;
  const matrix: GgmlTypeName = type === 'q8_0' ? 'Q8_0' : 'F32';
  const byName = new Map(model.namedParameters());
  const get = (n: string) => {
    const t = byName.get(n);
    if (t === undefined) throw new Error(`transformer has no parameter ${n}`);
    return t;
  };
  const out: GgufTensorIn[] = [];
  const put = (name: string, hf: string, kind: GgmlTypeName, permuteHeads?: number) => {
    const t = get(hf);
    const shape = [...t.shape];
    const data =
      permuteHeads === undefined ? t.data : ggufRopePermutation(t.data, shape[0], shape[1], permuteHeads);
    out.push({ name, shape, data, type: kind });
  };
  put('token_embd.weight', 'model.embed_tokens.weight', matrix);
  for (let i = 0; i < c.layers; i++) {
    const p = `model.layers.${i}.`;
    const b = `blk.${i}.`;
    put(`${b}attn_norm.weight`, `${p}input_layernorm.weight`, 'F32');
    put(`${b}attn_q.weight`, `${p}self_attn.q_proj.weight`, matrix, c.heads);
    put(`${b}attn_k.weight`, `${p}self_attn.k_proj.weight`, matrix, c.kvHeads);
    put(`${b}attn_v.weight`, `${p}self_attn.v_proj.weight`, matrix);
    put(`${b}attn_output.weight`, `${p}self_attn.o_proj.weight`, matrix);
    put(`${b}ffn_norm.weight`, `${p}post_attention_layernorm.weight`, 'F32');
    put(`${b}ffn_gate.weight`, `${p}mlp.gate_proj.weight`, matrix);
    put(`${b}ffn_up.weight`, `${p}mlp.up_proj.weight`, matrix);
    put(`${b}ffn_down.weight`, `${p}mlp.down_proj.weight`, matrix);
  }
  put('output_norm.weight', 'model.norm.weight', 'F32');
  if (!c.tiedHead) put('output.weight', 'lm_head.weight', matrix);
  return out;
}

/** The metadata of the file, in order: general, llama.*, tokenizer.*, turnwise.*. */
export function ggufMetadata(
  model: Transformer,
  tokenizer: Tokenizer,
  o: GgufExportOptions,
): Map<string, GgufValue> {
  const c = model.config;
  const m = new Map<string, GgufValue>();
  m.set('general.architecture', gguf.str('llama'));
  m.set('general.name', gguf.str(o.name));
  m.set('general.file_type', gguf.u32(FILE_TYPE_ID[o.type]));
  m.set('general.quantization_version', gguf.u32(2));
  m.set('general.alignment', gguf.u32(32));
  m.set('llama.vocab_size', gguf.u32(c.vocab));
  m.set('llama.context_length', gguf.u32(c.ctx));
  m.set('llama.embedding_length', gguf.u32(c.d));
  m.set('llama.block_count', gguf.u32(c.layers));
  m.set('llama.feed_forward_length', gguf.u32(c.ffn));
  m.set('llama.attention.head_count', gguf.u32(c.heads));
  m.set('llama.attention.head_count_kv', gguf.u32(c.kvHeads));
  m.set('llama.rope.dimension_count', gguf.u32(c.d / c.heads));
  m.set('llama.rope.freq_base', gguf.f32(c.ropeTheta));
  m.set('llama.attention.layer_norm_rms_epsilon', gguf.f32(c.normEps));
  const t = tokenizer.ggufMetadata();
  m.set('tokenizer.ggml.model', gguf.str(t['tokenizer.ggml.model'] as string));
  m.set('tokenizer.ggml.pre', gguf.str(t['tokenizer.ggml.pre'] as string));
  m.set('tokenizer.ggml.tokens', gguf.strings(t['tokenizer.ggml.tokens'] as string[]));
  m.set('tokenizer.ggml.token_type', gguf.i32s(t['tokenizer.ggml.token_type'] as number[]));
  m.set('tokenizer.ggml.merges', gguf.strings(t['tokenizer.ggml.merges'] as string[]));
  for (const k of ['bos', 'eos', 'eot', 'padding'])
    m.set(`tokenizer.ggml.${k}_token_id`, gguf.u32(t[`tokenizer.ggml.${k}_token_id`] as number));
  m.set('tokenizer.ggml.add_bos_token', gguf.bool(t['tokenizer.ggml.add_bos_token'] as boolean));
  m.set('tokenizer.ggml.add_eos_token', gguf.bool(false));
  m.set('tokenizer.chat_template', gguf.str(CHAT_TEMPLATE));
  for (const [k, v] of Object.entries(o.turnwise ?? {})) m.set(`turnwise.${k}`, gguf.str(v));
  return m;
}

/** The whole file. Refuses (RangeError) a model the file type cannot hold (ggufUnsupported). */
export function transformerGguf(model: Transformer, tokenizer: Tokenizer, o: GgufExportOptions): Uint8Array {
  const why = ggufUnsupported(model, o.type);
  if (why !== undefined) throw new RangeError(why);
  if (tokenizer.vocabSize !== model.config.vocab)
    throw new RangeError(`the tokenizer has ${tokenizer.vocabSize} tokens, the model ${model.config.vocab}`);
  return encodeGguf(ggufMetadata(model, tokenizer, o), ggufTensors(model, o.type));
}
