// The `gguf:` policy spec: `gguf:PATH[,temperature=,top_p=,max_tokens=,ctx=,threads=,top_logprobs=,
// mode=tools|text]` (policies/gguf.ts), and a bare path to a GGUF file (read by its magic).
import { closeSync, openSync, readSync } from 'node:fs';
import { InputError } from '../core/errors.ts';
import type { EnvSpec } from '../core/types.ts';
import { GGUF_MAGIC } from '../nn/gguf.ts';
import { type GgufOptions, GgufPolicy } from './gguf.ts';
import { positive, positiveInt } from './spec-values.ts';

export const GGUF_FORM =
  'expected gguf:PATH[,temperature=,top_p=,max_tokens=,ctx=,threads=,top_logprobs=,mode=tools|text]';

const count = (lo: number, hi: number) => (v: string, field: string) => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || x < lo || x > hi)
    throw new InputError(field, v, `expected an integer from ${lo} to ${hi}`);
  return x;
};

const PARAMS: Record<string, (v: string, field: string, o: GgufOptions) => void> = {
  temperature: (v, f, o) => {
    const x = Number(v);
    if (v.trim() === '' || !(x >= 0 && x <= 10))
      throw new InputError(f, v, 'expected a number from 0 to 10 (0 = greedy)');
    o.temperature = x;
  },
  top_p: (v, f, o) => {
    const x = positive(v, f);
    if (x > 1) throw new InputError(f, v, 'expected a number in (0, 1]');
    o.topP = x;
  },
  max_tokens: (v, f, o) => {
    o.maxTokens = positiveInt(v, f);
  },
  ctx: (v, f, o) => {
    o.ctx = count(16, 1 << 20)(v, f);
  },
  threads: (v, f, o) => {
    o.threads = count(0, 256)(v, f);
  },
  top_logprobs: (v, f, o) => {
    o.topLogprobs = count(0, 20)(v, f);
  },
  mode: (v, f, o) => {
    if (v !== 'tools' && v !== 'text') throw new InputError(f, v, 'expected tools or text');
    o.mode = v;
  },
};

/** A `gguf:` spec's policy; bad parameters, a bad file or env refused in one line before any work. */
export function makeGgufPolicy(spec: string, env: EnvSpec, field = '--policy'): GgufPolicy {
  const [path, ...parts] = spec.slice('gguf:'.length).split(',');
  if (path.trim() === '') throw new InputError(field, spec, `${GGUF_FORM}: the path is missing`);
  const options: GgufOptions = {};
  const seen = new Set<string>();
  for (const part of parts) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part.trim() : part.slice(0, eq).trim();
    const read = Object.hasOwn(PARAMS, key) ? PARAMS[key] : undefined;
    if (eq <= 0 || read === undefined)
      throw new InputError(field, spec, `gguf takes ${Object.keys(PARAMS).join(', ')} (key=value)`);
    if (seen.has(key)) throw new InputError(field, spec, `parameter ${key} is given twice`);
    seen.add(key);
    read(part.slice(eq + 1).trim(), `${field} gguf.${key}`, options);
  }
  return new GgufPolicy(path.trim(), options, env, spec.trim(), field);
}

/** Whether a file begins with the GGUF magic (a bare --policy path of a GGUF model). */
export function isGgufFile(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const b = Buffer.alloc(4);
    if (readSync(fd, b, 0, 4, 0) < 4) return false;
    return b.readUInt32LE(0) === GGUF_MAGIC;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** CHECKPOINT_LOADERS entry: a GGUF file as a policy with the model's defaults. */
export function loadGgufPolicy(path: string, env: EnvSpec): GgufPolicy | undefined {
  return isGgufFile(path) ? new GgufPolicy(path, {}, env, path) : undefined;
}
