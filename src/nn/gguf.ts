// The GGUF container (ggml's docs/gguf.md, version 3), written and read from the specification: the file
// local LLM runtimes (llama.cpp, Ollama, LM Studio) load. Little-endian throughout:
//
//   header   magic "GGUF" (0x46554747 as u32), version u32 = 3, tensor_count u64, metadata_kv_count u64
//   metadata each: key (string), value type u32, value
//   tensors  each: name (string), n_dimensions u32, dimensions u64[n] (ne[0] first: the innermost,
//            contiguous one — a (rows, cols) matrix is ne = [cols, rows]), ggml type u32, offset u64
//            (from the start of the data section, a multiple of the alignment)
//   padding  to `general.alignment` (default 32), then the tensor data, each tensor padded likewise
//
// A string is a u64 byte length then UTF-8 bytes (no terminator); an array is its item type u32, a u64
// count, then the items. Value types: UINT8 0, INT8 1, UINT16 2, INT16 3, UINT32 4, INT32 5, FLOAT32 6,
// BOOL 7, STRING 8, ARRAY 9, UINT64 10, INT64 11, FLOAT64 12. llama.cpp checks a key's type against the
// one it expects (a context length read as FLOAT32 is refused), so every metadata entry carries its type.
//
// Tensor types written here: F32 (0), and Q8_0 (8) — blocks of 32 values along ne[0], each an f16 scale
// d = max|x|/127 then 32 int8 q = round(x/d) (ggml's quantize_row_q8_0_ref), read back as q·d.
// The reader takes any file through positional reads (a model of gigabytes is not read whole to learn
// its architecture), and dequantizes F32, F16 and Q8_0.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { dequantizeQ8_0, f16ToF32, Q8_0_BLOCK, Q8_0_BYTES, quantizeQ8_0 } from './gguf-quant.ts';

export { dequantizeQ8_0, f16ToF32, f32ToF16, Q8_0_BLOCK, quantizeQ8_0 } from './gguf-quant.ts';

export const GGUF_MAGIC = 0x46554747;
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

export const GGUF_TYPE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufScalarType = Exclude<keyof typeof GGUF_TYPE, 'ARRAY'>;

/** ggml tensor types this module writes or reads (ggml.h enum ggml_type). */
export const GGML_TYPE = { F32: 0, F16: 1, Q8_0: 8 } as const;
export type GgmlTypeName = keyof typeof GGML_TYPE;

/** A metadata value with its GGUF type: a scalar, or an array of one item type. */
export type GgufValue =
  | { type: GgufScalarType; value: number | bigint | boolean | string }
  | { type: 'ARRAY'; itemType: GgufScalarType; value: readonly (number | bigint | boolean | string)[] };

export const gguf = {
  u32: (value: number): GgufValue => ({ type: 'UINT32', value }),
  i32: (value: number): GgufValue => ({ type: 'INT32', value }),
  f32: (value: number): GgufValue => ({ type: 'FLOAT32', value }),
  bool: (value: boolean): GgufValue => ({ type: 'BOOL', value }),
  str: (value: string): GgufValue => ({ type: 'STRING', value }),
  strings: (value: readonly string[]): GgufValue => ({ type: 'ARRAY', itemType: 'STRING', value }),
  i32s: (value: readonly number[]): GgufValue => ({ type: 'ARRAY', itemType: 'INT32', value }),
  f32s: (value: readonly number[]): GgufValue => ({ type: 'ARRAY', itemType: 'FLOAT32', value }),
};

/** A tensor to write: values in row-major order of `shape` (outermost first, as ours and PyTorch's). */
export interface GgufTensorIn {
  name: string;
  shape: readonly number[];
  data: Float32Array;
  type: GgmlTypeName;
}

/** A tensor as the file lists it. */
export interface GgufTensorInfo {
  name: string;
  /** ne[0] first (innermost). */
  dims: number[];
  type: number;
  /** From the start of the data section. */
  offset: number;
  /** Bytes of its data. */
  bytes: number;
}

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
  /** Where the data section starts in the file. */
  dataOffset: number;
  alignment: number;
}

