// What a training loop needs from a policy, for tables, networks and text policies alike: the acting
// policy (sharing its parameters with training), the parameters by name (optimizer, checkpoints, ES),
// the *units* of a batch — the categorical choices the policy-gradient loss weights — with
// differentiable logits for them, and frozen copies (the KL reference, the stale policy of
// cross-policy sampling).
//
// A unit is one categorical decision: a turn for today's discrete policies (the action among
// spec.actions), a token for a text policy (the next token among the vocabulary; a turn's log-prob is
// the sum of its action tokens'). `own` is the mask: forced turns (expert prefixes, injected errors)
// and observation tokens are not the policy's own and never enter a loss. Every unit's context is
// rebuilt by rollout/contextAt, the same function the diagnostics score with.
import { discreteAction, discreteActionCount } from '../core/policy.ts';
import type { EnvSpec, EnvView, Policy, Task, Trajectory, TurnContext } from '../core/types.ts';
import type { NamedTensors } from '../nn/layers.ts';
import { embedding } from '../nn/ops.ts';
import type { Optimizer } from '../nn/optim.ts';
import { noGrad, type Tensor } from '../nn/tensor.ts';
import { logSoftmaxRows } from '../policies/distribution.ts';
import { NeuralPolicy } from '../policies/neural.ts';
import { TabularPolicy } from '../policies/tabular.ts';
import { contextAt } from '../rollout/context.ts';

type AnyPolicy = Policy<unknown, unknown>;

/** The env (a view, never stepped) of a trajectory's task. */
export type ViewOf = (task: Task) => EnvView<unknown>;

export interface Unit {
  /** Index of the trajectory in the batch, and of its turn. */
  traj: number;
  t: number;
  /** The context act() saw at that turn (contextAt). */
  ctx: TurnContext<unknown>;
  /** Position of the unit within its turn (0 for a discrete turn; the token index for text). */
  k: number;
  /** The choice made: an action index, or a token id. */
  target: number;
  /** Its behaviour log-prob (the acting policy's). */
  logpOld: number;
  /** The mask: true when the unit is the policy's own and enters the loss. */
  own: boolean;
}

export interface Learner {
  readonly kind: string;
  readonly policy: AnyPolicy;
  readonly params: NamedTensors;
  /** V: the size of each unit's categorical (the actions, or the vocabulary). */
  readonly actions: number;
  /** Every unit of a batch, trajectory by trajectory, turn by turn, in order. */
  units(batch: readonly Trajectory[], viewOf: ViewOf): Unit[];
  /** Logits (U, V) for the units, recording the graph for backward. */
  logits(units: readonly Unit[]): Tensor;
  /** log π(target | unit) per unit, without a graph. */
  logProbs(units: readonly Unit[]): Float64Array;
  /** Indices of `units` in groups whose logits are computed (and back-propagated) one group at a time,
   * the gradients accumulated: bounds memory for a learner whose units are costly (a transformer's
   * turns). Absent: one group. */
  forwardGroups?(units: readonly Unit[]): number[][];
  /** An independent copy with the current parameters. */
  clone(id?: string): Learner;
  /** Checkpoint bytes of the policy (with the optimizer state and extra metadata when given). */
  checkpoint(env: EnvSpec, optimizer?: Optimizer, extra?: Record<string, string>): Uint8Array;
}

/** One unit per turn: the recorded action of a discrete policy, checked against the action space. */
export function turnUnits(batch: readonly Trajectory[], viewOf: ViewOf, nA: number): Unit[] {
  const units: Unit[] = [];
  batch.forEach((traj, i) => {
    const env = viewOf(traj.task);
    discreteActionCount(env.spec, 'policy', 'a discrete (tabular or MLP) learner');
    traj.turns.forEach((turn, t) => {
      units.push({
        traj: i,
        t,
        ctx: contextAt(traj, t, env),
        k: 0,
        target: discreteAction(turn.action, nA, `trajectory ${traj.id} turn ${t} action`),
        logpOld: turn.logp,
        own: turn.forced !== true,
      });
    });
  });
  return units;
}

/** log π(target) from (U, V) log-softmax rows. */
export function pickTargets(lp: Float64Array, units: readonly Unit[], V: number): Float64Array {
  return Float64Array.from(units, (u, i) => lp[i * V + u.target]);
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

  units(batch: readonly Trajectory[], viewOf: ViewOf): Unit[] {
    return turnUnits(batch, viewOf, this.actions);
  }

  logits(units: readonly Unit[]): Tensor {
    return embedding(
      this.policy.table,
      Int32Array.from(units, (u) => this.policy.stateOf(u.ctx)),
    );
  }

  logProbs(units: readonly Unit[]): Float64Array {
    const z = noGrad(() => this.logits(units)).data;
    return pickTargets(logSoftmaxRows(z, units.length, this.actions), units, this.actions);
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

  units(batch: readonly Trajectory[], viewOf: ViewOf): Unit[] {
    return turnUnits(batch, viewOf, this.actions);
  }

  logits(units: readonly Unit[]): Tensor {
    return this.policy.logits(this.policy.encodeBatch(units.map((u) => u.ctx)));
  }

  logProbs(units: readonly Unit[]): Float64Array {
    return pickTargets(this.policy.logProbsBatch(units.map((u) => u.ctx)), units, this.actions);
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
