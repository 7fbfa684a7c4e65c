// The GEMM kernels as a hand-assembled WebAssembly module with 128-bit SIMD (f32x4), the same design as
// GotoBLAS/BLIS and XNNPACK's wasm kernels. Node 20's V8 compiles it to SSE/AVX instructions; gemm.ts
// copies the operands into the module's memory and calls `chunk`, which packs and multiplies one block
// of the output. Several threads run the same functions on one shared memory (gemm-threads.ts), each on
// its own blocks. No toolchain is needed: the instructions are written out in wasm-asm.ts.
//
//   kernel  a 4×8 tile of C lives in eight v128 registers while a packed 4-row sliver of A and a packed
//           8-column sliver of B stream through them
//   copy*   packing of a sliver whose W values per k are contiguous (v128 loads)
//   tr*     packing of a sliver whose k values are contiguous (4×4 transposes with shuffles)
//   edge    packing of a partial sliver (zero-padded), and re-striding of C rows
//   chunk   one block of C: rows of one MC-row block × one group of column slivers, k in KC blocks
//
// Arithmetic: every lane computes acc = fl32(acc + fl32(a·b)), k in order, then C = fl32(C + acc) —
// plain IEEE binary32 (wasm SIMD without relaxed-simd never fuses a multiply-add). On the first k-block
// of a product without accumulation the kernel stores acc itself: fl32(+0 + acc) = acc bit for bit, since
// acc, a sum started at +0, is never −0. gemm.ts's scalar path repeats exactly these roundings with
// Math.fround, so both give the same bits, whichever thread computed which block.
import {
  BR_IF_0,
  body,
  call,
  ELSE,
  END,
  F32X4_ADD,
  F32X4_MUL,
  f32x4Shuffle,
  I32_ADD,
  I32_AND,
  I32_DIV_U,
  I32_EQ,
  I32_LT_U,
  I32_MUL,
  I32_NE,
  I32_OR,
  I32_SHR_U,
  I32_SUB,
  IF,
  IF_I32,
  i32Const,
  i32Load,
  i32Store,
  LOOP,
  localGet,
  localSet,
  localTee,
  minU,
  moduleBytes,
  V128_ZERO,
  v128Load,
  v128Load32Splat,
  v128Store,
  type WasmFunction,
} from './wasm-asm.ts';

// The few WebAssembly JS-API members used here (tsconfig's lib has no DOM, @types/node 20 no wasm).
declare namespace WebAssembly {
  class Memory {
    constructor(descriptor: { initial: number; maximum: number; shared: boolean });
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(deltaPages: number): number;
  }
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports: object);
    readonly exports: Record<string, unknown>;
  }
  function validate(bytes: Uint8Array): boolean;
}
export type WasmMemory = WebAssembly.Memory;
export type WasmModule = WebAssembly.Module;

/** Rows × columns of the C tile one kernel iteration keeps in registers. */
export const MR = 4;
export const NR = 8;
/** k-block length: fixes the summation order, so every path must use it. */
export const KC = 256;
/** Rows of op(A) packed per block (one chunk's rows). */
export const MC = 64;
/** Memory bound: 2 GiB, so that every byte address is a non-negative i32. */
export const MAX_PAGES = 32768;

/** Byte offsets of the fields of a product's descriptor (i32 each) that `chunk` reads. */
export const DESC = {
  M: 0, // rows of op(A) and C
  N: 4, // columns of op(B) and C
  K: 8,
  aRaw: 12, // byte address of A as stored: (M, K), or (K, M) when transA
  transA: 16,
  bPacked: 20, // byte address of op(B) packed in ⌈N/NR⌉ slivers of K×NR
  cBase: 24, // byte address of C, rows of ldc bytes (ldc ≥ ⌈N/NR⌉·NR·4)
  ldc: 28,
  accumulate: 32,
  nJG: 36, // column groups per row block: chunk ci is row block ⌊ci/nJG⌋, group ci mod nJG
  jgW: 40, // slivers per column group
} as const;
/** Bytes the descriptor takes. */
export const DESC_BYTES = 64;

const NV = NR / 4; // v128 per row of the tile

