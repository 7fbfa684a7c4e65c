// Behaviour cloning of a text policy (supervised fine-tuning on expert transcripts): the expert's turns
// rendered as the transformer policy reads and writes them (policies/transformer-prompt.ts), and the
// next-token cross-entropy on the assistant's tokens only,
//   L(θ) = −Σ_{j ∈ A} log π_θ(x_{j} | x_{<j}) / |A|,
// A = the positions of the expert's action tokens (its action text and <|end|>): system, user (turn
// message) and tool (tool result) tokens are read, never predicted (the mask). Token-mean over the
// minibatch's assistant tokens (DAPO's aggregation; docs/methods.md §7 "Token level").
//
// Sequences: each turn's prompt is the one the policy would read at that turn (the context rule
// included) and its target is the expert's action as the policy would write it. Consecutive turns of an
// episode share one sequence while the next turn's prompt extends the sequence so far (no turn dropped
// by the context rule) and the whole fits in ctx; otherwise a new sequence starts with that turn's own
// prompt. So every action is predicted from exactly the prompt the policy sees when it acts.
//
// A minibatch is computed packed (packedTokenBatch): the sequences' longest common prefix (the system
// message, and on FrozenLake the head of the turn message) once, each sequence after it without
// padding (Transformer.hiddenPacked), and the head applied to the rows that predict an expert token
// alone. The loss has the bits of the padded batch's (tokenBatch, cloningLoss: the reference path), its
// gradient the same sums in another order.
import { ContextOverflow } from '../core/errors.ts';
import type { EnvFactory, EnvView, Policy, Task, Trajectory } from '../core/types.ts';
import { meanExactSuccess, meanOptimalSuccess } from '../eval/exact.ts';
import { invalidRate } from '../eval/invalid.ts';
import { type PrefixLayout, packPrefix } from '../nn/attention.ts';
import { embedding } from '../nn/ops.ts';
import { Adam } from '../nn/optim.ts';
import { crossEntropy } from '../nn/softmax.ts';
import { backward, type Tensor } from '../nn/tensor.ts';
import { makePolicy } from '../policies/spec.ts';
import type { TransformerPolicy } from '../policies/transformer.ts';
import { rollout } from '../rollout/batch.ts';
import { contextAt } from '../rollout/context.ts';
import { withEnvs } from '../rollout/env-cache.ts';
import { minibatchEpochs, type TrainOptions } from './bc.ts';

/** One training sequence: its tokens and, per token, whether it is an expert (assistant) token. */
export interface ClonedSequence {
  ids: number[];
  /** 1 where ids[j] is an action token (a target of the loss), 0 for every prompt token. */
  assistant: number[];
}

export interface CloningData {
  sequences: ClonedSequence[];
  /** Expert turns rendered, and those left out (their prompt and action do not fit in ctx). */
  turns: number;
  skipped: number;
  /** Tokens in all sequences, and assistant tokens among them. */
  tokens: number;
  targets: number;
}

/** The expert's turns of `trajectories` as the student reads and writes them (see the file header). */
export function cloningSequences(
  student: TransformerPolicy,
  trajectories: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
): CloningData {
  const ctx = student.model.config.ctx;
  const sequences: ClonedSequence[] = [];
  let turns = 0;
  let skipped = 0;
  for (const t of trajectories) {
    const env = viewOf(t.task);
    let cur: ClonedSequence | undefined;
    for (let k = 0; k < t.turns.length; k++) {
      turns++;
      let prompt: number[];
      try {
        prompt = student.prompt(contextAt(t, k, env)).tokens;
      } catch (e) {
        if (!(e instanceof ContextOverflow)) throw e;
        skipped++;
        cur = undefined;
        continue;
      }
      const action = student.actionTokens(env.spec, t.turns[k].action);
      if (action === undefined || prompt.length + action.length > ctx) {
        skipped++;
        cur = undefined;
        continue;
      }
      const extends_ =
        cur !== undefined && prompt.length >= cur.ids.length && cur.ids.every((id, j) => prompt[j] === id);
      if (cur === undefined || !extends_) {
        cur = { ids: [], assistant: [] };
        sequences.push(cur);
      }
      for (let j = cur.ids.length; j < prompt.length; j++) {
        cur.ids.push(prompt[j]);
        cur.assistant.push(0);
      }
      for (const id of action) {
        cur.ids.push(id);
        cur.assistant.push(1);
      }
    }
  }
  let tokens = 0;
  let targets = 0;
  for (const s of sequences) {
    tokens += s.ids.length;
    for (const a of s.assistant) targets += a;
  }
  return { sequences, turns, skipped, tokens, targets };
}

