// The small transformer (nn/transformer.ts) as a text policy: it reads the prompt of
// policies/transformer-prompt.ts — for FrozenLake the chat the `openai:` policy sends, for a tool env
// what the expert transcripts render — writes its reply token by token until <|end|> (or max_tokens),
// and the reply is parsed as the `openai:` policy parses a model's: a generation that does not parse is
// an invalid action (the env answers valid: false), exactly as for a remote LLM.
//
// Log-probabilities: a turn's trace carries its token ids and their sampling log-probs (nn/sampling.ts,
// π_τ,p: the distribution each token was drawn from); logp is their sum. logProb(ctx, action) renders the
// action as the model writes it (renderAction, then <|end|>) and scores those tokens by teacher forcing
// with the same τ and p, so the score of a generated action that the model wrote in its canonical
// tokens equals the turn's logp (docs/methods.md §8). Another spelling of the same action (a different
// tokenization, `<answer>` in tools mode) is a different text with its own probability.
//
// Acting in batches: actBatch generates every prompt at once (lockstep rollouts), each from its own
// episode stream (one uniform53 of ctx.rng per turn, the token draws from Rng.replay of it, as a served
// copy draws them from the request's seed), so lockstep equals one at a time; a prompt that cannot fit is that episode's
// ContextOverflow alone.
//
// A fresh policy is `transformer:layers=…,d=…,heads=…,ctx=…,vocab=…,seed=…[,tokenizer=FILE]` (spec.ts);
// a saved one is one safetensors file (nn/transformer-checkpoint.ts) holding the model, its tokenizer
// (`__metadata__.tokenizer`) and its prompt format and sampling (`__metadata__.policy`).
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Action, BatchedPolicy, EnvSpec, TurnContext } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { writeCheckpoint } from '../nn/checkpoint.ts';
import type { Optimizer } from '../nn/optim.ts';
import { PrefixCache } from '../nn/prefix-cache.ts';
import { generate, scoreTokensTop, type TokenLogProb } from '../nn/sampling.ts';
import { readTokenizerFile, Tokenizer } from '../nn/tokenizer.ts';
import { Transformer, transformerConfig } from '../nn/transformer.ts';
import { transformerCheckpointBytes, transformerFromCheckpoint } from '../nn/transformer-checkpoint.ts';
import { readPolicyCheckpoint } from './checkpoint-file.ts';
import {
  fitPrompt,
  hasTextPrompt,
  longestReply,
  type PromptView,
  parseGeneration,
  promptView,
  renderAction,
} from './transformer-prompt.ts';

const FORMAT = 'turnwise-transformer-policy';

const PolicySchema = z
  .object({
    format: z.literal(FORMAT),
    version: z.literal(1),
    /** How actions are written: Hermes tool calls, or `<answer>Name</answer>` (discrete envs only). */
    mode: z.enum(['tools', 'text']),
    /** The prompt shows the turns left (`Turn 3 (97 turns left).`). */
    budgetAware: z.boolean(),
    temperature: z.number().min(0),
    topP: z.number().gt(0).max(1),
    /** The reply's most tokens; absent: the longest action of the env + <|end|> (discrete envs), 128. */
    maxTokens: z.number().int().min(1).optional(),
    /** The env the policy was trained on (a loaded policy refuses another). */
    env: z.string().optional(),
  })
  .strict();

export type TransformerPolicyFormat = z.infer<typeof PolicySchema>;

/** A policy format read from JSON (a checkpoint's or a GGUF file's turnwise.policy); InputError naming
 * `source` when it is not one. */
export function readPolicyFormat(value: unknown, source: string): TransformerPolicyFormat {
  return fromZod(PolicySchema, value, source);
}

/** The format of a fresh policy: tools mode, budget-blind, τ = 1, p = 1. */
export function policyFormat(o: Partial<Omit<TransformerPolicyFormat, 'format' | 'version'>> = {}) {
  return fromZod(
    PolicySchema,
    { format: FORMAT, version: 1, mode: 'tools', budgetAware: false, temperature: 1, topP: 1, ...o },
    'transformer',
  );
}

