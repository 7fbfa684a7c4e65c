// Layers with PyTorch's parameter names, layouts and default initialisation, so a checkpoint reads
// like a state_dict:
//   Linear     weight (out, in) ~ U(±1/√in), bias (out) ~ U(±1/√in)   — nn.Linear.reset_parameters:
//              kaiming_uniform_(a=√5) gives bound gain·√(3/fan_in) with gain = √(2/(1+a²)) = √(1/3),
//              i.e. 1/√fan_in; the bias uses the same bound.
//   Embedding  weight (V, D) ~ N(0, 1)                                 — nn.Embedding.reset_parameters
//   LayerNorm  weight (D) = 1, bias (D) = 0, eps 1e-5                   — nn.LayerNorm
// Every initialiser draws from the Rng it is given, so the same seed gives the same network.
import type { Rng } from '../core/rng.ts';
import { bmm, gelu, layerNorm, linear, relu, scale, tanh } from './ops.ts';
import { causalMask, permute, reshape, slice } from './shape-ops.ts';
import { softmax } from './softmax.ts';
import { parameter, type Tensor } from './tensor.ts';

export type NamedTensors = [name: string, tensor: Tensor][];

export abstract class Module {
  /** Parameters with their state_dict names, in a fixed order. */
  abstract namedParameters(prefix?: string): NamedTensors;

  parameters(): Tensor[] {
    return this.namedParameters().map(([, t]) => t);
  }

  /** Number of trainable scalars. */
  parameterCount(): number {
    let n = 0;
    for (const [, t] of this.namedParameters()) n += t.size;
    return n;
  }
}

function uniform(rng: Rng, n: number, bound: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * rng.float() - 1) * bound;
  return out;
}

export class Linear extends Module {
  readonly weight: Tensor; // (out, in)
  readonly bias: Tensor | undefined; // (out)

  constructor(inFeatures: number, outFeatures: number, rng: Rng, bias = true) {
    super();
    const bound = 1 / Math.sqrt(inFeatures);
    this.weight = parameter(uniform(rng, outFeatures * inFeatures, bound), [outFeatures, inFeatures]);
    this.bias = bias ? parameter(uniform(rng, outFeatures, bound), [outFeatures]) : undefined;
  }

  get inFeatures(): number {
    return this.weight.shape[1];
  }

  get outFeatures(): number {
    return this.weight.shape[0];
  }

  forward(x: Tensor): Tensor {
    return linear(x, this.weight, this.bias);
  }

  namedParameters(prefix = ''): NamedTensors {
    const out: NamedTensors = [[`${prefix}weight`, this.weight]];
    if (this.bias !== undefined) out.push([`${prefix}bias`, this.bias]);
    return out;
  }
}

export class Embedding extends Module {
  readonly weight: Tensor; // (V, D)

  constructor(numEmbeddings: number, dim: number, rng: Rng) {
    super();
    const w = new Float32Array(numEmbeddings * dim);
    for (let i = 0; i < w.length; i++) w[i] = rng.normal();
    this.weight = parameter(w, [numEmbeddings, dim]);
  }

  namedParameters(prefix = ''): NamedTensors {
    return [[`${prefix}weight`, this.weight]];
  }
}

export class LayerNorm extends Module {
  readonly weight: Tensor; // (D)
  readonly bias: Tensor; // (D)
  readonly eps: number;

  constructor(dim: number, eps = 1e-5) {
    super();
    this.weight = parameter(new Float32Array(dim).fill(1), [dim]);
    this.bias = parameter(new Float32Array(dim), [dim]);
    this.eps = eps;
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.weight, this.bias, this.eps);
  }

  namedParameters(prefix = ''): NamedTensors {
    return [
      [`${prefix}weight`, this.weight],
      [`${prefix}bias`, this.bias],
    ];
  }
}

export type Activation = 'relu' | 'tanh' | 'gelu';
/** The activations an MLP can use: the one list that configs, policy specs and flags read (a non-empty
 * tuple, as z.enum takes it). */
export const ACTIVATIONS: [Activation, ...Activation[]] = ['relu', 'tanh', 'gelu'];

export function activate(x: Tensor, activation: Activation): Tensor {
  return activation === 'relu' ? relu(x) : activation === 'tanh' ? tanh(x) : gelu(x);
}

/** sizes = [in, hidden…, out]: Linear layers with the activation between them, none after the last. */
export class MLP extends Module {
  readonly layers: Linear[];
  readonly activation: Activation;

  constructor(sizes: readonly number[], rng: Rng, activation: Activation = 'relu') {
    super();
    if (sizes.length < 2) throw new RangeError('MLP: give at least [in, out]');
    this.layers = [];
    for (let i = 0; i + 1 < sizes.length; i++) this.layers.push(new Linear(sizes[i], sizes[i + 1], rng));
    this.activation = activation;
  }

  forward(x: Tensor): Tensor {
    let h = x;
    this.layers.forEach((layer, i) => {
      h = layer.forward(h);
      if (i + 1 < this.layers.length) h = activate(h, this.activation);
    });
    return h;
  }

  namedParameters(prefix = ''): NamedTensors {
    return this.layers.flatMap((l, i) => l.namedParameters(`${prefix}layers.${i}.`));
  }
}

/**
 * Multi-head causal self-attention built from the ops above, nanoGPT's CausalSelfAttention
 * (model.py): one Linear to q, k, v (c_attn), softmax(q kᵀ/√d_head) under a causal mask, heads
 * concatenated, an output Linear (c_proj). No dropout.
 */
export class CausalSelfAttention extends Module {
  readonly cAttn: Linear; // (3C, C)
  readonly cProj: Linear; // (C, C)
  readonly nHead: number;

  constructor(nEmbd: number, nHead: number, rng: Rng) {
    super();
    if (nEmbd % nHead !== 0)
      throw new RangeError(`attention: ${nEmbd} channels do not split into ${nHead} heads`);
    this.cAttn = new Linear(nEmbd, 3 * nEmbd, rng);
    this.cProj = new Linear(nEmbd, nEmbd, rng);
    this.nHead = nHead;
  }

  forward(x: Tensor): Tensor {
    const [B, T, C] = x.shape; // (B, T, C)
    const H = this.nHead;
    const hd = C / H;
    const qkv = this.cAttn.forward(x); // (B, T, 3C)
    const heads = (t: Tensor) => reshape(permute(reshape(t, [B, T, H, hd]), [0, 2, 1, 3]), [B * H, T, hd]);
    const q = heads(slice(qkv, 0, C)); // (B·H, T, hd)
    const k = heads(slice(qkv, C, 2 * C));
    const v = heads(slice(qkv, 2 * C, 3 * C));
    const att = softmax(causalMask(scale(bmm(q, k, false, true), 1 / Math.sqrt(hd)))); // (B·H, T, T)
    const y = bmm(att, v); // (B·H, T, hd)
    const merged = reshape(permute(reshape(y, [B, H, T, hd]), [0, 2, 1, 3]), [B, T, C]);
    return this.cProj.forward(merged); // (B, T, C)
  }

  namedParameters(prefix = ''): NamedTensors {
    return [
      ...this.cAttn.namedParameters(`${prefix}c_attn.`),
      ...this.cProj.namedParameters(`${prefix}c_proj.`),
    ];
  }
}
