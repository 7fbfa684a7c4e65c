// The transformer policy as a Learner (train/learner.ts) at token level: a turn's units are its action
// tokens — the tokens the policy generated (trace.tokens, <|end|> included), or for a forced turn (an
// expert prefix, an injected error) its action as the policy would write it, with `own` false so that it
// never enters a loss. Each unit carries its turn's context (contextAt) and its behaviour log-prob
// (trace.logprobs[k], the π_τ,p it was sampled from), and every unit of a turn gets that turn's
// advantage (train/update.ts), so GRPO, Dr. GRPO and PPO run per token with the existing loss and
// aggregation (docs/methods.md §4, §7 "Token level").
//
// Logits: teacher forcing over the turns' prompts and actions, packed so that no token is computed
// twice (packTurns): the turns of a forward group in trajectory order, a turn whose prompt extends the
// sequence so far (its trajectory's previous prompt and action, no turn dropped by the context rule —
// a tool env's whole history at ctx 1024) continued in that sequence, and the sequences' common prefix
// (the system message; on FrozenLake at ctx 192, where each prompt holds only its turn, the system
// message and the turn message's head) computed once, every sequence attending to it
// (Transformer.hiddenPacked). Each row gives the bits one forward per turn gives (`packed = false`, the
// earlier path: the turns padded into one batch); the gradients are the same sums in another order. The
// rows that predict the units' tokens are gathered and divided by the sampling temperature τ:
// log-softmax(l/τ) is π_τ,1, the distribution the tokens were drawn from. A nucleus (top_p < 1) is not
// differentiable in the logits: such a policy is refused for training.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { EnvSpec, Trajectory, TurnContext } from '../core/types.ts';
import { packPrefix } from '../nn/attention.ts';
import type { NamedTensors } from '../nn/layers.ts';
import { embedding, scale } from '../nn/ops.ts';
import type { Optimizer } from '../nn/optim.ts';
import { noGrad, type Tensor } from '../nn/tensor.ts';
import { Transformer } from '../nn/transformer.ts';
import { logSoftmaxRows } from '../policies/distribution.ts';
import type { TransformerPolicy } from '../policies/transformer.ts';
import { contextAt } from '../rollout/context.ts';
import { type Learner, pickTargets, type Unit, type ViewOf } from './learner.ts';

/** The most prompt and action tokens one forward of the trainer holds (see forwardGroups): with d 64
 * and two layers, about 150 MB of activations and their gradients. */
const FORWARD_TOKENS = 16_384;

export class TransformerLearner implements Learner {
  readonly kind = 'transformer';
  readonly policy: TransformerPolicy;
  readonly params: NamedTensors;
  readonly actions: number;
  /** Each turn's prompt and action tokens, by the context its units share — shared with this learner's
   * clones (the KL reference, a stale policy), which score the units this one built. */
  private readonly turns: WeakMap<TurnContext<unknown>, { prompt: number[]; action: number[] }>;
  /** The most prompt and action tokens of one forward (forwardGroups). */
  forwardTokens = FORWARD_TOKENS;
  /** Turns packed (packTurns); false: one padded row per turn, the earlier path (the reference of the
   * tests and of bench/transformer-packing.ts). */
  packed = true;

  constructor(
    policy: TransformerPolicy,
    turns = new WeakMap<TurnContext<unknown>, { prompt: number[]; action: number[] }>(),
  ) {
    const { temperature, topP } = policy.format;
    if (topP !== 1 || temperature === 0)
      throw new InputError(
        'policy',
        policy.id,
        `training needs the sampled distribution's log-probs as logits/τ: top_p 1 and temperature > 0 (it has top_p ${topP}, temperature ${temperature})`,
      );
    this.policy = policy;
    this.turns = turns;
    this.params = policy.model.namedParameters();
    this.actions = policy.model.config.vocab;
  }

