// The two elementwise ops the Llama layout adds to the engine: RMSNorm and SwiGLU (rotary positions are
// in nn/rope.ts, attention in nn/attention.ts). Conventions and gradient checks as for every op
// (nn/ops.ts); both loop over plain typed arrays, no per-element closures.
import { isGradEnabled, lastDim, result, showShape, type Tensor } from './tensor.ts';

/**
 * RMS normalisation over the last dimension (Zhang & Sennrich 2019; HF LlamaRMSNorm, llama.cpp
 * `ggml_rms_norm` then a multiply by `attn_norm.weight`): y = x / √(mean(x²) + eps) ⊙ w. No mean is
 * subtracted and there is no bias. With r = 1/√(mean(x²) + eps), x̂ = x·r and ĝ = g ⊙ w, the backward is
 * ∂x = r · (ĝ − x̂ · mean(ĝ ⊙ x̂)), ∂w = Σ_rows g ⊙ x̂. The row statistics are taken in double.
 */
export function rmsNorm(x: Tensor, weight: Tensor, eps = 1e-5): Tensor {
  const D = lastDim(x.shape);
  if (weight.size !== D) throw new RangeError(`rmsNorm: weight ${showShape(weight.shape)} for rows of ${D}`);
  const rows = x.size / D;
  const xd = x.data;
  const w = weight.data;
  const rstd = new Float64Array(rows);
  const y = new Float32Array(x.size);
  for (let r = 0, p = 0; r < rows; r++, p += D) {
    let ss = 0;
    for (let d = 0; d < D; d++) ss += xd[p + d] * xd[p + d];
    const rs = 1 / Math.sqrt(ss / D + eps);
    rstd[r] = rs;
    for (let d = 0; d < D; d++) y[p + d] = xd[p + d] * rs * w[d];
  }
  return result(y, x.shape, [x, weight], (o) => {
    const g = o.grad!;
    const gw = weight.requiresGrad ? weight.gradBuffer() : null;
    const gx = x.requiresGrad ? x.gradBuffer() : null;
    for (let r = 0, p = 0; r < rows; r++, p += D) {
      const rs = rstd[r];
      let dot = 0; // Σ_d ĝ_d x̂_d
      for (let d = 0; d < D; d++) {
        const xh = xd[p + d] * rs;
        dot += g[p + d] * w[d] * xh;
        if (gw !== null) gw[d] += g[p + d] * xh;
      }
      if (gx === null) continue;
      const m = dot / D;
      for (let d = 0; d < D; d++) gx[p + d] += rs * (g[p + d] * w[d] - xd[p + d] * rs * m);
    }
  });
}

/**
 * SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer"; Llama's MLP
 * down(silu(gate(x)) ⊙ up(x))): silu(gate) ⊙ up with silu(z) = z·σ(z). Backward, with s = σ(z):
 * ∂gate = g·up·s·(1 + z(1 − s)), ∂up = g·silu(z). σ is evaluated as 1/(1 + e^−z), which saturates to 0
 * or 1 without overflow for any float32 z.
 */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  if (gate.size !== up.size || gate.rank !== up.rank || gate.shape.some((d, i) => d !== up.shape[i]))
    throw new RangeError(`swiglu: gate ${showShape(gate.shape)} vs up ${showShape(up.shape)}`);
  const n = gate.size;
  const z = gate.data;
  const u = up.data;
  const y = new Float32Array(n);
  // σ is kept for the backward (one exp per element in all) only when a graph is being recorded.
  const sig = isGradEnabled() && (gate.requiresGrad || up.requiresGrad) ? new Float32Array(n) : null;
  for (let i = 0; i < n; i++) {
    const s = 1 / (1 + Math.exp(-z[i]));
    if (sig !== null) sig[i] = s;
    y[i] = z[i] * s * u[i];
  }
  return result(y, gate.shape, [gate, up], (o) => {
    const g = o.grad!;
    const gg = gate.requiresGrad ? gate.gradBuffer() : null;
    const gu = up.requiresGrad ? up.gradBuffer() : null;
    for (let i = 0; i < n; i++) {
      const s = sig![i];
      if (gg !== null) gg[i] += g[i] * u[i] * s * (1 + z[i] * (1 - s));
      if (gu !== null) gu[i] += g[i] * z[i] * s;
    }
  });
}
