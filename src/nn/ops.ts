// Differentiable ops: matrix products, elementwise ops, reductions, embeddings and layer norm (the
// softmax family is in nn/softmax.ts, the shape ops in nn/shape-ops.ts). Each computes its result in
// float32 storage (arithmetic in double, as JavaScript does) and registers the backward function that
// adds ∂L/∂input given ∂L/∂output. Every op is checked against central finite differences in
// test/nn/grad.test.ts.
//
// Conventions: shapes are row-major, "rows" are all leading dimensions flattened, and per-row ops
// (softmax, layerNorm, cross-entropy) act on the last dimension. Broadcasting is deliberately narrow:
// the second operand's shape must be a suffix of the first's (a bias over rows) or a single value.
import { gemm } from './gemm.ts';
import { lastDim, needRank, result, type Shape, showShape, sizeOf, type Tensor } from './tensor.ts';

// ——— matrix products ———

/**
 * op(a) · op(b) for 2-D tensors: op(a) (M, K), op(b) (K, N) → (M, N); transA/transB mean a is stored
 * (K, M) / b is stored (N, K). Gradients: ∂op(a) = g · op(b)ᵀ, ∂op(b) = op(a)ᵀ · g, written straight
 * into the stored layouts through the same gemm flags.
 */
export function matmul(a: Tensor, b: Tensor, transA = false, transB = false): Tensor {
  needRank(a, 2, 'matmul');
  needRank(b, 2, 'matmul');
  return bmmCore(a, b, transA, transB, 1, 'matmul');
}

/** Batched matmul over a leading dimension: a (G, ·, ·), b (G, ·, ·) with matmul's flags → (G, M, N). */
export function bmm(a: Tensor, b: Tensor, transA = false, transB = false): Tensor {
  needRank(a, 3, 'bmm');
  needRank(b, 3, 'bmm');
  if (a.shape[0] !== b.shape[0]) throw new RangeError(`bmm: batch ${a.shape[0]} vs ${b.shape[0]}`);
  return bmmCore(a, b, transA, transB, a.shape[0], 'bmm');
}

function bmmCore(a: Tensor, b: Tensor, tA: boolean, tB: boolean, G: number, op: string): Tensor {
  const r = a.rank;
  const [M, K] = tA ? [a.shape[r - 1], a.shape[r - 2]] : [a.shape[r - 2], a.shape[r - 1]];
  const [K2, N] = tB ? [b.shape[r - 1], b.shape[r - 2]] : [b.shape[r - 2], b.shape[r - 1]];
  if (K !== K2)
    throw new RangeError(
      `${op}: inner dimensions ${K} and ${K2} differ (${showShape(a.shape)}, ${showShape(b.shape)})`,
    );
  const out = new Float32Array(G * M * N);
  const sa = M * K;
  const sb = K * N;
  const sc = M * N;
  for (let g = 0; g < G; g++) gemm(M, N, K, a.data, g * sa, tA, b.data, g * sb, tB, out, g * sc, false);
  const shape = G === 1 && r === 2 ? [M, N] : [G, M, N];
  return result(out, shape, [a, b], (o) => {
    const gC = o.grad!;
    for (let g = 0; g < G; g++) {
      if (a.requiresGrad) {
        const gA = a.gradBuffer();
        if (!tA) gemm(M, K, N, gC, g * sc, false, b.data, g * sb, !tB, gA, g * sa, true);
        else gemm(K, M, N, b.data, g * sb, tB, gC, g * sc, true, gA, g * sa, true);
      }
      if (b.requiresGrad) {
        const gB = b.gradBuffer();
        if (!tB) gemm(K, N, M, a.data, g * sa, !tA, gC, g * sc, false, gB, g * sb, true);
        else gemm(N, K, M, gC, g * sc, true, a.data, g * sa, tA, gB, g * sb, true);
      }
    }
  });
}

