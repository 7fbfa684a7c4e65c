// Fused scaled dot-product attention, softmax(q kᵀ/√hd + mask) v per head (Vaswani et al. 2017 §3.2.1),
// with its own backward — FlashAttention's arithmetic (Dao et al. 2022, Alg. 1–2) on the CPU:
//   forward   per (sequence, head) and per block of TB query rows: S = Q_blk K_hᵀ (gemm), masked
//             row softmax in place, O_blk = P V_h (gemm). Kept for the backward: O and each row's
//             log Σ exp (lse) — never the (T, S) probabilities.
//   backward  P is recomputed from lse (P = exp(s − lse)); dV += Pᵀ dO, dP = dO V_hᵀ, D = rowsum(dO ⊙ O),
//             dS = P ⊙ (dP − D)/√hd, dQ = dS K_h, dK += dSᵀ Q — five gemms per block, no (T, S) tensor
//             outlives the block.
// Causal blocks stop at the last key their last row may see, so the masked upper triangle is mostly
// never computed (about 3/8 of the products are skipped at T = 256, TB = 64).
//
// Layouts: q (B, T, Hq, hd), k and v (B, S, Hkv, hd) — what a Linear's output (B, T, H·hd) already is,
// so the model reshapes without copying; heads are gathered into contiguous (T, hd) panels here.
// Grouped-query attention: query head h reads key/value head ⌊h / (Hq/Hkv)⌋ (Ainslie et al. 2023).
//
// Masks: query t of element b sits at absolute position kvOffset_b + t; under `causal` it sees keys
// s ≤ kvOffset_b + t. keyMask[b·S + s] = 0 hides key s (padding) from every query of element b. A query
// that sees no key at all outputs zeros and passes no gradient (not NaN).
//
// Bits: a row's scores, softmax and output depend only on its own query, on the keys it may see and on
// how many keys precede them — never on other rows or on keys after its limit (they enter P·V as exact
// zeros at the end of the contraction, and gemm sums k in the same blocks from 0). So a row computed in
// a full forward, in a block of a batch or alone against a KV cache (attendCached) gives the same bits,
// as long as a sequence's keys start at index 0 (no left padding).
import { gemm } from './gemm.ts';
import { result, showShape, type Tensor } from './tensor.ts';

/** Query rows per block. */
const TB = 64;

export interface AttentionOptions {
  /** Each query sees only keys at or before its own position (default true). */
  causal?: boolean;
  /** Absolute position of query row 0, per batch element or one for all (default S − T: the queries
   * are the last T of the S keys). */
  kvOffset?: number | Int32Array;
  /** (B·S): 0 hides key s of element b from all its queries (padding); anything else keeps it. */
  keyMask?: Uint8Array;
}

interface HeadGeometry {
  T: number;
  S: number;
  hd: number;
  /** Absolute position of query row 0. */
  off: number;
  causal: boolean;
  scale: number;
  /** Key mask and the offset of this sequence's S entries in it, or null. */
  mask: Uint8Array | null;
  maskOff: number;
}

/** Keys row t may see: [0, limit). */
function keyLimit(g: HeadGeometry, t: number): number {
  if (!g.causal) return g.S;
  const lim = g.off + t + 1;
  return lim < 0 ? 0 : Math.min(lim, g.S);
}

/**
 * Scaled, masked row softmax of the block's scores in place (P row r covers keys 0..nk−1); returns
 * nothing, writes each row's lse (+∞ for a row that sees no key, so that exp(s − lse) = 0 later).
 */
function softmaxBlock(
  g: HeadGeometry,
  P: Float32Array,
  t0: number,
  tb: number,
  nk: number,
  lse: Float64Array,
  lseOff: number,
): void {
  const { scale, mask, maskOff } = g;
  for (let r = 0; r < tb; r++) {
    const base = r * nk;
    const lim = keyLimit(g, t0 + r);
    let max = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < lim; s++) {
      const v = P[base + s] * scale;
      if (mask !== null && mask[maskOff + s] === 0) {
        P[base + s] = Number.NEGATIVE_INFINITY;
        continue;
      }
      P[base + s] = v;
      if (v > max) max = v;
    }
    P.fill(0, base + lim, base + nk);
    if (max === Number.NEGATIVE_INFINITY) {
      P.fill(0, base, base + lim);
      lse[lseOff + t0 + r] = Number.POSITIVE_INFINITY;
      continue;
    }
    let sum = 0;
    for (let s = 0; s < lim; s++) {
      const e = Math.exp(P[base + s] - max); // a hidden key's −∞ gives exactly 0
      P[base + s] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let s = 0; s < lim; s++) P[base + s] *= inv;
    lse[lseOff + t0 + r] = max + Math.log(sum);
  }
}

