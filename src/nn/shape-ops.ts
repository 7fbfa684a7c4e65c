// Shape ops: reshape, concat, slice, permute and the causal mask. Each moves values without arithmetic
// and its backward routes ∂L/∂output back to where each value came from. Conventions and gradient
// checks as for every op (nn/ops.ts).
import { lastDim, result, type Shape, showShape, sizeOf, type Tensor } from './tensor.ts';

/** The same values under another shape (no copy of the forward data). */
export function reshape(a: Tensor, shape: Shape): Tensor {
  if (sizeOf(shape) !== a.size)
    throw new RangeError(`reshape: ${showShape(a.shape)} has ${a.size} values, not ${sizeOf(shape)}`);
  return result(a.data, shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) ga[i] += g[i];
  });
}

function axisOf(axis: number, rank: number, op: string): number {
  const ax = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(ax) || ax < 0 || ax >= rank)
    throw new RangeError(`${op}: axis ${axis} for rank ${rank}`);
  return ax;
}

/** Concatenation along an axis (default the last); every other dimension must agree. */
export function concat(parts: readonly Tensor[], axis = -1): Tensor {
  if (parts.length === 0) throw new RangeError('concat: nothing to concatenate');
  const rank = parts[0].rank;
  const ax = axisOf(axis, rank, 'concat');
  const shape = [...parts[0].shape];
  shape[ax] = 0;
  for (const t of parts) {
    if (t.rank !== rank || t.shape.some((d, i) => i !== ax && d !== parts[0].shape[i])) {
      throw new RangeError(
        `concat: ${showShape(t.shape)} does not fit ${showShape(parts[0].shape)} along axis ${ax}`,
      );
    }
    shape[ax] += t.shape[ax];
  }
  const outer = sizeOf(shape.slice(0, ax));
  const inner = sizeOf(shape.slice(ax + 1));
  const row = shape[ax] * inner;
  const out = new Float32Array(outer * row);
  let offset = 0;
  const offsets: number[] = [];
  for (const t of parts) {
    offsets.push(offset);
    const w = t.shape[ax] * inner;
    for (let o = 0; o < outer; o++) out.set(t.data.subarray(o * w, o * w + w), o * row + offset);
    offset += w;
  }
  return result(out, shape, parts, (res) => {
    const g = res.grad!;
    parts.forEach((t, k) => {
      if (!t.requiresGrad) return;
      const gt = t.gradBuffer();
      const w = t.shape[ax] * inner;
      for (let o = 0; o < outer; o++)
        for (let i = 0; i < w; i++) gt[o * w + i] += g[o * row + offsets[k] + i];
    });
  });
}

/** Indices start..end−1 along an axis (default the last). */
export function slice(a: Tensor, start: number, end: number, axis = -1): Tensor {
  const ax = axisOf(axis, a.rank, 'slice');
  const n = a.shape[ax];
  if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start <= end && end <= n)) {
    throw new RangeError(`slice: ${start}:${end} out of 0:${n}`);
  }
  const shape = [...a.shape];
  shape[ax] = end - start;
  const outer = sizeOf(a.shape.slice(0, ax));
  const inner = sizeOf(a.shape.slice(ax + 1));
  const w = (end - start) * inner;
  const row = n * inner;
  const out = new Float32Array(outer * w);
  for (let o = 0; o < outer; o++)
    out.set(a.data.subarray(o * row + start * inner, o * row + start * inner + w), o * w);
  return result(out, shape, [a], (res) => {
    const g = res.grad!;
    const ga = a.gradBuffer();
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < w; i++) ga[o * row + start * inner + i] += g[o * w + i];
  });
}

/** Reorders the axes: out.shape[i] = a.shape[dims[i]] (torch.permute). */
export function permute(a: Tensor, dims: readonly number[]): Tensor {
  const rank = a.rank;
  if (dims.length !== rank || new Set(dims).size !== rank || dims.some((d) => !(d >= 0 && d < rank))) {
    throw new RangeError(`permute: [${dims.join(', ')}] is not a permutation of ${rank} axes`);
  }
  const shape = dims.map((d) => a.shape[d]);
  const inStrides = new Array<number>(rank);
  for (let i = rank - 1, s = 1; i >= 0; i--) {
    inStrides[i] = s;
    s *= a.shape[i];
  }
  // src[i] = the input offset of output element i, computed once and used both ways.
  const src = new Int32Array(a.size);
  const strides = dims.map((d) => inStrides[d]);
  const idx = new Array<number>(rank).fill(0);
  for (let i = 0, off = 0; i < a.size; i++) {
    src[i] = off;
    for (let k = rank - 1; k >= 0; k--) {
      idx[k]++;
      off += strides[k];
      if (idx[k] < shape[k]) break;
      off -= strides[k] * shape[k];
      idx[k] = 0;
    }
  }
  const out = new Float32Array(a.size);
  for (let i = 0; i < out.length; i++) out[i] = a.data[src[i]];
  return result(out, shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let i = 0; i < g.length; i++) ga[src[i]] += g[i];
  });
}

/** Sets entries above the diagonal of the last two (T, T) axes to −∞: position t attends to ≤ t only. */
export function causalMask(a: Tensor): Tensor {
  if (a.rank < 2 || a.shape[a.rank - 1] !== a.shape[a.rank - 2]) {
    throw new RangeError(`causalMask: expected (…, T, T), got ${showShape(a.shape)}`);
  }
  const T = lastDim(a.shape);
  const out = new Float32Array(a.data);
  for (let base = 0; base < out.length; base += T * T) {
    for (let i = 0; i < T; i++)
      for (let j = i + 1; j < T; j++) out[base + i * T + j] = Number.NEGATIVE_INFINITY;
  }
  return result(out, a.shape, [a], (o) => {
    const g = o.grad!;
    const ga = a.gradBuffer();
    for (let base = 0; base < g.length; base += T * T) {
      for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) ga[base + i * T + j] += g[base + i * T + j];
    }
  });
}
