// Keys and values kept across calls, by token prefix: a turn's prompt is mostly text the model has read
// before — the system message every prompt of an env starts with, and, until the context window slides,
// the previous turn's prompt and reply — so generate() and scoreTokensTop() (nn/sampling.ts) start a
// sequence from the longest stored prefix of its tokens and feed only the rest. The logits are the same
// bits as without the cache: a cached position's keys and values are the ones a fresh prefill computes
// (each row of every op depends only on its own inputs and the keys before it — "Bits" in
// nn/kv-cache.ts and nn/attention.ts), and positions are absolute from 0, so only an exact prefix is
// reused (a prompt whose window slid shares its system message and nothing after).
//
// Validity: the entries hold activations of the weights they were computed with, so every use checks a
// fingerprint of the weights (a 32-bit hash of every parameter's bits) and drops everything when it
// changed — an optimizer step, a loaded checkpoint. Memory: at most `capacity` positions in all (a
// position costs layers × 2 × kvHeads × headWidth floats), least recently used dropped first.
import type { KvCache } from './kv-cache.ts';
import type { Transformer } from './transformer.ts';

interface Entry {
  tokens: Int32Array;
  /** Per layer, keys and values of the positions, (kvHeads, length, hd). */
  k: Float32Array[];
  v: Float32Array[];
}

/** Default memory of a cache: 128 MiB of keys and values (a lockstep batch of 64 tool-world episodes
 * of ~1 200 tokens holds ~80 MB at d 64). */
const DEFAULT_BYTES = 128 * 2 ** 20;

export class PrefixCache {
  /** Most positions held in all. */
  readonly capacity: number;
  private entries: Entry[] = [];
  private held = 0;
  private weights: number | undefined;
  /** Positions fed from the cache and fed fresh, since construction (what the cache saved). */
  readonly stats = { reused: 0, fed: 0, lookups: 0, hits: 0 };

  constructor(
    readonly model: Transformer,
    bytes = DEFAULT_BYTES,
  ) {
    const c = model.config;
    this.capacity = Math.max(c.ctx, Math.floor(bytes / (c.layers * 2 * c.kvHeads * model.headWidth * 4)));
  }

  /** Drops every entry if the weights changed since the entries were made. */
  sync(): void {
    const f = weightsFingerprint(this.model);
    if (f !== this.weights) {
      this.entries = [];
      this.held = 0;
      this.weights = f;
    }
  }

  /** The entry sharing the longest prefix with `tokens` (at most `limit` positions), and that length. */
  lookup(tokens: ArrayLike<number>, limit: number): { entry: Entry; length: number } | undefined {
    this.stats.lookups++;
    let best: Entry | undefined;
    let bestLength = 0;
    for (const e of this.entries) {
      const n = Math.min(limit, e.tokens.length, tokens.length);
      let i = 0;
      while (i < n && e.tokens[i] === tokens[i]) i++;
      if (i > bestLength) {
        best = e;
        bestLength = i;
      }
    }
    if (best === undefined) return undefined;
    this.stats.hits++;
    // Most recently used last.
    this.entries.splice(this.entries.indexOf(best), 1);
    this.entries.push(best);
    return { entry: best, length: bestLength };
  }

  /** Starts sequence s of `cache` (empty) with the first `length` positions of `entry`. */
  load(cache: KvCache, s: number, entry: Entry, length: number): void {
    if (cache.lengths[s] !== 0) throw new RangeError(`load: sequence ${s} is not empty`);
    cache.reserve(s, length);
    const { kvHeads: H, headWidth: hd } = cache;
    const room = cache.room[s];
    const n = entry.tokens.length;
    cache.layers.forEach((layer, l) => {
      for (let h = 0; h < H; h++) {
        layer.k[s].set(entry.k[l].subarray(h * n * hd, (h * n + length) * hd), h * room * hd);
        layer.v[s].set(entry.v[l].subarray(h * n * hd, (h * n + length) * hd), h * room * hd);
      }
    });
    cache.lengths[s] = length;
    this.stats.reused += length;
  }

  /** Starts sequence s of `cache` (empty) from the longest stored prefix of `tokens`, at most `limit`
   * positions (so that the tokens after it, which the caller feeds, include the ones whose logits it
   * reads); returns how many positions it loaded. */
  start(cache: KvCache, s: number, tokens: ArrayLike<number>, limit: number): number {
    const hit = this.lookup(tokens, limit);
    if (hit !== undefined) this.load(cache, s, hit.entry, hit.length);
    const from = hit?.length ?? 0;
    this.stats.fed += tokens.length - from;
    return from;
  }

  /** Keeps sequence s of `cache` (its `tokens`, as many as it holds); an entry that is a prefix of it
   * is dropped (the new one serves every lookup the old one did). */
  store(cache: KvCache, s: number, tokens: ArrayLike<number>): void {
    const n = cache.lengths[s];
    if (tokens.length !== n) throw new RangeError(`store: ${tokens.length} tokens for ${n} positions`);
    if (n === 0 || n > this.capacity) return;
    const kept = Int32Array.from(tokens);
    this.entries = this.entries.filter((e) => {
      if (e.tokens.length > n) return true;
      for (let i = 0; i < e.tokens.length; i++) if (e.tokens[i] !== kept[i]) return true;
      this.held -= e.tokens.length;
      return false;
    });
    const { kvHeads: H, headWidth: hd } = cache;
    const room = cache.room[s];
    const copy = (side: Float32Array) => {
      const out = new Float32Array(H * n * hd);
      for (let h = 0; h < H; h++) out.set(side.subarray(h * room * hd, (h * room + n) * hd), h * n * hd);
      return out;
    };
    this.entries.push({
      tokens: kept,
      k: cache.layers.map((layer) => copy(layer.k[s])),
      v: cache.layers.map((layer) => copy(layer.v[s])),
    });
    this.held += n;
    while (this.held > this.capacity) {
      const old = this.entries.shift() as Entry;
      this.held -= old.tokens.length;
    }
  }

  /** Positions held now. */
  get size(): number {
    return this.held;
  }
}

/** A 32-bit FNV-1a-style hash of every parameter's bits, in namedParameters order. */
export function weightsFingerprint(model: Transformer): number {
  let h = 0x811c9dc5;
  for (const [, t] of model.namedParameters()) {
    const d = t.data;
    const words = new Uint32Array(d.buffer, d.byteOffset, d.length);
    for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 0x01000193);
    h = Math.imul(h ^ words.length, 0x01000193);
  }
  return h >>> 0;
}
