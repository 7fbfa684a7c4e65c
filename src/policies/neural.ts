// A neural policy: an MLP over the env's feature view, π(·|o) = softmax(MLP(x(o))). For FrozenLake
// x(o) = [hole one-hot | goal one-hot | position one-hot] (3·nS), so one network acts on any map of its
// size — it generalises across maps where a table cannot. A budget-aware policy also sees the turns
// left h, encoded as [min(h, S)/S, ln h / ln S] with S = budgetScale (a linear and a log view: the
// difference between 3 and 5 turns left matters more than between 83 and 85).
//
// Acting: `actBatch` runs one batched forward for many episodes (the lockstep rollout); `act`,
// `probs` and `logProb` run the same forward on one row. The matmul kernel gives a row the same bits
// alone or in a batch (nn/gemm.ts), so both paths sample the same action from the same episode RNG.
// Log-probabilities are computed as logit − logsumexp (exact for tiny probabilities, unlike log p).
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Action, BatchedPolicy, DiscretePolicy, EnvSpec, TurnContext } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { checkpointBytes, loadParameters, writeCheckpoint } from '../nn/checkpoint.ts';
import { ACTIVATIONS, type Activation, MLP } from '../nn/layers.ts';
import type { Optimizer } from '../nn/optim.ts';
import { noGrad, type Tensor, tensor } from '../nn/tensor.ts';
import { checkpointKind, readPolicyCheckpoint } from './checkpoint-file.ts';
import { logSoftmaxRows } from './distribution.ts';

export { POLICY_FILE } from './checkpoint-file.ts';

const ConfigSchema = z
  .object({
    kind: z.literal('mlp-policy'),
    version: z.literal(1),
    env: z.string(),
    features: z.number().int().min(1),
    actions: z.number().int().min(2),
    hidden: z.array(z.number().int().min(1)),
    activation: z.enum(ACTIVATIONS as [Activation, ...Activation[]]),
    budgetAware: z.boolean(),
    budgetScale: z.number().gt(1),
    seed: z.number().int().min(0),
  })
  .strict();

/** What a checkpoint's `__metadata__.turnwise` holds: enough to rebuild the network before loading. */
export type MlpPolicyConfig = z.infer<typeof ConfigSchema>;

export interface MlpPolicyOptions {
  hidden?: readonly number[];
  activation?: Activation;
  budgetAware?: boolean;
  /** S in the turns-left encoding (default: the env's registered limit, else 100). */
  budgetScale?: number;
  seed?: number;
}

/** The config of a fresh network for an env (checks that the env has a feature view and actions). */
export function mlpPolicyConfig(env: EnvSpec, o: MlpPolicyOptions = {}, field = '--policy'): MlpPolicyConfig {
  if (env.features === undefined)
    throw new InputError(field, env.id, 'a neural policy needs an env with a feature view');
  if (typeof env.actions !== 'number')
    throw new InputError(field, env.id, 'a neural policy needs discrete actions');
  return {
    kind: 'mlp-policy',
    version: 1,
    env: env.id,
    features: env.features,
    actions: env.actions,
    hidden: [...(o.hidden ?? [64, 64])],
    activation: o.activation ?? 'relu',
    budgetAware: o.budgetAware ?? false,
    budgetScale: o.budgetScale ?? env.maxTurns ?? 100,
    seed: o.seed ?? 0,
  };
}

export class NeuralPolicy implements DiscretePolicy, BatchedPolicy<unknown, number> {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly config: MlpPolicyConfig;
  readonly net: MLP;
  /** Width of the network input: the features, plus 2 for the turns left when budget-aware. */
  readonly inputs: number;
  readonly actions: number;

  /** A freshly initialised network (PyTorch's default init, from Rng.derive(config.seed)). */
  constructor(config: MlpPolicyConfig, id?: string) {
    this.config = config;
    this.budgetAware = config.budgetAware;
    this.inputs = config.features + (config.budgetAware ? 2 : 0);
    this.actions = config.actions;
    this.net = new MLP(
      [this.inputs, ...config.hidden, config.actions],
      Rng.derive(config.seed),
      config.activation,
    );
    this.id =
      id ??
      `mlp:hidden=${config.hidden.join('x')},seed=${config.seed}${config.activation === 'relu' ? '' : `,activation=${config.activation}`}${config.budgetAware ? ',budgetAware=1' : ''}`;
  }