/**
 * kernel(kc, nI, nJ, aBase, bBase, bStride, cBase, ldc, add): for every tile (it < nI, jt < nJ), the
 * MR×NR block of C at cBase + it·MR·ldc + jt·NR·4 gets (add ? C + : ) the product of A's packed sliver
 * it (kc × MR floats at aBase + it·kc·MR·4) and B's packed sliver jt (kc × NR floats at
 * bBase + jt·bStride). Addresses and strides are in bytes; kc, nI and nJ must be ≥ 1.
 */
function kernel(): WasmFunction {
  const [KCn, NI, NJ, A_BASE, B_BASE, B_STRIDE, C_BASE, LDC, ADD] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [JT, IT, PA, PB, K, C] = [9, 10, 11, 12, 13, 14];
  const ACC = 15;
  const B = ACC + MR * NV;
  const A = B + NV;
  const { code, emit } = body();
  emit(i32Const(0), localSet(JT));
  emit(LOOP); // over column tiles jt
  emit(i32Const(0), localSet(IT));
  emit(LOOP); // over row tiles it
  emit(
    localGet(A_BASE),
    localGet(IT),
    localGet(KCn),
    I32_MUL,
    i32Const(MR * 4),
    I32_MUL,
    I32_ADD,
    localSet(PA),
  );
  emit(localGet(B_BASE), localGet(JT), localGet(B_STRIDE), I32_MUL, I32_ADD, localSet(PB));
  for (let r = 0; r < MR * NV; r++) emit(V128_ZERO, localSet(ACC + r));
  emit(localGet(KCn), localSet(K));
  emit(LOOP); // over k: acc[r][v] += splat(A[k][r]) · B[k][4v..4v+3]
  for (let v = 0; v < NV; v++) emit(localGet(PB), v128Load(16 * v), localSet(B + v));
  for (let r = 0; r < MR; r++) {
    emit(localGet(PA), v128Load32Splat(4 * r), localSet(A));
    for (let v = 0; v < NV; v++) {
      const acc = ACC + r * NV + v;
      emit(localGet(acc), localGet(A), localGet(B + v), F32X4_MUL, F32X4_ADD, localSet(acc));
    }
  }
  emit(localGet(PA), i32Const(MR * 4), I32_ADD, localSet(PA));
  emit(localGet(PB), i32Const(NR * 4), I32_ADD, localSet(PB));
  emit(localGet(K), i32Const(1), I32_SUB, localTee(K), BR_IF_0);
  emit(END);
  // C tile (+)= acc, row by row.
  emit(localGet(C_BASE), localGet(IT), i32Const(MR), I32_MUL, localGet(LDC), I32_MUL, I32_ADD);
  emit(localGet(JT), i32Const(NR * 4), I32_MUL, I32_ADD, localSet(C));
  for (const add of [true, false]) {
    emit(add ? [...localGet(ADD), ...IF] : ELSE);
    for (let r = 0; r < MR; r++) {
      for (let v = 0; v < NV; v++) {
        const acc = localGet(ACC + r * NV + v);
        if (add) emit(localGet(C), localGet(C), v128Load(16 * v), acc, F32X4_ADD, v128Store(16 * v));
        else emit(localGet(C), acc, v128Store(16 * v));
      }
      if (r < MR - 1) emit(localGet(C), localGet(LDC), I32_ADD, localSet(C));
    }
  }
  emit(END);
  emit(localGet(IT), i32Const(1), I32_ADD, localTee(IT), localGet(NI), I32_LT_U, BR_IF_0);
  emit(END);
  emit(localGet(JT), i32Const(1), I32_ADD, localTee(JT), localGet(NJ), I32_LT_U, BR_IF_0);
  emit(END);
  emit(END); // function body
  return { name: 'kernel', params: 9, i32Locals: 6, v128Locals: MR * NV + NV + 1, body: code };
}

/** copyW(dst, src, kc, sk): dst[k·W + c] = src[k·sk/4 + c] for k < kc, c < W (sk in bytes; kc ≥ 1). */
function copy(W: number): WasmFunction {
  const [DST, SRC, KCn, SK] = [0, 1, 2, 3];
  const code = [...LOOP];
  for (let v = 0; v < W / 4; v++)
    code.push(...localGet(DST), ...localGet(SRC), ...v128Load(16 * v), ...v128Store(16 * v));
  code.push(...localGet(DST), ...i32Const(4 * W), ...I32_ADD, ...localSet(DST));
  code.push(...localGet(SRC), ...localGet(SK), ...I32_ADD, ...localSet(SRC));
  code.push(...localGet(KCn), ...i32Const(1), ...I32_SUB, ...localTee(KCn), ...BR_IF_0, ...END, ...END);
  return { name: `copy${W}`, params: 4, i32Locals: 0, v128Locals: 0, body: code };
}