/** Key count of the block [t0, t0 + tb): the last row's limit (every earlier row's is smaller). */
function blockKeys(g: HeadGeometry, t0: number, tb: number): number {
  return keyLimit(g, t0 + tb - 1);
}

/**
 * One head's forward: Q (T, hd) at Q[0..], K and V (S, hd) at kOff/vOff, into O (T, hd) and
 * lse[lseOff..lseOff+T). P is scratch of at least TB·S floats.
 */
function headForward(
  g: HeadGeometry,
  Q: Float32Array,
  K: Float32Array,
  kOff: number,
  V: Float32Array,
  vOff: number,
  O: Float32Array,
  lse: Float64Array,
  lseOff: number,
  P: Float32Array,
): void {
  const { T, hd } = g;
  for (let t0 = 0; t0 < T; t0 += TB) {
    const tb = Math.min(TB, T - t0);
    const nk = blockKeys(g, t0, tb);
    if (nk === 0) {
      O.fill(0, t0 * hd, (t0 + tb) * hd);
      for (let r = 0; r < tb; r++) lse[lseOff + t0 + r] = Number.POSITIVE_INFINITY;
      continue;
    }
    gemm(tb, nk, hd, Q, t0 * hd, false, K, kOff, true, P, 0, false); // (tb, nk) = Q_blk K[0:nk]ᵀ
    softmaxBlock(g, P, t0, tb, nk, lse, lseOff);
    gemm(tb, hd, nk, P, 0, false, V, vOff, false, O, t0 * hd, false); // (tb, hd) = P V[0:nk]
  }
}

/** Copies head h of rows (n, H, hd) starting at src[off] into a contiguous (n, hd) panel. */
function gatherHead(
  src: Float32Array,
  off: number,
  n: number,
  H: number,
  hd: number,
  h: number,
  dst: Float32Array,
): void {
  const stride = H * hd;
  for (let t = 0, p = off + h * hd, d = 0; t < n; t++, p += stride)
    for (let i = 0; i < hd; i++, d++) dst[d] = src[p + i];
}

/** Adds (or writes) a contiguous (n, hd) panel back into head h of rows (n, H, hd) at dst[off]. */
function scatterHead(
  panel: Float32Array,
  n: number,
  H: number,
  hd: number,
  h: number,
  dst: Float32Array,
  off: number,
  add: boolean,
): void {
  const stride = H * hd;
  for (let t = 0, p = off + h * hd, d = 0; t < n; t++, p += stride) {
    if (add) for (let i = 0; i < hd; i++, d++) dst[p + i] += panel[d];
    else for (let i = 0; i < hd; i++, d++) dst[p + i] = panel[d];
  }
}

function checkShapes(q: Tensor, k: Tensor, v: Tensor): [number, number, number, number, number, number] {
  const bad = (why: string): never => {
    throw new RangeError(
      `attention: ${why} (q ${showShape(q.shape)}, k ${showShape(k.shape)}, v ${showShape(v.shape)})`,
    );
  };
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) bad('expected q (B, T, Hq, hd), k and v (B, S, Hkv, hd)');
  const [B, T, Hq, hd] = q.shape;
  const [Bk, S, Hkv, hdk] = k.shape;
  if (v.shape.some((d, i) => d !== k.shape[i])) bad('k and v differ');
  if (Bk !== B || hdk !== hd) bad('batch or head width differ');
  if (Hkv === 0 || Hq % Hkv !== 0) bad(`${Hq} query heads do not group over ${Hkv} key/value heads`);
  return [B, T, Hq, hd, S, Hkv];
}

