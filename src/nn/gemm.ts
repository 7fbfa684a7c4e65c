// C (M, N) = op(A) · op(B) (or += with `accumulate`), float32, row-major, where op(A) is (M, K) and
// op(B) is (K, N); `transA` means A is stored (K, M), `transB` that B is stored (N, K). The one matmul
// kernel of the engine: every matmul variant and batched matmul goes through here.
//
// Large products: cache-blocked GotoBLAS-style. op(B) is packed once into NR-column slivers (K × NR
// each, contiguous); op(A) in MC-row blocks of MR-row slivers (KC × MR each); the SIMD micro-kernel
// (gemm-wasm.ts) keeps an MR×NR tile of C in registers while one B sliver (KC·NR·4 = 8 KiB) stays in
// L1 and the A block (MC·KC·4 = 64 KiB) in L2. Nothing is allocated inside the loops: the packed
// panels live in the wasm memory, grown (rarely) before a product starts.
//
// Small products (a single row at act time, tiny layers) skip the packing and run a scalar loop.
//
// Both paths compute each element of C with the same roundings in the same order — k in blocks of KC,
// acc = fl32(acc + fl32(a·b)) within a block, c = fl32(c + acc) after it — so they return the same bits.
// Hence a row of C depends only on that row of op(A) and on op(B), never on M or on which path ran:
// a policy scores one observation alone exactly as it does inside a batch (the lockstep rollout relies
// on this).
import { MR as KERNEL_MR, NR as KERNEL_NR, loadSimdKernel, type SimdKernel } from './gemm-wasm.ts';

// Local copies: tsx compiles imported bindings to getter calls, far too slow for the packing loops.
const MR = KERNEL_MR;
const NR = KERNEL_NR;

/** k-block length: fixes the summation order, so both paths must use it. */
export const KC = 256;
/** Rows of op(A) packed per block. */
const MC = 64;
/** Below this many multiply-adds the packing costs more than it saves. */
const SMALL = 4096;

const fround = Math.fround;

let simd: SimdKernel | undefined = loadSimdKernel();
let heap = simd === undefined ? new Float32Array(0) : new Float32Array(simd.memory.buffer);

/** Which kernel large products use: 'wasm-simd128', or 'scalar' where WebAssembly SIMD is missing. */
export function gemmKernel(): 'wasm-simd128' | 'scalar' {
  return simd === undefined ? 'scalar' : 'wasm-simd128';
}

/** Forces the scalar path (tests compare the two; benchmarks measure both). Returns the previous kernel. */
export function useSimd(on: boolean): boolean {
  const was = simd !== undefined;
  if (!on) simd = undefined;
  else if (simd === undefined) {
    simd = loadSimdKernel();
    if (simd !== undefined) heap = new Float32Array(simd.memory.buffer);
  }
  return was;
}

export function gemm(
  M: number,
  N: number,
  K: number,
  A: Float32Array,
  aOff: number,
  transA: boolean,
  B: Float32Array,
  bOff: number,
  transB: boolean,
  C: Float32Array,
  cOff: number,
  accumulate: boolean,
): void {
  if (M === 0 || N === 0) return;
  if (K === 0) {
    if (!accumulate) C.fill(0, cOff, cOff + M * N);
    return;
  }
  if (simd === undefined || M * N * K < SMALL) {
    gemmScalar(M, N, K, A, aOff, transA, B, bOff, transB, C, cOff, accumulate);
  } else gemmPacked(simd, M, N, K, A, aOff, transA, B, bOff, transB, C, cOff, accumulate);
}

/** The reference arithmetic (see the header); also the fallback without WebAssembly SIMD. */
export function gemmScalar(
  M: number,
  N: number,
  K: number,
  A: Float32Array,
  aOff: number,
  transA: boolean,
  B: Float32Array,
  bOff: number,
  transB: boolean,
  C: Float32Array,
  cOff: number,
  accumulate: boolean,
): void {
  const sAi = transA ? 1 : K;
  const sAk = transA ? M : 1;
  const sBk = transB ? 1 : N;
  const sBj = transB ? K : 1;
  for (let i = 0; i < M; i++) {
    const aRow = aOff + i * sAi;
    const cRow = cOff + i * N;
    for (let j = 0; j < N; j++) {
      let c = accumulate ? C[cRow + j] : 0;
      const bCol = bOff + j * sBj;
      for (let k0 = 0; k0 < K; k0 += KC) {
        const k1 = Math.min(k0 + KC, K);
        let pa = aRow + k0 * sAk;
        let pb = bCol + k0 * sBk;
        let acc = 0;
        for (let k = k0; k < k1; k++) {
          acc = fround(acc + fround(A[pa] * B[pb]));
          pa += sAk;
          pb += sBk;
        }
        c = fround(c + acc);
      }
      C[cRow + j] = c;
    }
  }
}

/** Makes the wasm memory at least `floats` long (the views are refreshed after a grow). */
function reserve(kernel: SimdKernel, floats: number): Float32Array {
  const bytes = floats * 4;
  const have = kernel.memory.buffer.byteLength;
  if (bytes > have) kernel.memory.grow(Math.ceil((bytes - have) / 65536));
  if (heap.buffer !== kernel.memory.buffer) heap = new Float32Array(kernel.memory.buffer);
  return heap;
}