/** Sampling overrides of one request to a served copy (serve/openai.ts), and how many alternatives to
 * list per token. maxTokens is capped at the policy's own. */
export interface ReplyOptions {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  top?: number;
}

/** A turn as actBatch acts it, with each generated token's most probable alternatives. */
export interface Reply {
  action: Action<unknown>;
  top: TokenLogProb[][];
}

/** Log-probs of given reply tokens after a turn's prompt (of `prompt` tokens), with alternatives. */
export interface ScoredReply {
  prompt: number;
  logprobs: number[];
  top: TokenLogProb[][];
}

export class TransformerPolicy implements BatchedPolicy<unknown, unknown> {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly model: Transformer;
  readonly tokenizer: Tokenizer;
  readonly format: TransformerPolicyFormat;
  /** The reply's most tokens; the context rule keeps this much room for it. */
  readonly maxTokens: number;
  /** The env the policy was built for (its action renderings, the default max_tokens). */
  readonly env: EnvSpec;
  private readonly end: number;
  private readonly stop: number[];
  /** Keys and values of earlier prompts by token prefix (nn/prefix-cache.ts): replies and scores are
   * the same bits with or without it; undefined turns it off (bench/prefix-cache.ts compares both). */
  prefixCache: PrefixCache | undefined;

  constructor(
    model: Transformer,
    tokenizer: Tokenizer,
    format: TransformerPolicyFormat,
    env: EnvSpec,
    id: string,
    field = '--policy',
  ) {
    if (!hasTextPrompt(env))
      throw new InputError(field, id, `env ${env.id} has no chat encoding or tools to write a prompt from`);
    if (format.mode === 'text' && env.chat === undefined)
      throw new InputError(
        field,
        id,
        `mode=text needs a discrete env with a chat encoding; ${env.id} has tools`,
      );
    if (tokenizer.vocabSize !== model.config.vocab)
      throw new InputError(
        field,
        id,
        `the tokenizer has ${tokenizer.vocabSize} tokens, the model a vocabulary of ${model.config.vocab}`,
      );
    this.id = id;
    this.env = env;
    this.model = model;
    this.tokenizer = tokenizer;
    this.format = format;
    this.budgetAware = format.budgetAware;
    this.end = tokenizer.special['<|end|>'];
    this.stop = [this.end, tokenizer.special['<|endoftext|>']];
    this.maxTokens = format.maxTokens ?? longestReply(env, format.mode, (t) => tokenizer.encode(t).length);
    this.prefixCache = new PrefixCache(model);
  }

  private view(ctx: TurnContext<unknown>): PromptView {
    return promptView(ctx, this.format.mode, this.budgetAware);
  }

  /** A turn's prompt in tokens (the context rule of transformer-prompt.ts); ContextOverflow when even
   * the current turn cannot fit. */
  prompt(ctx: TurnContext<unknown>): { tokens: number[]; kept: number } {
    return fitPrompt(this.tokenizer, this.view(ctx), this.model.config.ctx, this.maxTokens);
  }

  /** An action's tokens as the model writes it, <|end|> included; undefined when it is not an action. */
  actionTokens(spec: EnvSpec, action: unknown): number[] | undefined {
    const text = renderAction(spec, this.format.mode, action);
    return text === undefined ? undefined : [...this.tokenizer.encode(text), this.end];
  }

  act(ctx: TurnContext<unknown>): Action<unknown> {
    const [r] = this.actBatch([ctx]);
    if (r instanceof Error) throw r;
    return r;
  }

  actBatch(ctxs: readonly TurnContext<unknown>[]): (Action<unknown> | Error)[] {
    return this.replies(ctxs).map((r) => (r instanceof Error ? r : r.action));
  }

