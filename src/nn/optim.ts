// Optimizers with PyTorch's update rules (torch.optim, single-tensor implementations), so that numbers
// can be checked against a reference by hand or by PyTorch:
//   SGD    d = g + λθ;  b = μb + d (b = d on the first step);  θ ← θ − lr·(μ > 0 ? b : d)
//   Adam   g ← g + λθ (L2, Adam) or θ ← θ(1 − lr·λ) (decoupled, AdamW — Loshchilov & Hutter 2019);
//          m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²;
//          θ ← θ − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + ε)           (Kingma & Ba 2015, Alg. 1)
// Updates are computed in double and stored in float32 (state included), like PyTorch on float32.
// A parameter whose grad was never allocated (it did not take part in the loss) is skipped, as
// PyTorch skips grad=None. State (step count, moment buffers) can be saved and restored.
import type { NamedTensors } from './layers.ts';
import type { Tensor } from './tensor.ts';

export interface OptimizerState {
  kind: 'sgd' | 'adam' | 'adamw';
  step: number;
  /** Hyper-parameters, for the record and to refuse a state made with other settings. */
  hyper: Record<string, number>;
  /** Per-parameter buffers named `<buffer>.<parameter name>` (Adam: m., v.; SGD: momentum.). */
  buffers: [name: string, data: Float32Array][];
}

export interface Optimizer {
  readonly params: NamedTensors;
  /** Learning rate; may be changed between steps (schedules). */
  lr: number;
  step(): void;
  zeroGrad(): void;
  state(): OptimizerState;
  loadState(state: OptimizerState): void;
}

function zeroGrads(params: NamedTensors): void {
  for (const [, p] of params) p.grad?.fill(0);
}

function restoreBuffers(
  params: NamedTensors,
  prefixes: readonly string[],
  buffers: readonly [string, Float32Array][],
  into: Map<string, Float32Array>[],
): void {
  const given = new Map(buffers);
  const expected = new Set<string>();
  prefixes.forEach((prefix, k) => {
    into[k].clear();
    for (const [name, p] of params) {
      const key = `${prefix}.${name}`;
      expected.add(key);
      const data = given.get(key);
      if (data === undefined) continue; // never stepped (no grad yet)
      if (data.length !== p.size)
        throw new RangeError(`optimizer state ${key}: ${data.length} values, parameter has ${p.size}`);
      into[k].set(name, Float32Array.from(data));
    }
  });
  for (const key of given.keys())
    if (!expected.has(key)) throw new RangeError(`optimizer state ${key}: no such parameter`);
}

export interface SgdOptions {
  lr: number;
  momentum?: number;
  weightDecay?: number;
}

export class SGD implements Optimizer {
  readonly params: NamedTensors;
  lr: number;
  readonly momentum: number;
  readonly weightDecay: number;
  private t = 0;
  private readonly buf = new Map<string, Float32Array>();

  constructor(params: NamedTensors, o: SgdOptions) {
    this.params = params;
    this.lr = o.lr;
    this.momentum = o.momentum ?? 0;
    this.weightDecay = o.weightDecay ?? 0;
  }

  step(): void {
    this.t++;
    const { lr, momentum: mu, weightDecay: wd } = this;
    for (const [name, p] of this.params) {
      const g = p.grad;
      if (g === null) continue;
      const th = p.data;
      let b = this.buf.get(name);
      if (mu !== 0 && b === undefined) {
        b = new Float32Array(p.size);
        for (let i = 0; i < b.length; i++) b[i] = g[i] + wd * th[i];
        this.buf.set(name, b);
        for (let i = 0; i < th.length; i++) th[i] -= lr * b[i];
        continue;
      }
      for (let i = 0; i < th.length; i++) {
        const d = g[i] + wd * th[i];
        if (b !== undefined) {
          b[i] = mu * b[i] + d;
          th[i] -= lr * b[i];
        } else th[i] -= lr * d;
      }
    }
  }

  zeroGrad(): void {
    zeroGrads(this.params);
  }

  state(): OptimizerState {
    return {
      kind: 'sgd',
      step: this.t,
      hyper: { lr: this.lr, momentum: this.momentum, weightDecay: this.weightDecay },
      buffers: [...this.buf].map(([n, d]) => [`momentum.${n}`, Float32Array.from(d)]),
    };
  }

