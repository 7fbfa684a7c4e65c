// The clipped policy-gradient objective shared by PPO and GRPO, on per-turn logits (docs/methods.md §4):
//   ρ = exp(logp − logp_old);  L_clip = −Σ_i w_i · min(ρ_i A_i, clip(ρ_i, 1−ε_low, 1+ε_high) A_i)
//   k3 = π_ref/π − log(π_ref/π) − 1 (Schulman 2020, "Approximating KL divergence"), H = −Σ_a π log π
//   L = L_clip + β Σ_i w_i k3_i − c_H Σ_i w_i H_i
// Dual clip (Ye et al. 2020, "Mastering Complex Control in MOBA Games", §3; verl's clip_ratio_c = 3):
// for A < 0 the per-turn objective is max(min(ρA, clip(ρ)A), c·A), so a turn that another policy
// acted (cross-policy sampling) with a large ratio cannot push its action down without bound.
// Schulman et al. 2017 (PPO, eq. 7); DAPO (Yu et al. 2025, §3.1) for ε_high > ε_low ("clip-higher")
// and token-mean aggregation; Dr. GRPO (Liu et al. 2025) for the constant-sum aggregation.
// The function returns the loss and its gradient with respect to the logits, so any policy that
// produces logits — a table, an MLP through nn/ — can apply it.

export type Aggregation = 'turn-mean' | 'sequence-mean' | 'constant-sum';

/** Per-turn weights w_i for the aggregation modes, over trajectories of the given lengths (counting only
 * the turns that enter the loss). turn-mean: 1/Σ len; sequence-mean: 1/(len_j · #seq);
 * constant-sum: 1/constant (Dr. GRPO divides by a fixed constant, not by lengths). */
export function aggregationWeights(
  lengths: readonly number[],
  mode: Aggregation,
  constant = 1,
): Float64Array {
  const total = lengths.reduce((s, n) => s + n, 0);
  const w = new Float64Array(total);
  const live = lengths.filter((n) => n > 0).length;
  let k = 0;
  for (const n of lengths) {
    for (let t = 0; t < n; t++) {
      if (mode === 'turn-mean') w[k++] = 1 / total;
      else if (mode === 'sequence-mean') w[k++] = 1 / (n * live);
      else w[k++] = 1 / constant;
    }
  }
  return w;
}

export interface PgBatch {
  /** Number of turns N and actions per turn nA; logits is (N, nA) row-major. */
  n: number;
  nA: number;
  logits: ArrayLike<number>;
  actions: ArrayLike<number>;
  /** Behaviour log-probabilities (the policy that acted). */
  logpOld: ArrayLike<number>;
  advantages: ArrayLike<number>;
  /** Aggregation weights w_i (see aggregationWeights). */
  weights: ArrayLike<number>;
  /** Reference-policy log-probabilities of the taken actions, when β > 0. */
  logpRef?: ArrayLike<number>;
}

export interface PgCoefficients {
  clipLow: number;
  clipHigh: number;
  /** β, the k3 coefficient (0: no KL term). */
  klCoef: number;
  /** c of the dual clip (> 1), or undefined for none. */
  dualClip?: number;
  /** Entropy bonus coefficient. */
  entCoef: number;
}

export interface PgResult {
  loss: number;
  /** ∂L/∂logits, (N, nA). */
  dlogits: Float64Array;
  /** Fraction of turns whose ratio fell outside [1−ε_low, 1+ε_high]. */
  clipfrac: number;
  /** Mean of (ρ−1) − log ρ over turns (CleanRL's approx_kl, old vs new). */
  approxKl: number;
  /** Mean policy entropy over turns. */
  entropy: number;
  /** Mean k3 to the reference (0 when there is none). */
  kl: number;
}

export function pgLoss(b: PgBatch, c: PgCoefficients): PgResult {
  const { n, nA, logits } = b;
  const dlogits = new Float64Array(n * nA);
  const p = new Float64Array(nA);
  let loss = 0;
  let clipped = 0;
  let approxKl = 0;
  let entropySum = 0;
  let klSum = 0;
  for (let i = 0; i < n; i++) {
    const row = i * nA;
    // log-softmax of this turn's logits
    let max = Number.NEGATIVE_INFINITY;
    for (let a = 0; a < nA; a++) if (logits[row + a] > max) max = logits[row + a];
    let z = 0;
    for (let a = 0; a < nA; a++) {
      p[a] = Math.exp(logits[row + a] - max);
      z += p[a];
    }
    const logZ = Math.log(z) + max;
    let H = 0;
    for (let a = 0; a < nA; a++) {
      p[a] /= z;
      if (p[a] > 0) H -= p[a] * (logits[row + a] - logZ);
    }
    const act = b.actions[i];
    const logp = logits[row + act] - logZ;
    const w = b.weights[i];
    const A = b.advantages[i];
    const logratio = logp - b.logpOld[i];
    const ratio = Math.exp(logratio);
    const clippedRatio = Math.min(Math.max(ratio, 1 - c.clipLow), 1 + c.clipHigh);
    const surr1 = ratio * A;
    const surr2 = clippedRatio * A;
    const floor = c.dualClip !== undefined && A < 0 ? c.dualClip * A : Number.NEGATIVE_INFINITY;
    const objective = Math.max(Math.min(surr1, surr2), floor);
    loss -= w * objective;
    if (ratio < 1 - c.clipLow || ratio > 1 + c.clipHigh) clipped++;
    approxKl += ratio - 1 - logratio;
    // ∂L/∂logp for this turn: the unclipped branch carries the gradient −w ρ A; a clipped one none.
    let dlogp = surr1 <= surr2 && surr1 > floor ? -w * ratio * A : 0;
    if (c.klCoef > 0 && b.logpRef !== undefined) {
      const lr = b.logpRef[i] - logp; // log(π_ref/π)
      const k3 = Math.exp(lr) - lr - 1;
      klSum += k3;
      loss += c.klCoef * w * k3;
      dlogp += c.klCoef * w * (1 - Math.exp(lr)); // d k3 / d logp
    }
    entropySum += H;
    loss -= c.entCoef * w * H;
    for (let a = 0; a < nA; a++) {
      // d logp(act)/d z_a = [a = act] − p_a;  dH/dz_a = −p_a (log p_a + H)
      const logpa = logits[row + a] - logZ;
      const dH = p[a] > 0 ? -p[a] * (logpa + H) : 0;
      dlogits[row + a] = dlogp * ((a === act ? 1 : 0) - p[a]) - c.entCoef * w * dH;
    }
  }
  return {
    loss,
    dlogits,
    clipfrac: n > 0 ? clipped / n : 0,
    approxKl: n > 0 ? approxKl / n : 0,
    entropy: n > 0 ? entropySum / n : 0,
    kl: n > 0 ? klSum / n : 0,
  };
}

/** k3 = r − log r − 1 with r = π_ref/π, from log-probabilities. Non-negative, 0 iff r = 1. */
export function k3(logp: number, logpRef: number): number {
  const lr = logpRef - logp;
  return Math.exp(lr) - lr - 1;
}
