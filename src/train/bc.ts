// Behaviour cloning: fit a neural policy to an expert's choices by cross-entropy,
//   L(θ) = −Σ_examples w · Σ_a p*(a|s) log π_θ(a|s) / Σ w,
// where the examples are the states the expert visits on the training tasks (its own rollouts, the
// classic BC data distribution — Pomerleau 1989; Ross & Bagnell 2010 for why errors compound off it),
// p* is the expert's action distribution (soft targets, `probs`) or a one-hot of the action it took
// (hard targets, `actions`), and w counts how often an identical example occurred: repeated visits of
// one (task, state[, turns left]) are merged into one weighted row, which is the same objective with
// fewer rows to push through the network.
import { InputError } from '../core/errors.ts';
import { discreteAction, isDiscrete } from '../core/policy.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type { EnvFactory, Policy, Task, TurnContext } from '../core/types.ts';
import { Adam } from '../nn/optim.ts';
import { crossEntropy } from '../nn/softmax.ts';
import { backward, tensor } from '../nn/tensor.ts';
import type { NeuralPolicy } from '../policies/neural.ts';
import { rollout } from '../rollout/batch.ts';
import { withEnvs } from '../rollout/env-cache.ts';

type AnyPolicy = Policy<unknown, unknown>;

export type BcTargets = 'probs' | 'actions';

export interface Demonstrations {
  /** Distinct examples. */
  n: number;
  /** Expert turns they came from (with repeats). */
  turns: number;
  /** Network inputs (n, student.inputs). */
  x: Float32Array;
  /** Soft targets (n, actions), or hard targets (n). */
  targets: Float32Array | Int32Array;
  /** How many expert turns each example stands for. */
  weight: Float32Array;
  /** Success rate of the expert's demonstration episodes. */
  expertSuccess: number;
}

export interface CollectOptions {
  envs: EnvFactory;
  tasks: readonly Task[];
  expert: AnyPolicy;
  student: NeuralPolicy;
  budget: number;
  /** Demonstration episodes per task (default 1). */
  episodesPerTask?: number;
  runSeed: number;
  targets: BcTargets;
}

/** Whether demonstrations and evaluation reveal the turns left (either policy may need them). */
export function revealFor(expert: AnyPolicy, student: NeuralPolicy): boolean {
  return expert.budgetAware || student.budgetAware;
}

export async function collectDemonstrations(o: CollectOptions): Promise<Demonstrations> {
  const { expert, student, budget } = o;
  const soft = o.targets === 'probs' && isDiscrete(expert) ? expert : undefined;
  if (o.targets === 'probs' && soft === undefined) {
    throw new InputError('--expert', expert.id, 'has no action distribution; use --targets actions');
  }
  const reveal = revealFor(expert, student);
  const samples = o.episodesPerTask ?? 1;
  const trajectories = await rollout({
    tasks: o.tasks,
    samples,
    budget,
    revealBudget: reveal,
    runSeed: o.runSeed,
    policy: expert,
    makeEnv: o.envs.make,
  });
  // h matters to the example when either policy looks at it.
  const keyH = reveal;
  const index = new Map<string, number>();
  const examples: { task: number; observation: unknown; h: number | undefined; action: number }[] = [];
  const counts: number[] = [];
  let turns = 0;
  let successes = 0;
  trajectories.forEach((t, i) => {
    const task = Math.floor(i / samples);
    if (t.outcome.success) successes++;
    for (const turn of t.turns) {
      turns++;
      const h = reveal ? budget - turn.t : undefined;
      const action =
        o.targets === 'actions'
          ? discreteAction(turn.action, student.actions, `${t.id} turn ${turn.t} action`)
          : -1;
      const key = `${task}|${JSON.stringify(turn.observation)}|${keyH ? h : ''}|${action}`;
      const k = index.get(key);
      if (k !== undefined) counts[k]++;
      else {
        index.set(key, examples.length);
        examples.push({ task, observation: turn.observation, h, action });
        counts.push(1);
      }
    }
  });
  const n = examples.length;
  const A = student.actions;
  const x = new Float32Array(n * student.inputs);
  const targets = o.targets === 'probs' ? new Float32Array(n * A) : new Int32Array(n);
  const rng = Rng.derive(o.runSeed, STREAM.train);
  // Identical Markov examples are merged (the student is an MLP over the observation and the turns
  // left), so an example's context carries no single history: it is (observation, turnsLeft) alone.
  await withEnvs(o.envs.make, async (views) => {
    for (let r = 0; r < n; r++) {
      const ex = examples[r];
      const env = await views.get(o.tasks[ex.task]);
      const ctx: TurnContext<unknown> = {
        observation: ex.observation,
        history: [],
        turn: 0,
        turnsLeft: ex.h,
        rng,
        env,
      };
      student.encode(ctx, x, r);
      if (targets instanceof Int32Array) targets[r] = ex.action;
      else targets.set(soft!.probs(ctx), r * A);
    }
  });
  return {
    n,
    turns,
    x,
    targets,
    weight: Float32Array.from(counts),
    expertSuccess: successes / trajectories.length,
  };
}