  units(batch: readonly Trajectory[], viewOf: ViewOf): Unit[] {
    const units: Unit[] = [];
    batch.forEach((traj, i) => {
      const env = viewOf(traj.task);
      traj.turns.forEach((turn, t) => {
        const ctx = contextAt(traj, t, env);
        const own = turn.forced !== true;
        // A forced turn is read, never learned: its tokens as written, or as the policy would write it.
        const tokens = own
          ? turn.trace?.tokens
          : (turn.trace?.tokens ?? this.policy.actionTokens(env.spec, turn.action) ?? []);
        if (tokens === undefined || (own && tokens.length === 0))
          throw new InputError(
            `trajectory ${traj.id} turn ${t}`,
            turn.action,
            'a text policy’s own turn needs its tokens (trace.tokens)',
          );
        const logprobs = turn.trace?.logprobs;
        this.turns.set(ctx, { prompt: this.policy.prompt(ctx).tokens, action: tokens });
        tokens.forEach((target, k) => {
          units.push({ traj: i, t, ctx, k, target, logpOld: own ? (logprobs?.[k] ?? Number.NaN) : 0, own });
        });
      });
    });
    return units;
  }

  private turnOf(ctx: TurnContext<unknown>): { prompt: number[]; action: number[] } {
    const turn = this.turns.get(ctx);
    if (turn === undefined) throw new Error('transformer learner: a unit whose turn units() did not build');
    return turn;
  }

  logits(units: readonly Unit[]): Tensor {
    if (!this.packed) return this.logitsPerTurn(units);
    const turns = turnOrder(units);
    const { ids, layout, at, place } = packTurns(turns.map((ctx) => this.turnOf(ctx)));
    const row = new Map(turns.map((ctx, i) => [ctx, place[i]]));
    const hidden = this.policy.model.hiddenPacked(ids, layout); // (N, d)
    // Unit u predicts its action token k from the position before it: prompt end − 1 + k in its sequence.
    const pick = Int32Array.from(units, (u) => {
      return at(row.get(u.ctx) as number, this.turnOf(u.ctx).prompt.length - 1 + u.k);
    });
    return this.head(embedding(hidden, pick));
  }

  /** Final norm and head of the gathered rows, divided by τ. */
  private head(rows: Tensor): Tensor {
    const picked = this.policy.model.logits(rows); // (U, V)
    const tau = this.policy.format.temperature;
    return tau === 1 ? picked : scale(picked, 1 / tau);
  }

  /** The earlier path: one row per turn, prompt + action, padded to the longest. */
  private logitsPerTurn(units: readonly Unit[]): Tensor {
    const rows = new Map<TurnContext<unknown>, number>();
    const seqs: number[][] = [];
    for (const u of units) {
      if (rows.has(u.ctx)) continue;
      rows.set(u.ctx, seqs.length);
      const { prompt, action } = this.turnOf(u.ctx);
      seqs.push([...prompt, ...action.slice(0, -1)]);
    }
    const T = Math.max(...seqs.map((s) => s.length));
    const ids = new Int32Array(seqs.length * T);
    seqs.forEach((s, b) => {
      ids.set(s, b * T);
    });
    const model = this.policy.model;
    const hidden = model.hidden(ids, [seqs.length, T]); // (B·T, d)
    // Row of unit u: its turn's row b, position P − 1 + k (the one that predicts action token k); the
    // head is applied to those rows alone (the norm and the head are per row).
    const pick = Int32Array.from(
      units,
      (u) => (rows.get(u.ctx) as number) * T + this.turnOf(u.ctx).prompt.length - 1 + u.k,
    );
    return this.head(embedding(hidden, pick));
  }

