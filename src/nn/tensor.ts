// Float32 tensors (row-major, explicit shapes) and reverse-mode automatic differentiation on a tape.
//
// The tape is the creation order: every tensor an op makes gets the next sequence number, so any
// tensor's inputs were created before it. backward(loss) collects the tensors that lead to `loss`
// and runs their backward functions in decreasing sequence order — a topological order by
// construction, without a global list to clear (micrograd's graph walk, with the sort replaced by the
// creation order). Ops record a backward function only when grad mode is on and an input requires a
// gradient; under noGrad() the same ops build no graph at all (inference in rollouts).
//
// Gradients of intermediate tensors live only during backward() (PyTorch keeps no .grad on non-leaf
// tensors either): once a node's backward function has run, nothing reads its grad again, so the buffer
// goes back to a free list that later gradBuffer() calls take from (zero-filled, as a new one would be).
// A training step then reuses the same few buffers instead of allocating and collecting ~100 MB.

export type Shape = readonly number[];

let sequence = 0;
let gradEnabled = true;

/** Marks a node whose backward already ran (its closure and inputs were released). */
const CONSUMED = (): void => {
  throw new Error('backward: this graph was already consumed by an earlier backward()');
};

export class Tensor {
  readonly data: Float32Array;
  readonly shape: Shape;
  /** ∂loss/∂this. A leaf's (a parameter's) is allocated by the first backward pass that reaches it and
   * accumulates across passes; an intermediate tensor's lives only while backward() runs (null after). */
  grad: Float32Array | null = null;
  readonly requiresGrad: boolean;
  /** Position on the tape. */
  readonly seq: number;
  /** The op's inputs and the function that adds this tensor's grad into theirs (null for leaves). */
  inputs: readonly Tensor[];
  backwardFn: (() => void) | null;

  constructor(
    data: Float32Array,
    shape: Shape,
    requiresGrad = false,
    inputs: readonly Tensor[] = [],
    backwardFn: (() => void) | null = null,
  ) {
    if (data.length !== sizeOf(shape)) {
      throw new RangeError(`tensor: ${data.length} values for shape [${shape.join(', ')}]`);
    }
    this.data = data;
    this.shape = shape;
    this.requiresGrad = requiresGrad;
    this.inputs = inputs;
    this.backwardFn = backwardFn;
    this.seq = sequence++;
  }

  get size(): number {
    return this.data.length;
  }

  get rank(): number {
    return this.shape.length;
  }

  /** The grad buffer, allocated (zeroed) on first use. */
  gradBuffer(): Float32Array {
    this.grad ??= zeroedBuffer(this.data.length);
    return this.grad;
  }

  /** The single value of a one-element tensor (a loss). */
  item(): number {
    if (this.data.length !== 1) throw new RangeError(`item(): tensor has ${this.data.length} values`);
    return this.data[0];
  }
}

/** Released grad buffers by length, and the floats they hold (bounded by FREE_MAX). */
const free = new Map<number, Float32Array[]>();
let freeFloats = 0;
const FREE_MAX = 1 << 25;

function zeroedBuffer(n: number): Float32Array {
  const list = free.get(n);
  const b = list?.pop();
  if (b === undefined) return new Float32Array(n);
  freeFloats -= n;
  return b.fill(0);
}

function release(b: Float32Array): void {
  if (freeFloats + b.length > FREE_MAX) return;
  const list = free.get(b.length);
  if (list === undefined) free.set(b.length, [b]);
  else list.push(b);
  freeFloats += b.length;
}

/** The size of the last dimension (what per-row ops act on). */
export function lastDim(shape: Shape): number {
  if (shape.length === 0) throw new RangeError('expected a tensor of rank ≥ 1');
  return shape[shape.length - 1];
}

/** A shape as error messages show it: `[2, 3]`. */
export function showShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

export function needRank(t: Tensor, rank: number, op: string): void {
  if (t.rank !== rank) throw new RangeError(`${op}: expected rank ${rank}, got shape ${showShape(t.shape)}`);
}

export function sizeOf(shape: Shape): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0)
      throw new RangeError(`bad dimension ${d} in shape [${shape.join(', ')}]`);
    n *= d;
  }
  return n;
}

/** A constant (no gradient). */
export function tensor(data: ArrayLike<number>, shape: Shape = [data.length]): Tensor {
  return new Tensor(data instanceof Float32Array ? data : Float32Array.from(data), shape);
}

export function zeros(shape: Shape): Tensor {
  return new Tensor(new Float32Array(sizeOf(shape)), shape);
}

/** A trainable leaf. */
export function parameter(data: Float32Array, shape: Shape): Tensor {
  return new Tensor(data, shape, true);
}

/** Whether ops currently record backward functions. */
export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Runs fn with recording off (like torch.no_grad()): no graph, no closures, less garbage. */
export function noGrad<T>(fn: () => T): T {
  const was = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = was;
  }
}

/**
 * The result of an op. `backward` is called during backward() with the result's grad in place; it
 * adds into the grads of whichever inputs require one. Recorded only when needed.
 */
export function result(
  data: Float32Array,
  shape: Shape,
  inputs: readonly Tensor[],
  backward: (out: Tensor) => void,
): Tensor {
  let needs = false;
  if (gradEnabled) for (const t of inputs) needs ||= t.requiresGrad;
  if (!needs) return new Tensor(data, shape);
  const out: Tensor = new Tensor(data, shape, true, inputs, () => backward(out));
  return out;
}

/**
 * Reverse-mode sweep from `loss` (a scalar unless `seed` gives ∂L/∂loss). Leaves accumulate into
 * .grad (call zeroGrad between steps); the graph is consumed (PyTorch's retain_graph=False).
 */
export function backward(loss: Tensor, seed?: Float32Array): void {
  if (!loss.requiresGrad) throw new Error('backward: the loss does not depend on any parameter');
  if (seed === undefined && loss.size !== 1) {
    throw new RangeError(`backward: loss has ${loss.size} values; pass a seed gradient`);
  }
  const nodes: Tensor[] = [];
  const seen = new Set<Tensor>();
  const stack: Tensor[] = [loss];
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (seen.has(t)) continue;
    seen.add(t);
    if (t.backwardFn === null) continue;
    if (t.backwardFn === CONSUMED) CONSUMED();
    nodes.push(t);
    for (const input of t.inputs) if (input.requiresGrad && !seen.has(input)) stack.push(input);
  }
  nodes.sort((a, b) => b.seq - a.seq);
  const g = loss.gradBuffer();
  if (seed === undefined) g[0] += 1;
  else {
    if (seed.length !== g.length)
      throw new RangeError(`backward: seed has ${seed.length} values, loss ${g.length}`);
    for (let i = 0; i < g.length; i++) g[i] += seed[i];
  }
  for (const t of nodes) {
    if (t.grad !== null) t.backwardFn!();
    t.backwardFn = CONSUMED;
    t.inputs = [];
    // An intermediate's grad is spent (see the header); the loss keeps its own.
    if (t !== loss && t.grad !== null) {
      release(t.grad);
      t.grad = null;
    }
  }
}

/** Clears the grads of the given tensors (parameters). */
export function zeroGrad(params: Iterable<Tensor>): void {
  for (const p of params) p.grad?.fill(0);
}
