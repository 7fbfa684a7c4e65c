// Axis scales and "nice" ticks: steps of 1, 2 or 5 × 10^k, the classic choice (Heckbert, "Nice
// numbers for graph labels", Graphics Gems, 1990) — round numbers a reader can interpolate between.

export interface Ticks {
  /** Tick values, ascending; the first ≤ the data minimum and the last ≥ the data maximum. */
  ticks: number[];
  /** [first tick, last tick]: the axis domain. */
  domain: [number, number];
  /** Distance between ticks (0 on a log axis, where it varies). */
  step: number;
  /** Decimals that print every tick exactly (0 for integer steps). */
  decimals: number;
}

/** The nice step (1, 2 or 5 × 10^k) closest above span / count. */
export function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  // 1e-9 absorbs floating noise so 0.2/1 does not become a step of 0.5.
  const nice = norm <= 1 + 1e-9 ? 1 : norm <= 2 + 1e-9 ? 2 : norm <= 5 + 1e-9 ? 5 : 10;
  return nice * mag;
}

/** Rounds to `decimals` and turns -0 into 0. */
function clean(x: number, decimals: number): number {
  const r = Number(x.toFixed(Math.min(100, decimals)));
  return r === 0 ? 0 : r;
}

/**
 * About `count` nice ticks covering [lo, hi]. Non-finite bounds fall back to [0, 1]; an empty span
 * (lo = hi) is widened around the value, so a single-point series still gets an axis.
 */
export function niceTicks(lo: number, hi: number, count = 5): Ticks {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) [lo, hi] = [0, 1];
  if (lo > hi) [lo, hi] = [hi, lo];
  if (lo === hi) {
    if (lo === 0) hi = 1;
    else {
      const pad = Math.abs(lo) * 0.1;
      [lo, hi] = [lo - pad, hi + pad];
    }
  }
  // Near the float limit the nice ticks themselves would overflow to Infinity; such numbers are
  // garbage in a report anyway, so the axis just shows the two bounds.
  if (Math.max(Math.abs(lo), Math.abs(hi)) > 1e300)
    return { ticks: [lo, hi], domain: [lo, hi], step: 0, decimals: 0 };
  const step = niceStep(hi - lo, count);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  // The epsilon keeps 0.30000000000000004 / 0.1 from adding an extra tick beyond the data.
  const first = Math.floor(lo / step + 1e-9);
  const last = Math.ceil(hi / step - 1e-9);
  const ticks: number[] = [];
  for (let i = first; i <= last; i++) ticks.push(clean(i * step, decimals));
  return { ticks, domain: [ticks[0], ticks[ticks.length - 1]], step, decimals };
}

/**
 * Ticks for a log axis over positive [lo, hi]: 1, 2, 5 × 10^k (budgets 10, 20, 50, 100), thinned to
 * the powers of ten when there would be more than 12. The domain widens to the enclosing ticks.
 * Non-positive or non-finite input falls back to [1, 10].
 */
export function logTicks(lo: number, hi: number): Ticks {
  if (!(lo > 0) || !(hi > 0) || !Number.isFinite(lo) || !Number.isFinite(hi)) [lo, hi] = [1, 10];
  if (lo > hi) [lo, hi] = [hi, lo];
  const k0 = Math.floor(Math.log10(lo) + 1e-9);
  const k1 = Math.ceil(Math.log10(hi) - 1e-9);
  const candidates: number[] = [];
  for (let k = k0; k <= Math.max(k1, k0 + 1); k++)
    for (const m of [1, 2, 5]) candidates.push(clean(m * 10 ** k, Math.max(0, -k)));
  const below = candidates.filter((c) => c <= lo * (1 + 1e-9));
  const above = candidates.filter((c) => c >= hi * (1 - 1e-9));
  const dlo = below.length > 0 ? below[below.length - 1] : candidates[0];
  let dhi = above.length > 0 ? above[0] : candidates[candidates.length - 1];
  // A single value still needs a span: up to the next candidate (the loop above always has one).
  if (dhi <= dlo) dhi = candidates[candidates.indexOf(dlo) + 1];
  let ticks = candidates.filter((c) => c >= dlo && c <= dhi);
  if (ticks.length > 12) ticks = ticks.filter((t, i) => i === 0 || i === ticks.length - 1 || isPowerOf10(t));
  const decimals = Math.max(0, ...ticks.map((t) => -Math.floor(Math.log10(t) + 1e-9)));
  return { ticks, domain: [dlo, dhi], step: 0, decimals };
}

function isPowerOf10(x: number): boolean {
  const l = Math.log10(x);
  return Math.abs(l - Math.round(l)) < 1e-9;
}

/** A tick label: fixed decimals, no -0. */
export function formatTick(value: number, decimals: number): string {
  const s = value.toFixed(Math.min(100, Math.max(0, decimals)));
  return Number(s) === 0 ? (0).toFixed(Math.max(0, decimals)) : s;
}

export type Scale = (v: number) => number;

/** Maps [d0, d1] linearly onto [r0, r1] (a zero-width domain maps to the middle of the range). */
export function linearScale(domain: readonly [number, number], range: readonly [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  if (d1 === d0) return () => (r0 + r1) / 2;
  // Halved before subtracting, so a domain spanning most of the float range does not overflow.
  const span = d1 / 2 - d0 / 2;
  return (v) => r0 + ((v / 2 - d0 / 2) / span) * (r1 - r0);
}

/** Maps positive [d0, d1] logarithmically onto [r0, r1]. */
export function logScale(domain: readonly [number, number], range: readonly [number, number]): Scale {
  const lin = linearScale([Math.log10(domain[0]), Math.log10(domain[1])], range);
  return (v) => lin(Math.log10(v));
}

/** The fewest decimals (up to 6) that print every value exactly, for ticks chosen by the caller. */
export function labelDecimals(values: readonly number[]): number {
  let d = 0;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    while (d < 6 && Math.abs(Number(v.toFixed(d)) - v) > 1e-9 * Math.max(1, Math.abs(v))) d++;
  }
  return d;
}

/**
 * Ticks for a value axis: a fixed domain when one is given (ticks inside it; values beyond it are the
 * caller's to clamp), else nice ticks covering the finite values, else [0, 1] for no data at all.
 */
export function axisTicks(values: readonly number[], fixed?: readonly [number, number], count = 5): Ticks {
  if (fixed && Number.isFinite(fixed[0]) && Number.isFinite(fixed[1]) && fixed[0] !== fixed[1]) {
    const [a, b] = fixed[0] < fixed[1] ? [fixed[0], fixed[1]] : [fixed[1], fixed[0]];
    const t = niceTicks(a, b, count);
    const eps = 1e-9 * (b - a);
    return { ...t, ticks: t.ticks.filter((v) => v >= a - eps && v <= b + eps), domain: [a, b] };
  }
  // A loop, not Math.min(...values): spreading a long training curve would overflow the stack.
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return niceTicks(0, 1, count);
  return niceTicks(lo, hi, count);
}