/** Fused attention: q (B, T, Hq, hd), k and v (B, S, Hkv, hd) → (B, T, Hq, hd). See the file header. */
export function attention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
  const [B, T, Hq, hd, S, Hkv] = checkShapes(q, k, v);
  const group = Hq / Hkv;
  const causal = opts.causal ?? true;
  const offsets = new Int32Array(B);
  const ko = opts.kvOffset ?? S - T;
  if (typeof ko === 'number') offsets.fill(ko);
  else if (ko.length !== B) throw new RangeError(`attention: ${ko.length} kvOffsets for a batch of ${B}`);
  else offsets.set(ko);
  const mask = opts.keyMask ?? null;
  if (mask !== null && mask.length !== B * S)
    throw new RangeError(`attention: keyMask of ${mask.length} for (B, S) = (${B}, ${S})`);
  const geometry = (b: number): HeadGeometry => ({
    T,
    S,
    hd,
    off: offsets[b],
    causal,
    scale: 1 / Math.sqrt(hd),
    mask,
    maskOff: b * S,
  });

  const out = new Float32Array(q.size);
  const lse = new Float64Array(B * Hq * T); // (B, Hq, T)
  const Qh = new Float32Array(T * hd);
  const Kh = new Float32Array(S * hd);
  const Vh = new Float32Array(S * hd);
  const Oh = new Float32Array(T * hd);
  const P = new Float32Array(Math.min(TB, T) * S);
  for (let b = 0; b < B; b++) {
    const g = geometry(b);
    for (let hk = 0; hk < Hkv; hk++) {
      gatherHead(k.data, b * S * Hkv * hd, S, Hkv, hd, hk, Kh);
      gatherHead(v.data, b * S * Hkv * hd, S, Hkv, hd, hk, Vh);
      for (let h = hk * group; h < (hk + 1) * group; h++) {
        gatherHead(q.data, b * T * Hq * hd, T, Hq, hd, h, Qh);
        headForward(g, Qh, Kh, 0, Vh, 0, Oh, lse, (b * Hq + h) * T, P);
        scatterHead(Oh, T, Hq, hd, h, out, b * T * Hq * hd, false);
      }
    }
  }

  return result(out, q.shape, [q, k, v], (o) => {
    const dO = o.grad!;
    const dOh = new Float32Array(T * hd);
    const dQh = new Float32Array(T * hd);
    const dKh = new Float32Array(S * hd);
    const dVh = new Float32Array(S * hd);
    const dP = new Float32Array(P.length);
    const D = new Float64Array(T);
    for (let b = 0; b < B; b++) {
      const g = geometry(b);
      const qBase = b * T * Hq * hd;
      const kBase = b * S * Hkv * hd;
      for (let hk = 0; hk < Hkv; hk++) {
        gatherHead(k.data, kBase, S, Hkv, hd, hk, Kh);
        gatherHead(v.data, kBase, S, Hkv, hd, hk, Vh);
        dKh.fill(0);
        dVh.fill(0);
        for (let h = hk * group; h < (hk + 1) * group; h++) {
          gatherHead(q.data, qBase, T, Hq, hd, h, Qh);
          gatherHead(dO, qBase, T, Hq, hd, h, dOh);
          gatherHead(out, qBase, T, Hq, hd, h, Oh);
          for (let t = 0, p = 0; t < T; t++) {
            let s = 0;
            for (let i = 0; i < hd; i++, p++) s += dOh[p] * Oh[p];
            D[t] = s;
          }
          headBackward(g, Qh, Kh, Vh, dOh, D, lse, (b * Hq + h) * T, P, dP, dQh, dKh, dVh);
          if (q.requiresGrad) scatterHead(dQh, T, Hq, hd, h, q.gradBuffer(), qBase, true);
        }
        if (k.requiresGrad) scatterHead(dKh, S, Hkv, hd, hk, k.gradBuffer(), kBase, true);
        if (v.requiresGrad) scatterHead(dVh, S, Hkv, hd, hk, v.gradBuffer(), kBase, true);
      }
    }
  });
}