  /**
   * The turns of actBatch, each with what a served copy reports of it (serve/openai.ts): the
   * generation's `top` most probable tokens per position, under sampling overrides of a request (a
   * temperature, a top_p, fewer tokens than maxTokens). Without overrides the actions are actBatch's.
   */
  replies(ctxs: readonly TurnContext<unknown>[], o: ReplyOptions = {}): (Reply | Error)[] {
    const out: (Reply | Error)[] = new Array(ctxs.length);
    const prompts: number[][] = [];
    const at: number[] = [];
    ctxs.forEach((ctx, i) => {
      try {
        prompts.push(this.prompt(ctx).tokens);
        at.push(i);
      } catch (e) {
        out[i] = e as Error;
      }
    });
    if (prompts.length === 0) return out;
    const gens = generate(this.model, prompts, {
      maxTokens: Math.min(o.maxTokens ?? this.maxTokens, this.maxTokens),
      // One uniform from the episode's stream per turn, the rest from Rng.replay of it: a served copy
      // (serve/openai.ts) given that uniform as the request's seed draws the same tokens.
      rngs: at.map((i) => Rng.replay(ctxs[i].rng.uniform53())),
      stop: this.stop,
      temperature: o.temperature ?? this.format.temperature,
      topP: o.topP ?? this.format.topP,
      top: o.top ?? 0,
      prefixCache: this.prefixCache,
    });
    gens.forEach((g, k) => {
      const ctx = ctxs[at[k]];
      const body = g.finish === 'stop' ? g.tokens.slice(0, -1) : g.tokens;
      const text = this.tokenizer.decode(body);
      const parsed = parseGeneration(ctx.env.spec, this.format.mode, text);
      let logp = 0;
      for (const x of g.logProbs) logp += x;
      const action: Action<unknown> = {
        action: parsed.action,
        logp,
        trace: {
          text,
          tokens: g.tokens,
          logprobs: g.logProbs,
          usage: { prompt: prompts[k].length, completion: g.tokens.length },
          finishReason: g.finish,
          ...(parsed.invalid === undefined ? {} : { invalid: parsed.invalid }),
        },
      };
      out[at[k]] = { action, top: g.top ?? [] };
    });
    return out;
  }

  /**
   * Teacher-forced log π_τ,p (the policy's own τ and p, as logProb scores) of `tokens` after this turn's
   * prompt, with each position's `top` most probable tokens: what a served copy echoes when asked to
   * score a reply's text (serve/openai.ts).
   */
  scoreReply(ctx: TurnContext<unknown>, tokens: readonly number[], top = 0): ScoredReply {
    const prompt = this.prompt(ctx).tokens;
    const r = scoreTokensTop(
      this.model,
      prompt,
      tokens,
      { temperature: this.format.temperature, topP: this.format.topP, top },
      this.prefixCache,
    );
    return { prompt: prompt.length, logprobs: r.logProbs, top: r.top };
  }

  /** The id of <|end|>, the token that ends an action. */
  get endToken(): number {
    return this.end;
  }

  /** log π(action | ctx): the action's canonical tokens scored by teacher forcing (−∞ for a value that
   * is not an action of the env). */
  logProb(ctx: TurnContext<unknown>, action: unknown): number {
    const tokens = this.actionTokens(ctx.env.spec, action);
    if (tokens === undefined) return Number.NEGATIVE_INFINITY;
    let sum = 0;
    for (const x of this.scoreReply(ctx, tokens).logprobs) sum += x;
    return sum;
  }

  /** The same model (shared parameters) recorded as trained on `env`: a loaded copy refuses others. */
  trainedOn(env: EnvSpec): TransformerPolicy {
    return new TransformerPolicy(this.model, this.tokenizer, { ...this.format, env: env.id }, env, this.id);
  }

  /** The same tokenizer, format and env around another model (a copy, a reference). */
  withModel(model: Transformer, id = this.id): TransformerPolicy {
    return new TransformerPolicy(model, this.tokenizer, this.format, this.env, id);
  }

  /** The checkpoint: parameters under HF names, config, tokenizer and format (optimizer, extras). */
  checkpoint(optimizer?: Optimizer, extra: Record<string, string> = {}): Uint8Array {
    return transformerCheckpointBytes(this.model, optimizer, {
      ...extra,
      tokenizer: JSON.stringify(this.tokenizer.toJSON()),
      policy: JSON.stringify(this.format),
    });
  }

  save(path: string, optimizer?: Optimizer, extra: Record<string, string> = {}): void {
    writeCheckpoint(path, this.checkpoint(optimizer, extra));
  }
}