/** A minibatch as the loss reads it: inputs (B, T) right-padded, the next token of each position as
 * its target, and the mask as the weights (1 where the target is an assistant token). */
export interface TokenBatch {
  inputs: Int32Array;
  shape: [number, number];
  targets: Int32Array;
  weights: Float32Array;
}

/** Sequences packed as a TokenBatch: position j of row b predicts ids[j + 1]; padding weighs 0. */
export function tokenBatch(seqs: readonly ClonedSequence[]): TokenBatch {
  const B = seqs.length;
  const T = Math.max(1, ...seqs.map((s) => s.ids.length - 1));
  const inputs = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  const weights = new Float32Array(B * T);
  seqs.forEach((s, b) => {
    for (let j = 0; j + 1 < s.ids.length; j++) {
      inputs[b * T + j] = s.ids[j];
      targets[b * T + j] = s.ids[j + 1];
      weights[b * T + j] = s.assistant[j + 1];
    }
  });
  return { inputs, shape: [B, T], targets, weights };
}

/** The masked token-mean cross-entropy of a batch (differentiable). Causal attention: a row's padding
 * at its end is never attended to by its real positions. */
export function cloningLoss(student: TransformerPolicy, batch: TokenBatch): Tensor {
  const logits = student.model.forward(batch.inputs, batch.shape);
  return crossEntropy(logits, batch.targets, batch.weights);
}

/** A minibatch packed (see the file header): the tokens of a PrefixLayout, and per expert token the flat
 * index of the position that predicts it and its id. Prompt tokens are read, never targets (the mask). */
export interface PackedTokenBatch {
  ids: Int32Array;
  layout: PrefixLayout;
  rows: Int32Array;
  targets: Int32Array;
}

/** Sequences packed: their common prefix once, each one's rest (its last token predicts nothing). */
export function packedTokenBatch(seqs: readonly ClonedSequence[]): PackedTokenBatch {
  const p = packPrefix(seqs.map((s) => s.ids.slice(0, -1)));
  const rows: number[] = [];
  const targets: number[] = [];
  seqs.forEach((s, b) => {
    for (let j = 0; j + 1 < s.ids.length; j++) {
      if (s.assistant[j + 1] !== 1) continue;
      rows.push(p.at(b, j));
      targets.push(s.ids[j + 1]);
    }
  });
  return { ids: p.ids, layout: p.layout, rows: Int32Array.from(rows), targets: Int32Array.from(targets) };
}

/** The token-mean cross-entropy of a packed batch (differentiable): cloningLoss's value, bit for bit. */
export function packedCloningLoss(student: TransformerPolicy, batch: PackedTokenBatch): Tensor {
  const model = student.model;
  const hidden = model.hiddenPacked(batch.ids, batch.layout); // (N, d)
  return crossEntropy(model.logits(embedding(hidden, batch.rows)), batch.targets);
}

/** bc.ts's options; a step's batch is `batchSize` sequences. */
export type CloneOptions = TrainOptions;

export interface CloneResult {
  /** Each epoch's loss: mean NLL per assistant token. */
  losses: number[];
  optimizer: Adam;
  steps: number;
}

