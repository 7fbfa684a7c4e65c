// Inference with a KV cache: each sequence of a batch keeps, per layer, the rotated keys and the values
// of every token it has seen, so a step feeds only its new tokens (a whole prompt, then one token at a
// time). Sequences are independent and of any length: a step takes any subset of them with any number
// of new tokens each, packed as rows (no padding — the "varlen" layout of FlashAttention/vLLM), so a
// batch can drop finished sequences as it goes.
//
// Bits: every op on the way is row-wise or, for attention, per sequence with its keys starting at
// index 0 (nn/attention.ts, "Bits"), so a token's logits are the same bits whether it was fed alone,
// with its prompt, inside a batch, or through Transformer.forward without a cache — the tests check all
// of these. Runs under noGrad(): no graph, no closures.
import { attendCached } from './attention.ts';
import { add, embedding, linear } from './ops.ts';
import { noGrad, type Tensor, tensor } from './tensor.ts';
import { mlpResidual, projectQkv, type Transformer } from './transformer.ts';

/** One layer's cache: per sequence, keys and values as (kvHeads, room, hd) — each head's keys
 * contiguous, the layout attendCached reads — where room grows (doubling, up to the context) as the
 * sequence does, so a batch of short generations does not hold ctx positions each. */
export interface LayerCache {
  k: Float32Array[];
  v: Float32Array[];
}

export class KvCache {
  /** Positions a sequence can hold (the model's context). */
  readonly capacity: number;
  /** Tokens each sequence holds so far. */
  readonly lengths: Int32Array;
  /** Positions each sequence has room for now (≤ capacity). */
  readonly room: Int32Array;
  readonly layers: LayerCache[];
  readonly kvHeads: number;
  readonly headWidth: number;

  constructor(model: Transformer, sequences: number) {
    const c = model.config;
    this.capacity = c.ctx;
    this.kvHeads = c.kvHeads;
    this.headWidth = model.headWidth;
    this.lengths = new Int32Array(sequences);
    this.room = new Int32Array(sequences);
    const empty = () => Array.from({ length: sequences }, () => new Float32Array(0));
    this.layers = model.blocks.map(() => ({ k: empty(), v: empty() }));
  }

  get sequences(): number {
    return this.lengths.length;
  }

  /** Makes room for sequence s to hold n positions (re-laying its heads out when it grows). */
  reserve(s: number, n: number): void {
    const old = this.room[s];
    if (n <= old) return;
    const room = Math.min(this.capacity, Math.max(n, 2 * old, 32));
    const { kvHeads: H, headWidth: hd } = this;
    const len = this.lengths[s];
    for (const layer of this.layers) {
      for (const side of [layer.k, layer.v]) {
        const grown = new Float32Array(H * room * hd);
        for (let h = 0; h < H; h++)
          grown.set(side[s].subarray(h * old * hd, (h * old + len) * hd), h * room * hd);
        side[s] = grown;
      }
    }
    this.room[s] = room;
  }

  /** Writes rows (n, kvHeads, hd) of k and v (at row offset r0) as sequence s's positions from..from+n−1
   * (room reserved). */
  append(
    layer: number,
    s: number,
    from: number,
    n: number,
    k: Float32Array,
    v: Float32Array,
    r0: number,
  ): void {
    const { kvHeads: H, headWidth: hd } = this;
    const room = this.room[s];
    const K = this.layers[layer].k[s];
    const V = this.layers[layer].v[s];
    for (let t = 0; t < n; t++) {
      for (let h = 0; h < H; h++) {
        const src = ((r0 + t) * H + h) * hd;
        const dst = (h * room + from + t) * hd;
        K.set(k.subarray(src, src + hd), dst);
        V.set(v.subarray(src, src + hd), dst);
      }
    }
  }
}

/**
 * Feeds new tokens of some sequences through the model and appends them to the cache. `seqs[i]` gets
 * `tokens[i]` (≥ 1 token) at its next positions. Returns logits (rows, vocab): one row per new token
 * in order, or with `lastOnly` one row per sequence (its last token's: the next-token distribution).
 */
export function feed(
  model: Transformer,
  cache: KvCache,
  seqs: readonly number[],
  tokens: readonly ArrayLike<number>[],
  lastOnly = false,
): Float32Array {
  return noGrad(() => {
    const c = model.config;
    if (seqs.length !== tokens.length)
      throw new RangeError(`feed: ${seqs.length} sequences, ${tokens.length} token lists`);
    const starts: number[] = [];
    let R = 0;
    seqs.forEach((s, i) => {
      const n = tokens[i].length;
      if (!(s >= 0 && s < cache.sequences))
        throw new RangeError(`feed: no sequence ${s} in a cache of ${cache.sequences}`);
      if (n < 1) throw new RangeError(`feed: sequence ${s} gets no token`);
      if (cache.lengths[s] + n > cache.capacity)
        throw new RangeError(
          `feed: sequence ${s} would hold ${cache.lengths[s] + n} tokens, the context is ${cache.capacity}`,
        );
      cache.reserve(s, cache.lengths[s] + n);
      starts.push(R);
      R += n;
    });
    const ids = new Int32Array(R);
    const positions = new Int32Array(R);
    seqs.forEach((s, i) => {
      for (let t = 0; t < tokens[i].length; t++) {
        ids[starts[i] + t] = tokens[i][t];
        positions[starts[i] + t] = cache.lengths[s] + t;
      }
    });
    const hd = model.headWidth;
    let x: Tensor = embedding(model.embed, ids, [R]); // (R, d)
    model.blocks.forEach((l, layer) => {
      const { q, k, v } = projectQkv(x, l, c, [R], positions);
      const att = new Float32Array(R * c.d);
      seqs.forEach((s, i) => {
        const n = tokens[i].length;
        const from = cache.lengths[s];
        cache.append(layer, s, from, n, k.data, v.data, starts[i]);
        const { k: K, v: V } = cache.layers[layer];
        const off = starts[i] * c.heads * hd;
        attendCached(q.data, off, n, c.heads, hd, K[s], V[s], c.kvHeads, cache.room[s], from + n, att, off);
      });
      x = mlpResidual(add(x, linear(tensor(att, [R, c.d]), l.wo)), l, c);
    });
    seqs.forEach((s, i) => {
      cache.lengths[s] += tokens[i].length;
    });
    if (!lastOnly) return model.logits(x).data;
    const last = new Float32Array(seqs.length * c.d);
    seqs.forEach((_, i) => {
      const r = starts[i] + tokens[i].length - 1;
      last.set(x.data.subarray(r * c.d, (r + 1) * c.d), i * c.d);
    });
    return model.logits(tensor(last, [seqs.length, c.d])).data;
  });
}