/**
 * x · wᵀ + bias, PyTorch's nn.Linear layout: x (…, in), weight (out, in), bias (out) → (…, out).
 * One fused op so the bias is added while the row is hot and the backward needs no transposes.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  needRank(weight, 2, 'linear weight');
  const [nOut, nIn] = weight.shape;
  if (lastDim(x.shape) !== nIn)
    throw new RangeError(`linear: input ${showShape(x.shape)} vs weight ${showShape(weight.shape)}`);
  if (bias !== undefined && (bias.rank !== 1 || bias.shape[0] !== nOut)) {
    throw new RangeError(`linear: bias ${showShape(bias.shape)} vs weight ${showShape(weight.shape)}`);
  }
  const R = x.size / nIn;
  const y = new Float32Array(R * nOut); // (R, out)
  gemm(R, nOut, nIn, x.data, 0, false, weight.data, 0, true, y, 0, false);
  if (bias !== undefined) {
    const bd = bias.data;
    for (let r = 0, p = 0; r < R; r++) for (let j = 0; j < nOut; j++, p++) y[p] += bd[j];
  }
  const inputs = bias === undefined ? [x, weight] : [x, weight, bias];
  return result(y, [...x.shape.slice(0, -1), nOut], inputs, (o) => {
    const g = o.grad!; // (R, out)
    if (x.requiresGrad) gemm(R, nIn, nOut, g, 0, false, weight.data, 0, false, x.gradBuffer(), 0, true);
    if (weight.requiresGrad) gemm(nOut, nIn, R, g, 0, true, x.data, 0, false, weight.gradBuffer(), 0, true);
    if (bias?.requiresGrad) {
      const gb = bias.gradBuffer();
      for (let r = 0, p = 0; r < R; r++) for (let j = 0; j < nOut; j++, p++) gb[j] += g[p];
    }
  });
}

// ——— elementwise ———

function broadcastPeriod(a: Tensor, b: Tensor, op: string): number {
  if (b.size === 1) return 1;
  const k = b.rank;
  let ok = k <= a.rank;
  for (let i = 1; ok && i <= k; i++) ok = a.shape[a.rank - i] === b.shape[k - i];
  if (!ok)
    throw new RangeError(`${op}: shape ${showShape(b.shape)} does not broadcast to ${showShape(a.shape)}`);
  return b.size;
}

/** a + b, b broadcast over a's leading dimensions. */
export function add(a: Tensor, b: Tensor): Tensor {
  const nb = broadcastPeriod(a, b, 'add');
  const out = new Float32Array(a.size);
  const ad = a.data;
  const bd = b.data;
  // Same shapes (a residual connection): no index arithmetic per element.
  if (nb === out.length) for (let i = 0; i < out.length; i++) out[i] = ad[i] + bd[i];
  else for (let i = 0; i < out.length; i++) out[i] = ad[i] + bd[i % nb];
  return result(out, a.shape, [a, b], (o) => {
    const g = o.grad!;
    if (a.requiresGrad) {
      const ga = a.gradBuffer();
      for (let i = 0; i < g.length; i++) ga[i] += g[i];
    }
    if (b.requiresGrad) {
      const gb = b.gradBuffer();
      if (nb === g.length) for (let i = 0; i < g.length; i++) gb[i] += g[i];
      else for (let i = 0; i < g.length; i++) gb[i % nb] += g[i];
    }
  });
}

/** a − b, b broadcast over a's leading dimensions. */
export function sub(a: Tensor, b: Tensor): Tensor {
  const nb = broadcastPeriod(a, b, 'sub');
  const out = new Float32Array(a.size);
  const ad = a.data;
  const bd = b.data;
  for (let i = 0; i < out.length; i++) out[i] = ad[i] - bd[i % nb];
  return result(out, a.shape, [a, b], (o) => {
    const g = o.grad!;
    if (a.requiresGrad) {
      const ga = a.gradBuffer();
      for (let i = 0; i < g.length; i++) ga[i] += g[i];
    }
    if (b.requiresGrad) {
      const gb = b.gradBuffer();
      for (let i = 0; i < g.length; i++) gb[i % nb] -= g[i];
    }
  });
}

