// Bad input is refused at the edge with one line naming the field, the value and what is allowed.
// The CLI prints `turnwise: <message>` and exits with code 2 for this error class; anything else is a bug.

export class InputError extends Error {
  readonly field: string;

  constructor(field: string, value: unknown, allowed: string) {
    super(
      value === undefined ? `${field}: missing; ${allowed}` : `${field}: got ${describe(value)}; ${allowed}`,
    );
    this.name = 'InputError';
    this.field = field;
  }

  /** An input error whose message is given whole (still one line). */
  static raw(field: string, message: string): InputError {
    const e = new InputError(field, undefined, '');
    e.message = `${field}: ${message}`;
    return e;
  }
}

export function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (value === undefined) return 'nothing';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value); // JSON would say null
  try {
    const s = JSON.stringify(value);
    return s === undefined ? String(value) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    return String(value);
  }
}

/** Thrown by a text policy (or an endpoint adapter) when the prompt outgrew the model's context
 * window; the rollout loop ends the episode with failure kind `context` instead of `error`. */
export class ContextOverflow extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContextOverflow';
  }
}
