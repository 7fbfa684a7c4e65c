// `gguf:PATH[,temperature=,top_p=,max_tokens=,ctx=,threads=,top_logprobs=,mode=tools|text]`: any local
// GGUF model as a text policy, run in process by llama.cpp (llama/runtime.ts).
//
// The prompt is the turn's conversation as the in-process transformer builds it
// (policies/transformer-prompt.ts promptMessages: the system message with the tools, the observations as
// user/tool messages, earlier actions as the model wrote them) rendered by the model's own chat template
// (tokenizer.chat_template, a Jinja template, rendered by @huggingface/jinja as HF's
// apply_chat_template does: messages, add_generation_prompt, bos_token, eos_token), then tokenized by
// llama.cpp with special tokens parsed. The context rule is the transformer's: the system message, this
// turn's message and as many of the latest earlier turns as fit in ctx − max_tokens (a ContextOverflow
// when even the first two do not).
//
// Generation: llama.cpp gives the next-token distribution; the token is drawn by turnwise's sampler
// (nn/sampling.ts sampleRow: τ, top-p, one uniform per turn from the episode's stream, replayed), until
// an end-of-generation token (llama.cpp's EOG set), max_tokens, or the context's end. The trace carries
// the text, token ids (the EOG token included), their log π_τ,p, and with top_logprobs=k each token's k
// most probable alternatives. The text is read as the transformer's is (parseGeneration).
//
// logProb(ctx, action): the action written as the model would write it (renderAction), closed as the
// template closes an assistant message (the render of the conversation with the action appended, less
// the prompt, up to and including its first EOG token), scored by teacher forcing under the same τ and p.
//
// A model exported by turnwise (`turnwise export --format gguf`) carries its prompt format in
// `turnwise.policy` (mode, budget awareness, τ, p, max_tokens, env): it is prompted exactly as the
// transformer it came from, so that at τ = 0 it takes the same actions. Other models: tools mode,
// budget-blind, τ = 1, p = 1, max_tokens the longest action (discrete envs) or 128.
import { availableParallelism } from 'node:os';
import { Template } from '@huggingface/jinja';
import { ContextOverflow, InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Action, BatchedPolicy, EnvSpec, TurnContext } from '../core/types.ts';
import { checkGgufModel, type GgufModelInfo, runContext } from '../llama/gguf-check.ts';
import { LlamaRuntime } from '../llama/runtime.ts';
import { type GgufVocab, ggufVocab } from '../llama/vocab.ts';
import { sampleRow, scoreRow, type TokenLogProb } from '../nn/sampling.ts';
import type { ChatMode } from './chat.ts';
import type { Reply, ReplyOptions, ScoredReply, TransformerPolicyFormat } from './transformer.ts';
import { readPolicyFormat } from './transformer.ts';
import {
  hasTextPrompt,
  longestReply,
  type PromptView,
  parseGeneration,
  promptMessages,
  promptView,
  renderAction,
} from './transformer-prompt.ts';

export interface GgufOptions {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  ctx?: number;
  /** llama.cpp threads (0: all cores). */
  threads?: number;
  /** Alternatives recorded per generated token. */
  topLogprobs?: number;
  mode?: ChatMode;
}

/** llama.cpp threads when threads= is not given: one per 64 MiB of weights, at least one, at most the
 * cores. A small model's token is a fraction of a millisecond on one thread, and waking more threads per
 * token costs more than they save (measured: 0.24 ms per token on one thread, 10 ms on two, for the
 * 0.6 MB FrozenLake agent). */
export function defaultThreads(info: GgufModelInfo): number {
  return Math.max(1, Math.min(availableParallelism(), Math.floor(info.weightBytes / (64 * 1024 * 1024))));
}

export class GgufPolicy implements BatchedPolicy<unknown, unknown> {
  readonly id: string;
  readonly budgetAware: boolean;
  readonly info: GgufModelInfo;
  readonly mode: ChatMode;
  readonly temperature: number;
  readonly topP: number;
  readonly ctx: number;
  readonly env: EnvSpec;
  /** The model's own turnwise format, when it is a turnwise export. */
  readonly format: TransformerPolicyFormat | undefined;
  private readonly options: GgufOptions;
  private readonly template: Template;
  private readonly specials: { bos_token: string; eos_token: string };
  private readonly field: string;
  private runtime: LlamaRuntime | undefined;
  private opening: Promise<LlamaRuntime> | undefined;
  private maxTokensCache: number | undefined;
  private readonly vocab: GgufVocab | undefined;
  private endId: number | undefined;

