// Rotary position embedding (Su et al. 2021, RoFormer §3.4) in the convention of HF transformers'
// Llama (`apply_rotary_pos_emb` with `rotate_half`): within each head of width hd, element i is paired
// with element i + hd/2 (i < hd/2) and the pair is rotated by the angle pos·θ_i, θ_i = base^(−2i/hd):
//   y[i]        = x[i]·cos − x[i + hd/2]·sin
//   y[i + hd/2] = x[i + hd/2]·cos + x[i]·sin
//
// Why this pairing, and how a GGUF export matches it: llama.cpp runs LLM_ARCH_LLAMA with
// LLAMA_ROPE_TYPE_NORM ("a normal RoPE, operating on pairs of consecutive head values",
// src/llama-model.cpp `llama_model_rope_type`): ggml_rope_ext mode 0 rotates (x[2i], x[2i+1]) by the same
// θ_i. convert_hf_to_gguf.py (LlamaModel.modify_tensors, `undo_permute = True`) bridges the two by
// permuting the rows of q_proj (n_head) and k_proj (n_head_kv) with LlamaModel.permute:
// reshape(n_head, 2, hd/2, in).swapaxes(1, 2) — GGUF row h·hd + 2i + j is HF row h·hd + j·hd/2 + i.
// Our parameters carry HF Llama names, so they mean what HF means: a safetensors file of ours reads as
// an HF checkpoint, and the GGUF export applies `ggufRopePermutation` below to q_proj/k_proj exactly as
// convert_hf_to_gguf does (test/nn/rope.test.ts checks that adjacent-pair rope on the permuted weights
// gives the same attention scores).
import { result, showShape, type Tensor } from './tensor.ts';

interface RopeTable {
  cos: Float64Array; // (positions, hd/2)
  sin: Float64Array;
  positions: number;
}

/** Angles are pure functions of (base, hd, pos): computed once per table and grown on demand. */
const tables = new Map<string, RopeTable>();

function ropeTable(base: number, hd: number, minPositions: number): RopeTable {
  const key = `${base}/${hd}`;
  const have = tables.get(key);
  if (have !== undefined && have.positions >= minPositions) return have;
  const positions = Math.max(minPositions, 2 * (have?.positions ?? 0), 256);
  const half = hd / 2;
  const cos = new Float64Array(positions * half);
  const sin = new Float64Array(positions * half);
  for (let i = 0; i < half; i++) {
    const invFreq = base ** ((-2 * i) / hd);
    for (let p = 0; p < positions; p++) {
      cos[p * half + i] = Math.cos(p * invFreq);
      sin[p * half + i] = Math.sin(p * invFreq);
    }
  }
  const t = { cos, sin, positions };
  tables.set(key, t);
  return t;
}

/**
 * Rotary embedding of x (…, H, hd) — e.g. q or k as (B, T, H, hd) — where positions[n] is the absolute
 * position of the n-th group of H heads (length x.size / (H·hd), e.g. B·T). The backward rotates the
 * gradient by −angle (the transpose of a rotation).
 */
export function rope(x: Tensor, positions: Int32Array, base = 10000): Tensor {
  if (x.rank < 2) throw new RangeError(`rope: expected (…, H, hd), got ${showShape(x.shape)}`);
  const hd = x.shape[x.rank - 1];
  const H = x.shape[x.rank - 2];
  if (hd % 2 !== 0) throw new RangeError(`rope: head width ${hd} is odd`);
  const N = x.size / (H * hd);
  if (positions.length !== N)
    throw new RangeError(`rope: ${positions.length} positions for ${N} rows of ${showShape(x.shape)}`);
  let maxPos = 0;
  for (let n = 0; n < N; n++) {
    const p = positions[n];
    if (!(Number.isInteger(p) && p >= 0)) throw new RangeError(`rope: position ${p}`);
    if (p > maxPos) maxPos = p;
  }
  const { cos, sin } = ropeTable(base, hd, maxPos + 1);
  const xd = x.data;
  const y = new Float32Array(x.size);
  rotate(xd, y, positions, N, H, hd, cos, sin, 1, false);
  // The transpose of a rotation is the rotation by −angle.
  return result(y, x.shape, [x], (o) =>
    rotate(o.grad!, x.gradBuffer(), positions, N, H, hd, cos, sin, -1, true),
  );
}

/** y (+)= x rotated by sign·angle, per (row, head). */
function rotate(
  x: Float32Array,
  y: Float32Array,
  positions: Int32Array,
  N: number,
  H: number,
  hd: number,
  cos: Float64Array,
  sin: Float64Array,
  sign: number,
  accumulate: boolean,
): void {
  const half = hd / 2;
  for (let n = 0, p = 0; n < N; n++) {
    const t = positions[n] * half;
    for (let h = 0; h < H; h++, p += hd) {
      for (let i = 0; i < half; i++) {
        const c = cos[t + i];
        const s = sign * sin[t + i];
        const a = x[p + i];
        const b = x[p + i + half];
        if (accumulate) {
          y[p + i] += a * c - b * s;
          y[p + i + half] += b * c + a * s;
        } else {
          y[p + i] = a * c - b * s;
          y[p + i + half] = b * c + a * s;
        }
      }
    }
  }
}

/**
 * The row permutation convert_hf_to_gguf.py applies to q_proj (heads = n_head) and k_proj
 * (heads = n_head_kv) weights of shape (heads·hd, in), so that llama.cpp's adjacent-pair rope computes
 * what our half-split rope computes: out row h·hd + 2i + j = in row h·hd + j·hd/2 + i.
 */
export function ggufRopePermutation(
  weight: Float32Array,
  rows: number,
  cols: number,
  heads: number,
): Float32Array {
  if (weight.length !== rows * cols || rows % heads !== 0 || (rows / heads) % 2 !== 0)
    throw new RangeError(
      `ggufRopePermutation: ${weight.length} values as (${rows}, ${cols}) in ${heads} heads`,
    );
  const hd = rows / heads;
  const half = hd / 2;
  const out = new Float32Array(weight.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * hd + j * half + i) * cols;
        out.set(weight.subarray(src, src + cols), (h * hd + 2 * i + j) * cols);
      }
    }
  }
  return out;
}