/** a ⊙ b, b broadcast over a's leading dimensions. */
export function mul(a: Tensor, b: Tensor): Tensor {
  const nb = broadcastPeriod(a, b, 'mul');
  const out = new Float32Array(a.size);
  const ad = a.data;
  const bd = b.data;
  for (let i = 0; i < out.length; i++) out[i] = ad[i] * bd[i % nb];
  return result(out, a.shape, [a, b], (o) => {
    const g = o.grad!;
    if (a.requiresGrad) {
      const ga = a.gradBuffer();
      for (let i = 0; i < g.length; i++) ga[i] += g[i] * bd[i % nb];
    }
    if (b.requiresGrad) {
      const gb = b.gradBuffer();
      for (let i = 0; i < g.length; i++) gb[i % nb] += g[i] * ad[i];
    }
  });
}

/** s · a for a constant s. */
export function scale(a: Tensor, s: number): Tensor {
  const out = new Float32Array(a.size);
  const ad = a.data;
  for (let i = 0; i < out.length; i++) out[i] = ad[i] * s;
  return result(out, a.shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) ga[i] += g[i] * s;
  });
}

export function relu(a: Tensor): Tensor {
  const out = new Float32Array(a.size);
  const ad = a.data;
  for (let i = 0; i < out.length; i++) out[i] = Math.max(ad[i], 0); // NaN stays NaN, as in torch.relu
  return result(out, a.shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) if (ad[i] > 0) ga[i] += g[i];
  });
}

export function tanh(a: Tensor): Tensor {
  const out = new Float32Array(a.size);
  const ad = a.data;
  for (let i = 0; i < out.length; i++) out[i] = Math.tanh(ad[i]);
  return result(out, a.shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) ga[i] += g[i] * (1 - out[i] * out[i]);
  });
}

const INV_SQRT2 = Math.SQRT1_2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

/** Numerical Recipes' erfc Chebyshev fit (Press et al., 2nd ed., §6.2, `erfcc`): coefficients of the
 * polynomial in t = 1/(1 + |x|/2) inside erfc(x) = t·exp(−x² + poly(t)); fractional error < 1.2e-7. */
const ERFC_POLY = [
  -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
  -0.82215223, 0.17087277,
];

/** erf(x) to float32 accuracy (JavaScript has no Math.erf). */
export function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  let poly = 0;
  for (let i = ERFC_POLY.length - 1; i >= 0; i--) poly = ERFC_POLY[i] + t * poly;
  const erfc = t * Math.exp(-z * z + poly);
  return x >= 0 ? 1 - erfc : erfc - 1;
}

/** GELU(x) = x·Φ(x) with the exact normal CDF (PyTorch's nn.GELU() default, approximate='none'). */
export function gelu(a: Tensor): Tensor {
  const out = new Float32Array(a.size);
  const ad = a.data;
  for (let i = 0; i < out.length; i++) out[i] = ad[i] * 0.5 * (1 + erf(ad[i] * INV_SQRT2));
  return result(out, a.shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) {
      const x = ad[i];
      const cdf = 0.5 * (1 + erf(x * INV_SQRT2));
      ga[i] += g[i] * (cdf + x * INV_SQRT_2PI * Math.exp(-0.5 * x * x));
    }
  });
}

// ——— reductions ———

/** Σ a → a scalar (shape []). */
export function sum(a: Tensor): Tensor {
  let s = 0;
  const ad = a.data;
  for (let i = 0; i < ad.length; i++) s += ad[i];
  return result(Float32Array.of(s), [], [a], (o) => {
    const g = o.grad![0];
    const ga = a.gradBuffer();
    for (let i = 0; i < ga.length; i++) ga[i] += g;
  });
}