  /** Checks the file and the env before any work (InputError naming `field`); the model is loaded by
   * connect() (or the first turn). */
  constructor(path: string, options: GgufOptions, env: EnvSpec, id: string, field = '--policy') {
    this.id = id;
    this.field = field;
    this.env = env;
    this.options = options;
    if (!hasTextPrompt(env))
      throw new InputError(field, id, `env ${env.id} has no chat encoding or tools to write a prompt from`);
    this.info = checkGgufModel(path, field, options.ctx);
    const meta = this.info.header.metadata;
    const source = meta.get('tokenizer.chat_template')?.value;
    if (typeof source !== 'string')
      throw new InputError(field, path, 'the model has no tokenizer.chat_template to write its prompt with');
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new InputError(field, path, `its chat template does not parse: ${(e as Error).message}`);
    }
    const raw = meta.get('turnwise.policy')?.value;
    if (typeof raw === 'string') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new InputError(field, path, 'turnwise.policy is not valid JSON');
      }
      this.format = readPolicyFormat(parsed, `${path} turnwise.policy`);
      if (this.format.env !== undefined && this.format.env !== env.id)
        throw new InputError(
          field,
          path,
          `the model was trained on env ${this.format.env}; this env is ${env.id}`,
        );
    }
    this.mode = options.mode ?? this.format?.mode ?? 'tools';
    if (this.mode === 'text' && env.chat === undefined)
      throw new InputError(
        field,
        id,
        `mode=text needs a discrete env with a chat encoding; ${env.id} has tools`,
      );
    this.budgetAware = this.format?.budgetAware ?? false;
    this.temperature = options.temperature ?? this.format?.temperature ?? 1;
    this.topP = options.topP ?? this.format?.topP ?? 1;
    this.ctx = runContext(this.info, options.ctx);
    const tokens = meta.get('tokenizer.ggml.tokens')?.value as string[] | undefined;
    const text = (key: string) => {
      const i = meta.get(key)?.value;
      return typeof i === 'number' && tokens !== undefined ? (tokens[i] ?? '') : '';
    };
    this.specials = {
      bos_token: text('tokenizer.ggml.bos_token_id'),
      eos_token: text('tokenizer.ggml.eos_token_id'),
    };
    this.vocab = ggufVocab(this.info.header);
  }

  /** The model's tokens as a served copy writes them (serve/text-model.ts): each token's bytes from the
   * file's vocabulary (llama/vocab.ts; other kinds: llama.cpp's text of the token, once loaded), whether
   * it is special, its string, and a reply's text tokenized as the model writes it (no specials parsed). */
  readonly tokenizer = {
    tokenBytes: (id: number): Uint8Array =>
      this.vocab?.bytes(id) ?? new TextEncoder().encode(this.loaded().tokenText(id)),
    isSpecial: (id: number): boolean => this.vocab?.isSpecial(id) ?? this.loaded().isSpecial(id),
    tokenText: (id: number): string => this.vocab?.text(id) ?? this.loaded().tokenText(id),
    encode: async (text: string): Promise<number[]> => (await this.load()).tokenizeText(text),
  };

  private loaded(): LlamaRuntime {
    if (this.runtime === undefined) throw new Error(`gguf: ${this.info.path} is not loaded (connect())`);
    return this.runtime;
  }

  /** The token that ends a reply: the end-of-generation token the chat template closes an assistant
   * message with (a one-turn conversation's render with the reply, less its prompt: its first EOG
   * token), else the EOS token. */
  get endToken(): Promise<number> {
    return this.load().then((r) => this.closing(r));
  }

  private closing(r: LlamaRuntime): number {
    if (this.endId !== undefined) return this.endId;
    const user = [{ role: 'user', content: 'x' }];
    let tail: number[] = [];
    try {
      const open = this.template.render({ messages: user, add_generation_prompt: true, ...this.specials });
      const closed = this.template.render({
        messages: [...user, { role: 'assistant', content: 'y' }],
        add_generation_prompt: false,
        ...this.specials,
      });
      if (closed.startsWith(open)) tail = r.tokenize(closed.slice(open.length));
    } catch {
      // A template that refuses this conversation: the EOS token.
    }
    const eos = this.info.header.metadata.get('tokenizer.ggml.eos_token_id')?.value;
    const end = tail.find((t) => r.isEog(t)) ?? (typeof eos === 'number' ? eos : undefined);
    if (end === undefined) throw new Error(`gguf: ${this.info.path} names no end-of-generation token`);
    this.endId = end;
    return end;
  }

  /** Loads the model in llama.cpp (once); llama.cpp's refusal is an InputError. */
  async connect(): Promise<void> {
    await this.load();
  }

  private load(): Promise<LlamaRuntime> {
    if (this.runtime !== undefined) return Promise.resolve(this.runtime);
    this.opening ??= LlamaRuntime.open(
      this.info,
      {
        ctx: this.ctx,
        threads: this.options.threads ?? defaultThreads(this.info),
        sequences: 1,
        precise: this.info.allF32,
      },
      this.field,
    ).then((r) => {
      this.runtime = r;
      return r;
    });
    return this.opening;
  }

  async close(): Promise<void> {
    const r = this.runtime;
    this.runtime = undefined;
    this.opening = undefined;
    await r?.close();
  }

  /** The reply's most tokens: the option, the model's turnwise format, else the longest action + 1. */
  private maxTokens(r: LlamaRuntime): number {
    this.maxTokensCache ??=
      this.options.maxTokens ??
      this.format?.maxTokens ??
      longestReply(this.env, this.mode, (t) => r.tokenize(t).length);
    return this.maxTokensCache;
  }

  private view(ctx: TurnContext<unknown>): PromptView {
    return promptView(ctx, this.mode, this.budgetAware);
  }

  /** The template's render of the turn's messages keeping the last `keep` earlier turns, plus extra
   * messages (an assistant reply to score). */
  private render(v: PromptView, keep: number, extra: { role: string; content: string }[] = []): string {
    const messages = [...promptMessages(v, keep).map((m) => ({ role: m.role, content: m.text })), ...extra];
    return this.template.render({ messages, add_generation_prompt: extra.length === 0, ...this.specials });
  }

  /** A turn's prompt in tokens under the context rule (the most earlier turns that fit). */
  async prompt(ctx: TurnContext<unknown>): Promise<{ tokens: number[]; kept: number; text: string }> {
    const r = await this.load();
    const room = this.maxTokens(r);
    const v = this.view(ctx);
    const budget = this.ctx - room;
    const at = (keep: number) => {
      const text = this.render(v, keep);
      return { text, tokens: r.tokenize(text), kept: keep };
    };
    // Tokens grow with the turns kept: the largest keep that fits, by bisection.
    let best = at(0);
    if (best.tokens.length > budget)
      throw new ContextOverflow(
        `gguf: the system message and this turn's message take ${best.tokens.length} tokens; the context of ${this.ctx} less ${room} for the reply leaves ${budget}`,
      );
    let lo = 0;
    let hi = v.history.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const p = at(mid);
      if (p.tokens.length <= budget) {
        lo = mid;
        best = p;
      } else hi = mid - 1;
    }
    return best;
  }

  act(ctx: TurnContext<unknown>): Promise<Action<unknown>> {
    return this.actBatch([ctx]).then(([r]) => {
      if (r instanceof Error) throw r;
      return r;
    });
  }

  async actBatch(ctxs: readonly TurnContext<unknown>[]): Promise<(Action<unknown> | Error)[]> {
    return (await this.replies(ctxs)).map((r) => (r instanceof Error ? r : r.action));
  }

  /** The turns of actBatch with each token's alternatives (what a served copy reports), under a
   * request's sampling overrides. */
  async replies(ctxs: readonly TurnContext<unknown>[], o: ReplyOptions = {}): Promise<(Reply | Error)[]> {
    const r = await this.load();
    const limit = this.maxTokens(r);
    return Promise.all(
      ctxs.map(async (ctx) => {
        try {
          return await this.reply(r, ctx, o, limit);
        } catch (e) {
          if (e instanceof ContextOverflow) return e;
          throw e;
        }
      }),
    );
  }

  private async reply(
    r: LlamaRuntime,
    ctx: TurnContext<unknown>,
    o: ReplyOptions,
    limit: number,
  ): Promise<Reply> {
    const prompt = await this.prompt(ctx);
    const rng = Rng.replay(ctx.rng.uniform53());
    const maxTokens = Math.min(o.maxTokens ?? limit, limit);
    const top = o.top ?? this.options.topLogprobs ?? 0;
    const opts = { temperature: o.temperature ?? this.temperature, topP: o.topP ?? this.topP, top };
    const tokens: number[] = [];
    const logprobs: number[] = [];
    const tops: TokenLogProb[][] = [];
    let finish = 'length';
    await r.generate(prompt.tokens, (row) => {
      const s = sampleRow(row, opts, rng);
      tokens.push(s.token);
      logprobs.push(s.logprob);
      if (top > 0) tops.push(s.top);
      if (r.isEog(s.token)) finish = 'stop';
      else if (tokens.length >= maxTokens) finish = 'length';
      else if (prompt.tokens.length + tokens.length >= this.ctx) finish = 'context';
      else return s.token;
      return undefined;
    });
    const body = finish === 'stop' ? tokens.slice(0, -1) : tokens;
    const text = r.detokenize(body);
    const parsed = parseGeneration(ctx.env.spec, this.mode, text);
    let logp = 0;
    for (const x of logprobs) logp += x;
    const action: Action<unknown> = {
      action: parsed.action,
      logp,
      trace: {
        text,
        tokens,
        logprobs,
        ...(top > 0 ? { topLogprobs: tops } : {}),
        model: this.info.name ?? this.info.path,
        usage: { prompt: prompt.tokens.length, completion: tokens.length },
        finishReason: finish,
        ...(parsed.invalid === undefined ? {} : { invalid: parsed.invalid }),
      },
    };
    return { action, top: tops };
  }

  /** An action's reply tokens as the template closes an assistant message (through its first EOG
   * token); undefined when it is not an action of the env. */
  async replyTokens(ctx: TurnContext<unknown>, action: unknown): Promise<number[] | undefined> {
    return (await this.closedReply(ctx, action))?.tokens;
  }

  /** replyTokens with the turn's prompt it was cut from. */
  private async closedReply(
    ctx: TurnContext<unknown>,
    action: unknown,
  ): Promise<{ prompt: number[]; tokens: number[] } | undefined> {
    const text = renderAction(ctx.env.spec, this.mode, action);
    if (text === undefined) return undefined;
    const r = await this.load();
    const prompt = await this.prompt(ctx);
    const full = this.render(this.view(ctx), prompt.kept, [{ role: 'assistant', content: text }]);
    const all = r.tokenize(full);
    const prefix = prompt.tokens.every((t, i) => all[i] === t);
    const tail = prefix ? all.slice(prompt.tokens.length) : r.tokenize(full.slice(prompt.text.length));
    const end = tail.findIndex((t) => r.isEog(t));
    return { prompt: prompt.tokens, tokens: end < 0 ? tail : tail.slice(0, end + 1) };
  }

  /**
   * An action's tokens as the model writes it, its end-of-message token included, outside any prompt
   * (eval/likelihood.ts counts a text-free policy's actions in these units); undefined before the model
   * is loaded or for a value that is not an action.
   */
  actionTokens(spec: EnvSpec, action: unknown): number[] | undefined {
    const r = this.runtime;
    const text = renderAction(spec, this.mode, action);
    if (r === undefined || text === undefined) return undefined;
    return [...r.tokenize(text), this.closing(r)];
  }

  /** Teacher-forced log π_τ,p of reply tokens after this turn's prompt, with each position's `top`. */
  async scoreReply(ctx: TurnContext<unknown>, tokens: readonly number[], top = 0): Promise<ScoredReply> {
    return this.scoreAfter((await this.prompt(ctx)).tokens, tokens, top);
  }

  /** scoreReply after a prompt already built. */
  private async scoreAfter(
    prompt: readonly number[],
    tokens: readonly number[],
    top: number,
  ): Promise<ScoredReply> {
    const r = await this.load();
    if (prompt.length + tokens.length > this.ctx)
      throw new ContextOverflow(
        `prompt and reply hold ${prompt.length + tokens.length} tokens; the context is ${this.ctx}`,
      );
    const rows = await r.score(prompt, tokens);
    const opts = { temperature: this.temperature, topP: this.topP, top };
    const logprobs: number[] = [];
    const tops: TokenLogProb[][] = [];
    rows.forEach((row, j) => {
      const s = scoreRow(row, tokens[j], opts);
      logprobs.push(s.logprob);
      if (top > 0) tops.push(s.top);
    });
    return { prompt: prompt.length, logprobs, top: tops };
  }

  /** log π(action | ctx) by teacher forcing (−∞ for a value that is not an action of the env). */
  async logProb(ctx: TurnContext<unknown>, action: unknown): Promise<number> {
    const reply = await this.closedReply(ctx, action);
    if (reply === undefined) return Number.NEGATIVE_INFINITY;
    let sum = 0;
    for (const x of (await this.scoreAfter(reply.prompt, reply.tokens, 0)).logprobs) sum += x;
    return sum;
  }
}