/** Why a file is not a GGUF file this reader understands (a message naming what is wrong). */
export class GgufError extends Error {}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** Bytes of a tensor of `count` values stored as `type` (ne[0] a multiple of the block for Q8_0). */
export function tensorBytes(type: number, dims: readonly number[]): number {
  const count = dims.reduce((a, b) => a * b, 1);
  switch (type) {
    case GGML_TYPE.F32:
      return 4 * count;
    case GGML_TYPE.F16:
      return 2 * count;
    case GGML_TYPE.Q8_0:
      return (count / Q8_0_BLOCK) * Q8_0_BYTES;
    default:
      throw new GgufError(`ggml type ${type} is not one this reader sizes (F32, F16, Q8_0)`);
  }
}

// --- writing ---------------------------------------------------------------------------------------

class ByteWriter {
  private chunks: Uint8Array[] = [];
  length = 0;
  private scratch = new DataView(new ArrayBuffer(8));
  bytes(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  private fixed(n: number, set: (v: DataView) => void): void {
    set(this.scratch);
    this.bytes(new Uint8Array(this.scratch.buffer.slice(0, n)));
  }
  u8 = (v: number) => this.fixed(1, (d) => d.setUint8(0, v));
  i8 = (v: number) => this.fixed(1, (d) => d.setInt8(0, v));
  u16 = (v: number) => this.fixed(2, (d) => d.setUint16(0, v, true));
  i16 = (v: number) => this.fixed(2, (d) => d.setInt16(0, v, true));
  u32 = (v: number) => this.fixed(4, (d) => d.setUint32(0, v, true));
  i32 = (v: number) => this.fixed(4, (d) => d.setInt32(0, v, true));
  f32 = (v: number) => this.fixed(4, (d) => d.setFloat32(0, v, true));
  f64 = (v: number) => this.fixed(8, (d) => d.setFloat64(0, v, true));
  u64 = (v: number | bigint) => this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true));
  i64 = (v: number | bigint) => this.fixed(8, (d) => d.setBigInt64(0, BigInt(v), true));
  string(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  pad(to: number): void {
    const n = align(this.length, to) - this.length;
    if (n > 0) this.bytes(new Uint8Array(n));
  }
  concat(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

function writeScalar(
  w: ByteWriter,
  type: GgufScalarType,
  v: number | bigint | boolean | string,
  key: string,
) {
  const want = (ok: boolean, what: string) => {
    if (!ok) throw new RangeError(`gguf metadata ${key}: ${JSON.stringify(String(v))} is not ${what}`);
  };
  switch (type) {
    case 'STRING':
      want(typeof v === 'string', 'a string');
      return w.string(v as string);
    case 'BOOL':
      want(typeof v === 'boolean', 'a boolean');
      return w.u8(v ? 1 : 0);
    case 'FLOAT32':
      want(typeof v === 'number', 'a number');
      return w.f32(v as number);
    case 'FLOAT64':
      want(typeof v === 'number', 'a number');
      return w.f64(v as number);
    case 'UINT64':
      return w.u64(v as number | bigint);
    case 'INT64':
      return w.i64(v as number | bigint);
    default: {
      const ranges: Record<string, [number, number, (x: number) => void]> = {
        UINT8: [0, 0xff, w.u8],
        INT8: [-0x80, 0x7f, w.i8],
        UINT16: [0, 0xffff, w.u16],
        INT16: [-0x8000, 0x7fff, w.i16],
        UINT32: [0, 0xffffffff, w.u32],
        INT32: [-0x80000000, 0x7fffffff, w.i32],
      };
      const [lo, hi, put] = ranges[type];
      want(typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi, `a ${type}`);
      return put(v as number);
    }
  }
}

/**
 * A GGUF file of the given metadata (in order) and tensors (in order). `general.alignment`, when given,
 * must be a UINT32 power of two; the default is 32.
 */
export function encodeGguf(
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensorIn[],
): Uint8Array {
  const alignment = Number(metadata.get('general.alignment')?.value ?? GGUF_DEFAULT_ALIGNMENT);
  const w = new ByteWriter();
  w.u32(GGUF_MAGIC);
  w.u32(GGUF_VERSION);
  w.u64(tensors.length);
  w.u64(metadata.size);
  for (const [key, v] of metadata) {
    w.string(key);
    w.u32(GGUF_TYPE[v.type]);
    if (v.type === 'ARRAY') {
      w.u32(GGUF_TYPE[v.itemType]);
      w.u64(v.value.length);
      for (const item of v.value) writeScalar(w, v.itemType, item, key);
    } else writeScalar(w, v.type, v.value, key);
  }
  const payloads: Uint8Array[] = [];
  let offset = 0;
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length)
      throw new RangeError(
        `gguf tensor ${t.name}: ${t.data.length} values for shape [${t.shape.join(', ')}]`,
      );
    const dims = [...t.shape].reverse();
    let payload: Uint8Array;
    if (t.type === 'F32')
      payload = new Uint8Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength));
    else if (t.type === 'Q8_0') {
      if (dims[0] % Q8_0_BLOCK !== 0)
        throw new RangeError(
          `gguf tensor ${t.name}: Q8_0 needs rows of a multiple of 32 values, not ${dims[0]}`,
        );
      payload = quantizeQ8_0(t.data);
    } else throw new RangeError(`gguf tensor ${t.name}: type ${t.type} is not written here`);
    w.string(t.name);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(GGML_TYPE[t.type]);
    w.u64(offset);
    payloads.push(payload);
    offset = align(offset + payload.length, alignment);
  }
  w.pad(alignment);
  for (const p of payloads) {
    w.bytes(p);
    w.pad(alignment);
  }
  return w.concat();
}

