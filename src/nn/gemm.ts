// C (M, N) = op(A) · op(B) (or += with `accumulate`), float32, row-major, where op(A) is (M, K) and
// op(B) is (K, N); `transA` means A is stored (K, M), `transB` that B is stored (N, K). The one matmul
// kernel of the engine: every matmul variant and batched matmul goes through here.
//
// Large products: cache-blocked GotoBLAS-style, all of it in WebAssembly (gemm-wasm.ts). The operands
// are copied into the module's memory (one memcpy each), op(B) is packed once into NR-column slivers
// (K × NR each, contiguous), and C is computed in blocks ("chunks") of MC rows × a group of column
// slivers: a chunk packs its rows of op(A) in k-blocks of KC (KC × MR slivers) and runs the SIMD
// micro-kernel, which keeps an MR×NR tile of C in registers while one B sliver (KC·NR·4 = 8 KiB) stays
// in L1 and the A block (MC·KC·4 = 64 KiB) in L2. Chunks are independent, so a product of at least
// PARALLEL multiply-adds may be split between threads (gemm-threads.ts: worker threads on the same shared
// memory; split only while that measures faster for its shape); C is copied back in one memcpy.
//
// Small products (a single row at act time, tiny layers) skip the packing and run a scalar loop.
//
// Every path computes each element of C with the same roundings in the same order — k in blocks of KC,
// acc = fl32(acc + fl32(a·b)) within a block, c = fl32(c + acc) after it — so they return the same bits.
// Hence a row of C depends only on that row of op(A) and on op(B), never on M, on which path ran or on
// how many threads did: a policy scores one observation alone exactly as it does inside a batch (the
// lockstep rollout relies on this), and training gives the same bytes at any thread count.
import { availableParallelism } from 'node:os';
import { ChunkPool } from './gemm-threads.ts';
import {
  DESC,
  DESC_BYTES,
  type GemmWasm,
  MR as KERNEL_MR,
  NR as KERNEL_NR,
  loadGemmWasm,
  MC,
  KC as WASM_KC,
} from './gemm-wasm.ts';

// Local copies: tsx compiles imported bindings to getter calls, too slow for per-call arithmetic.
const MR = KERNEL_MR;
const NR = KERNEL_NR;

/** k-block length: fixes the summation order, so every path must use it. */
export const KC = WASM_KC;
/** Below this many multiply-adds the packing costs more than it saves. */
const SMALL = 4096;
/** From this many multiply-adds a product may be split between threads: below, waking a worker costs
 * more than it saves (bench/gemm-threads.ts on an idle moment of 2 cores: 2 threads took 0.82× the time
 * of one at 10⁶, 1.04× at 2.1·10⁶, 1.24× at 4.1·10⁶, 1.59× at 3.4·10⁷ multiply-adds). */
export const PARALLEL = 1 << 21;
let parallelFrom = PARALLEL;
/** Chunks per thread a parallel product aims for, so that a thread that starts late still gets a share. */
const CHUNKS_PER_THREAD = 4;
/** Threads a product may use at most (each has its own packing scratch in the wasm memory). */
export const MAX_THREADS = 8;
/** Floats of A and C one pass of gemmWasm copies in (larger products are done in row slabs). */
const SLAB_FLOATS = 1 << 24;

const fround = Math.fround;
const DESC_AT = 0; // byte address of the descriptor
const SCRATCH = DESC_BYTES; // byte address of thread 0's packing scratch
const SCRATCH_BYTES = MC * KC * 4;
const WORK = SCRATCH + MAX_THREADS * SCRATCH_BYTES; // byte address of the per-product operands

let wasm: GemmWasm | undefined | null = null; // null: not loaded yet
let heap: Float32Array<ArrayBufferLike> = new Float32Array(0);
let heapI32: Int32Array<ArrayBufferLike> = new Int32Array(0);
let simdOn = true;
let threads = Math.max(1, Math.min(MAX_THREADS, availableParallelism()));
let pool: ChunkPool | undefined;

function kernels(): GemmWasm | undefined {
  if (wasm === null) {
    wasm = loadGemmWasm();
    if (wasm !== undefined) refreshViews(wasm);
  }
  return simdOn ? wasm : undefined;
}