/** One head's backward (see the file header); dQ is written, dK and dV accumulate. */
function headBackward(
  g: HeadGeometry,
  Q: Float32Array,
  K: Float32Array,
  V: Float32Array,
  dO: Float32Array,
  D: Float64Array,
  lse: Float64Array,
  lseOff: number,
  P: Float32Array,
  dP: Float32Array,
  dQ: Float32Array,
  dK: Float32Array,
  dV: Float32Array,
): void {
  const { T, hd, scale, mask, maskOff } = g;
  for (let t0 = 0; t0 < T; t0 += TB) {
    const tb = Math.min(TB, T - t0);
    const nk = blockKeys(g, t0, tb);
    if (nk === 0) {
      dQ.fill(0, t0 * hd, (t0 + tb) * hd);
      continue;
    }
    gemm(tb, nk, hd, Q, t0 * hd, false, K, 0, true, P, 0, false);
    for (let r = 0; r < tb; r++) {
      const base = r * nk;
      const lim = keyLimit(g, t0 + r);
      const l = lse[lseOff + t0 + r];
      for (let s = 0; s < lim; s++)
        P[base + s] = mask !== null && mask[maskOff + s] === 0 ? 0 : Math.exp(P[base + s] * scale - l);
      P.fill(0, base + lim, base + nk);
    }
    gemm(nk, hd, tb, P, 0, true, dO, t0 * hd, false, dV, 0, true); // dV[0:nk] += Pᵀ dO_blk
    gemm(tb, nk, hd, dO, t0 * hd, false, V, 0, true, dP, 0, false); // dP = dO_blk V[0:nk]ᵀ
    for (let r = 0; r < tb; r++) {
      const base = r * nk;
      const d = D[t0 + r];
      for (let s = 0; s < nk; s++) dP[base + s] = P[base + s] * (dP[base + s] - d) * scale;
    }
    gemm(tb, hd, nk, dP, 0, false, K, 0, false, dQ, t0 * hd, false); // dQ_blk = dS K[0:nk]
    gemm(nk, hd, tb, dP, 0, true, Q, t0 * hd, false, dK, 0, true); // dK[0:nk] += dSᵀ Q_blk
  }
}

/**
 * Inference against one sequence's KV cache (no graph): n new query rows q (n, Hq, hd) at qOff, at
 * positions length − n … length − 1, where the cache already holds those n keys and values. The cache
 * keeps each kv head's keys contiguous: K and V are (Hkv, capacity, hd). Writes (n, Hq, hd) at outOff.
 * Same arithmetic as attention() (see "Bits" in the file header).
 */
export function attendCached(
  q: Float32Array,
  qOff: number,
  n: number,
  Hq: number,
  hd: number,
  K: Float32Array,
  V: Float32Array,
  Hkv: number,
  capacity: number,
  length: number,
  out: Float32Array,
  outOff: number,
): void {
  const group = Hq / Hkv;
  const g: HeadGeometry = {
    T: n,
    S: length,
    hd,
    off: length - n,
    causal: true,
    scale: 1 / Math.sqrt(hd),
    mask: null,
    maskOff: 0,
  };
  const Qh = new Float32Array(n * hd);
  const Oh = new Float32Array(n * hd);
  const P = new Float32Array(Math.min(TB, n) * length);
  const lse = new Float64Array(n);
  for (let h = 0; h < Hq; h++) {
    const hk = Math.floor(h / group);
    gatherHead(q, qOff, n, Hq, hd, h, Qh);
    headForward(g, Qh, K, hk * capacity * hd, V, hk * capacity * hd, Oh, lse, 0, P);
    scatterHead(Oh, n, Hq, hd, h, out, outOff, false);
  }
}

/**
 * A packed batch whose rows share a prefix: `prefix` tokens every row reads first, then each row's own
 * tokens (`rows[b]` of them). Stored flat, without padding: the prefix's tokens, then row 0's, row 1's, …
 * Row b's token t sits at absolute position prefix + t.
 */
export interface PrefixLayout {
  prefix: number;
  rows: readonly number[];
}

/** Tokens a PrefixLayout holds: the prefix once and every row's own. */
export function layoutTokens(layout: PrefixLayout): number {
  let n = layout.prefix;
  for (const r of layout.rows) n += r;
  return n;
}

/** Token sequences packed as a PrefixLayout: their longest common prefix once, then each one's tokens
 * after it; `at(b, j)` is the flat index of sequence b's token j (in the prefix when j < prefix). */
export interface PackedPrefix {
  ids: Int32Array;
  layout: PrefixLayout;
  at: (b: number, j: number) => number;
}