/**
 * trW(dst, src, kc, sc): dst[k·W + c] = src[c·sc/4 + k] for k < kc, c < W (sc in bytes): column c of the
 * sliver is contiguous in k. Four k at a time as 4×4 transposes, the rest one value at a time.
 */
function transpose(W: number): WasmFunction {
  const [DST, SRC, KCn, SC, N4, P] = [0, 1, 2, 3, 4, 5];
  const R = 6; // v128 r0..r3: four columns' next four k values
  const T = 10; // v128 t0..t3: the interleaved halves
  const { code, emit } = body();
  emit(localGet(KCn), i32Const(2), I32_SHR_U, localTee(N4), IF, LOOP);
  for (let cg = 0; cg < W / 4; cg++) {
    emit(
      localGet(SRC),
      localGet(SC),
      i32Const(4 * cg),
      I32_MUL,
      I32_ADD,
      localTee(P),
      v128Load(0),
      localSet(R),
    );
    for (let c = 1; c < 4; c++)
      emit(localGet(P), localGet(SC), I32_ADD, localTee(P), v128Load(0), localSet(R + c));
    // t0 = (r0[0], r1[0], r0[1], r1[1]), t1 = (r0[2], r1[2], r0[3], r1[3]); t2, t3 likewise from r2, r3.
    for (const [t, a, lanes] of [
      [0, 0, [0, 4, 1, 5]],
      [1, 0, [2, 6, 3, 7]],
      [2, 2, [0, 4, 1, 5]],
      [3, 2, [2, 6, 3, 7]],
    ] as const)
      emit(localGet(R + a), localGet(R + a + 1), f32x4Shuffle(lanes), localSet(T + t));
    // Row k of the sliver (k = 0..3 of this step): (r0[k], r1[k], r2[k], r3[k]).
    for (const [k, a, lanes] of [
      [0, 0, [0, 1, 4, 5]],
      [1, 0, [2, 3, 6, 7]],
      [2, 1, [0, 1, 4, 5]],
      [3, 1, [2, 3, 6, 7]],
    ] as const)
      emit(
        localGet(DST),
        localGet(T + a),
        localGet(T + a + 2),
        f32x4Shuffle(lanes),
        v128Store(16 * (k * (W / 4) + cg)),
      );
  }
  emit(localGet(SRC), i32Const(16), I32_ADD, localSet(SRC));
  emit(localGet(DST), i32Const(16 * W), I32_ADD, localSet(DST));
  emit(localGet(N4), i32Const(1), I32_SUB, localTee(N4), BR_IF_0, END, END);
  // The last kc mod 4 values of each column.
  emit(localGet(KCn), i32Const(3), I32_AND, localTee(N4), IF, LOOP, localGet(SRC), localSet(P));
  for (let c = 0; c < W; c++) {
    emit(localGet(DST), localGet(P), i32Load(0), i32Store(4 * c));
    if (c < W - 1) emit(localGet(P), localGet(SC), I32_ADD, localSet(P));
  }
  emit(localGet(SRC), i32Const(4), I32_ADD, localSet(SRC));
  emit(localGet(DST), i32Const(4 * W), I32_ADD, localSet(DST));
  emit(localGet(N4), i32Const(1), I32_SUB, localTee(N4), BR_IF_0, END, END);
  emit(END); // function body
  return { name: `tr${W}`, params: 4, i32Locals: 2, v128Locals: 8, body: code };
}

/**
 * edge(dst, src, kc, W, w, sk, sc): dst[k·W + c] = c < w ? src[(k·sk + c·sc)/4] : 0 for k < kc, c < W
 * (strides in bytes; kc, W ≥ 1). Values are copied as bits (i32), never converted.
 */