export interface TrainOptions {
  epochs: number;
  batchSize: number;
  lr: number;
  /** Decoupled weight decay (AdamW); 0 = Adam. */
  weightDecay: number;
  seed: number;
  /** Called after each epoch with its weighted mean loss (progress). */
  onEpoch?: (epoch: number, loss: number) => void;
}

export interface TrainResult {
  losses: number[];
  optimizer: Adam;
  steps: number;
}

/**
 * Epochs of minibatch steps over n examples in an order drawn from (seed, epoch): `step` takes a
 * minibatch's example indices, takes its optimizer step and returns its mean loss and its weight; an
 * epoch's loss is the weighted mean of its steps' (0 when nothing weighed).
 */
export function minibatchEpochs(
  n: number,
  o: Pick<TrainOptions, 'epochs' | 'batchSize' | 'seed' | 'onEpoch'>,
  step: (indices: number[]) => { loss: number; weight: number },
): { losses: number[]; steps: number } {
  const order = Array.from({ length: n }, (_, i) => i);
  const losses: number[] = [];
  let steps = 0;
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    Rng.derive(o.seed, STREAM.train, epoch).shuffle(order);
    let total = 0;
    let mass = 0;
    for (let b0 = 0; b0 < n; b0 += o.batchSize) {
      const r = step(order.slice(b0, b0 + o.batchSize));
      steps++;
      total += r.loss * r.weight;
      mass += r.weight;
    }
    const mean = mass === 0 ? 0 : total / mass;
    losses.push(mean);
    o.onEpoch?.(epoch + 1, mean);
  }
  return { losses, steps };
}

/** Minibatch Adam(W) on the weighted cross-entropy; the example order is drawn from (seed, epoch). */
export function trainBc(student: NeuralPolicy, data: Demonstrations, o: TrainOptions): TrainResult {
  const optimizer = new Adam(student.net.namedParameters(), {
    lr: o.lr,
    weightDecay: o.weightDecay,
    decoupled: o.weightDecay > 0,
  });
  const I = student.inputs;
  const A = student.actions;
  const soft = data.targets instanceof Float32Array;
  const { losses, steps } = minibatchEpochs(data.n, o, (idx) => {
    const B = idx.length;
    const xb = new Float32Array(B * I);
    const tb = soft ? new Float32Array(B * A) : new Int32Array(B);
    const wb = new Float32Array(B);
    for (let r = 0; r < B; r++) {
      const i = idx[r];
      xb.set(data.x.subarray(i * I, (i + 1) * I), r * I);
      if (tb instanceof Float32Array) tb.set(data.targets.subarray(i * A, (i + 1) * A), r * A);
      else tb[r] = data.targets[i];
      wb[r] = data.weight[i];
    }
    optimizer.zeroGrad();
    const loss = crossEntropy(student.logits(tensor(xb, [B, I])), tb, wb);
    backward(loss);
    optimizer.step();
    let w = 0;
    for (let r = 0; r < B; r++) w += wb[r];
    return { loss: loss.item(), weight: w };
  });
  return { losses, optimizer, steps };
}