export function packPrefix(seqs: readonly (readonly number[])[]): PackedPrefix {
  let L = seqs.length === 0 ? 0 : seqs[0].length;
  for (const s of seqs) {
    let j = 0;
    while (j < L && j < s.length && s[j] === seqs[0][j]) j++;
    L = j;
  }
  const rows = seqs.map((s) => s.length - L);
  const ids = new Int32Array(L + rows.reduce((a, r) => a + r, 0));
  const starts: number[] = [];
  if (seqs.length > 0) ids.set(seqs[0].slice(0, L));
  let at = L;
  for (const s of seqs) {
    starts.push(at - L); // flat index of the row's token j is starts[b] + j for j ≥ L
    ids.set(s.slice(L), at);
    at += s.length - L;
  }
  return { ids, layout: { prefix: L, rows }, at: (b, j) => (j < L ? j : starts[b] + j) };
}

/**
 * Causal attention over a PrefixLayout, fused as attention() is: q (N, Hq, hd), k and v (N, Hkv, hd)
 * → (N, Hq, hd), N = layoutTokens(layout). The prefix attends to itself; row b's token t to the whole
 * prefix and to its own tokens 0..t — the keys it would see as the row prefix + row[b] of attention().
 * The prefix's keys and values are gathered once per head and read by every row; their gradient is the
 * sum of the prefix's own and every row's (the backward accumulates them, row by row, in one panel).
 * Bits: a row's output is its row of attention() over the row written out whole (same keys, same count
 * before them; see "Bits" above); the gradients are sums in another order, equal to float rounding.
 */