function edge(): WasmFunction {
  const [DST, SRC, KCn, W, Wv, SK, SC, C, P, Q] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const { code, emit } = body();
  emit(LOOP, i32Const(0), localSet(C), localGet(SRC), localSet(P), localGet(DST), localSet(Q));
  emit(
    LOOP,
    localGet(Q),
    localGet(C),
    localGet(Wv),
    I32_LT_U,
    IF_I32,
    localGet(P),
    i32Load(0),
    ELSE,
    i32Const(0),
    END,
  );
  emit(i32Store(0));
  emit(localGet(Q), i32Const(4), I32_ADD, localSet(Q), localGet(P), localGet(SC), I32_ADD, localSet(P));
  emit(localGet(C), i32Const(1), I32_ADD, localTee(C), localGet(W), I32_LT_U, BR_IF_0, END);
  emit(localGet(DST), localGet(W), i32Const(4), I32_MUL, I32_ADD, localSet(DST));
  emit(localGet(SRC), localGet(SK), I32_ADD, localSet(SRC));
  emit(localGet(KCn), i32Const(1), I32_SUB, localTee(KCn), BR_IF_0, END);
  emit(END); // function body
  return { name: 'edge', params: 7, i32Locals: 3, v128Locals: 0, body: code };
}

// Function indices, in the order the module lists them.
const F = { kernel: 0, copy4: 1, copy8: 2, tr4: 3, tr8: 4, edge: 5, chunk: 6 };

/**
 * chunk(desc, ci, scratch): block ci of the product described at `desc` (see DESC): for each k-block,
 * op(A)'s rows of the block are packed into `scratch` (MC·KC floats of this thread's own) and the
 * kernel runs over the group's column slivers.
 */
function chunk(): WasmFunction {
  const names = ['desc', 'ci', 'scratch', ...Object.keys(DESC)];
  const locals = [
    'ib',
    'jg',
    'i0',
    'mc',
    'nI',
    'j0',
    'nJ',
    'k0',
    'kc',
    'it',
    'rows',
    'dst',
    'src',
    'sk',
    'sc',
  ];
  const L = Object.fromEntries([...names, ...locals].map((n, i) => [n, i])) as Record<string, number>;
  const g = (n: string) => localGet(L[n]);
  const { code, emit } = body();
  for (const [field, off] of Object.entries(DESC)) emit(g('desc'), i32Load(off), localSet(L[field]));
  emit(g('ci'), g('nJG'), I32_DIV_U, localSet(L.ib));
  emit(g('ci'), g('ib'), g('nJG'), I32_MUL, I32_SUB, localSet(L.jg));
  emit(g('ib'), i32Const(MC), I32_MUL, localSet(L.i0));
  emit(minU(i32Const(MC), [...g('M'), ...g('i0'), ...I32_SUB]), localSet(L.mc));
  emit(g('mc'), i32Const(MR - 1), I32_ADD, i32Const(2), I32_SHR_U, localSet(L.nI));
  emit(g('jg'), g('jgW'), I32_MUL, localSet(L.j0));
  const slivers = [...g('N'), ...i32Const(NR - 1), ...I32_ADD, ...i32Const(3), ...I32_SHR_U];
  emit(minU(g('jgW'), [...slivers, ...g('j0'), ...I32_SUB]), localSet(L.nJ));
  emit(i32Const(0), localSet(L.k0), LOOP); // over k-blocks
  emit(minU(i32Const(KC), [...g('K'), ...g('k0'), ...I32_SUB]), localSet(L.kc));
  emit(i32Const(0), localSet(L.it), LOOP); // over the block's row slivers: pack them
  emit(
    minU(i32Const(MR), [...g('mc'), ...g('it'), ...i32Const(MR), ...I32_MUL, ...I32_SUB]),
    localSet(L.rows),
  );
  emit(g('scratch'), g('it'), g('kc'), I32_MUL, i32Const(MR * 4), I32_MUL, I32_ADD, localSet(L.dst));
  // A stored (K, M): element (i, k) at k·M + i — a sliver's MR values per k are contiguous.
  emit(g('transA'), IF, g('k0'), g('M'), I32_MUL, g('i0'), I32_ADD, g('it'), i32Const(MR), I32_MUL, I32_ADD);
  emit(i32Const(4), I32_MUL, g('aRaw'), I32_ADD, localSet(L.src));
  emit(g('M'), i32Const(4), I32_MUL, localSet(L.sk), i32Const(4), localSet(L.sc));
  // A stored (M, K): element (i, k) at i·K + k — each row of the sliver is contiguous in k.
  emit(ELSE, g('i0'), g('it'), i32Const(MR), I32_MUL, I32_ADD, g('K'), I32_MUL, g('k0'), I32_ADD);
  emit(i32Const(4), I32_MUL, g('aRaw'), I32_ADD, localSet(L.src));
  emit(i32Const(4), localSet(L.sk), g('K'), i32Const(4), I32_MUL, localSet(L.sc), END);
  const args = [...g('dst'), ...g('src'), ...g('kc')];
  emit(g('rows'), i32Const(MR), I32_EQ, IF);
  emit(g('transA'), IF, args, g('sk'), call(F.copy4), ELSE, args, g('sc'), call(F.tr4), END);
  emit(ELSE, args, i32Const(MR), g('rows'), g('sk'), g('sc'), call(F.edge), END);
  emit(g('it'), i32Const(1), I32_ADD, localTee(L.it), g('nI'), I32_LT_U, BR_IF_0, END);
  // kernel(kc, nI, nJ, scratch, bPacked + (j0·K + k0)·NR·4, K·NR·4, cBase + i0·ldc + j0·NR·4, ldc,
  //        accumulate | k0 ≠ 0)
  emit(g('kc'), g('nI'), g('nJ'), g('scratch'));
  emit(g('j0'), g('K'), I32_MUL, g('k0'), I32_ADD, i32Const(NR * 4), I32_MUL, g('bPacked'), I32_ADD);
  emit(g('K'), i32Const(NR * 4), I32_MUL);
  emit(g('i0'), g('ldc'), I32_MUL, g('j0'), i32Const(NR * 4), I32_MUL, I32_ADD, g('cBase'), I32_ADD);
  emit(g('ldc'), g('accumulate'), g('k0'), i32Const(0), I32_NE, I32_OR, call(F.kernel));
  emit(g('k0'), i32Const(KC), I32_ADD, localTee(L.k0), g('K'), I32_LT_U, BR_IF_0, END);
  emit(END);
  return { name: 'chunk', params: 3, i32Locals: names.length - 3 + locals.length, v128Locals: 0, body: code };
}

