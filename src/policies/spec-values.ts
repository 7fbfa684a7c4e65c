// The readers of a policy spec's parameter values (`oracle:eps=0.2`, `mlp:hidden=64x64`,
// `transformer:layers=2`): each reads one value or refuses it naming the field (InputError). Shared by
// the kinds of spec.ts and the `transformer:` kind (transformer-spec.ts).
import { InputError } from '../core/errors.ts';
import type { EnvSpec, Policy } from '../core/types.ts';
import { ACTIVATIONS, type Activation } from '../nn/layers.ts';

export type AnyPolicy = Policy<unknown, unknown>;

/** A kind of policy spec: its parameters with their readers, and how the policy is made. */
export interface PolicyKind {
  summary: string;
  /** Allowed parameters and how each is read (throws InputError on a bad value). */
  params: Record<string, (value: string, field: string) => number | string>;
  make(params: Record<string, number | string>, env: EnvSpec, id: string): AnyPolicy;
}

export const probability = (v: string, field: string): number => {
  const x = Number(v);
  if (v.trim() === '' || !(x >= 0 && x <= 1)) throw new InputError(field, v, 'expected a number in [0, 1]');
  return x;
};
export const positive = (v: string, field: string): number => {
  const x = Number(v);
  if (v.trim() === '' || !(x > 0 && Number.isFinite(x)))
    throw new InputError(field, v, 'expected a number > 0');
  return x;
};
export const positiveInt = (v: string, field: string): number => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || !(x >= 1)) throw new InputError(field, v, 'expected an integer ≥ 1');
  return x;
};
export const seedValue = (v: string, field: string): number => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(x))
    throw new InputError(field, v, 'expected an integer ≥ 0');
  return x;
};
/** Hidden layer widths such as `64x64` (`bc --hidden`, the `mlp:` spec's hidden=). */
export const hiddenWidths = (v: string, field: string): number[] => {
  const parts = v.trim().split('x');
  if (!parts.every((p) => /^\d+$/.test(p) && Number(p) >= 1 && Number(p) <= 65536)) {
    throw new InputError(field, v, 'expected layer widths such as 64x64 (integers ≥ 1 joined by x)');
  }
  return parts.map(Number);
};
/** Hidden layer widths in their canonical form, `64x64` (as a policy id shows them). */
export const layerSizes = (v: string, field: string): string => hiddenWidths(v, field).join('x');
/** One of nn's ACTIVATIONS (`bc --activation`, the `mlp:` spec's activation=). */
export const activation = (v: string, field: string): Activation => {
  const known = ACTIVATIONS.find((a) => a === v);
  if (known === undefined) throw new InputError(field, v, `expected ${ACTIVATIONS.join(', ')}`);
  return known;
};
export const flag = (v: string, field: string): number => {
  if (v === '1' || v === 'true') return 1;
  if (v === '0' || v === 'false') return 0;
  throw new InputError(field, v, 'expected 1 or 0');
};
