// A finite MDP in compiled form, and its exact finite-horizon dynamic programming (docs/methods.md §6):
//   V*_0 = 0,  Q*_h(s,a) = Σ p·(r + [not terminal]·V*_{h−1}(s')),  V*_h = max_a Q*_h
// and the same recursion for a fixed stochastic policy (V^π, Q^π). h = turns left.
import type { Oracle, PolicyValues, TabularPolicyFn } from '../core/types.ts';

/** One outcome of taking a in s, in Gymnasium's P[s][a] layout: [prob, next_state, reward, terminated]. */
export type Transition = [prob: number, next: number, reward: number, terminated: boolean];

export interface TabularModel {
  nS: number;
  nA: number;
  /** Outcomes of (s, a) occupy [offset[s*nA+a], offset[s*nA+a+1]) of the flat arrays. */
  offset: Int32Array;
  prob: Float64Array;
  /** Cumulative probability within (s, a), for sampling like Gymnasium's categorical_sample. */
  cumProb: Float64Array;
  next: Int32Array;
  reward: Float64Array;
  terminated: Uint8Array;
}

export function compileModel(P: readonly (readonly (readonly Transition[])[])[]): TabularModel {
  const nS = P.length;
  const nA = P[0].length;
  let n = 0;
  for (const row of P) for (const outcomes of row) n += outcomes.length;
  const m: TabularModel = {
    nS,
    nA,
    offset: new Int32Array(nS * nA + 1),
    prob: new Float64Array(n),
    cumProb: new Float64Array(n),
    next: new Int32Array(n),
    reward: new Float64Array(n),
    terminated: new Uint8Array(n),
  };
  let k = 0;
  for (let s = 0; s < nS; s++) {
    if (P[s].length !== nA) throw new RangeError(`P[${s}] has ${P[s].length} actions, expected ${nA}`);
    for (let a = 0; a < nA; a++) {
      m.offset[s * nA + a] = k;
      let cum = 0;
      for (const [p, next, r, term] of P[s][a]) {
        cum += p;
        m.prob[k] = p;
        m.cumProb[k] = cum;
        m.next[k] = next;
        m.reward[k] = r;
        m.terminated[k] = term ? 1 : 0;
        k++;
      }
    }
  }
  m.offset[nS * nA] = k;
  return m;
}

/** Expected immediate reward plus continuation: Σ p (r + [¬term] V(s')) for one (s, a). */
function backup(m: TabularModel, sa: number, V: Float64Array, vBase: number): number {
  let q = 0;
  for (let k = m.offset[sa], end = m.offset[sa + 1]; k < end; k++) {
    q += m.prob[k] * (m.reward[k] + (m.terminated[k] ? 0 : V[vBase + m.next[k]]));
  }
  return q;
}

/**
 * Exact finite-horizon oracle over a compiled model. Tables grow on demand: asking for Q*_h computes
 * every h' ≤ h once. Memory is (h+1)·nS·(nA+1) doubles.
 */
export class TabularOracle<O = number> implements Oracle<O> {
  readonly nS: number;
  readonly nA: number;
  readonly starts: readonly number[];
  private readonly model: TabularModel;
  private readonly toState: (o: O) => number;
  private readonly toObservation: (s: number) => O;
  private V: Float64Array;
  private Q: Float64Array;
  private computed = 0;

  constructor(
    model: TabularModel,
    starts: readonly number[],
    toState: (o: O) => number,
    toObservation: (s: number) => O,
  ) {
    this.model = model;
    this.starts = starts;
    this.nS = model.nS;
    this.nA = model.nA;
    this.toState = toState;
    this.toObservation = toObservation;
    this.V = new Float64Array(this.nS);
    this.Q = new Float64Array(this.nS * this.nA);
  }

  get horizon(): number {
    return this.computed;
  }

  state(o: O): number {
    return this.toState(o);
  }

  observation(s: number): O {
    return this.toObservation(s);
  }

  private ensure(h: number): void {
    if (h <= this.computed) return;
    if (!Number.isInteger(h) || h < 0)
      throw new RangeError(`horizon must be a non-negative integer, got ${h}`);
    const { nS, nA } = this;
    const cap = Math.max(h, this.computed * 2, 16);
    if ((cap + 1) * nS > this.V.length) {
      const V = new Float64Array((cap + 1) * nS);
      V.set(this.V);
      const Q = new Float64Array((cap + 1) * nS * nA);
      Q.set(this.Q);
      this.V = V;
      this.Q = Q;
    }
    const { V, Q, model } = this;
    for (let hh = this.computed + 1; hh <= h; hh++) {
      const prev = (hh - 1) * nS;
      for (let s = 0; s < nS; s++) {
        let best = Number.NEGATIVE_INFINITY;
        for (let a = 0; a < nA; a++) {
          const q = backup(model, s * nA + a, V, prev);
          Q[(hh * nS + s) * nA + a] = q;
          if (q > best) best = q;
        }
        V[hh * nS + s] = best;
      }
    }
    this.computed = h;
  }

  q(h: number, s: number): Float64Array {
    this.ensure(h);
    const base = (h * this.nS + s) * this.nA;
    return this.Q.subarray(base, base + this.nA);
  }

  v(h: number, s: number): number {
    this.ensure(h);
    return this.V[h * this.nS + s];
  }

  /** V*_h for every state (a copy). */
  values(h: number): Float64Array {
    this.ensure(h);
    return this.V.slice(h * this.nS, (h + 1) * this.nS);
  }

  evaluate(pi: TabularPolicyFn, horizon: number): PolicyValues {
    return evaluatePolicy(this.model, pi, horizon);
  }
}

/** Exact V^π_h, Q^π_h for h = 0..horizon of a policy π_h(a|s) that may depend on the turns left. */
export function evaluatePolicy(m: TabularModel, pi: TabularPolicyFn, horizon: number): PolicyValues {
  const { nS, nA } = m;
  const V = new Float64Array((horizon + 1) * nS);
  const Q = new Float64Array((horizon + 1) * nS * nA);
  for (let h = 1; h <= horizon; h++) {
    const prev = (h - 1) * nS;
    for (let s = 0; s < nS; s++) {
      const p = pi(h, s);
      let v = 0;
      for (let a = 0; a < nA; a++) {
        const q = backup(m, s * nA + a, V, prev);
        Q[(h * nS + s) * nA + a] = q;
        v += p[a] * q;
      }
      V[h * nS + s] = v;
    }
  }
  return { horizon, nS, nA, V, Q };
}
