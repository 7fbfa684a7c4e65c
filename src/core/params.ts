// Parameters declared once: a config field is a zod schema with its description (`.describe`), its
// default (`.default`) and, where the command line sets it, its flag (`.meta({ flag })`) — all in the
// one declaration. This file reads those declarations back (the fields of an object schema, a field at
// a dotted path, a string parsed into a field's type and checked by the field's own schema), so that
// flags, help text, config files and `--set a.b=value` all derive from them. No commander here: the
// command-line adapter is cli/params.ts.
import type { z } from 'zod';
import { InputError } from './errors.ts';
import { fromZod } from './validate.ts';

declare module 'zod' {
  interface GlobalMeta {
    /** The flag that sets this field, commander style: `--clip-low <ε>`, or `--reveal-budget` for a
     * boolean (the flag sets true). Its help line is the field's description. */
    flag?: string;
    /** Flags that are sugar over a structured field (`--budget-mix 10,20,50`), each with its own help
     * line; the command supplies their parsers. */
    flags?: Record<string, string>;
    /** Defaults that depend on another field, filled in by the config's owner or the code that reads
     * the field: `{ by: 'policy kind', values: { tabular: 0.1, neural: 3e-3 } }` (train/config.ts). */
    defaults?: { by: string; values: Record<string, unknown> };
  }
}

type Def = { type: string } & Record<string, unknown>;
const def = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'nonoptional']);

/** The schema inside optional/default/nullable wrappers. */
export function unwrap(s: z.ZodType): z.ZodType {
  let cur = s;
  while (WRAPPERS.has(def(cur).type)) cur = def(cur).innerType as z.ZodType;
  return cur;
}

/** The metadata of a field, the outermost wrapper's winning over what it wraps. */
export function metaOf(s: z.ZodType): z.GlobalMeta {
  const layers: z.ZodType[] = [s];
  let cur = s;
  while (WRAPPERS.has(def(cur).type)) {
    cur = def(cur).innerType as z.ZodType;
    layers.push(cur);
  }
  const out: z.GlobalMeta = {};
  for (const layer of layers.reverse()) Object.assign(out, layer.meta() ?? {});
  return out;
}

/** The declared default of a field (`.default(x)` anywhere in its wrappers), if any. */
export function defaultOf(s: z.ZodType): { value: unknown } | undefined {
  let cur = s;
  while (WRAPPERS.has(def(cur).type)) {
    if (def(cur).type === 'default') return { value: def(cur).defaultValue };
    cur = def(cur).innerType as z.ZodType;
  }
  return undefined;
}

const shapeOf = (s: z.ZodType): Record<string, z.ZodType> | undefined => {
  const inner = unwrap(s);
  return def(inner).type === 'object' ? (def(inner).shape as Record<string, z.ZodType>) : undefined;
};

export interface Param {
  /** Dotted path from the root object: `ppo.clipHigh`. */
  path: string;
  /** The field as declared, wrappers and all. */
  schema: z.ZodType;
  meta: z.GlobalMeta;
  default?: { value: unknown };
  /** An object of further fields (listed after it). */
  group: boolean;
}

/** Every field of an object schema, depth first in declaration order (objects, then their fields). */
export function paramsOf(schema: z.ZodType, prefix = ''): Param[] {
  const shape = shapeOf(schema);
  if (shape === undefined) return [];
  const out: Param[] = [];
  for (const [key, field] of Object.entries(shape)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const group = shapeOf(field) !== undefined;
    out.push({ path, schema: field, meta: metaOf(field), default: defaultOf(field), group });
    if (group) out.push(...paramsOf(field, path));
  }
  return out;
}

/** The field at a dotted path; `exact` is false below a union or a record, where only the whole
 * config's parse can check the value. An unknown path is refused naming `flag`, the path and the
 * fields allowed where it went wrong. */
export function fieldAt(
  root: z.ZodType,
  path: string,
  flag: string,
): { schema: z.ZodType | undefined; exact: boolean } {
  const keys = path.split('.');
  let cur: z.ZodType | undefined = root;
  let exact = true;
  keys.forEach((key, i) => {
    const here = keys.slice(0, i).join('.');
    const unknown = (allowed: string[]) =>
      InputError.raw(
        flag,
        `no field ${JSON.stringify(path)}; ${here === '' ? 'the config' : here} has ${allowed.join(', ')}`,
      );
    if (cur === undefined) return; // below a record of unknowns: anything goes, the parse decides
    const inner = unwrap(cur);
    const d = def(inner);
    if (d.type === 'object') {
      const shape = d.shape as Record<string, z.ZodType>;
      if (!Object.hasOwn(shape, key)) throw unknown(Object.keys(shape));
      cur = shape[key];
    } else if (d.type === 'union') {
      // A discriminated union (policy, budget): the key must exist in some variant.
      const variants = (d.options as z.ZodType[]).map(shapeOf).filter((x) => x !== undefined);
      const hit = variants.find((shape) => Object.hasOwn(shape, key));
      if (hit === undefined) throw unknown([...new Set(variants.flatMap((s) => Object.keys(s)))]);
      cur = hit[key];
      exact = false;
    } else if (d.type === 'record') {
      cur = d.valueType as z.ZodType;
      exact = false;
    } else {
      throw InputError.raw(flag, `no field ${JSON.stringify(path)}; ${here} is a value, not an object`);
    }
  });
  return { schema: cur, exact };
}