// --- reading ---------------------------------------------------------------------------------------

/** Positional reads of a file or a buffer. */
interface Source {
  read(offset: number, length: number): Uint8Array;
  size: number;
}

class Cursor {
  at = 0;
  private buf: Uint8Array = new Uint8Array(0);
  private bufAt = 0;
  constructor(private readonly src: Source) {}
  private need(n: number): DataView {
    if (this.at + n > this.src.size)
      throw new GgufError(
        `the file ends at byte ${this.src.size}, inside the header (needed ${n} bytes at ${this.at})`,
      );
    if (this.at < this.bufAt || this.at + n > this.bufAt + this.buf.length) {
      this.bufAt = this.at;
      this.buf = this.src.read(this.at, Math.min(Math.max(n, 1 << 20), this.src.size - this.at));
    }
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.at - this.bufAt, n);
    this.at += n;
    return view;
  }
  u8 = () => this.need(1).getUint8(0);
  i8 = () => this.need(1).getInt8(0);
  u16 = () => this.need(2).getUint16(0, true);
  i16 = () => this.need(2).getInt16(0, true);
  u32 = () => this.need(4).getUint32(0, true);
  i32 = () => this.need(4).getInt32(0, true);
  f32 = () => this.need(4).getFloat32(0, true);
  f64 = () => this.need(8).getFloat64(0, true);
  u64 = (): number => {
    const v = this.need(8).getBigUint64(0, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER))
      throw new GgufError(`a count of ${v} at byte ${this.at - 8} is not plausible`);
    return Number(v);
  };
  u64big = () => this.need(8).getBigUint64(0, true);
  i64 = () => this.need(8).getBigInt64(0, true);
  string(): string {
    const n = this.u64();
    if (n > this.src.size)
      throw new GgufError(`a string of ${n} bytes at byte ${this.at - 8} is longer than the file`);
    const view = this.need(n);
    return new TextDecoder().decode(new Uint8Array(view.buffer, view.byteOffset, n));
  }
}

const TYPE_NAMES = Object.fromEntries(Object.entries(GGUF_TYPE).map(([k, v]) => [v, k])) as Record<
  number,
  keyof typeof GGUF_TYPE
>;

function readScalar(c: Cursor, type: GgufScalarType): number | bigint | boolean | string {
  switch (type) {
    case 'UINT8':
      return c.u8();
    case 'INT8':
      return c.i8();
    case 'UINT16':
      return c.u16();
    case 'INT16':
      return c.i16();
    case 'UINT32':
      return c.u32();
    case 'INT32':
      return c.i32();
    case 'FLOAT32':
      return c.f32();
    case 'FLOAT64':
      return c.f64();
    case 'BOOL':
      return c.u8() !== 0;
    case 'STRING':
      return c.string();
    case 'UINT64':
      return c.u64big();
    case 'INT64':
      return c.i64();
  }
}

