// The softmax family, over the last dimension: softmax, log-softmax, the log-probabilities of chosen
// actions and the fused cross-entropy, all through one max-shifted log Σ exp per row. Conventions and
// gradient checks as for every op (nn/ops.ts).
import { lastDim, needRank, result, showShape, type Tensor } from './tensor.ts';

/** Row-wise log Σ exp, max-shifted; written into lse (length rows). */
function logSumExpRows(x: Float32Array, rows: number, C: number, lse: Float64Array): void {
  for (let r = 0, p = 0; r < rows; r++, p += C) {
    let max = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < C; c++) if (x[p + c] > max) max = x[p + c];
    let z = 0;
    for (let c = 0; c < C; c++) z += Math.exp(x[p + c] - max);
    lse[r] = max + Math.log(z);
  }
}

export function softmax(a: Tensor): Tensor {
  const C = lastDim(a.shape);
  const rows = a.size / C;
  const lse = new Float64Array(rows);
  logSumExpRows(a.data, rows, C, lse);
  const y = new Float32Array(a.size);
  for (let r = 0, p = 0; r < rows; r++) for (let c = 0; c < C; c++, p++) y[p] = Math.exp(a.data[p] - lse[r]);
  return result(y, a.shape, [a], (o) => {
    // ∂x = y ⊙ (g − Σ_c g_c y_c)
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let r = 0, p = 0; r < rows; r++, p += C) {
      let dot = 0;
      for (let c = 0; c < C; c++) dot += g[p + c] * y[p + c];
      for (let c = 0; c < C; c++) ga[p + c] += y[p + c] * (g[p + c] - dot);
    }
  });
}

export function logSoftmax(a: Tensor): Tensor {
  const C = lastDim(a.shape);
  const rows = a.size / C;
  const lse = new Float64Array(rows);
  logSumExpRows(a.data, rows, C, lse);
  const y = new Float32Array(a.size);
  for (let r = 0, p = 0; r < rows; r++) for (let c = 0; c < C; c++, p++) y[p] = a.data[p] - lse[r];
  return result(y, a.shape, [a], (o) => {
    // ∂x = g − softmax · Σ_c g_c
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let r = 0, p = 0; r < rows; r++, p += C) {
      let s = 0;
      for (let c = 0; c < C; c++) s += g[p + c];
      for (let c = 0; c < C; c++) ga[p + c] += g[p + c] - Math.exp(a.data[p + c] - lse[r]) * s;
    }
  });
}

/**
 * log softmax(logits)[r, actions[r]] → (R): the log-probabilities of chosen actions (NLL, likelihood
 * ratios, policy gradients) without materialising the log-softmax. ∂logits = g_r (onehot − softmax).
 */
export function logProbsOf(logits: Tensor, actions: Int32Array): Tensor {
  needRank(logits, 2, 'logProbsOf');
  const [R, C] = logits.shape;
  if (actions.length !== R) throw new RangeError(`logProbsOf: ${actions.length} actions for ${R} rows`);
  for (let r = 0; r < R; r++) {
    if (!(actions[r] >= 0 && actions[r] < C))
      throw new RangeError(`logProbsOf: action ${actions[r]} not in 0..${C - 1}`);
  }
  const x = logits.data;
  const lse = new Float64Array(R);
  logSumExpRows(x, R, C, lse);
  const out = new Float32Array(R);
  for (let r = 0; r < R; r++) out[r] = x[r * C + actions[r]] - lse[r];
  return result(out, [R], [logits], (o) => {
    const g = o.grad!;
    const gl = logits.gradBuffer();
    for (let r = 0, p = 0; r < R; r++, p += C) {
      for (let c = 0; c < C; c++) gl[p + c] -= g[r] * Math.exp(x[p + c] - lse[r]);
      gl[p + actions[r]] += g[r];
    }
  });
}

/**
 * Mean cross-entropy of logits (R, C) against targets: class indices (R) or probability rows (R·C,
 * soft targets such as an expert's action distribution). Fused log-softmax + NLL:
 * loss = (1/R) Σ_r Σ_c p_rc (lse_r − x_rc); ∂x_rc = (softmax_rc · Σ_c p_rc − p_rc) / R.
 * Optional per-row weights w_r replace 1/R by w_r / Σ w: with a 0/1 mask, the mean over the masked-in
 * rows (a language model's loss on the policy's own tokens only).
 */
export function crossEntropy(
  logits: Tensor,
  targets: Int32Array | Float32Array,
  weights?: Float32Array,
): Tensor {
  needRank(logits, 2, 'crossEntropy');
  const [R, C] = logits.shape;
  const soft = targets instanceof Float32Array;
  if (soft ? targets.length !== R * C : targets.length !== R) {
    throw new RangeError(`crossEntropy: ${targets.length} targets for logits ${showShape(logits.shape)}`);
  }
  if (weights !== undefined && weights.length !== R)
    throw new RangeError(`crossEntropy: ${weights.length} weights for ${R} rows`);
  const x = logits.data;
  const lse = new Float64Array(R);
  logSumExpRows(x, R, C, lse);
  let wsum = 0;
  for (let r = 0; r < R; r++) wsum += weights === undefined ? 1 : weights[r];
  // An all-zero mask (nothing to learn from in this batch) is a loss of 0 with no gradient, not 0/0.
  const w = (r: number) => (wsum === 0 ? 0 : (weights === undefined ? 1 : weights[r]) / wsum);
  let loss = 0;
  for (let r = 0, p = 0; r < R; r++, p += C) {
    let l = 0;
    if (soft)
      for (let c = 0; c < C; c++) l += targets[p + c] === 0 ? 0 : targets[p + c] * (lse[r] - x[p + c]);
    else {
      const t = targets[r];
      if (!(t >= 0 && t < C)) throw new RangeError(`crossEntropy: class ${t} not in 0..${C - 1}`);
      l = lse[r] - x[p + t];
    }
    loss += w(r) * l;
  }
  return result(Float32Array.of(loss), [], [logits], (o) => {
    const g = o.grad![0];
    const gl = logits.gradBuffer();
    for (let r = 0, p = 0; r < R; r++, p += C) {
      const k = g * w(r);
      if (soft) {
        let mass = 0;
        for (let c = 0; c < C; c++) mass += targets[p + c];
        for (let c = 0; c < C; c++) gl[p + c] += k * (Math.exp(x[p + c] - lse[r]) * mass - targets[p + c]);
      } else {
        for (let c = 0; c < C; c++) gl[p + c] += k * Math.exp(x[p + c] - lse[r]);
        gl[p + targets[r]] -= k;
      }
    }
  });
}
