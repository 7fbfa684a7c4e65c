// The GEMM micro-kernel as a hand-assembled WebAssembly module with 128-bit SIMD (f32x4), the same
// design as GotoBLAS/BLIS and XNNPACK's wasm kernels: a 4×8 tile of C lives in eight v128 registers
// while the kernel streams a packed 4-row sliver of A and a packed 8-column sliver of B through them.
// Node 20's V8 compiles it to SSE/AVX instructions; the packing and the loop over blocks stay in
// JavaScript (gemm.ts). No toolchain is needed: the ~40 opcodes below are written out by hand.
//
// Binary format: WebAssembly Core Specification 2.0, §5 (binary format); SIMD opcodes from the
// fixed-width SIMD proposal (https://github.com/WebAssembly/simd/blob/main/proposals/simd/BinarySIMD.md).
//
// Arithmetic: every lane computes acc = fl32(acc + fl32(a·b)), k in order, then C = fl32(C + acc) —
// plain IEEE binary32 (wasm SIMD without relaxed-simd never fuses a multiply-add). gemm.ts's scalar
// path repeats exactly these roundings with Math.fround, so both give the same bits.

// The few WebAssembly JS-API members used here (tsconfig's lib has no DOM, @types/node 20 no wasm).
declare namespace WebAssembly {
  class Memory {
    readonly buffer: ArrayBuffer;
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

/** Rows × columns of the C tile one kernel iteration keeps in registers. */
export const MR = 4;
export const NR = 8;

const I32 = 0x7f;
const V128 = 0x7b;

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, bytes: number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (ch) => ch.charCodeAt(0))]; // ASCII

// Instructions (spec §5.4).
const localGet = (i: number) => [0x20, ...uleb(i)];
const localSet = (i: number) => [0x21, ...uleb(i)];
const localTee = (i: number) => [0x22, ...uleb(i)];
const i32Const = (n: number) => [0x41, ...sleb(n)];
const I32_ADD = [0x6a];
const I32_SUB = [0x6b];
const I32_MUL = [0x6c];
const I32_LT_U = [0x49];
const LOOP = [0x03, 0x40]; // loop with an empty block type
const BR_IF_0 = [0x0d, 0x00]; // branch to the innermost loop's start
const END = [0x0b];
const simd = (op: number, ...imm: number[]) => [0xfd, ...uleb(op), ...imm];
// memarg = (log2 alignment hint, offset); a hint is only a hint, unaligned access is still legal.
const v128Load = (offset: number) => simd(0x00, 4, ...uleb(offset));
const v128Load32Splat = (offset: number) => simd(0x09, 2, ...uleb(offset));
const v128Store = (offset: number) => simd(0x0b, 4, ...uleb(offset));
const V128_ZERO = simd(0x0c, ...new Array<number>(16).fill(0));
const F32X4_ADD = simd(0xe4);
const F32X4_MUL = simd(0xe6);

/**
 * The module: one exported memory `mem` and one function
 *   kernel(kc, nI, nJ, aBase, bBase, bStride, cBase, ldc)
 * that, for every tile (it < nI, jt < nJ), adds to the MR×NR block of C at
 * cBase + it·MR·ldc + jt·NR·4 the product of A's packed sliver it (kc × MR floats at aBase + it·kc·MR·4)
 * and B's packed sliver jt (kc × NR floats at bBase + jt·bStride). Addresses and strides are in bytes.
 * kc, nI and nJ must be ≥ 1.
 */
export function kernelModuleBytes(): Uint8Array {
  // Locals: the 8 parameters, then i32 jt, it, pa, pb, k, c, then v128 acc[MR·NV], b[NV], a.
  const [KC, NI, NJ, A_BASE, B_BASE, B_STRIDE, C_BASE, LDC] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [JT, IT, PA, PB, K, C] = [8, 9, 10, 11, 12, 13];
  const NV = NR / 4;
  const ACC = 14;
  const B = ACC + MR * NV;
  const A = B + NV;
  const code: number[] = [];
  const emit = (...parts: number[][]) => {
    for (const p of parts) code.push(...p);
  };

  emit(i32Const(0), localSet(JT));
  emit(LOOP); // over column tiles jt
  emit(i32Const(0), localSet(IT));
  emit(LOOP); // over row tiles it
  emit(
    localGet(A_BASE),
    localGet(IT),
    localGet(KC),
    I32_MUL,
    i32Const(MR * 4),
    I32_MUL,
    I32_ADD,
    localSet(PA),
  );
  emit(localGet(B_BASE), localGet(JT), localGet(B_STRIDE), I32_MUL, I32_ADD, localSet(PB));
  for (let r = 0; r < MR * NV; r++) emit(V128_ZERO, localSet(ACC + r));
  emit(localGet(KC), localSet(K));
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
  // C tile += acc, row by row.
  emit(localGet(C_BASE), localGet(IT), i32Const(MR), I32_MUL, localGet(LDC), I32_MUL, I32_ADD);
  emit(localGet(JT), i32Const(NR * 4), I32_MUL, I32_ADD, localSet(C));
  for (let r = 0; r < MR; r++) {
    for (let v = 0; v < NV; v++) {
      emit(
        localGet(C),
        localGet(C),
        v128Load(16 * v),
        localGet(ACC + r * NV + v),
        F32X4_ADD,
        v128Store(16 * v),
      );
    }
    if (r < MR - 1) emit(localGet(C), localGet(LDC), I32_ADD, localSet(C));
  }
  emit(localGet(IT), i32Const(1), I32_ADD, localTee(IT), localGet(NI), I32_LT_U, BR_IF_0);
  emit(END);
  emit(localGet(JT), i32Const(1), I32_ADD, localTee(JT), localGet(NJ), I32_LT_U, BR_IF_0);
  emit(END);
  emit(END); // function body

  const locals = vec([
    [...uleb(6), I32],
    [...uleb(MR * NV + NV + 1), V128],
  ]);
  const body = [...locals, ...code];
  const kernelType = [0x60, ...vec(new Array(8).fill([I32])), ...vec([])];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, vec([kernelType])), // types
    ...section(3, vec([[0]])), // functions: one, of type 0
    ...section(5, vec([[0x00, 1]])), // memory: min 1 page (64 KiB), grown on demand
    ...section(
      7,
      vec([
        [...name('kernel'), 0x00, 0],
        [...name('mem'), 0x02, 0],
      ]),
    ), // exports
    ...section(10, vec([[...uleb(body.length), ...body]])), // code
  ]);
}

export interface SimdKernel {
  memory: WebAssembly.Memory;
  kernel: (
    kc: number,
    nI: number,
    nJ: number,
    aBase: number,
    bBase: number,
    bStride: number,
    cBase: number,
    ldc: number,
  ) => void;
}

/** The compiled kernel, or undefined where WebAssembly SIMD is unavailable (gemm then runs scalar). */
export function loadSimdKernel(): SimdKernel | undefined {
  if (typeof WebAssembly !== 'object') return undefined;
  const bytes = kernelModuleBytes();
  if (!WebAssembly.validate(bytes)) return undefined;
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
  const exports = instance.exports as { kernel: SimdKernel['kernel']; mem: WebAssembly.Memory };
  return { memory: exports.mem, kernel: exports.kernel };
}
