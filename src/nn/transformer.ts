// A decoder-only transformer in the Llama layout (Touvron et al. 2023; HF `LlamaForCausalLM`):
//   token embedding → per layer [RMSNorm → attention (q, k, v, o; no biases; rotary on q and k)
//   → residual; RMSNorm → SwiGLU MLP (gate, up, down) → residual] → final RMSNorm → LM head.
// Parameters carry HF Llama's state_dict names, so a checkpoint reads as an HF checkpoint and the GGUF
// export maps each 1:1 (llama.cpp names in brackets): model.embed_tokens.weight [token_embd],
// model.layers.{i}.input_layernorm.weight [attn_norm], self_attn.{q,k,v,o}_proj.weight
// [attn_q/k/v/output; q and k rows permuted for llama.cpp's rope, see nn/rope.ts],
// post_attention_layernorm.weight [ffn_norm], mlp.gate_proj (w1) [ffn_gate], mlp.up_proj (w3) [ffn_up],
// mlp.down_proj (w2) [ffn_down], model.norm.weight [output_norm], lm_head.weight [output].
//
// Tied head (the default): the head reuses the embedding, logits = h · Eᵀ (Press & Wolf 2017). At this
// scale the vocabulary matrix is a large share of the model (vocab 512, d 128: 65 K of ~0.5 M; a BPE
// vocabulary of 4 K would be 0.5 M on its own), tying halves it, and small Llama-family models tie for
// that reason (Llama 3.2 1B/3B, SmolLM). llama.cpp reads either: without `output.weight` it uses
// `token_embd.weight` as the head. `tiedHead: false` gives a separate lm_head.weight.
//
// Initialisation (seeded from core's Rng, drawn in parameter order: same seed, same bytes): every
// matrix ~ N(0, 0.02²) (HF LlamaPreTrainedModel._init_weights, initializer_range 0.02), except the two
// projections that write into the residual stream (o_proj, down_proj) at 0.02/√(2·layers) (GPT-2 §2.3,
// nanoGPT's c_proj), so the stream's variance does not grow with depth; RMSNorm weights = 1.
import { InputError } from '../core/errors.ts';
import type { Rng } from '../core/rng.ts';
import { attention, layoutTokens, type PrefixLayout, prefixAttention } from './attention.ts';
import { Module, type NamedTensors } from './layers.ts';
import { rmsNorm, swiglu } from './llama-ops.ts';
import { add, embedding, linear } from './ops.ts';
import { rope } from './rope.ts';
import { reshape } from './shape-ops.ts';
import { parameter, type Tensor } from './tensor.ts';

export interface TransformerConfig {
  /** Decoder layers. */
  layers: number;
  /** Model width (residual stream). */
  d: number;
  /** Query heads; the head width is d / heads. */
  heads: number;
  /** Key/value heads (grouped-query attention); must divide heads. Default heads (plain multi-head). */
  kvHeads: number;
  /** Hidden width of the SwiGLU MLP. */
  ffn: number;
  /** Context window in tokens (positions 0 … ctx − 1). */
  ctx: number;
  vocab: number;
  /** Rotary base θ. */
  ropeTheta: number;
  /** RMSNorm ε. */
  normEps: number;
  /** The head reuses the embedding matrix (see the file header). */
  tiedHead: boolean;
}

/** Llama's MLP width for a model width d: 8d/3 (SwiGLU's three matrices cost what a 4d MLP's two do,
 * Shazeer 2020 §2), rounded up to a multiple of 32. */
export function llamaFfn(d: number): number {
  return Math.ceil((8 * d) / 3 / 32) * 32;
}

/** A full config from the fields given: heads 4, kvHeads = heads, ffn = llamaFfn(d), ctx 256,
 * ropeTheta 10 000 (Llama 1/2), normEps 1e-5, tied head. Checked (InputError naming the field). */
