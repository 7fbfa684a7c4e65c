// zod at the edge: turn a schema failure into a one-line InputError naming the field and the value.
import type { z } from 'zod';
import { InputError } from './errors.ts';

export function fromZod<S extends z.ZodType>(schema: S, value: unknown, root: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = issue.path.map(String);
  const field = [root, ...path].filter((x) => x.length > 0).join('.');
  let v: unknown = value;
  for (const k of path)
    v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  // JSON has no infinity: a number beyond the largest double (1e400) is read as ±Infinity.
  if (typeof v === 'number' && !Number.isFinite(v) && !Number.isNaN(v))
    return fail(
      field,
      `got a number beyond the largest double, ±1.8e308 (it reads as ${v}); expected a finite number`,
    );
  if (issue.code === 'unrecognized_keys') {
    return fail(field, `unknown field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`);
  }
  const message = issue.message
    .replace(/^Invalid input: /, '')
    .replace(/, received \w+$/, '')
    .replace(/\n/g, ' ');
  throw new InputError(field, v, message);
}

function fail(field: string, message: string): never {
  throw InputError.raw(field, message);
}