/** Minibatch Adam(W) on the masked cross-entropy; the sequence order is drawn from (seed, epoch). */
export function trainCloning(student: TransformerPolicy, data: CloningData, o: CloneOptions): CloneResult {
  const params = student.model.namedParameters();
  const optimizer = new Adam(params, { lr: o.lr, weightDecay: o.weightDecay, decoupled: o.weightDecay > 0 });
  const { losses, steps } = minibatchEpochs(data.sequences.length, o, (idx) => {
    const batch = packedTokenBatch(idx.map((i) => data.sequences[i]));
    optimizer.zeroGrad();
    const loss = packedCloningLoss(student, batch);
    backward(loss);
    optimizer.step();
    return { loss: loss.item(), weight: batch.targets.length };
  });
  return { losses, optimizer, steps };
}

export interface TransformerBcOptions {
  envs: EnvFactory;
  train: readonly Task[];
  test: readonly Task[];
  expert: Policy<unknown, unknown>;
  student: TransformerPolicy;
  budget: number;
  /** Demonstration episodes per training task. */
  episodesPerTask: number;
  /** Episodes per task when the student is evaluated by rollouts. */
  evalSamples: number;
  runSeed: number;
  clone: CloneOptions;
}

/** A success rate measured by rollouts: successes / episodes, with its binomial standard error. */
export interface SampledSuccess {
  episodes: number;
  success: number;
  stdErr: number;
  /** Turns whose generation did not parse, over all turns (eval/invalid.ts, as `rollout/invalid_rate`). */
  invalidRate: number;
}

export interface TransformerBcResult {
  data: CloningData;
  result: CloneResult;
  /** The expert's demonstration episodes' success rate. */
  expertEpisodeSuccess: number;
  /** The student by rollouts; the expert, random and optimum exactly (null where the env has no
   * oracle). A text policy reads its history, so its success has no exact (state, turns-left) value. */
  success: {
    train: { student: SampledSuccess; expert: number | null; optimum: number | null };
    test: { student: SampledSuccess; expert: number | null; random: number | null; optimum: number | null };
  };
}

async function sampledSuccess(
  o: TransformerBcOptions,
  tasks: readonly Task[],
  reveal: boolean,
): Promise<SampledSuccess> {
  const trajectories = await rollout({
    tasks,
    samples: o.evalSamples,
    budget: o.budget,
    revealBudget: reveal,
    runSeed: o.runSeed,
    idPrefix: 'eval-',
    policy: o.student,
    makeEnv: o.envs.make,
  });
  const n = trajectories.length;
  const p = trajectories.filter((t) => t.outcome.success).length / n;
  return {
    episodes: n,
    success: p,
    stdErr: Math.sqrt((p * (1 - p)) / n),
    invalidRate: invalidRate(trajectories),
  };
}

/** Demonstrations of the expert on the training tasks, cloning, then the student's success on the
 * training and held-out tasks beside the expert's, the random policy's and the optimum. */
export async function cloneTransformer(o: TransformerBcOptions): Promise<TransformerBcResult> {
  const reveal = o.expert.budgetAware || o.student.budgetAware;
  const demos = await rollout({
    tasks: o.train,
    samples: o.episodesPerTask,
    budget: o.budget,
    revealBudget: reveal,
    runSeed: o.runSeed,
    policy: o.expert,
    makeEnv: o.envs.make,
  });
  const data = await withEnvs(o.envs.make, async (cache) => {
    await cache.getAll(o.train);
    return cloningSequences(o.student, demos, (task) => cache.view(task));
  });
  const result = trainCloning(o.student, data, o.clone);
  const random = makePolicy('random', o.envs.spec(o.test[0]));
  const exact = (tasks: readonly Task[], p: Policy<unknown, unknown>) =>
    meanExactSuccess(o.envs, tasks, p, o.budget, reveal);
  return {
    data,
    result,
    expertEpisodeSuccess: demos.filter((t) => t.outcome.success).length / demos.length,
    success: {
      train: {
        student: await sampledSuccess(o, o.train, reveal),
        expert: await exact(o.train, o.expert),
        optimum: await meanOptimalSuccess(o.envs, o.train, o.budget),
      },
      test: {
        student: await sampledSuccess(o, o.test, reveal),
        expert: await exact(o.test, o.expert),
        random: await meanExactSuccess(o.envs, o.test, random, o.budget, false),
        optimum: await meanOptimalSuccess(o.envs, o.test, o.budget),
      },
    },
  };
}
