// The safetensors format (https://github.com/huggingface/safetensors, "Format"), float32 tensors only:
//   8 bytes   N, the header length, unsigned little-endian 64-bit
//   N bytes   a UTF-8 JSON object starting with `{`, padded with spaces (0x20) to a multiple of 8 so that
//             the data starts aligned: { "__metadata__": {string: string}, "<name>": {"dtype": "F32",
//             "shape": [..], "data_offsets": [begin, end]}, … } with offsets relative to the data
//   rest      the tensors' bytes, little-endian, C order, back to back with no holes
// The writer follows the reference implementation's choices (tensors sorted by name, compact JSON,
// __metadata__ first) so its output is byte-identical to `safetensors.serialize` for the same input;
// the reader applies the reference's checks (header size ≤ 100 MB, offsets contiguous from 0 and
// covering the data exactly, sizes matching shapes) and refuses anything else with a one-line error.
import { InputError } from '../core/errors.ts';

export interface NamedArray {
  shape: readonly number[];
  data: Float32Array;
}

/** Where each tensor lies in the data section (offsets relative to it), in name order, and the data
 * section's bytes: what a checksum of the contents covers (nn/checkpoint.ts). */
export interface Layout {
  entries: { name: string; shape: readonly number[]; begin: number; end: number }[];
  data: Uint8Array;
}

export interface Safetensors {
  tensors: Map<string, NamedArray>;
  /** The `__metadata__` map ({} when absent). */
  metadata: Record<string, string>;
  layout: Layout;
}

/** The reference implementation's limit (safetensors/src/tensor.rs, MAX_HEADER_SIZE). */
const MAX_HEADER = 100_000_000;
const METADATA = '__metadata__';

function elements(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** The reference's tensor order: by name, in UTF-16 code units (Rust sorts the same for ASCII names). */
const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * `seal`, when given, adds metadata entries computed from the layout (a checksum of the contents):
 * the data section is laid out first, then the header is written with them.
 */
export function encodeSafetensors(
  tensors: Iterable<readonly [string, NamedArray]>,
  metadata: Record<string, string> = {},
  seal?: (layout: Layout) => Record<string, string>,
): Uint8Array {
  const list = [...tensors].sort(([a], [b]) => byName(a, b));
  const header: Record<string, unknown> = {};
  const entries: Layout['entries'] = [];
  const seen = new Set<string>();
  let offset = 0;
  for (const [name, t] of list) {
    if (name === METADATA) throw new RangeError(`safetensors: ${METADATA} is not a tensor name`);
    if (elements(t.shape) !== t.data.length) {
      throw new RangeError(
        `safetensors: ${name} has ${t.data.length} values for shape [${t.shape.join(', ')}]`,
      );
    }
    if (seen.has(name)) throw new RangeError(`safetensors: tensor ${name} given twice`);
    seen.add(name);
    const end = offset + t.data.length * 4;
    entries.push({ name, shape: [...t.shape], begin: offset, end });
    offset = end;
  }
  const data = new Uint8Array(offset);
  const dataView = new DataView(data.buffer);
  let p = 0;
  for (const [, t] of list) {
    for (let i = 0; i < t.data.length; i++, p += 4) dataView.setFloat32(p, t.data[i], true);
  }
  const meta = seal === undefined ? metadata : { ...metadata, ...seal({ entries, data }) };
  // __metadata__ first, then the tensors in name order (the reference's header, key for key).
  if (Object.keys(meta).length > 0) header[METADATA] = meta;
  for (const e of entries) header[e.name] = { dtype: 'F32', shape: e.shape, data_offsets: [e.begin, e.end] };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const n = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + n + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + n);
  out.set(data, 8 + n);
  return out;
}

/** Parses and checks a safetensors file; `source` names it in error messages (a path). */
export function decodeSafetensors(bytes: Uint8Array, source = 'safetensors'): Safetensors {
  const fail = (message: string): never => {
    throw InputError.raw(source, `not a valid safetensors file: ${message}`);
  };
  if (bytes.length < 8) fail(`${bytes.length} bytes, shorter than the 8-byte header size`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n64 = view.getBigUint64(0, true);
  if (n64 > BigInt(MAX_HEADER)) fail(`header size ${n64} is over the 100 MB limit`);
  const n = Number(n64);
  if (8 + n > bytes.length) fail(`header size ${n} runs past the end of the file (${bytes.length} bytes)`);
  let text = '';
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n));
  } catch {
    fail('the header is not UTF-8');
  }
  if (!text.startsWith('{')) fail('the header does not start with {');
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch {
    fail('the header is not valid JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    fail('the header is not a JSON object');
  const entries = Object.entries(header as Record<string, unknown>);

  const metadata: Record<string, string> = {};
  const infos: { name: string; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, info] of entries) {
    if (name === METADATA) {
      if (typeof info !== 'object' || info === null || Array.isArray(info))
        fail(`${METADATA} is not an object`);
      for (const [k, v] of Object.entries(info as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(`${METADATA}.${k} is not a string`);
        metadata[k] = v as string;
      }
      continue;
    }
    const t = info as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof t !== 'object' || t === null) fail(`tensor ${JSON.stringify(name)} has no description`);
    if (t.dtype !== 'F32')
      fail(`tensor ${JSON.stringify(name)} has dtype ${JSON.stringify(t.dtype)}; only F32 is read`);
    const isCount = (x: unknown) => Number.isSafeInteger(x) && (x as number) >= 0;
    if (!Array.isArray(t.shape) || !t.shape.every(isCount))
      fail(`tensor ${JSON.stringify(name)} has a bad shape`);
    const off = t.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every(isCount))
      fail(`tensor ${JSON.stringify(name)} has bad data_offsets`);
    const [begin, end] = off as [number, number];
    const shape = t.shape as number[];
    if (end - begin !== elements(shape) * 4) {
      fail(
        `tensor ${JSON.stringify(name)}: data_offsets [${begin}, ${end}] do not hold shape [${shape.join(', ')}] of F32`,
      );
    }
    infos.push({ name, shape, begin, end });
  }
  const dataStart = 8 + n;
  const dataLength = bytes.length - dataStart;
  infos.sort((a, b) => a.begin - b.begin);
  let covered = 0;
  for (const t of infos) {
    if (t.begin !== covered)
      fail(
        `tensor ${JSON.stringify(t.name)} starts at ${t.begin}, expected ${covered} (no gaps or overlaps)`,
      );
    covered = t.end;
  }
  if (covered !== dataLength)
    fail(`the tensors cover ${covered} bytes of data but the file holds ${dataLength}`);

  const tensors = new Map<string, NamedArray>();
  for (const t of infos) {
    const data = new Float32Array((t.end - t.begin) / 4);
    for (let i = 0, p = dataStart + t.begin; i < data.length; i++, p += 4) data[i] = view.getFloat32(p, true);
    tensors.set(t.name, { shape: t.shape, data });
  }
  const inNameOrder = [...infos].sort((a, b) => byName(a.name, b.name));
  return { tensors, metadata, layout: { entries: inNameOrder, data: bytes.subarray(dataStart) } };
}
