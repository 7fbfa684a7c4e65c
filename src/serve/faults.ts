// Deterministic fault injection for `turnwise serve --faults 429=0.1,500=0.05,hang=0.01,malformed=0.02,seed=7`.
// Whether a request fails is drawn from Rng.derive(seed, hash(body), occurrence): the same body the
// k-th time it arrives meets the same fate in every run, whatever the order and concurrency of the
// other requests — so a client's retry of a failed request (same body, next occurrence) is a fresh draw,
// and a whole run through the faults is reproducible.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';

export type FaultKind = '429' | '500' | 'hang' | 'malformed';
export const FAULT_KINDS: readonly FaultKind[] = ['429', '500', 'hang', 'malformed'];

export interface Faults {
  /** Probability of each fault per request; their sum is at most 1. */
  p: Record<FaultKind, number>;
  seed: number;
}

const FORM = 'expected KIND=P pairs (429, 500, hang, malformed; probabilities summing to ≤ 1) and seed=N';

export function parseFaults(raw: string, field = '--faults'): Faults {
  const faults: Faults = { p: { '429': 0, '500': 0, hang: 0, malformed: 0 }, seed: 0 };
  for (const part of raw.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, Math.max(0, eq)).trim();
    const value = part.slice(eq + 1).trim();
    const x = Number(value);
    if (eq <= 0 || value === '') throw new InputError(field, raw, FORM);
    if (key === 'seed') {
      if (!/^\d+$/.test(value) || !Number.isSafeInteger(x))
        throw new InputError(`${field} seed`, value, 'expected an integer ≥ 0');
      faults.seed = x;
    } else if ((FAULT_KINDS as readonly string[]).includes(key)) {
      if (!(x >= 0 && x <= 1))
        throw new InputError(`${field} ${key}`, value, 'expected a probability in [0, 1]');
      faults.p[key as FaultKind] = x;
    } else throw new InputError(field, raw, `unknown fault ${JSON.stringify(key)}; ${FORM}`);
  }
  const total = FAULT_KINDS.reduce((s, k) => s + faults.p[k], 0);
  if (total > 1 + 1e-12) throw new InputError(field, raw, `the probabilities sum to ${total}; ${FORM}`);
  return faults;
}

/** FNV-1a over the UTF-16 code units: a 32-bit key for a request body. */
export function hashText(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Draws the fate of requests; holds how often each body was seen. */
export class FaultInjector {
  readonly faults: Faults;
  private readonly seen = new Map<string, number>();

  constructor(faults: Faults) {
    this.faults = faults;
  }

  /** The fault for this body's next occurrence, or undefined for a normal answer. */
  draw(body: string): FaultKind | undefined {
    const key = `${hashText(body)}:${body.length}`;
    const occurrence = this.seen.get(key) ?? 0;
    this.seen.set(key, occurrence + 1);
    let u = Rng.derive(this.faults.seed, hashText(body), body.length, occurrence).float();
    for (const kind of FAULT_KINDS) {
      u -= this.faults.p[kind];
      if (u < 0) return kind;
    }
    return undefined;
  }
}