function readHeader(src: Source): GgufFile {
  const c = new Cursor(src);
  if (src.size < 24) throw new GgufError(`not a GGUF file: ${src.size} bytes, shorter than a GGUF header`);
  const magic = c.u32();
  if (magic !== GGUF_MAGIC) throw new GgufError('not a GGUF file: it does not begin with the magic "GGUF"');
  const version = c.u32();
  if (version !== 2 && version !== 3)
    throw new GgufError(`GGUF version ${version}: this reader reads versions 2 and 3`);
  const nTensors = c.u64();
  const nKv = c.u64();
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < nKv; i++) {
    const key = c.string();
    const t = c.u32();
    const type = TYPE_NAMES[t];
    if (type === undefined) throw new GgufError(`metadata ${key}: unknown value type ${t}`);
    if (type === 'ARRAY') {
      const it = c.u32();
      const itemType = TYPE_NAMES[it];
      if (itemType === undefined || itemType === 'ARRAY')
        throw new GgufError(`metadata ${key}: unsupported array item type ${it}`);
      const n = c.u64();
      const value: (number | bigint | boolean | string)[] = [];
      for (let j = 0; j < n; j++) value.push(readScalar(c, itemType));
      metadata.set(key, { type, itemType, value });
    } else metadata.set(key, { type, value: readScalar(c, type) });
  }
  const tensors: GgufTensorInfo[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = c.string();
    const n = c.u32();
    if (n < 1 || n > 4) throw new GgufError(`tensor ${name}: ${n} dimensions (GGUF allows 1 to 4)`);
    const dims: number[] = [];
    for (let j = 0; j < n; j++) dims.push(c.u64());
    const type = c.u32();
    const offset = c.u64();
    let bytes = -1;
    try {
      bytes = tensorBytes(type, dims);
    } catch {
      // A type this reader does not size (K-quants…): listed, not readable here.
    }
    tensors.push({ name, dims, type, offset, bytes });
  }
  const alignment = Number(metadata.get('general.alignment')?.value ?? GGUF_DEFAULT_ALIGNMENT);
  const dataOffset = align(c.at, alignment);
  for (const t of tensors)
    if (t.bytes >= 0 && dataOffset + t.offset + t.bytes > src.size)
      throw new GgufError(
        `tensor ${t.name} ends at byte ${dataOffset + t.offset + t.bytes}; the file has ${src.size} (truncated)`,
      );
  return { version, metadata, tensors, dataOffset, alignment };
}

export function decodeGguf(bytes: Uint8Array): GgufFile {
  return readHeader({ size: bytes.length, read: (o, n) => bytes.subarray(o, o + n) });
}

/** The header, metadata and tensor table of a GGUF file on disk (the tensor data is not read). */
export function readGgufHeader(path: string): GgufFile {
  const fd = openSync(path, 'r');
  try {
    const { size } = fstatSync(fd);
    return readHeader({
      size,
      read: (offset, length) => {
        const b = new Uint8Array(length);
        readSync(fd, b, 0, length, offset);
        return b;
      },
    });
  } finally {
    closeSync(fd);
  }
}

/** A tensor's values as float32 (F32, F16 and Q8_0), row-major in our order (shape = dims reversed). */
export function tensorValues(
  file: GgufFile,
  bytes: Uint8Array,
  name: string,
): { shape: number[]; data: Float32Array } {
  const t = file.tensors.find((x) => x.name === name);
  if (t === undefined) throw new GgufError(`no tensor ${name}`);
  const count = t.dims.reduce((a, b) => a * b, 1);
  const at = file.dataOffset + t.offset;
  const raw = bytes.subarray(at, at + t.bytes);
  let data: Float32Array;
  if (t.type === GGML_TYPE.F32) data = new Float32Array(raw.slice().buffer);
  else if (t.type === GGML_TYPE.F16) {
    data = new Float32Array(count);
    const v = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < count; i++) data[i] = f16ToF32(v.getUint16(2 * i, true));
  } else if (t.type === GGML_TYPE.Q8_0) data = dequantizeQ8_0(raw, count);
  else throw new GgufError(`tensor ${name}: ggml type ${t.type} is not one this reader dequantizes`);
  return { shape: [...t.dims].reverse(), data };
}
