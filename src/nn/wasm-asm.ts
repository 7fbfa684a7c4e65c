// A few dozen WebAssembly instructions and the module layout, written out as bytes, so that nn/'s kernels
// (gemm-wasm.ts) need no toolchain. Each helper returns the encoding of one instruction; a function body
// is the concatenation of its instructions.
//
// Binary format: WebAssembly Core Specification 2.0, §5 (binary format); SIMD opcodes from the
// fixed-width SIMD proposal (https://github.com/WebAssembly/simd/blob/main/proposals/simd/BinarySIMD.md);
// shared memory from the threads proposal (https://github.com/WebAssembly/threads, limits flag 0x03).

export const I32 = 0x7f;
export const V128 = 0x7b;

export function uleb(n: number): number[] {
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

export const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, bytes: number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (ch) => ch.charCodeAt(0))]; // ASCII

// Instructions (spec §5.4).
export const localGet = (i: number) => [0x20, ...uleb(i)];
export const localSet = (i: number) => [0x21, ...uleb(i)];
export const localTee = (i: number) => [0x22, ...uleb(i)];
export const i32Const = (n: number) => [0x41, ...sleb(n)];
export const call = (f: number) => [0x10, ...uleb(f)];
export const I32_EQ = [0x46];
export const I32_NE = [0x47];
export const I32_LT_U = [0x49];
export const I32_ADD = [0x6a];
export const I32_SUB = [0x6b];
export const I32_MUL = [0x6c];
export const I32_DIV_U = [0x6e];
export const I32_AND = [0x71];
export const I32_OR = [0x72];
export const I32_SHR_U = [0x76];
export const SELECT = [0x1b];
export const LOOP = [0x03, 0x40]; // loop with an empty block type
export const IF = [0x04, 0x40]; // if with an empty block type
export const IF_I32 = [0x04, I32]; // if … else … end leaving one i32
export const ELSE = [0x05];
export const BR_IF_0 = [0x0d, 0x00]; // branch to the innermost enclosing loop's start (or block's end)
export const END = [0x0b];
// memarg = (log2 alignment hint, offset); a hint is only a hint, unaligned access is still legal.
export const i32Load = (offset: number) => [0x28, 2, ...uleb(offset)];
export const i32Store = (offset: number) => [0x36, 2, ...uleb(offset)];
const simd = (op: number, ...imm: number[]) => [0xfd, ...uleb(op), ...imm];
export const v128Load = (offset: number) => simd(0x00, 4, ...uleb(offset));
export const v128Load32Splat = (offset: number) => simd(0x09, 2, ...uleb(offset));
export const v128Store = (offset: number) => simd(0x0b, 4, ...uleb(offset));
export const V128_ZERO = simd(0x0c, ...new Array<number>(16).fill(0));
export const F32X4_ADD = simd(0xe4);
export const F32X4_MUL = simd(0xe6);
/** i8x16.shuffle of the two f32x4 operands on the stack: lane i of the result is lane lanes[i] of
 * (first ‖ second), lanes 0–3 naming the first operand and 4–7 the second. */
export const f32x4Shuffle = (lanes: readonly number[]) =>
  simd(0x0d, ...lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));

/** A function body being written: `emit` appends instructions to `code`. */
export function body(): { code: number[]; emit: (...parts: number[][]) => void } {
  const code: number[] = [];
  return {
    code,
    emit: (...parts) => {
      for (const p of parts) code.push(...p);
    },
  };
}

/** min(a, b) of two unsigned i32 expressions, each pushed by its code (evaluated twice: keep them cheap). */
export const minU = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, ...I32_LT_U, ...SELECT];

/** A function: its i32 parameters, its extra locals (i32 then v128) and its body. */
export interface WasmFunction {
  name: string;
  params: number;
  i32Locals: number;
  v128Locals: number;
  body: number[];
}

/**
 * A module of `functions` (all of type (i32…) → ()), exported under their names, over one imported
 * memory `env.mem` — shared (threads proposal) when `shared`, so that several workers run the same
 * functions on the same memory. `maxPages` bounds it (a shared memory must declare a maximum).
 */
export function moduleBytes(functions: readonly WasmFunction[], shared: boolean, maxPages: number): number[] {
  const arities = [...new Set(functions.map((f) => f.params))];
  const types = arities.map((n) => [0x60, ...vec(new Array(n).fill([I32])), ...vec([])]);
  const limits = shared ? [0x03, ...uleb(1), ...uleb(maxPages)] : [0x01, ...uleb(1), ...uleb(maxPages)];
  const memImport = [...name('env'), ...name('mem'), 0x02, ...limits];
  const bodies = functions.map((f) => {
    const locals = vec([
      [...uleb(f.i32Locals), I32],
      [...uleb(f.v128Locals), V128],
    ]);
    const body = [...locals, ...f.body];
    return [...uleb(body.length), ...body];
  });
  return [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, vec(types)),
    ...section(2, vec([memImport])),
    ...section(3, vec(functions.map((f) => uleb(arities.indexOf(f.params))))),
    ...section(7, vec(functions.map((f, i) => [...name(f.name), 0x00, ...uleb(i)]))),
    ...section(10, vec(bodies)),
  ];
}