  loadState(s: OptimizerState): void {
    if (s.kind !== 'sgd') throw new RangeError(`optimizer state is ${s.kind}, not sgd`);
    restoreBuffers(this.params, ['momentum'], s.buffers, [this.buf]);
    this.t = s.step;
  }
}

export interface AdamOptions {
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** AdamW: decay the weights directly instead of adding λθ to the gradient. */
  decoupled?: boolean;
}

export class Adam implements Optimizer {
  readonly params: NamedTensors;
  lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  readonly decoupled: boolean;
  private t = 0;
  private readonly m = new Map<string, Float32Array>();
  private readonly v = new Map<string, Float32Array>();

  /** Defaults are torch.optim.Adam's (lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay). */
  constructor(params: NamedTensors, o: AdamOptions = {}) {
    this.params = params;
    this.lr = o.lr ?? 1e-3;
    this.beta1 = o.beta1 ?? 0.9;
    this.beta2 = o.beta2 ?? 0.999;
    this.eps = o.eps ?? 1e-8;
    this.weightDecay = o.weightDecay ?? 0;
    this.decoupled = o.decoupled ?? false;
  }

  get stepCount(): number {
    return this.t;
  }

  step(): void {
    this.t++;
    const { lr, beta1: b1, beta2: b2, eps, weightDecay: wd, decoupled, t } = this;
    const stepSize = lr / (1 - b1 ** t);
    const bc2Sqrt = Math.sqrt(1 - b2 ** t);
    for (const [name, p] of this.params) {
      const g = p.grad;
      if (g === null) continue;
      let m = this.m.get(name);
      let v = this.v.get(name);
      if (m === undefined || v === undefined) {
        m = new Float32Array(p.size);
        v = new Float32Array(p.size);
        this.m.set(name, m);
        this.v.set(name, v);
      }
      const th = p.data;
      for (let i = 0; i < th.length; i++) {
        let gi = g[i];
        if (wd !== 0) {
          if (decoupled) th[i] *= 1 - lr * wd;
          else gi += wd * th[i];
        }
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        th[i] -= (stepSize * m[i]) / (Math.sqrt(v[i]) / bc2Sqrt + eps);
      }
    }
  }

  zeroGrad(): void {
    zeroGrads(this.params);
  }

  state(): OptimizerState {
    const buffers: [string, Float32Array][] = [];
    for (const [name] of this.params) {
      const m = this.m.get(name);
      const v = this.v.get(name);
      if (m !== undefined && v !== undefined)
        buffers.push([`m.${name}`, Float32Array.from(m)], [`v.${name}`, Float32Array.from(v)]);
    }
    return {
      kind: this.decoupled ? 'adamw' : 'adam',
      step: this.t,
      hyper: {
        lr: this.lr,
        beta1: this.beta1,
        beta2: this.beta2,
        eps: this.eps,
        weightDecay: this.weightDecay,
      },
      buffers,
    };
  }

  loadState(s: OptimizerState): void {
    const kind = this.decoupled ? 'adamw' : 'adam';
    if (s.kind !== kind) throw new RangeError(`optimizer state is ${s.kind}, not ${kind}`);
    if (!Number.isInteger(s.step) || s.step < 0) throw new RangeError(`optimizer state: step ${s.step}`);
    restoreBuffers(this.params, ['m', 'v'], s.buffers, [this.m, this.v]);
    this.t = s.step;
  }
}

/**
 * Scales all gradients so that their joint L2 norm is at most maxNorm (torch.nn.utils.clip_grad_norm_:
 * coefficient maxNorm / (norm + 1e-6), applied only when below 1). Returns the norm before clipping.
 */
export function clipGradNorm(params: Iterable<Tensor>, maxNorm: number): number {
  const list = [...params];
  let sq = 0;
  for (const p of list) {
    const g = p.grad;
    if (g !== null) for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
  }
  const norm = Math.sqrt(sq);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) {
    for (const p of list) {
      const g = p.grad;
      if (g !== null) for (let i = 0; i < g.length; i++) g[i] *= coef;
    }
  }
  return norm;
}
