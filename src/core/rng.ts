// Seeded, splittable randomness. One generator per (run seed, task seed, sample index, stream), derived
// by hashing the keys — never by consuming a shared generator — so an episode's randomness does not
// depend on how many other episodes ran before it or concurrently with it.

import { xoroshiro128plus, xoroshiro128plusFromState } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';

const TWO_POW_32 = 4294967296;
const SCALE_26 = 2 ** -26;
const SCALE_53 = 2 ** -53;

/** murmur3's 32-bit finaliser: a bijective avalanche mix. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Hashes a list of non-negative or negative integers (each |k| < 2^53) into four 32-bit words. */
function hashKeys(keys: readonly number[]): [number, number, number, number] {
  const words: [number, number, number, number] = [0, 0, 0, 0];
  for (let w = 0; w < 4; w++) {
    let h = fmix32(0x9e3779b9 + w * 0x7f4a7c15);
    for (const k of keys) {
      if (!Number.isSafeInteger(k)) throw new RangeError(`rng key must be a safe integer, got ${k}`);
      const lo = k >>> 0;
      const hi = Math.floor(k / TWO_POW_32) >>> 0;
      h = fmix32(h ^ lo);
      h = fmix32((h + 0x632be5ab) ^ hi);
    }
    words[w] = h | 0;
  }
  // xoroshiro's all-zero state is a fixed point.
  if ((words[0] | words[1] | words[2] | words[3]) === 0) words[0] = 1;
  return words;
}

/** Named streams so that an env and a policy in one episode never share random numbers. */
export const STREAM = { env: 1, policy: 2, map: 3, task: 4, train: 5, eval: 6, inject: 7 } as const;

/** Yields the given 32-bit words first, then the inner generator's. */
class ReplayGenerator implements RandomGenerator {
  private readonly head: number[];
  private readonly inner: RandomGenerator;

  constructor(head: number[], inner: RandomGenerator) {
    this.head = head;
    this.inner = inner;
  }

  next(): number {
    const w = this.head.shift();
    return w === undefined ? this.inner.next() : w;
  }

  clone(): ReplayGenerator {
    return new ReplayGenerator([...this.head], this.inner.clone());
  }

  getState(): readonly number[] {
    if (this.head.length > 0)
      throw new Error('a replaying generator has no state until its uniform is drawn');
    return this.inner.getState();
  }
}

export class Rng {
  private readonly g: RandomGenerator;

  private constructor(g: RandomGenerator) {
    this.g = g;
  }

  /** A generator determined by the keys alone (e.g. `Rng.derive(runSeed, taskSeed, sample, STREAM.env)`). */
  static derive(...keys: number[]): Rng {
    return new Rng(xoroshiro128plusFromState(hashKeys(keys)));
  }

  /** pure-rand's own seeding of a single 32-bit seed (kept for interoperability). */
  static fromSeed(seed: number): Rng {
    return new Rng(xoroshiro128plus(seed));
  }

  static fromState(state: readonly number[]): Rng {
    return new Rng(xoroshiro128plusFromState(state));
  }

  /** The generator's state: four 32-bit integers, plain data for snapshots and checkpoints. */
  state(): number[] {
    return [...this.g.getState()];
  }

  clone(): Rng {
    return new Rng(this.g.clone());
  }

  /** A 32-bit unsigned integer. */
  uint32(): number {
    return this.g.next() >>> 0;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  float(): number {
    const a = this.g.next() >>> 6; // 26 bits
    const b = this.g.next() >>> 5; // 27 bits
    return a * SCALE_26 + b * SCALE_53;
  }

  /** The 53-bit integer k behind the next float(): it consumes what float() would, and
   * float() = k · 2^-53 exactly. A remote policy sends k as its request `seed`, and the server acts
   * with `Rng.replay(k)`, so a served policy draws the very uniform the in-process one would. */
  uniform53(): number {
    const a = this.g.next() >>> 6;
    const b = this.g.next() >>> 5;
    return a * 2 ** 27 + b;
  }

  /** A generator whose first float() is k · 2^-53 (see uniform53) and whose later draws come from
   * Rng.derive(k): served equals in-process for every policy that draws one uniform per turn. */
  static replay(k: number): Rng {
    if (!Number.isSafeInteger(k) || k < 0)
      throw new RangeError(`replay seed must be an integer ≥ 0, got ${k}`);
    const bits = k % 2 ** 53;
    const a = Math.floor(bits / 2 ** 27);
    const b = bits % 2 ** 27;
    return new Rng(
      new ReplayGenerator([(a << 6) | 0, (b << 5) | 0], xoroshiro128plusFromState(hashKeys([k]))),
    );
  }

  /** Uniform integer in [0, n). The bias of flooring a 53-bit float is below 2^-40 for n < 2^13. */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Standard normal (Box–Muller; one value per call, no cached spare so that state() is complete). */
  normal(): number {
    let u = this.float();
    while (u === 0) u = this.float();
    const v = this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Index drawn from unnormalised non-negative weights. */
  categorical(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) total += weights[i];
    let u = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i];
      if (u < 0) return i;
    }
    // Rounding: return the last index with positive weight.
    for (let i = weights.length - 1; i >= 0; i--) if (weights[i] > 0) return i;
    throw new RangeError('categorical: all weights are zero');
  }

  /** Fisher–Yates shuffle in place. */
  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = xs[i];
      xs[i] = xs[j];
      xs[j] = tmp;
    }
    return xs;
  }
}
