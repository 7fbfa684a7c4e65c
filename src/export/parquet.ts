// Typed Parquet columns — lists and structs, not JSON strings — written with hyparquet-writer from an
// explicit schema, in the layout pyarrow, pandas, DuckDB and HF datasets (so verl) read as list<…> and
// struct<…>: Parquet's three-level LIST (`name` LIST → repeated `list` → `element`) and groups.
//
// A column's type is declared (the trainers' fixed shapes) or inferred from its values where the shape
// is the data's own (a tool's arguments, a JSON schema, an env's parameters), with pyarrow's rule for a
// list of dicts: a struct holds every key any value has, in the order first seen, and a value without
// a key has null there. Two differences, both because Parquet cannot store what pyarrow would refuse:
// integers and doubles unify to double, and a field whose values are of different kinds (a string
// here, a number there) or a struct that never has a field (Parquet has no empty group) is written as
// JSON text.
import { parquetWriteBuffer, type SchemaElement } from 'hyparquet-writer';

export type ParquetType =
  | { kind: 'string' | 'json' | 'boolean' | 'int32' | 'int64' | 'float' | 'double' }
  | { kind: 'list'; element: ParquetType; elementRequired?: boolean }
  | { kind: 'struct'; fields: readonly ParquetField[] };

export interface ParquetField {
  name: string;
  type: ParquetType;
  /** REQUIRED (never null); default OPTIONAL. */
  required?: boolean;
}

// ── inference ─────────────────────────────────────────────────────────────────────────────────────

/** A type while values are being seen: `null` until a value that is not null. */
type Seen =
  | { kind: 'null' | 'string' | 'json' | 'boolean' | 'int64' | 'double' }
  | { kind: 'list'; element: Seen }
  | { kind: 'struct'; fields: Map<string, Seen> };

const NULL: Seen = { kind: 'null' };

function seen(v: unknown): Seen {
  if (v === null || v === undefined) return NULL;
  if (typeof v === 'boolean') return { kind: 'boolean' };
  if (typeof v === 'bigint') return { kind: 'int64' };
  if (typeof v === 'number') return { kind: Number.isSafeInteger(v) ? 'int64' : 'double' };
  if (typeof v === 'string') return { kind: 'string' };
  if (Array.isArray(v)) return { kind: 'list', element: v.map(seen).reduce(unify, NULL) };
  if (typeof v === 'object')
    return { kind: 'struct', fields: new Map(Object.entries(v).map(([k, x]) => [k, seen(x)])) };
  return { kind: 'json' };
}

function unify(a: Seen, b: Seen): Seen {
  if (a.kind === 'null') return b;
  if (b.kind === 'null') return a;
  if (a.kind === 'list' && b.kind === 'list') return { kind: 'list', element: unify(a.element, b.element) };
  if (a.kind === 'struct' && b.kind === 'struct') {
    const fields = new Map(a.fields);
    for (const [k, t] of b.fields) fields.set(k, unify(fields.get(k) ?? NULL, t));
    return { kind: 'struct', fields };
  }
  if (a.kind === b.kind) return a;
  const numbers = new Set([a.kind, b.kind]);
  if (numbers.size === 2 && numbers.has('int64') && numbers.has('double')) return { kind: 'double' };
  return { kind: 'json' };
}

function settle(t: Seen): ParquetType {
  switch (t.kind) {
    // Never a value: a column of nulls, typed as text.
    case 'null':
      return { kind: 'string' };
    case 'list':
      return { kind: 'list', element: settle(t.element) };
    case 'struct':
      return t.fields.size === 0
        ? { kind: 'json' }
        : { kind: 'struct', fields: [...t.fields].map(([name, x]) => ({ name, type: settle(x) })) };
    default:
      return { kind: t.kind };
  }
}

/** The type of a column holding `values` (pyarrow's rule, with the two differences above). */
export const inferType = (values: Iterable<unknown>): ParquetType =>
  settle([...values].map(seen).reduce(unify, NULL));

// ── schema and values ─────────────────────────────────────────────────────────────────────────────

const LEAF: Record<string, Pick<SchemaElement, 'type' | 'converted_type'>> = {
  string: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  json: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  boolean: { type: 'BOOLEAN' },
  int32: { type: 'INT32' },
  int64: { type: 'INT64' },
  float: { type: 'FLOAT' },
  double: { type: 'DOUBLE' },
};

/** The schema elements of one field, depth first (Parquet's flattened schema). */
export function schemaElements(f: ParquetField): SchemaElement[] {
  const repetition_type = f.required === true ? 'REQUIRED' : 'OPTIONAL';
  const t = f.type;
  if (t.kind === 'list')
    return [
      { name: f.name, repetition_type, converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      ...schemaElements({ name: 'element', type: t.element, required: t.elementRequired }),
    ];
  if (t.kind === 'struct')
    return [
      { name: f.name, repetition_type, num_children: t.fields.length },
      ...t.fields.flatMap(schemaElements),
    ];
  return [{ name: f.name, repetition_type, ...LEAF[t.kind] }];
}

/** A value as hyparquet-writer takes it for this type: int64 as bigint, JSON text stringified, a
 * struct's missing fields null. */
function prepare(v: unknown, t: ParquetType): unknown {
  if (v === null || v === undefined) return null;
  switch (t.kind) {
    case 'json':
      return JSON.stringify(v);
    case 'int64':
      return BigInt(v as number | bigint);
    case 'list':
      return (v as unknown[]).map((x) => prepare(x, t.element));
    case 'struct': {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(t.fields.map((f) => [f.name, prepare(o[f.name], f.type)]));
    }
    default:
      return v;
  }
}

/** The Parquet file of the rows (plain objects keyed by the fields' names), as bytes: one row group per
 * hyparquet-writer's default, statistics on. */
export function writeParquet(
  fields: readonly ParquetField[],
  rows: readonly Record<string, unknown>[],
): Uint8Array {
  const buffer = parquetWriteBuffer({
    columnData: fields.map((f) => ({ name: f.name, data: rows.map((r) => prepare(r[f.name], f.type)) })),
    schema: [{ name: 'root', num_children: fields.length }, ...fields.flatMap(schemaElements)],
    createdBy: 'turnwise export',
  });
  return new Uint8Array(buffer);
}

// ── shorthands for declared types ─────────────────────────────────────────────────────────────────

export const req = (name: string, type: ParquetType): ParquetField => ({ name, type, required: true });
export const opt = (name: string, type: ParquetType): ParquetField => ({ name, type });
export const STRING: ParquetType = { kind: 'string' };
export const INT32: ParquetType = { kind: 'int32' };
export const INT64: ParquetType = { kind: 'int64' };
export const FLOAT: ParquetType = { kind: 'float' };
export const DOUBLE: ParquetType = { kind: 'double' };
export const BOOLEAN: ParquetType = { kind: 'boolean' };
export const struct = (...fields: ParquetField[]): ParquetType => ({ kind: 'struct', fields });
/** A list whose elements are never null. */
export const listOf = (element: ParquetType): ParquetType => ({
  kind: 'list',
  element,
  elementRequired: true,
});
