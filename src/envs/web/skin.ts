// Variants of an app (`variant` param): the same app logic — routes, state, checks, goals — with other
// labels (synonyms), other widget kinds (a select or radio buttons, a checkbox or a yes/no select, a
// text box or a select), another layout (nav first or last, filters before or after the results, table
// columns in another order, containers that shift every element id) and another flow order (checkout
// steps, booking by dates first or by room first, delete by confirmation page or by checkbox). Variant 0
// is the canonical app: every choice its first option. Variant N > 0 draws each choice from
// Rng.derive(N, hash of the choice's key), so a choice does not depend on which others were asked.
import { Rng } from '../../core/rng.ts';
import { h, type VNode } from './dom.ts';

/** FNV-1a of a string, 32 bits. */
export function hash32(s: string): number {
  let x = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return x;
}

export class Skin {
  readonly variant: number;

  constructor(variant: number) {
    this.variant = variant;
  }

  private rng(key: string): Rng {
    return Rng.derive(this.variant, 0x5c17, hash32(key));
  }

  /** An index in [0, n): 0 in the canonical variant. */
  pick(key: string, n: number): number {
    return this.variant === 0 ? 0 : this.rng(key).int(n);
  }

  /** One of a label's synonyms (the first in the canonical variant). */
  label(key: string, synonyms: readonly string[]): string {
    return synonyms[this.pick(`label:${key}`, synonyms.length)];
  }

  /** One of the widget kinds a field may take (the first in the canonical variant). */
  kind<K extends string>(key: string, kinds: readonly K[]): K {
    return kinds[this.pick(`kind:${key}`, kinds.length)];
  }

  /** One of n flows of a part of the app (0 in the canonical variant). */
  flow(key: string, n: number): number {
    return this.pick(`flow:${key}`, n);
  }

  /** The items in a permuted order (as given in the canonical variant). */
  order<T>(key: string, items: readonly T[]): T[] {
    const out = [...items];
    if (this.variant === 0) return out;
    const rng = this.rng(`order:${key}`);
    for (let i = out.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** The nodes inside 0–2 plain containers (none in the canonical variant): the same tree for the agent,
   * other element ids. */
  wrap(key: string, ...nodes: VNode[]): VNode[] {
    const depth = this.pick(`wrap:${key}`, 3);
    let out: VNode[] = nodes;
    for (let i = 0; i < depth; i++) out = [h('div', {}, ...out)];
    return out;
  }
}
