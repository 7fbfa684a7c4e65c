// Small helpers shared by policies with an explicit action distribution.
import type { Action, TurnContext } from '../core/types.ts';

/** Samples from an explicit distribution and returns the action with its log-probability. */
export function sampleFrom(p: ArrayLike<number>, ctx: TurnContext<unknown>): Action<number> {
  const a = ctx.rng.categorical(p);
  return { action: a, logp: Math.log(p[a]) };
}

/** log p[a], −∞ for an action outside the support or the action space. */
export function logProbOf(p: ArrayLike<number>, action: number): number {
  return Number.isInteger(action) && action >= 0 && action < p.length
    ? Math.log(p[action])
    : Number.NEGATIVE_INFINITY;
}

/** softmax(x / temp) in place into out (max-subtracted for stability). */
export function softmaxInto(x: ArrayLike<number>, temp: number, out: Float64Array): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < x.length; i++) if (x[i] > max) max = x[i];
  let z = 0;
  for (let i = 0; i < x.length; i++) {
    out[i] = Math.exp((x[i] - max) / temp);
    z += out[i];
  }
  for (let i = 0; i < x.length; i++) out[i] /= z;
  return out;
}

/** log-softmax of each row of an (n, nA) row-major array, as logit − logsumexp (exact for tiny
 * probabilities, unlike log p). */
export function logSoftmaxRows(z: ArrayLike<number>, n: number, nA: number): Float64Array {
  const out = new Float64Array(n * nA);
  for (let r = 0, p = 0; r < n; r++, p += nA) {
    let max = Number.NEGATIVE_INFINITY;
    for (let a = 0; a < nA; a++) if (z[p + a] > max) max = z[p + a];
    let s = 0;
    for (let a = 0; a < nA; a++) s += Math.exp(z[p + a] - max);
    const lse = max + Math.log(s);
    for (let a = 0; a < nA; a++) out[p + a] = z[p + a] - lse;
  }
  return out;
}
