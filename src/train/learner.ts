// What a training loop needs from a policy, for tables and networks alike: the acting policy (sharing
// its parameters with training), the parameters by name (optimizer, checkpoints, ES), differentiable
// logits for the turns of a batch, and frozen copies (the KL reference, the stale policy of
// cross-policy sampling). A tabular learner gathers rows of an (nS, nA) parameter; a neural one runs
// its MLP on the env's feature view — both through nn/, so one loss serves both.
import { Rng } from '../core/rng.ts';
import type { EnvSpec, Policy, Task, Trajectory, TurnContext } from '../core/types.ts';
import { makeEnv } from '../envs/index.ts';
import type { NamedTensors } from '../nn/layers.ts';
import { embedding } from '../nn/ops.ts';
import type { Optimizer } from '../nn/optim.ts';
import { noGrad, type Tensor } from '../nn/tensor.ts';
import { logSoftmaxRows } from '../policies/distribution.ts';
import { NeuralPolicy } from '../policies/neural.ts';
import { TabularPolicy } from '../policies/tabular.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface Learner {
  readonly kind: 'tabular' | 'mlp';
  readonly policy: AnyPolicy;
  readonly params: NamedTensors;
  readonly actions: number;
  /** Logits (N, nA) for the contexts, recording the graph for backward. */
  logits(ctxs: readonly TurnContext<unknown>[]): Tensor;
  /** log π(a|ctx) rows (N·nA) without a graph. */
  logProbs(ctxs: readonly TurnContext<unknown>[]): Float64Array;
  /** An independent copy with the current parameters. */
  clone(id?: string): Learner;
  /** Checkpoint bytes of the policy (with the optimizer state and extra metadata when given). */
  checkpoint(env: EnvSpec, optimizer?: Optimizer, extra?: Record<string, string>): Uint8Array;
}

export class TabularLearner implements Learner {
  readonly kind = 'tabular';
  readonly policy: TabularPolicy;
  readonly params: NamedTensors;
  readonly actions: number;

  constructor(policy: TabularPolicy) {
    this.policy = policy;
    this.params = [['logits', policy.table]];
    this.actions = policy.nA;
  }

  private ids(ctxs: readonly TurnContext<unknown>[]): Int32Array {
    return Int32Array.from(ctxs, (c) => this.policy.stateOf(c));
  }

  logits(ctxs: readonly TurnContext<unknown>[]): Tensor {
    return embedding(this.policy.table, this.ids(ctxs));
  }

  logProbs(ctxs: readonly TurnContext<unknown>[]): Float64Array {
    const z = noGrad(() => this.logits(ctxs)).data;
    return logSoftmaxRows(z, ctxs.length, this.actions);
  }

  clone(id = this.policy.id): TabularLearner {
    return new TabularLearner(
      new TabularPolicy(this.policy.nS, this.policy.nA, Float32Array.from(this.policy.logits), id),
    );
  }

  checkpoint(env: EnvSpec, optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return this.policy.checkpoint(env.id, optimizer, extra);
  }
}

export class NeuralLearner implements Learner {
  readonly kind = 'mlp';
  readonly policy: NeuralPolicy;
  readonly params: NamedTensors;
  readonly actions: number;

  constructor(policy: NeuralPolicy) {
    this.policy = policy;
    this.params = policy.net.namedParameters();
    this.actions = policy.actions;
  }

  logits(ctxs: readonly TurnContext<unknown>[]): Tensor {
    return this.policy.logits(this.policy.encodeBatch(ctxs));
  }

  logProbs(ctxs: readonly TurnContext<unknown>[]): Float64Array {
    return this.policy.logProbsBatch(ctxs);
  }

  clone(id = this.policy.id): NeuralLearner {
    return new NeuralLearner(this.policy.clone(id));
  }

  checkpoint(_env: EnvSpec, optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return this.policy.checkpoint(optimizer, extra);
  }
}

/** Wraps a policy that can be trained; undefined for policies without parameters (random, oracle). */
export function learnerFor(policy: AnyPolicy): Learner | undefined {
  if (policy instanceof TabularPolicy) return new TabularLearner(policy);
  if (policy instanceof NeuralPolicy) return new NeuralLearner(policy);
  return undefined;
}

const NO_RNG = Rng.derive(0);

/**
 * The context a recorded turn was acted in, as far as Markov policies see it: the observation, the
 * turns left when the budget was revealed, and the env's views (features, oracle) of its task.
 */
export function turnContexts(
  trajectory: Trajectory,
  envFor: (task: Task) => TurnContext<unknown>['env'] = makeEnv,
): TurnContext<unknown>[] {
  const env = envFor(trajectory.task);
  return trajectory.turns.map((turn) => ({
    observation: turn.observation,
    history: [],
    turn: turn.t,
    turnsLeft: trajectory.revealBudget ? trajectory.budget - turn.t : undefined,
    rng: NO_RNG,
    env,
  }));
}