/** The metadata entry `key` of a transformer checkpoint as JSON, refused in one line when absent or
 * not JSON. */
function metadataJson(metadata: Record<string, string>, key: string, file: string): unknown {
  const raw = metadata[key];
  if (raw === undefined)
    throw InputError.raw(
      file,
      `a transformer checkpoint without __metadata__.${key}: not a turnwise transformer policy (it needs its tokenizer and prompt format)`,
    );
  try {
    return JSON.parse(raw);
  } catch {
    throw InputError.raw(file, `__metadata__.${key} is not valid JSON`);
  }
}

/**
 * CHECKPOINT_LOADERS entry: a transformer policy from a safetensors file or a run directory holding one;
 * undefined for a checkpoint of another kind. A damaged file, one without its tokenizer or format, or
 * one trained on another env is refused in one line.
 */
export function loadTransformerPolicy(
  path: string,
  env: EnvSpec,
  field = '--policy',
): TransformerPolicy | undefined {
  const saved = readSavedTransformer(path);
  if (saved === undefined) return undefined;
  const { file, format } = saved;
  if (format.env !== undefined && format.env !== env.id)
    throw InputError.raw(file, `the policy was trained on env ${format.env}; this env is ${env.id}`);
  return new TransformerPolicy(saved.model, saved.tokenizer, format, env, path, field);
}

/** A saved transformer policy's parts (the model, its tokenizer and prompt format, the file they came
 * from), whatever env it is for; undefined for a checkpoint of another kind. */
export function readSavedTransformer(
  path: string,
): { model: Transformer; tokenizer: Tokenizer; format: TransformerPolicyFormat; file: string } | undefined {
  const found = readPolicyCheckpoint(path);
  const arch = (found?.checkpoint.config as { arch?: unknown } | undefined)?.arch;
  if (found === undefined || arch !== 'llama') return undefined;
  const { file, checkpoint } = found;
  const format = fromZod(
    PolicySchema,
    metadataJson(checkpoint.metadata, 'policy', file),
    `${file} __metadata__.policy`,
  );
  const tokenizer = Tokenizer.fromJSON(
    metadataJson(checkpoint.metadata, 'tokenizer', file),
    `${file} __metadata__.tokenizer`,
  );
  return { model: transformerFromCheckpoint(checkpoint, file), tokenizer, format, file };
}

/** What a `transformer:` spec gives (spec.ts reads it): the model's shape, its seed, the tokenizer file
 * (absent: the bytes and the specials), the prompt format and sampling. */
export interface FreshTransformerOptions {
  layers?: number;
  d?: number;
  heads?: number;
  ctx?: number;
  /** Must equal the tokenizer's size when given. */
  vocab?: number;
  seed?: number;
  tokenizer?: string;
  format?: Partial<Omit<TransformerPolicyFormat, 'format' | 'version'>>;
}

/** A freshly initialised transformer policy (same seed, same bytes): layers 2, d 64, heads 4, ctx 512 by
 * default, the vocabulary the tokenizer's. */
export function freshTransformerPolicy(
  o: FreshTransformerOptions,
  env: EnvSpec,
  id: string,
  field = '--policy',
): TransformerPolicy {
  const tokenizer =
    o.tokenizer === undefined
      ? Tokenizer.bytesOnly()
      : readTokenizerFile(o.tokenizer, `${field} transformer.tokenizer`);
  if (o.vocab !== undefined && o.vocab !== tokenizer.vocabSize)
    throw new InputError(
      `${field} transformer.vocab`,
      o.vocab,
      `the tokenizer (${o.tokenizer ?? 'the bytes and the specials'}) has ${tokenizer.vocabSize} tokens; give that or leave vocab out`,
    );
  // Checked by transformerConfig: a bad shape is refused naming its field (transformer.d, …).
  const config = transformerConfig({
    layers: o.layers ?? 2,
    d: o.d ?? 64,
    heads: o.heads ?? 4,
    ctx: o.ctx ?? 512,
    vocab: tokenizer.vocabSize,
  });
  const model = new Transformer(config, Rng.derive(o.seed ?? 0));
  return new TransformerPolicy(model, tokenizer, policyFormat(o.format), env, id, field);
}