/** The module's bytes: the functions above over an imported memory (shared when `shared`). */
export function gemmModuleBytes(shared: boolean): Uint8Array {
  const fns = [kernel(), copy(4), copy(8), transpose(4), transpose(8), edge(), chunk()];
  fns.forEach((f, i) => {
    if (F[f.name as keyof typeof F] !== i) throw new Error(`gemm-wasm: ${f.name} is not function ${i}`);
  });
  return Uint8Array.from(moduleBytes(fns, shared, MAX_PAGES));
}

/** (dst, src, kc, stride): copy8 and tr8 above, the packing of one sliver of op(B). */
type Pack = (dst: number, src: number, kc: number, stride: number) => void;

export interface GemmWasm {
  /** Shared between threads when `shared`. */
  memory: WebAssembly.Memory;
  module: WebAssembly.Module;
  shared: boolean;
  chunk: (desc: number, ci: number, scratch: number) => void;
  copy8: Pack;
  tr8: Pack;
  edge: (dst: number, src: number, kc: number, W: number, w: number, sk: number, sc: number) => void;
}

/** An instance of the module on `memory` (another thread's instance on the same memory runs the same code). */
export function instantiate(module: WebAssembly.Module, memory: WebAssembly.Memory): Record<string, unknown> {
  return new WebAssembly.Instance(module, { env: { mem: memory } }).exports;
}

/** The compiled kernels on a shared memory (a private one where threads are missing), or undefined where
 * WebAssembly SIMD is unavailable (gemm then runs its scalar path). */
export function loadGemmWasm(): GemmWasm | undefined {
  if (typeof WebAssembly !== 'object') return undefined;
  for (const shared of [true, false]) {
    const bytes = gemmModuleBytes(shared);
    if (!WebAssembly.validate(bytes)) continue;
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared });
    } catch {
      continue;
    }
    const module = new WebAssembly.Module(bytes);
    const e = instantiate(module, memory) as Pick<GemmWasm, 'chunk' | 'copy8' | 'tr8' | 'edge'>;
    return { memory, module, shared, chunk: e.chunk, copy8: e.copy8, tr8: e.tr8, edge: e.edge };
  }
  return undefined;
}