export function prefixAttention(q: Tensor, k: Tensor, v: Tensor, layout: PrefixLayout): Tensor {
  const bad = (why: string): never => {
    throw new RangeError(
      `prefixAttention: ${why} (q ${showShape(q.shape)}, k ${showShape(k.shape)}, v ${showShape(v.shape)})`,
    );
  };
  if (q.rank !== 3 || k.rank !== 3 || v.rank !== 3) bad('expected q (N, Hq, hd), k and v (N, Hkv, hd)');
  const [N, Hq, hd] = q.shape;
  const [Nk, Hkv, hdk] = k.shape;
  if (v.shape.some((d, i) => d !== k.shape[i])) bad('k and v differ');
  if (Nk !== N || hdk !== hd) bad('token count or head width differ');
  if (Hkv === 0 || Hq % Hkv !== 0) bad(`${Hq} query heads do not group over ${Hkv} key/value heads`);
  const L = layout.prefix;
  if (!(Number.isInteger(L) && L >= 0) || layout.rows.some((r) => !(Number.isInteger(r) && r >= 0)))
    bad(`layout of prefix ${L} and rows [${layout.rows.join(', ')}]`);
  if (layoutTokens(layout) !== N) bad(`the layout holds ${layoutTokens(layout)} tokens`);
  const group = Hq / Hkv;
  const scale = 1 / Math.sqrt(hd);
  const R = layout.rows.length;
  // Segment 0 is the prefix (its own keys only); segment 1 + b is row b (the prefix's keys, then its own).
  const starts = new Int32Array(R + 1);
  starts[0] = 0;
  for (let b = 0, s = L; b < R; b++) {
    starts[b + 1] = s;
    s += layout.rows[b];
  }
  const lengths = [L, ...layout.rows];
  let longest = 0;
  for (const n of lengths) longest = Math.max(longest, n);
  const maxKeys = L + (R === 0 ? 0 : Math.max(...layout.rows));
  const geometry = (seg: number): HeadGeometry => ({
    T: lengths[seg],
    S: seg === 0 ? L : L + lengths[seg],
    hd,
    off: seg === 0 ? 0 : L,
    causal: true,
    scale,
    mask: null,
    maskOff: 0,
  });
  const own = (seg: number) => (seg === 0 ? 0 : L); // where a segment's own keys start in the panel
  const qStride = Hq * hd;
  const kStride = Hkv * hd;

  const out = new Float32Array(q.size);
  const lse = new Float64Array(Hq * N); // (Hq, N)
  const Qh = new Float32Array(longest * hd);
  const Oh = new Float32Array(longest * hd);
  const Kh = new Float32Array(maxKeys * hd);
  const Vh = new Float32Array(maxKeys * hd);
  const P = new Float32Array(Math.min(TB, Math.max(1, longest)) * maxKeys);
  for (let hk = 0; hk < Hkv; hk++) {
    gatherHead(k.data, 0, L, Hkv, hd, hk, Kh);
    gatherHead(v.data, 0, L, Hkv, hd, hk, Vh);
    for (let seg = 0; seg <= R; seg++) {
      const n = lengths[seg];
      if (n === 0) continue;
      const s0 = starts[seg];
      if (seg > 0) {
        gatherHead(k.data, s0 * kStride, n, Hkv, hd, hk, Kh.subarray(L * hd));
        gatherHead(v.data, s0 * kStride, n, Hkv, hd, hk, Vh.subarray(L * hd));
      }
      const g = geometry(seg);
      for (let h = hk * group; h < (hk + 1) * group; h++) {
        gatherHead(q.data, s0 * qStride, n, Hq, hd, h, Qh);
        headForward(g, Qh, Kh, 0, Vh, 0, Oh, lse, h * N + s0, P);
        scatterHead(Oh, n, Hq, hd, h, out, s0 * qStride, false);
      }
    }
  }

  return result(out, q.shape, [q, k, v], (o) => {
    const dO = o.grad!;
    const dOh = new Float32Array(longest * hd);
    const dQh = new Float32Array(longest * hd);
    const dKh = new Float32Array(maxKeys * hd);
    const dVh = new Float32Array(maxKeys * hd);
    const dKp = new Float32Array(L * hd); // the prefix's key and value gradients, summed over segments
    const dVp = new Float32Array(L * hd);
    const dP = new Float32Array(P.length);
    const D = new Float64Array(longest);
    for (let hk = 0; hk < Hkv; hk++) {
      gatherHead(k.data, 0, L, Hkv, hd, hk, Kh);
      gatherHead(v.data, 0, L, Hkv, hd, hk, Vh);
      dKp.fill(0);
      dVp.fill(0);
      for (let seg = 0; seg <= R; seg++) {
        const n = lengths[seg];
        if (n === 0) continue;
        const s0 = starts[seg];
        if (seg > 0) {
          gatherHead(k.data, s0 * kStride, n, Hkv, hd, hk, Kh.subarray(L * hd));
          gatherHead(v.data, s0 * kStride, n, Hkv, hd, hk, Vh.subarray(L * hd));
        }
        const g = geometry(seg);
        const keys = g.S;
        dKh.fill(0, 0, keys * hd);
        dVh.fill(0, 0, keys * hd);
        for (let h = hk * group; h < (hk + 1) * group; h++) {
          gatherHead(q.data, s0 * qStride, n, Hq, hd, h, Qh);
          gatherHead(dO, s0 * qStride, n, Hq, hd, h, dOh);
          gatherHead(out, s0 * qStride, n, Hq, hd, h, Oh);
          for (let t = 0, p = 0; t < n; t++) {
            let s = 0;
            for (let i = 0; i < hd; i++, p++) s += dOh[p] * Oh[p];
            D[t] = s;
          }
          headBackward(g, Qh, Kh, Vh, dOh, D, lse, h * N + s0, P, dP, dQh, dKh, dVh);
          if (q.requiresGrad) scatterHead(dQh, n, Hq, hd, h, q.gradBuffer(), s0 * qStride, true);
        }
        for (let i = 0; i < L * hd; i++) {
          dKp[i] += dKh[i];
          dVp[i] += dVh[i];
        }
        const o0 = own(seg) * hd;
        if (seg > 0 && k.requiresGrad)
          scatterHead(dKh.subarray(o0), n, Hkv, hd, hk, k.gradBuffer(), s0 * kStride, true);
        if (seg > 0 && v.requiresGrad)
          scatterHead(dVh.subarray(o0), n, Hkv, hd, hk, v.gradBuffer(), s0 * kStride, true);
      }
      if (L > 0 && k.requiresGrad) scatterHead(dKp, L, Hkv, hd, hk, k.gradBuffer(), 0, true);
      if (L > 0 && v.requiresGrad) scatterHead(dVp, L, Hkv, hd, hk, v.gradBuffer(), 0, true);
    }
  });
}