function refreshViews(w: GemmWasm): void {
  heap = new Float32Array(w.memory.buffer);
  heapI32 = new Int32Array(w.memory.buffer);
}

/** Which kernel large products use: 'wasm-simd128', or 'scalar' where WebAssembly SIMD is missing. */
export function gemmKernel(): 'wasm-simd128' | 'scalar' {
  return kernels() === undefined ? 'scalar' : 'wasm-simd128';
}

/** Forces the scalar path (tests compare the two; benchmarks measure both). Returns the previous kernel. */
export function useSimd(on: boolean): boolean {
  const was = kernels() !== undefined;
  simdOn = on;
  return was;
}

/**
 * Threads a large product may use (1: this thread only); the default is the machine's parallelism, at
 * most MAX_THREADS. Returns the previous setting. Results do not depend on it (see the header).
 */
export function gemmThreads(n?: number): number {
  const was = threads;
  if (n !== undefined) {
    if (!(Number.isInteger(n) && n >= 1 && n <= MAX_THREADS))
      throw new RangeError(`gemmThreads: ${n} is not an integer in [1, ${MAX_THREADS}]`);
    threads = n;
    pool?.resize(n);
  }
  return was;
}

/** The size (multiply-adds) from which products are split between threads (default PARALLEL; the bench
 * lowers it to measure where splitting pays). Returns the previous value. */
export function gemmParallelFrom(macs?: number): number {
  const was = parallelFrom;
  if (macs !== undefined) parallelFrom = macs;
  return was;
}

/** The worker threads behind large products (created on first use; undefined without shared wasm
 * memory): how many run, the blocks they computed, their idle time and close(), for the bench and tests.
 * Never needed for a process to exit: idle workers do not keep it alive. */