function gemmPacked(
  kernel: SimdKernel,
  M: number,
  N: number,
  K: number,
  A: Float32Array,
  aOff: number,
  transA: boolean,
  B: Float32Array,
  bOff: number,
  transB: boolean,
  C: Float32Array,
  cOff: number,
  accumulate: boolean,
): void {
  const nJ = Math.ceil(N / NR);
  const Np = nJ * NR;
  const mcMax = Math.min(MC, Math.ceil(M / MR) * MR);
  // Layout in floats: [packed op(B): nJ slivers of K×NR | packed A block: MC×KC | C block: MC×Np].
  const bBase = 0;
  const aBase = K * Np;
  const cBase = aBase + mcMax * KC;
  const h = reserve(kernel, cBase + mcMax * Np);
  packB(h, bBase, K, N, B, bOff, transB);
  for (let i0 = 0; i0 < M; i0 += MC) {
    const mc = Math.min(MC, M - i0);
    const nI = Math.ceil(mc / MR);
    if (accumulate) {
      for (let r = 0; r < mc; r++) {
        const src = cOff + (i0 + r) * N;
        h.set(C.subarray(src, src + N), cBase + r * Np);
      }
    } else h.fill(0, cBase, cBase + nI * MR * Np);
    for (let k0 = 0; k0 < K; k0 += KC) {
      const kc = Math.min(KC, K - k0);
      packA(h, aBase, i0, mc, nI, k0, kc, M, K, A, aOff, transA);
      kernel.kernel(kc, nI, nJ, aBase * 4, (bBase + k0 * NR) * 4, K * NR * 4, cBase * 4, Np * 4);
    }
    for (let r = 0; r < mc; r++) {
      const dst = cOff + (i0 + r) * N;
      C.set(h.subarray(cBase + r * Np, cBase + r * Np + N), dst);
    }
  }
}

/** op(B) (K, N) → nJ slivers of (K, NR), zero-padded past column N. */
function packB(
  h: Float32Array,
  base: number,
  K: number,
  N: number,
  B: Float32Array,
  off: number,
  trans: boolean,
) {
  for (let j0 = 0, dst = base; j0 < N; j0 += NR, dst += K * NR) {
    const w = Math.min(NR, N - j0);
    if (!trans && w === NR && NR === 8) {
      // B stored (K, N), a full sliver: each of its rows is 8 contiguous floats (unrolled copy).
      for (let k = 0, src = off + j0, d = dst; k < K; k++, src += N, d += 8) {
        h[d] = B[src];
        h[d + 1] = B[src + 1];
        h[d + 2] = B[src + 2];
        h[d + 3] = B[src + 3];
        h[d + 4] = B[src + 4];
        h[d + 5] = B[src + 5];
        h[d + 6] = B[src + 6];
        h[d + 7] = B[src + 7];
      }
    } else if (!trans) {
      // B stored (K, N): each row of the sliver is w contiguous floats.
      for (let k = 0; k < K; k++) {
        const src = off + k * N + j0;
        const d = dst + k * NR;
        for (let c = 0; c < w; c++) h[d + c] = B[src + c];
        for (let c = w; c < NR; c++) h[d + c] = 0;
      }
    } else {
      // B stored (N, K): column j of op(B) is row j of B.
      for (let c = 0; c < NR; c++) {
        if (c < w) {
          const src = off + (j0 + c) * K;
          for (let k = 0; k < K; k++) h[dst + k * NR + c] = B[src + k];
        } else for (let k = 0; k < K; k++) h[dst + k * NR + c] = 0;
      }
    }
  }
}

/** Rows i0..i0+mc, columns k0..k0+kc of op(A) → nI slivers of (kc, MR), zero-padded past row mc. */
function packA(
  h: Float32Array,
  base: number,
  i0: number,
  mc: number,
  nI: number,
  k0: number,
  kc: number,
  M: number,
  K: number,
  A: Float32Array,
  off: number,
  trans: boolean,
) {
  for (let it = 0; it < nI; it++) {
    const dst = base + it * kc * MR;
    if (trans && (it + 1) * MR <= mc && MR === 4) {
      // A stored (K, M), a full sliver: for each k its 4 rows are 4 contiguous floats — read them in
      // that order (k outer) rather than as 4 strided columns.
      for (let k = 0, src = off + k0 * M + i0 + it * MR, d = dst; k < kc; k++, src += M, d += 4) {
        h[d] = A[src];
        h[d + 1] = A[src + 1];
        h[d + 2] = A[src + 2];
        h[d + 3] = A[src + 3];
      }
      continue;
    }
    for (let r = 0; r < MR; r++) {
      const i = it * MR + r;
      if (i >= mc) {
        for (let k = 0; k < kc; k++) h[dst + k * MR + r] = 0;
      } else if (!trans) {
        const src = off + (i0 + i) * K + k0; // A stored (M, K)
        for (let k = 0; k < kc; k++) h[dst + k * MR + r] = A[src + k];
      } else {
        const src = off + k0 * M + i0 + i; // A stored (K, M)
        for (let k = 0; k < kc; k++) h[dst + k * MR + r] = A[src + k * M];
      }
    }
  }
}
