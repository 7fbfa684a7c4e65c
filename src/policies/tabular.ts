// A softmax table over discrete observations: π(a|s) = softmax(logits[s])_a. The policy of the
// tabular GRPO/PPO runs; its distribution depends on the state only, so it can be evaluated exactly.
// The logits are float32 so that a training run can hand the table to nn/ (an (nS, nA) parameter
// tensor gathered per state) and checkpoint it bit for bit.
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Action, DiscretePolicy, EnvSpec, TurnContext } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { checkpointBytes, loadParameters, writeCheckpoint } from '../nn/checkpoint.ts';
import type { Optimizer } from '../nn/optim.ts';
import { parameter, type Tensor } from '../nn/tensor.ts';
import { checkpointKind, readPolicyCheckpoint } from './checkpoint-file.ts';
import { logProbOf, sampleFrom, softmaxInto } from './distribution.ts';

const ConfigSchema = z
  .object({
    kind: z.literal('tabular-policy'),
    version: z.literal(1),
    env: z.string(),
    states: z.number().int().min(1),
    actions: z.number().int().min(1),
  })
  .strict();

export type TabularPolicyConfig = z.infer<typeof ConfigSchema>;

/** The parameter's name in checkpoints. */
const LOGITS = 'logits';

export class TabularPolicy implements DiscretePolicy {
  readonly id: string;
  readonly budgetAware = false;
  readonly nS: number;
  readonly nA: number;
  /** (nS, nA) row-major; shared with `table`. */
  readonly logits: Float32Array;
  /** The logits as an nn parameter (for training). */
  readonly table: Tensor;

  constructor(nS: number, nA: number, logits?: Float32Array, id = 'tabular') {
    if (logits !== undefined && logits.length !== nS * nA) {
      throw new RangeError(`tabular: expected ${nS * nA} logits, got ${logits.length}`);
    }
    this.nS = nS;
    this.nA = nA;
    this.logits = logits ?? new Float32Array(nS * nA);
    this.table = parameter(this.logits, [nS, nA]);
    this.id = id;
  }

  stateOf(ctx: TurnContext<unknown>): number {
    const s = ctx.observation;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 0 || s >= this.nS) {
      throw new Error(
        `policy ${this.id}: observation ${JSON.stringify(s)} is not a state in 0..${this.nS - 1}`,
      );
    }
    return s;
  }

  probsOf(s: number, out = new Float64Array(this.nA)): Float64Array {
    return softmaxInto(this.logits.subarray(s * this.nA, (s + 1) * this.nA), 1, out);
  }

  probs(ctx: TurnContext<unknown>): Float64Array {
    return this.probsOf(this.stateOf(ctx));
  }

  act(ctx: TurnContext<unknown>): Action<number> {
    return sampleFrom(this.probs(ctx), ctx);
  }

  logProb(ctx: TurnContext<unknown>, action: number): number {
    return logProbOf(this.probs(ctx), action);
  }

  /** An independent copy of the table. */
  clone(id = this.id): TabularPolicy {
    return new TabularPolicy(this.nS, this.nA, Float32Array.from(this.logits), id);
  }

  config(env: string): TabularPolicyConfig {
    return { kind: 'tabular-policy', version: 1, env, states: this.nS, actions: this.nA };
  }

  checkpoint(env: string, optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return checkpointBytes([[LOGITS, this.table]], this.config(env), optimizer, extra);
  }

  save(path: string, env: string, optimizer?: Optimizer, extra: Record<string, string> = {}): void {
    writeCheckpoint(path, this.checkpoint(env, optimizer, extra));
  }
}

/**
 * CHECKPOINT_LOADERS entry: a tabular policy from a safetensors file or a run directory holding one;
 * undefined for anything else. A table for another state or action count is refused (one line).
 */
export function loadTabularPolicy(path: string, env: EnvSpec): TabularPolicy | undefined {
  const found = readPolicyCheckpoint(path);
  if (found === undefined || checkpointKind(found.checkpoint) !== 'tabular-policy') return undefined;
  const { file, checkpoint } = found;
  const config = fromZod(ConfigSchema, checkpoint.config, `${file} __metadata__.turnwise`);
  if (config.states !== env.observations || config.actions !== env.actions) {
    throw InputError.raw(
      file,
      `the table has ${config.states} states × ${config.actions} actions (${config.env}); this env (${env.id}) has ${env.observations ?? 'no finite'} states × ${env.actions} actions`,
    );
  }
  const policy = new TabularPolicy(config.states, config.actions, undefined, path);
  loadParameters([[LOGITS, policy.table]], checkpoint.params, file);
  return policy;
}
