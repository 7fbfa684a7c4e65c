// Checkpoints: a module's parameters, its optimizer's state and a config, in one safetensors file.
//   tensors      the parameters under their state_dict names (`layers.0.weight`, …) and the optimizer's
//                buffers under `optimizer.<buffer>.<parameter>` (Adam: m and v)
//   __metadata__ "turnwise": the config as a JSON string (what to build before loading);
//                "optimizer": {"kind","step","hyper"} as a JSON string, when an optimizer was saved
//                "checksum": "sha256:<hex>" of the contents (below), verified on every load
// Any safetensors reader sees plain F32 tensors; loading into a module checks every name and shape.
//
// The checksum: the format's own checks catch a torn file and most header damage, but not a byte
// flipped inside the tensor data (or a digit of the metadata), which would load as wrong weights or a
// wrong iteration without a word. It is SHA-256 over, first, the UTF-8 JSON of
//   {"metadata": [[key, value], …] (every entry but "checksum", sorted by key),
//    "tensors": [[name, shape, [begin, end]], …] (in name order, offsets relative to the data)}
// and then the data section's bytes — everything the file means except the padding, so any reader
// can recompute it from the parsed header and the bytes after it.
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { InputError } from '../core/errors.ts';
import type { NamedTensors } from './layers.ts';
import type { Optimizer, OptimizerState } from './optim.ts';
import { decodeSafetensors, encodeSafetensors, type Layout, type NamedArray } from './safetensors.ts';

const OPTIMIZER_PREFIX = 'optimizer.';
/** The `__metadata__` key of the checksum. */
export const CHECKSUM = 'checksum';

/** The checksum of a checkpoint's contents (see the top of this file). */
export function contentChecksum(metadata: Record<string, string>, layout: Layout): string {
  const meta = Object.entries(metadata)
    .filter(([k]) => k !== CHECKSUM)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const tensors = layout.entries.map((e) => [e.name, e.shape, [e.begin, e.end]]);
  const hash = createHash('sha256').update(JSON.stringify({ metadata: meta, tensors }));
  return `sha256:${hash.update(layout.data).digest('hex')}`;
}

/** A safetensors file with its checksum in `__metadata__` (every checkpoint turnwise writes). */
export function encodeCheckpoint(
  tensors: Iterable<readonly [string, NamedArray]>,
  metadata: Record<string, string>,
): Uint8Array {
  return encodeSafetensors(tensors, metadata, (layout) => ({
    [CHECKSUM]: contentChecksum(metadata, layout),
  }));
}

/**
 * Refuses a file whose contents do not hash to its recorded checksum. Checkpoints written before
 * checksums were recorded have none: they still load, checked by the format's checks alone.
 */
function verifyChecksum(metadata: Record<string, string>, layout: Layout, source: string): void {
  const recorded = metadata[CHECKSUM];
  if (recorded === undefined) return;
  const actual = contentChecksum(metadata, layout);
  if (recorded !== actual) {
    throw InputError.raw(
      source,
      `checksum mismatch: the contents hash to ${actual.slice(0, 19)}…, the file records ${JSON.stringify(recorded.slice(0, 19))}…; the file is damaged`,
    );
  }
}

export interface Checkpoint {
  /** The parsed "turnwise" metadata entry (undefined when the file has none). */
  config: unknown;
  /** Parameter tensors by name (optimizer buffers excluded). */
  params: Map<string, NamedArray>;
  optimizer?: OptimizerState;
  /** The full `__metadata__` map. */
  metadata: Record<string, string>;
}

/** `extra` adds metadata entries (strings) beside "turnwise" and "optimizer", e.g. a training summary. */
export function checkpointBytes(
  params: NamedTensors,
  config: unknown,
  optimizer?: Optimizer,
  extra: Record<string, string> = {},
): Uint8Array {
  const tensors: [string, NamedArray][] = params.map(([name, t]) => [name, { shape: t.shape, data: t.data }]);
  const metadata: Record<string, string> = { ...extra, turnwise: JSON.stringify(config) };
  if (optimizer !== undefined) {
    const s = optimizer.state();
    metadata.optimizer = JSON.stringify({ kind: s.kind, step: s.step, hyper: s.hyper });
    for (const [name, data] of s.buffers)
      tensors.push([`${OPTIMIZER_PREFIX}${name}`, { shape: [data.length], data }]);
  }
  return encodeCheckpoint(tensors, metadata);
}

