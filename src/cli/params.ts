// The command-line adapter of declared parameters (core/params.ts): a config schema's `flag` metadata
// becomes commander options whose help is the field's description, choices and default; a given flag
// is parsed into the field's type and checked by the field's own schema; `--set path.to.field=value`
// sets any field. Flags that are sugar over a structure (`--budget-mix 10,20,50`) bring their parser.
import { type Command, Option } from 'commander';
import type { z } from 'zod';
import { InputError } from '../core/errors.ts';
import {
  checkField,
  fieldAt,
  paramsOf,
  parseField,
  parseValue,
  setPath,
  showValue,
  unwrap,
} from '../core/params.ts';

/** A sugar flag's parser (the value it returns is then checked by the field's schema), and how a
 * default of the field reads in that flag's syntax. */
export interface Sugar {
  parse: (raw: string) => unknown;
  show?: (value: never) => string;
}

export interface ParamFlag {
  /** `--clip-low` */
  name: string;
  /** Dotted config path the flag sets. */
  path: string;
  option: Option;
  schema: z.ZodType;
  sugar?: Sugar;
  /** A boolean field whose flag takes no value: giving it sets true. */
  sets?: true;
}

const typeOf = (s: z.ZodType): string =>
  (unwrap(s) as unknown as { _zod: { def: { type: string } } })._zod.def.type;

function choices(s: z.ZodType): string[] {
  const inner = unwrap(s) as unknown as { options?: readonly string[] };
  return typeOf(s) === 'enum' && inner.options !== undefined ? [inner.options.join(' | ')] : [];
}

/**
 * The flags declared in a config schema. A flag on a structured field needs a `sugar` parser (a bug in
 * the declaration otherwise, refused at startup); a sugar parser nobody declared is a bug too.
 */
export function paramFlags(schema: z.ZodType, sugar: Record<string, Sugar> = {}): ParamFlag[] {
  const out: ParamFlag[] = [];
  for (const p of paramsOf(schema)) {
    const declared: [string, string | undefined][] = [];
    if (p.meta.flag !== undefined) declared.push([p.meta.flag, undefined]);
    for (const [flag, help] of Object.entries(p.meta.flags ?? {})) declared.push([flag, help]);
    for (const [spec, help] of declared) {
      const name = spec.split(/[ ,|]/)[0];
      const s = sugar[name];
      const type = typeOf(p.schema);
      const scalar = ['number', 'string', 'enum', 'boolean'].includes(type);
      if (!scalar && s === undefined)
        throw new Error(`${name} sets the structured field ${p.path}: give it a parser`);
      const takesValue = spec.includes('<') || spec.includes('[');
      let text = help ?? p.meta.description ?? p.path;
      if (help === undefined) {
        const show = (s?.show ?? showValue) as (v: unknown) => string;
        const notes = choices(p.schema);
        const d = p.meta.defaults;
        if (p.default !== undefined && !(type === 'boolean' && p.default.value === false))
          notes.push(`default ${show(p.default.value)}`);
        else if (d !== undefined)
          notes.push(
            `default by ${d.by}: ${Object.entries(d.values)
              .map(([k, v]) => `${k} ${showValue(v)}`)
              .join(', ')}`,
          );
        if (notes.length > 0) text += ` (${notes.join('; ')})`;
      }
      const full = takesValue || type === 'boolean' ? spec : `${spec} <value>`;
      out.push({
        name,
        path: p.path,
        option: new Option(full, text),
        schema: p.schema,
        ...(s === undefined ? {} : { sugar: s }),
        ...(type === 'boolean' && !takesValue ? { sets: true as const } : {}),
      });
    }
  }
  const known = new Set(out.map((f) => f.name));
  for (const name of Object.keys(sugar)) if (!known.has(name)) throw new Error(`no field declares ${name}`);
  return out;
}

export function addParamOptions(cmd: Command, flags: readonly ParamFlag[]): Command {
  for (const f of flags) cmd.addOption(f.option);
  return cmd;
}

/** Applies the given flags to a raw config: each parsed and checked by its field, written at its path.
 * Two flags for one field (`--budget` and `--budget-mix`) are refused together. */
export function applyParamFlags(
  flags: readonly ParamFlag[],
  given: Record<string, unknown>,
  raw: Record<string, unknown>,
): void {
  const setBy = new Map<string, string>();
  for (const f of flags) {
    const v = given[f.option.attributeName()];
    if (v === undefined) continue;
    const other = setBy.get(f.path);
    if (other !== undefined) throw new InputError(f.name, v, `give ${other} or ${f.name}, not both`);
    setBy.set(f.path, f.name);
    let value: unknown;
    if (f.sets) value = true;
    else if (f.sugar !== undefined) {
      value = f.sugar.parse(String(v));
      checkField(f.schema, value, f.name, v);
    } else value = parseField(f.schema, String(v), f.name);
    setPath(raw, f.path, value);
  }
}

/** `--set path.to.field=value`, repeatable. */
export function setOption(what: string, example: string): Option {
  return new Option(
    '--set <path=value>',
    `set any ${what} field by its path (repeatable), e.g. --set ${example}; values are numbers, true/false, text or JSON ([32,32], {"a":1})`,
  ).argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]);
}

/** Applies `--set` arguments to a raw config: the path must name a field of the schema, the value is
 * parsed into that field's type and checked by it (below a union or a record, by the whole parse). */
export function applySets(
  schema: z.ZodType,
  raw: Record<string, unknown>,
  sets: readonly string[],
  flag = '--set',
): void {
  for (const arg of sets) {
    const eq = arg.indexOf('=');
    const path = eq < 0 ? '' : arg.slice(0, eq).trim();
    if (path === '' || path.split('.').some((k) => k === ''))
      throw new InputError(flag, arg, 'expected path.to.field=value, e.g. ppo.clipHigh=0.3');
    const text = arg.slice(eq + 1);
    const field = fieldAt(schema, path, flag);
    const value = parseValue(field.schema, text);
    if (field.exact && field.schema !== undefined) checkField(field.schema, value, `${flag} ${path}`, text);
    setPath(raw, path, value);
  }
}