  /** The units in groups of whole turns of at most forwardTokens prompt and action tokens (a turn
   * longer than that alone), first appearance order: the trainer runs one forward (and backward) per
   * group and accumulates the gradients, so memory is bounded whatever the batch. */
  forwardGroups(units: readonly Unit[]): number[][] {
    const byTurn = new Map<TurnContext<unknown>, number[]>();
    units.forEach((u, i) => {
      const list = byTurn.get(u.ctx);
      if (list === undefined) byTurn.set(u.ctx, [i]);
      else list.push(i);
    });
    const groups: number[][] = [];
    let group: number[] = [];
    let tokens = 0;
    // Packed: the turns in trajectory order, a turn that continues the sequence before it costing only its
    // new tokens (packTurns; the shared prefix is not discounted, so a group holds at most forwardTokens).
    const order = this.packed ? turnOrder(units) : [...byTurn.keys()];
    let chain: number[] = [];
    for (const ctx of order) {
      const idx = byTurn.get(ctx) as number[];
      const { prompt, action } = this.turnOf(ctx);
      const whole = prompt.length + action.length;
      let n =
        this.packed && group.length > 0 && extendsSequence(prompt, chain) ? whole - chain.length : whole;
      chain = [...prompt, ...action];
      if (group.length > 0 && tokens + n > this.forwardTokens) {
        groups.push(group);
        group = [];
        tokens = 0;
        n = whole;
      }
      group.push(...idx);
      tokens += n;
    }
    if (group.length > 0) groups.push(group);
    return groups;
  }

  logProbs(units: readonly Unit[]): Float64Array {
    const out = new Float64Array(units.length);
    for (const g of this.forwardGroups(units)) {
      const part = g.map((i) => units[i]);
      const z = noGrad(() => this.logits(part)).data;
      const lp = pickTargets(logSoftmaxRows(z, part.length, this.actions), part, this.actions);
      g.forEach((i, j) => {
        out[i] = lp[j];
      });
    }
    return out;
  }

  clone(id = this.policy.id): TransformerLearner {
    const p = this.policy;
    const model = new Transformer(p.model.config, Rng.derive(0));
    const from = p.model.namedParameters();
    model.namedParameters().forEach(([, t], i) => {
      t.data.set(from[i][1].data);
    });
    return new TransformerLearner(p.withModel(model, id), this.turns);
  }

  checkpoint(_env: EnvSpec, optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return this.policy.checkpoint(optimizer, extra);
  }
}

/** The distinct turns of `units` in trajectory order (traj, then t). */
function turnOrder(units: readonly Unit[]): TurnContext<unknown>[] {
  const first = new Map<TurnContext<unknown>, Unit>();
  for (const u of units) if (!first.has(u.ctx)) first.set(u.ctx, u);
  return [...first.values()].sort((a, b) => a.traj - b.traj || a.t - b.t).map((u) => u.ctx);
}

/** Whether a prompt starts with the whole of a sequence (a turn's prompt extends the one before it). */
function extendsSequence(prompt: readonly number[], seq: readonly number[]): boolean {
  if (seq.length === 0 || prompt.length < seq.length) return false;
  for (let j = 0; j < seq.length; j++) if (prompt[j] !== seq[j]) return false;
  return true;
}

/**
 * Turns (in order) packed for one forward: a turn whose prompt extends the sequence so far continues it
 * (its prompt's new tokens, then its action), otherwise it starts a new sequence; the sequences' longest
 * common prefix once (packPrefix). `place[i]`: turn i's sequence, where its prompt is the first
 * prompt.length tokens. A sequence's last token predicts nothing and is left out.
 */
export function packTurns(
  turns: readonly { prompt: readonly number[]; action: readonly number[] }[],
): ReturnType<typeof packPrefix> & { place: number[] } {
  const seqs: number[][] = [];
  const place: number[] = [];
  let cur: number[] | undefined;
  for (const { prompt, action } of turns) {
    if (cur === undefined || !extendsSequence(prompt, cur)) {
      cur = [];
      seqs.push(cur);
    }
    for (let j = cur.length; j < prompt.length; j++) cur.push(prompt[j]);
    cur.push(...action);
    place.push(seqs.length - 1);
  }
  return { ...packPrefix(seqs.map((s) => s.slice(0, -1))), place };
}