/**
 * How an integer is written on the command line, everywhere (flags, `--set`, spec parameters): decimal
 * digits with an optional minus. `1e3`, `10.0`, `0x10` or `+5` are numbers that happen to be whole, and
 * refused as integers (as argparse's int() and cli/options.ts int() refuse them): one way to write one.
 */
export const INTEGER_TEXT = /^-?\d+$/;

/** Whether a number field only takes integers (z.number().int()). */
function isIntegerField(schema: z.ZodType): boolean {
  const checks = (def(unwrap(schema)).checks as { _zod: { def: Record<string, unknown> } }[]) ?? [];
  return checks.some(
    (c) => c._zod.def.check === 'number_format' && String(c._zod.def.format).includes('int'),
  );
}

/** A string from the command line as a value of the field's type: the text itself for strings and
 * enums, a number for numbers (an integer field: written as INTEGER_TEXT), true/false for booleans,
 * JSON for anything structured (a JSON string literal is accepted everywhere). What does not parse is
 * left as the string, for the schema to refuse. */
export function parseValue(schema: z.ZodType | undefined, raw: string): unknown {
  const json = (): unknown => {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  };
  if (raw.startsWith('"')) return json();
  const type = schema === undefined ? 'unknown' : def(unwrap(schema)).type;
  if (type === 'string' || type === 'enum' || type === 'literal') return raw;
  if (type === 'number') {
    const x = Number(raw);
    if (isIntegerField(schema!) && !INTEGER_TEXT.test(raw.trim())) return raw;
    return raw.trim() === '' || Number.isNaN(x) ? raw : x;
  }
  if (type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  return json();
}

/** What a scalar field allows, in words (`a number in [0, 1]`, `an integer ≥ 1`, `one of: a, b`),
 * or undefined for a structured field (its zod issue says more). */
export function allowed(schema: z.ZodType): string | undefined {
  const inner = unwrap(schema);
  const d = def(inner);
  if (d.type === 'boolean') return 'true or false';
  if (d.type === 'string') return 'a string';
  if (d.type === 'enum') return `one of: ${Object.values(d.entries as Record<string, string>).join(', ')}`;
  if (d.type !== 'number') return undefined;
  let int = false;
  let lo: { value: number; inclusive: boolean } | undefined;
  let hi: { value: number; inclusive: boolean } | undefined;
  for (const c of (d.checks as { _zod: { def: Record<string, unknown> } }[] | undefined) ?? []) {
    const cd = c._zod.def;
    if (cd.check === 'number_format' && String(cd.format).includes('int')) int = true;
    if (cd.check === 'greater_than') lo = { value: cd.value as number, inclusive: cd.inclusive as boolean };
    if (cd.check === 'less_than') hi = { value: cd.value as number, inclusive: cd.inclusive as boolean };
  }
  const what = int ? 'an integer' : 'a number';
  if (lo !== undefined && hi !== undefined) {
    if (int && lo.inclusive && hi.inclusive) return `${what} from ${lo.value} to ${hi.value}`;
    return `${what} in ${lo.inclusive ? '[' : '('}${lo.value}, ${hi.value}${hi.inclusive ? ']' : ')'}`;
  }
  if (lo !== undefined) return `${what} ${lo.inclusive ? '≥' : '>'} ${lo.value}`;
  if (hi !== undefined) return `${what} ${hi.inclusive ? '≤' : '<'} ${hi.value}`;
  return what;
}

/** Checks a value against a field's own schema; refused as `field: got <raw>; expected <allowed>`. */
export function checkField(schema: z.ZodType, value: unknown, field: string, raw: unknown = value): void {
  if (schema.safeParse(value).success) return;
  const words = allowed(schema);
  if (words !== undefined) throw new InputError(field, raw, `expected ${words}`);
  fromZod(schema, value, field);
}

/** A string parsed into the field's type and checked by the field's schema. */
export function parseField(schema: z.ZodType, raw: string, field: string): unknown {
  const value = parseValue(schema, raw);
  checkField(schema, value, field, raw);
  return value;
}

/** Sets `obj.a.b.c = value`, creating the objects on the way (and replacing non-objects). */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let cur = obj;
  for (const k of keys.slice(0, -1)) {
    const next = cur[k];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys.at(-1)!] = value;
}

export function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const k of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/** A JSON-ish rendering of a default for help text: 0.28, true, turn-mean, [64,64]. */
export function showValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}