export function transformerConfig(
  c: Partial<TransformerConfig> & Pick<TransformerConfig, 'layers' | 'd' | 'vocab'>,
): TransformerConfig {
  const heads = c.heads ?? 4;
  return checkTransformerConfig({
    layers: c.layers,
    d: c.d,
    heads,
    kvHeads: c.kvHeads ?? heads,
    ffn: c.ffn ?? llamaFfn(c.d),
    ctx: c.ctx ?? 256,
    vocab: c.vocab,
    ropeTheta: c.ropeTheta ?? 10000,
    normEps: c.normEps ?? 1e-5,
    tiedHead: c.tiedHead ?? true,
  });
}

const INT_FIELDS = ['layers', 'd', 'heads', 'kvHeads', 'ffn', 'ctx', 'vocab'] as const;

/** Refuses a config that cannot build a model (one line naming the field); `source` prefixes the field
 * (a checkpoint path, a policy spec). */
export function checkTransformerConfig(c: unknown, source = 'transformer'): TransformerConfig {
  const field = (name: string) => `${source}.${name}`;
  if (typeof c !== 'object' || c === null) throw new InputError(source, c, 'a transformer config object');
  const o = c as Record<string, unknown>;
  for (const k of INT_FIELDS) {
    const v = o[k];
    if (!(typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1 << 20))
      throw new InputError(field(k), v, 'an integer in [1, 1048576]');
  }
  const cfg = o as unknown as TransformerConfig;
  if (cfg.d % cfg.heads !== 0 || (cfg.d / cfg.heads) % 2 !== 0)
    throw new InputError(
      field('d'),
      cfg.d,
      `a multiple of 2·heads (${2 * cfg.heads}): rotary pairs need an even head width`,
    );
  if (cfg.heads % cfg.kvHeads !== 0)
    throw new InputError(field('kvHeads'), cfg.kvHeads, `a divisor of heads (${cfg.heads})`);
  if (!(typeof cfg.ropeTheta === 'number' && Number.isFinite(cfg.ropeTheta) && cfg.ropeTheta > 1))
    throw new InputError(field('ropeTheta'), cfg.ropeTheta, 'a number > 1');
  if (!(typeof cfg.normEps === 'number' && cfg.normEps > 0 && cfg.normEps < 1))
    throw new InputError(field('normEps'), cfg.normEps, 'a number in (0, 1)');
  if (typeof cfg.tiedHead !== 'boolean')
    throw new InputError(field('tiedHead'), cfg.tiedHead, 'true or false');
  const known = new Set<string>([...INT_FIELDS, 'ropeTheta', 'normEps', 'tiedHead']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new InputError(field(k), o[k], 'no such field');
  return { ...cfg };
}

/** One decoder layer's parameters. */
export interface DecoderLayer {
  attnNorm: Tensor; // (d)
  wq: Tensor; // (heads·hd, d)
  wk: Tensor; // (kvHeads·hd, d)
  wv: Tensor; // (kvHeads·hd, d)
  wo: Tensor; // (d, heads·hd)
  mlpNorm: Tensor; // (d)
  w1: Tensor; // gate (ffn, d)
  w3: Tensor; // up (ffn, d)
  w2: Tensor; // down (d, ffn)
}

export interface ForwardOptions {
  /** Absolute position of each token (B·T); default t within its row. Left-padded rows give their real
   * positions here and hide the padding with keyMask. */
  positions?: Int32Array;
  /** (B·T): 0 hides a padding token from every query of its row. */
  keyMask?: Uint8Array;
}

const INIT_STD = 0.02;

function normal(rng: Rng, n: number, std: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = rng.normal() * std;
  return out;
}

export class Transformer extends Module {
  readonly config: TransformerConfig;
  readonly embed: Tensor; // (vocab, d)
  readonly blocks: DecoderLayer[];
  readonly norm: Tensor; // (d)
  /** (vocab, d); the embedding itself when the head is tied. */
  readonly head: Tensor;

  constructor(config: TransformerConfig, rng: Rng) {
    super();
    const c = checkTransformerConfig(config);
    this.config = c;
    const { d, vocab, ffn, layers } = c;
    const hd = d / c.heads;
    const residualStd = INIT_STD / Math.sqrt(2 * layers);
    const ones = () => parameter(new Float32Array(d).fill(1), [d]);
    const matrix = (rows: number, cols: number, std = INIT_STD) =>
      parameter(normal(rng, rows * cols, std), [rows, cols]);
    this.embed = matrix(vocab, d);
    this.blocks = [];
    for (let i = 0; i < layers; i++) {
      this.blocks.push({
        attnNorm: ones(),
        wq: matrix(c.heads * hd, d),
        wk: matrix(c.kvHeads * hd, d),
        wv: matrix(c.kvHeads * hd, d),
        wo: matrix(d, c.heads * hd, residualStd),
        mlpNorm: ones(),
        w1: matrix(ffn, d),
        w3: matrix(ffn, d),
        w2: matrix(d, ffn, residualStd),
      });
    }
    this.norm = ones();
    this.head = c.tiedHead ? this.embed : matrix(vocab, d);
  }

  get headWidth(): number {
    return this.config.d / this.config.heads;
  }

  namedParameters(prefix = ''): NamedTensors {
    const out: NamedTensors = [[`${prefix}model.embed_tokens.weight`, this.embed]];
    this.blocks.forEach((l, i) => {
      const p = `${prefix}model.layers.${i}.`;
      out.push(
        [`${p}input_layernorm.weight`, l.attnNorm],
        [`${p}self_attn.q_proj.weight`, l.wq],
        [`${p}self_attn.k_proj.weight`, l.wk],
        [`${p}self_attn.v_proj.weight`, l.wv],
        [`${p}self_attn.o_proj.weight`, l.wo],
        [`${p}post_attention_layernorm.weight`, l.mlpNorm],
        [`${p}mlp.gate_proj.weight`, l.w1],
        [`${p}mlp.up_proj.weight`, l.w3],
        [`${p}mlp.down_proj.weight`, l.w2],
      );
    });
    out.push([`${prefix}model.norm.weight`, this.norm]);
    if (!this.config.tiedHead) out.push([`${prefix}lm_head.weight`, this.head]);
    return out;
  }

  /** Scalars that pass through a matrix product per token (the head counted once even when tied; the
   * embedding lookup is a gather, not a product): the N of the 6·N training FLOPs per token. */
  matmulParameterCount(): number {
    let n = this.head.size;
    for (const l of this.blocks)
      n += l.wq.size + l.wk.size + l.wv.size + l.wo.size + l.w1.size + l.w3.size + l.w2.size;
    return n;
  }

  /**
   * Logits (B·T, vocab) of a batch of token rows ids (B·T) — each row's logits at t predict token t + 1.
   * Records the graph when grad mode is on (training); under noGrad() it is the cache-free inference
   * path, bit-identical row for row to the KV-cache path (nn/kv-cache.ts).
   */
  forward(ids: Int32Array, shape: readonly [number, number], opts: ForwardOptions = {}): Tensor {
    return this.logits(this.hidden(ids, shape, opts));
  }

  /** The residual stream after the last block, (B·T, d), before the final norm: a trainer gathers the
   * rows it scores and applies logits() to those alone (the head is per row). */
  hidden(ids: Int32Array, shape: readonly [number, number], opts: ForwardOptions = {}): Tensor {
    const [B, T] = shape;
    const c = this.config;
    if (ids.length !== B * T) throw new RangeError(`transformer: ${ids.length} ids for shape [${B}, ${T}]`);
    if (T > c.ctx) throw new RangeError(`transformer: ${T} positions exceed the context of ${c.ctx}`);
    const positions = opts.positions ?? defaultPositions(B, T);
    for (const p of positions)
      if (p >= c.ctx) throw new RangeError(`transformer: position ${p} is outside the context of ${c.ctx}`);
    let x = embedding(this.embed, ids, [B, T]); // (B, T, d)
    for (const l of this.blocks) {
      const { q, k, v } = projectQkv(x, l, c, [B, T], positions);
      const a = attention(q, k, v, { causal: true, kvOffset: 0, keyMask: opts.keyMask });
      x = mlpResidual(add(x, linear(reshape(a, [B, T, c.d]), l.wo)), l, c);
    }
    return reshape(x, [B * T, c.d]);
  }

  /**
   * The residual stream (N, d) of a packed batch whose rows share a prefix (a PrefixLayout, nn/attention.ts:
   * ids = the prefix's tokens, then each row's own, no padding): the prefix is computed once and every
   * row attends to it, row b's token t at position prefix + t. Each token's row equals, bit for bit, its
   * row of hidden() over that row written out whole (prefix + row); the prefix's gradient is the sum of
   * what every row sends it. A trainer reads every turn that shares the prefix in one forward.
   */
  hiddenPacked(ids: Int32Array, layout: PrefixLayout): Tensor {
    const c = this.config;
    const N = layoutTokens(layout);
    if (ids.length !== N)
      throw new RangeError(`transformer: ${ids.length} ids for a packed layout of ${N} tokens`);
    const L = layout.prefix;
    if (L > c.ctx) throw new RangeError(`transformer: a prefix of ${L} exceeds the context of ${c.ctx}`);
    const positions = new Int32Array(N);
    for (let t = 0; t < L; t++) positions[t] = t;
    let at = L;
    for (const n of layout.rows) {
      if (L + n > c.ctx)
        throw new RangeError(`transformer: ${L + n} positions exceed the context of ${c.ctx}`);
      for (let t = 0; t < n; t++) positions[at++] = L + t;
    }
    let x = embedding(this.embed, ids, [N]); // (N, d)
    for (const l of this.blocks) {
      const { q, k, v } = projectQkv(x, l, c, [N], positions);
      const a = prefixAttention(q, k, v, layout); // (N, heads, hd)
      x = mlpResidual(add(x, linear(reshape(a, [N, c.d]), l.wo)), l, c);
    }
    return x;
  }

  /** Final norm and head: (…, d) → (…, vocab). */
  logits(x: Tensor): Tensor {
    return linear(rmsNorm(x, this.norm, this.config.normEps), this.head);
  }
}

/** A layer's attention inputs from the residual stream x (…rows, d): q (…rows, heads, hd) and k with
 * rotary applied at `positions`, v (…rows, kvHeads, hd). */
export function projectQkv(
  x: Tensor,
  l: DecoderLayer,
  c: TransformerConfig,
  rows: readonly number[],
  positions: Int32Array,
): { q: Tensor; k: Tensor; v: Tensor } {
  const hd = c.d / c.heads;
  const h = rmsNorm(x, l.attnNorm, c.normEps);
  return {
    q: rope(reshape(linear(h, l.wq), [...rows, c.heads, hd]), positions, c.ropeTheta),
    k: rope(reshape(linear(h, l.wk), [...rows, c.kvHeads, hd]), positions, c.ropeTheta),
    v: reshape(linear(h, l.wv), [...rows, c.kvHeads, hd]),
  };
}

/** x + down(silu(gate(m)) ⊙ up(m)) with m = RMSNorm(x): the layer's second half. */
export function mlpResidual(x: Tensor, l: DecoderLayer, c: TransformerConfig): Tensor {
  const m = rmsNorm(x, l.mlpNorm, c.normEps);
  return add(x, linear(swiglu(linear(m, l.w1), linear(m, l.w3)), l.w2));
}

function defaultPositions(B: number, T: number): Int32Array {
  const p = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) p[b * T + t] = t;
  return p;
}
