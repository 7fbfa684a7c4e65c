// The critic for GAE: a separate MLP V(s, h) over the env's feature view plus the turns left h (the
// finite-horizon value depends on the budget left even when the policy is budget-blind), trained by
// regression on λ-returns (A + V, as in CleanRL's ppo.py). V(s, 0) = 0 by definition, which is also the
// bootstrap value when the budget truncates an episode.
import type { Rng } from '../core/rng.ts';
import type { EnvView, Task, Trajectory } from '../core/types.ts';
import { MLP, type NamedTensors } from '../nn/layers.ts';
import { mean, mul, sub } from '../nn/ops.ts';
import { Adam, clipGradNorm } from '../nn/optim.ts';
import { reshape } from '../nn/shape-ops.ts';
import { backward, noGrad, tensor } from '../nn/tensor.ts';

export interface CriticOptions {
  hidden: number[];
  lr: number;
  epochs: number;
  minibatches: number;
  /** S in the turns-left encoding [min(h,S)/S, ln h / ln S]. */
  budgetScale: number;
  maxGradNorm: number;
}

export class Critic {
  readonly net: MLP;
  readonly optimizer: Adam;
  readonly options: CriticOptions;
  readonly features: number;

  constructor(features: number, options: CriticOptions, rng: Rng) {
    this.features = features;
    this.options = options;
    this.net = new MLP([features + 2, ...options.hidden, 1], rng, 'tanh');
    this.optimizer = new Adam(this.net.namedParameters(), { lr: options.lr });
  }

  namedParameters(): NamedTensors {
    return this.net.namedParameters().map(([n, t]) => [`critic.${n}`, t]);
  }

  /** Inputs (N, features + 2) for every turn of the trajectories, in order. */
  private encode(batch: readonly Trajectory[], viewOf: (task: Task) => EnvView<unknown>): Float32Array {
    const D = this.features + 2;
    const S = this.options.budgetScale;
    const n = batch.reduce((s, t) => s + t.turns.length, 0);
    const x = new Float32Array(n * D);
    let r = 0;
    for (const traj of batch) {
      const env = viewOf(traj.task);
      for (const turn of traj.turns) {
        const f = env.features?.(turn.observation);
        if (f === undefined) throw new Error(`critic: env ${traj.task.env} has no feature view`);
        x.set(f, r * D);
        const h = traj.budget - turn.t;
        x[r * D + this.features] = Math.min(h, S) / S;
        x[r * D + this.features + 1] = Math.log(Math.max(h, 1)) / Math.log(S);
        r++;
      }
    }
    return x;
  }

  /** V(s_t, h_t) for every turn (flattened in batch order). */
  values(batch: readonly Trajectory[], viewOf: (task: Task) => EnvView<unknown>): Float32Array {
    const x = this.encode(batch, viewOf);
    const n = x.length / (this.features + 2);
    if (n === 0) return new Float32Array(0);
    return noGrad(() => this.net.forward(tensor(x, [n, this.features + 2]))).data;
  }

  /** Regression of V on the targets (one per turn, batch order); returns the last epoch's mean loss. */
  fit(
    batch: readonly Trajectory[],
    targets: Float32Array,
    viewOf: (task: Task) => EnvView<unknown>,
    rng: Rng,
  ): number {
    const D = this.features + 2;
    const x = this.encode(batch, viewOf);
    const n = targets.length;
    let last = 0;
    const order = Array.from({ length: n }, (_, i) => i);
    const mb = Math.max(1, Math.ceil(n / this.options.minibatches));
    for (let epoch = 0; epoch < this.options.epochs; epoch++) {
      rng.shuffle(order);
      let total = 0;
      for (let start = 0; start < n; start += mb) {
        const idx = order.slice(start, start + mb);
        const xb = new Float32Array(idx.length * D);
        const yb = new Float32Array(idx.length);
        idx.forEach((i, k) => {
          xb.set(x.subarray(i * D, (i + 1) * D), k * D);
          yb[k] = targets[i];
        });
        this.optimizer.zeroGrad();
        const v = reshape(this.net.forward(tensor(xb, [idx.length, D])), [idx.length]);
        const err = sub(v, tensor(yb));
        const loss = mean(mul(err, err));
        backward(loss);
        clipGradNorm(
          this.net.namedParameters().map(([, t]) => t),
          this.options.maxGradNorm,
        );
        this.optimizer.step();
        total += loss.data[0] * idx.length;
      }
      last = total / Math.max(1, n);
    }
    return last;
  }
}
