// The number formats of GGUF tensors written or read here (ggml's ggml-common.h and ggml-quants.c):
// IEEE binary16 (F16), and Q8_0 — blocks of 32 values, each an f16 scale d = max|x|/127 then 32 int8
// q = round(x/d), read back as q·d (quantize_row_q8_0_ref).

/** Values per Q8_0 block, and its bytes (an f16 scale, 32 int8). */
export const Q8_0_BLOCK = 32;
export const Q8_0_BYTES = 34;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE binary16 bits of x, rounded to nearest even (as ggml's GGML_FP32_TO_FP16 on x86 F16C). */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++;
  e = half >>> 10;
  return sign | half;
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Q8_0 blocks of `x` (length a multiple of 32), as ggml's quantize_row_q8_0_ref writes them. */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  if (x.length % Q8_0_BLOCK !== 0) throw new RangeError(`Q8_0: ${x.length} values is not whole blocks of 32`);
  const blocks = x.length / Q8_0_BLOCK;
  const out = new Uint8Array(blocks * Q8_0_BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    let amax = 0;
    for (let j = 0; j < Q8_0_BLOCK; j++) amax = Math.max(amax, Math.abs(x[b * Q8_0_BLOCK + j]));
    // ggml computes in float: d = amax / 127, id = 1/d, q = roundf(x·id) (half away from zero).
    const d = Math.fround(amax / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    view.setUint16(b * Q8_0_BYTES, f32ToF16(d), true);
    for (let j = 0; j < Q8_0_BLOCK; j++) {
      const v = Math.fround(x[b * Q8_0_BLOCK + j] * id);
      const q = Math.sign(v) * Math.round(Math.abs(v));
      view.setInt8(b * Q8_0_BYTES + 2 + j, q);
    }
  }
  return out;
}

export function dequantizeQ8_0(bytes: Uint8Array, count: number): Float32Array {
  const out = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0; b < count / Q8_0_BLOCK; b++) {
    const d = f16ToF32(view.getUint16(b * Q8_0_BYTES, true));
    for (let j = 0; j < Q8_0_BLOCK; j++) out[b * Q8_0_BLOCK + j] = view.getInt8(b * Q8_0_BYTES + 2 + j) * d;
  }
  return out;
}