export function gemmPool(): ChunkPool | undefined {
  const w = kernels();
  if (pool === undefined && w !== undefined && w.shared)
    pool = new ChunkPool(
      { module: w.module, memory: w.memory, desc: DESC_AT, scratch: (t) => SCRATCH + t * SCRATCH_BYTES },
      threads,
    );
  return pool;
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
  const w = M * N * K < SMALL ? undefined : kernels();
  if (w === undefined) gemmScalar(M, N, K, A, aOff, transA, B, bOff, transB, C, cOff, accumulate);
  else gemmWasm(w, M, N, K, A, aOff, transA, B, bOff, transB, C, cOff, accumulate);
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

/** Makes the wasm memory at least `bytes` long (the views are refreshed after a grow). */
function reserve(w: GemmWasm, bytes: number): void {
  const have = w.memory.buffer.byteLength;
  if (bytes > have) w.memory.grow(Math.ceil((bytes - have) / 65536));
  if (heap.buffer !== w.memory.buffer || heap.length * 4 < bytes) refreshViews(w);
}

function gemmWasm(
  w: GemmWasm,
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
  // Rows per slab: all of them unless A's and C's rows would pass SLAB_FLOATS (then a multiple of MC).
  const slab = M * (K + Np) <= SLAB_FLOATS ? M : Math.max(MC, Math.floor(SLAB_FLOATS / (K + Np) / MC) * MC);
  const slab4 = Math.ceil(slab / MR) * MR;
  // Layout in floats after the scratch: [op(B) packed: K × Np | B as stored: K·N | A slab as stored:
  // slab·K | C slab: slab4 × Np | C slab unpadded: slab × N, when N ≠ Np].
  const bPacked = WORK / 4;
  const bRaw = bPacked + K * Np;
  const aRaw = bRaw + K * N;
  const cReg = aRaw + slab * K;
  const cRaw = cReg + slab4 * Np;
  reserve(w, (cRaw + (N === Np ? 0 : slab * N)) * 4);
  heap.set(B.subarray(bOff, bOff + K * N), bRaw);
  for (let j = 0; j < nJ; j++) {
    const cols = Math.min(NR, N - j * NR);
    const dst = (bPacked + j * K * NR) * 4;
    if (!transB) {
      // B stored (K, N): the sliver's NR values per k are contiguous.
      const src = (bRaw + j * NR) * 4;
      if (cols === NR) w.copy8(dst, src, K, N * 4);
      else w.edge(dst, src, K, NR, cols, N * 4, 4);
    } else {
      // B stored (N, K): column j of op(B) is row j of B, contiguous in k.
      const src = (bRaw + j * NR * K) * 4;
      if (cols === NR) w.tr8(dst, src, K, K * 4);
      else w.edge(dst, src, K, NR, cols, 4, K * 4);
    }
  }
  for (let i0 = 0; i0 < M; i0 += slab) {
    const m = Math.min(slab, M - i0);
    if (!transA) heap.set(A.subarray(aOff + i0 * K, aOff + (i0 + m) * K), aRaw);
    else if (m === M) heap.set(A.subarray(aOff, aOff + K * M), aRaw);
    else
      for (let k = 0; k < K; k++)
        heap.set(A.subarray(aOff + k * M + i0, aOff + k * M + i0 + m), aRaw + k * m);
    const cSrc = C.subarray(cOff + i0 * N, cOff + (i0 + m) * N);
    if (accumulate && N === Np) heap.set(cSrc, cReg);
    else if (accumulate) {
      heap.set(cSrc, cRaw);
      w.edge(cReg * 4, cRaw * 4, m, Np, N, N * 4, 4);
    }
    multiply(w, m, N, K, aRaw * 4, transA, bPacked * 4, cReg * 4, Np * 4, accumulate);
    if (N !== Np) w.edge(cRaw * 4, cReg * 4, m, N, N, Np * 4, 4);
    const out = N === Np ? cReg : cRaw;
    C.set(heap.subarray(out, out + m * N), cOff + i0 * N);
  }
}

/** Writes the descriptor of C (M × N at cBase, rows of ldc bytes) (+)= op(A) · packed op(B) and runs
 * its chunks, split between threads when the product is large enough. */
function multiply(
  w: GemmWasm,
  M: number,
  N: number,
  K: number,
  aRaw: number,
  transA: boolean,
  bPacked: number,
  cBase: number,
  ldc: number,
  accumulate: boolean,
): void {
  const nIB = Math.ceil(M / MC);
  const nJ = Math.ceil(N / NR);
  const pool = threads > 1 && w.shared && M * N * K >= parallelFrom ? gemmPool() : undefined;
  const shape = pool === undefined ? '' : `${M}x${N}x${K}`;
  const parallel = pool?.choose(shape) ?? false;
  // Column groups: one per row block, unless there are too few row blocks to share between threads.
  const want = parallel ? Math.min(nJ, Math.ceil((CHUNKS_PER_THREAD * threads) / nIB)) : 1;
  const jgW = Math.ceil(nJ / want);
  const nJG = Math.ceil(nJ / jgW);
  const d = DESC_AT;
  const f = heapI32;
  f[(d + DESC.M) >> 2] = M;
  f[(d + DESC.N) >> 2] = N;
  f[(d + DESC.K) >> 2] = K;
  f[(d + DESC.aRaw) >> 2] = aRaw;
  f[(d + DESC.transA) >> 2] = transA ? 1 : 0;
  f[(d + DESC.bPacked) >> 2] = bPacked;
  f[(d + DESC.cBase) >> 2] = cBase;
  f[(d + DESC.ldc) >> 2] = ldc;
  f[(d + DESC.accumulate) >> 2] = accumulate ? 1 : 0;
  f[(d + DESC.nJG) >> 2] = nJG;
  f[(d + DESC.jgW) >> 2] = jgW;
  const n = nIB * nJG;
  const t0 = pool === undefined ? 0 : performance.now();
  if (!parallel) for (let ci = 0; ci < n; ci++) w.chunk(d, ci, SCRATCH);
  else {
    const cpu0 = process.cpuUsage();
    pool!.run(n, w.chunk);
    const cpu = process.cpuUsage(cpu0);
    pool!.record(shape, true, performance.now() - t0, (cpu.user + cpu.system) / 1000);
    return;
  }
  pool?.record(shape, false, performance.now() - t0);
}