  /** Writes the network input of one context into x at row r. */
  encode(ctx: TurnContext<unknown>, x: Float32Array, r: number): void {
    const f = ctx.env.features?.(ctx.observation);
    if (f === undefined) throw new Error(`policy ${this.id}: env ${ctx.env.spec.id} has no feature view`);
    if (f.length !== this.config.features) {
      throw new Error(
        `policy ${this.id}: expects ${this.config.features} features, the env gives ${f.length}`,
      );
    }
    const base = r * this.inputs;
    x.set(f, base);
    if (this.budgetAware) {
      const h = ctx.turnsLeft;
      if (h === undefined) throw new Error(`policy ${this.id} acts on the turns left: reveal the budget`);
      const S = this.config.budgetScale;
      x[base + f.length] = Math.min(h, S) / S;
      x[base + f.length + 1] = Math.log(Math.max(h, 1)) / Math.log(S);
    }
  }

  /** The network input of a batch of contexts: (B, inputs). */
  encodeBatch(ctxs: readonly TurnContext<unknown>[]): Tensor {
    const x = new Float32Array(ctxs.length * this.inputs);
    ctxs.forEach((ctx, r) => {
      this.encode(ctx, x, r);
    });
    return tensor(x, [ctxs.length, this.inputs]);
  }

  /** Logits (B, actions), differentiable (training). */
  logits(x: Tensor): Tensor {
    return this.net.forward(x);
  }

  /** log π(·|ctx) for each context, row-major (B·actions), without recording a graph. */
  logProbsBatch(ctxs: readonly TurnContext<unknown>[]): Float64Array {
    const z = noGrad(() => this.net.forward(this.encodeBatch(ctxs))).data;
    return logSoftmaxRows(z, ctxs.length, this.actions);
  }

  /** π(·|ctx) for each context: one Float64Array of length `actions` per context. */
  probsBatch(ctxs: readonly TurnContext<unknown>[]): Float64Array[] {
    const lp = this.logProbsBatch(ctxs);
    const A = this.actions;
    return ctxs.map((_, r) => Float64Array.from(lp.subarray(r * A, (r + 1) * A), Math.exp));
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    return this.probsBatch([ctx])[0];
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    if (!(Number.isInteger(action) && action >= 0 && action < this.actions)) return Number.NEGATIVE_INFINITY;
    return this.logProbsBatch([ctx])[action];
  }

  act(ctx: TurnContext<unknown>): Action<number> {
    return this.actBatch([ctx])[0];
  }

  /** One forward for all contexts; each samples from its own episode RNG (ctx.rng). */
  actBatch(ctxs: readonly TurnContext<unknown>[]): Action<number>[] {
    const lp = this.logProbsBatch(ctxs);
    const A = this.actions;
    const p = new Float64Array(A);
    return ctxs.map((ctx, r) => {
      for (let a = 0; a < A; a++) p[a] = Math.exp(lp[r * A + a]);
      const action = ctx.rng.categorical(p);
      return { action, logp: lp[r * A + action] };
    });
  }

  parameterCount(): number {
    return this.net.parameterCount();
  }

  /** An independent copy: same config and parameter values, separate storage. */
  clone(id = this.id): NeuralPolicy {
    const copy = new NeuralPolicy(this.config, id);
    const from = this.net.namedParameters();
    copy.net.namedParameters().forEach(([, t], i) => {
      t.data.set(from[i][1].data);
    });
    return copy;
  }

  /** The checkpoint bytes: parameters, optimizer state when given, config and extra metadata. */
  checkpoint(optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return checkpointBytes(this.net.namedParameters(), this.config, optimizer, extra);
  }

  save(path: string, optimizer?: Optimizer, extra: Record<string, string> = {}): void {
    writeCheckpoint(path, this.checkpoint(optimizer, extra));
  }
}

/**
 * CHECKPOINT_LOADERS entry: a neural policy from a safetensors file or a run directory holding one.
 * Returns undefined for anything that is not a turnwise MLP policy (another loader may read it);
 * refuses with a one-line InputError a `.safetensors` file that is corrupted, or one that does not fit
 * the env (feature length, action count) or whose tensors do not match its config.
 */
export function loadNeuralPolicy(path: string, env: EnvSpec): NeuralPolicy | undefined {
  const found = readPolicyCheckpoint(path);
  if (found === undefined || checkpointKind(found.checkpoint) !== 'mlp-policy') return undefined;
  const { file, checkpoint: ck } = found;
  const config = fromZod(ConfigSchema, ck.config, `${file} __metadata__.turnwise`);
  const mismatch = (what: string, saved: number, now: number | string | undefined) =>
    InputError.raw(
      file,
      `the policy was trained on ${what} ${saved} (${config.env}); this env (${env.id}) has ${now ?? 'none'}`,
    );
  if (config.features !== env.features) throw mismatch('features of length', config.features, env.features);
  if (config.actions !== env.actions) throw mismatch('an action count of', config.actions, env.actions);
  const policy = new NeuralPolicy(config, path);
  loadParameters(policy.net.namedParameters(), ck.params, file);
  return policy;
}