/** mean(a) → a scalar (shape []). */
export function mean(a: Tensor): Tensor {
  return scale(sum(a), 1 / a.size);
}

// ——— embeddings and normalisation ———

/** Rows of table (V, D) picked by ids → (…idsShape, D); the gradient scatter-adds into the picked rows. */
export function embedding(table: Tensor, ids: Int32Array, idsShape: Shape = [ids.length]): Tensor {
  needRank(table, 2, 'embedding');
  const [V, D] = table.shape;
  if (sizeOf(idsShape) !== ids.length)
    throw new RangeError(`embedding: ${ids.length} ids for shape ${showShape(idsShape)}`);
  const out = new Float32Array(ids.length * D);
  for (let n = 0; n < ids.length; n++) {
    const id = ids[n];
    if (!(id >= 0 && id < V)) throw new RangeError(`embedding: id ${id} not in 0..${V - 1}`);
    out.set(table.data.subarray(id * D, id * D + D), n * D);
  }
  return result(out, [...idsShape, D], [table], (o) => {
    const g = o.grad!;
    const gt = table.gradBuffer();
    for (let n = 0; n < ids.length; n++) {
      const dst = ids[n] * D;
      for (let d = 0; d < D; d++) gt[dst + d] += g[n * D + d];
    }
  });
}

/**
 * Layer normalisation over the last dimension (Ba et al. 2016; PyTorch nn.LayerNorm: biased variance,
 * eps inside the square root): y = γ ⊙ (x − μ)/√(σ² + eps) + β.
 * Backward: with x̂ the normalised input and ĝ = g ⊙ γ, ∂x = (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)) / √(σ² + eps).
 */
export function layerNorm(x: Tensor, gamma: Tensor, beta: Tensor, eps = 1e-5): Tensor {
  const D = lastDim(x.shape);
  if (gamma.size !== D || beta.size !== D)
    throw new RangeError(`layerNorm: γ/β of size ${gamma.size}/${beta.size} for D=${D}`);
  const rows = x.size / D;
  const xd = x.data;
  const xhat = new Float64Array(x.size);
  const rstd = new Float64Array(rows);
  const y = new Float32Array(x.size);
  for (let r = 0, p = 0; r < rows; r++, p += D) {
    let mu = 0;
    for (let d = 0; d < D; d++) mu += xd[p + d];
    mu /= D;
    let v = 0;
    for (let d = 0; d < D; d++) v += (xd[p + d] - mu) ** 2;
    const rs = 1 / Math.sqrt(v / D + eps);
    rstd[r] = rs;
    for (let d = 0; d < D; d++) {
      const h = (xd[p + d] - mu) * rs;
      xhat[p + d] = h;
      y[p + d] = h * gamma.data[d] + beta.data[d];
    }
  }
  return result(y, x.shape, [x, gamma, beta], (o) => {
    const g = o.grad!;
    const gg = gamma.requiresGrad ? gamma.gradBuffer() : null;
    const gb = beta.requiresGrad ? beta.gradBuffer() : null;
    const gx = x.requiresGrad ? x.gradBuffer() : null;
    for (let r = 0, p = 0; r < rows; r++, p += D) {
      let mg = 0;
      let mgx = 0;
      for (let d = 0; d < D; d++) {
        const gh = g[p + d] * gamma.data[d];
        mg += gh;
        mgx += gh * xhat[p + d];
        if (gg !== null) gg[d] += g[p + d] * xhat[p + d];
        if (gb !== null) gb[d] += g[p + d];
      }
      if (gx === null) continue;
      mg /= D;
      mgx /= D;
      for (let d = 0; d < D; d++) gx[p + d] += (g[p + d] * gamma.data[d] - mg - xhat[p + d] * mgx) * rstd[r];
    }
  });
}