/** Every checkpoint read goes through here: the format's checks, the checksum, finite values. */
export function parseCheckpoint(bytes: Uint8Array, source: string): Checkpoint {
  const st = decodeSafetensors(bytes, source);
  verifyChecksum(st.metadata, st.layout, source);
  const fail = (message: string): never => {
    throw InputError.raw(source, message);
  };
  let config: unknown;
  if (st.metadata.turnwise !== undefined) {
    try {
      config = JSON.parse(st.metadata.turnwise);
    } catch {
      fail('__metadata__.turnwise is not valid JSON');
    }
  }
  const params = new Map<string, NamedArray>();
  const buffers: [string, Float32Array][] = [];
  for (const [name, t] of st.tensors) {
    // A NaN or ±∞ parameter (a diverged run, a damaged file) would make a policy of NaNs: refused.
    const bad = t.data.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) fail(`tensor ${name} holds a non-finite value (${t.data[bad]}) at index ${bad}`);
    if (name.startsWith(OPTIMIZER_PREFIX)) buffers.push([name.slice(OPTIMIZER_PREFIX.length), t.data]);
    else params.set(name, t);
  }
  const out: Checkpoint = { config, params, metadata: st.metadata };
  if (st.metadata.optimizer !== undefined) {
    let o: { kind?: unknown; step?: unknown; hyper?: unknown } = {};
    try {
      o = JSON.parse(st.metadata.optimizer);
    } catch {
      fail('__metadata__.optimizer is not valid JSON');
    }
    if (o.kind !== 'sgd' && o.kind !== 'adam' && o.kind !== 'adamw')
      fail(`unknown optimizer kind ${JSON.stringify(o.kind)}`);
    if (!Number.isSafeInteger(o.step) || (o.step as number) < 0)
      fail(`bad optimizer step ${JSON.stringify(o.step)}`);
    const hyper = (typeof o.hyper === 'object' && o.hyper !== null ? o.hyper : {}) as Record<string, number>;
    out.optimizer = { kind: o.kind as OptimizerState['kind'], step: o.step as number, hyper, buffers };
  } else if (buffers.length > 0) fail('optimizer tensors without __metadata__.optimizer');
  return out;
}

/**
 * Copies checkpoint tensors into a module's parameters. Refuses (one line, naming the tensor) a
 * missing or unexpected name and any shape that differs.
 */
export function loadParameters(params: NamedTensors, tensors: Map<string, NamedArray>, source: string): void {
  const fail = (message: string): never => {
    throw InputError.raw(source, message);
  };
  const expected = new Set(params.map(([n]) => n));
  for (const name of tensors.keys())
    if (!expected.has(name)) fail(`unexpected tensor ${JSON.stringify(name)} for this model`);
  for (const [name, p] of params) {
    const t = tensors.get(name);
    if (t === undefined) fail(`tensor ${JSON.stringify(name)} is missing`);
    const got = t!.shape;
    if (got.length !== p.shape.length || got.some((d, i) => d !== p.shape[i])) {
      fail(
        `tensor ${JSON.stringify(name)} has shape [${got.join(', ')}], the model expects [${p.shape.join(', ')}]`,
      );
    }
  }
  for (const [name, p] of params) p.data.set(tensors.get(name)!.data);
}

/** Restores an optimizer from a checkpoint (its kind and buffers must match its parameters). */
export function loadOptimizer(optimizer: Optimizer, state: OptimizerState | undefined, source: string): void {
  if (state === undefined) throw InputError.raw(source, 'the checkpoint holds no optimizer state');
  try {
    optimizer.loadState(state);
  } catch (e) {
    throw InputError.raw(source, (e as Error).message);
  }
}

/** Writes atomically (temporary file + rename): an interrupted save never leaves a torn checkpoint. */
export function writeCheckpoint(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
}

export function readCheckpointFile(path: string): Checkpoint {
  let bytes: Uint8Array;
  try {
    if (!statSync(path).isFile()) throw new Error('not a file');
    bytes = readFileSync(path);
  } catch (e) {
    throw InputError.raw(
      path,
      `cannot read checkpoint (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  return parseCheckpoint(bytes, path);
}
