// Any OpenAI-compatible chat endpoint as a policy over a discrete-action env (vLLM, SGLang, llama.cpp's
// server, Ollama, OpenAI, or `turnwise serve` for an in-process policy). The prompt is the env's chat
// encoding (policies/chat.ts) of the observation and the history; the reply's tool call or tagged
// answer is parsed into an action index. Malformed output is an observation, never a crash: the turn's
// action is INVALID_ACTION (the env answers valid: false) and the reason is recorded in the trace and
// told to the model next turn.
//
// Determinism: each request's `seed` is ctx.rng.uniform53() — a function of (run seed, task, sample,
// turn) — and `turnwise serve` draws its policy's uniform from exactly that number (Rng.replay), so a
// served policy acts as it would in-process. The requests go through the policy's transport
// (transport.ts: the keep-alive client, limits, retries, the replay cache, the totals); a request that
// still fails throws, and the rollout ends that episode as `error` with the reason. connect() reads the
// model listing through it too (retried as any call), or from the cache when it holds the listing.
//
// Scoring (logProb) by echo on /v1/completions: scoring.ts. Probing the server's capabilities: probe.ts.
//
// `max_context`: a prompt whose estimated size (ChatML characters / 4) is over it ends the episode as
// failure kind `context` before any request.
import { ContextOverflow, InputError } from '../core/errors.ts';
import type { Action, ChatSpec, EnvSpec, Policy, TurnContext, TurnTrace } from '../core/types.ts';
import {
  actionText,
  buildMessages,
  type ChatMessage,
  type ChatMode,
  chatTool,
  INVALID_ACTION,
  type MessagesMemo,
  parseReply,
  renderChatML,
} from './chat.ts';
import { type Capabilities, probeServer } from './probe.ts';
import { echoScore, unavailableReason } from './scoring.ts';
import {
  type Answer,
  type ChatResponse,
  canonical,
  LISTING_KEY,
  listedModel,
  listingRefusal,
  type RequestTotals,
  type ResponseCache,
  Transport,
  type TransportOptions,
} from './transport.ts';

// What the CLI's cache and totals and the spec reader import from here, where they lived before.
export { type RequestTotals, type ResponseCache, requestKey, zeroTotals } from './transport.ts';

export interface OpenAIOptions extends TransportOptions {
  mode: ChatMode;
  /** Sampling temperature; absent: the server's default. */
  temperature?: number;
  maxTokens: number;
  /** Keep the last N turns of the history in the prompt; absent: all of them. */
  history?: number;
  /** Ask for per-token log-probs (and the top alternatives when > 0). */
  logprobs: boolean;
  topLogprobs: number;
  /** Whether the model is told the turns left and uses them; absent: what the server's model listing
   * says (`turnwise serve` states it for its policy), else false. */
  budgetAware?: boolean;
  /** Ask for the completion's token ids as vLLM's `return_token_ids` (other servers may refuse it;
   * llama.cpp gives ids in logprobs.content[] unasked). */
  tokenIds?: boolean;
  /** The model's context window in tokens: a longer prompt (estimated) ends the episode as `context`. */
  maxContext?: number;
}

export class OpenAIPolicy implements Policy<unknown, number> {
  readonly id: string;
  budgetAware: boolean;
  readonly options: OpenAIOptions;
  /** log π(action | ctx) through the scoring endpoint; undefined once checkScoring() found the server
   * cannot score (then `scoringUnavailable` says why). */
  logProb: ((ctx: TurnContext<unknown>, action: number) => Promise<number>) | undefined;
  scoringUnavailable: string | undefined;
  private readonly chat: ChatSpec;
  private readonly tools;
  private readonly transport: Transport;
  private expected: { env: string; params: Record<string, unknown> } | undefined;
  /** The prompts rendered so far, per episode history (buildMessages extends them turn by turn). */
  private readonly rendered: MessagesMemo = new WeakMap();

  /** The CLI field errors name (`--policy`, `--a`, the probe's argument). */
  readonly field: string;

  constructor(options: OpenAIOptions, env: EnvSpec, id: string, apiKey?: string, field = '--policy') {
    this.field = field;
    if (typeof env.actions !== 'number' || env.chat === undefined) {
      throw new InputError(field, id, `env ${env.id} has no chat encoding for LLM policies`);
    }
    this.options = options;
    this.id = id;
    this.chat = env.chat;
    this.tools = [chatTool(env.chat)];
    this.budgetAware = options.budgetAware ?? false;
    this.transport = new Transport(options, apiKey);
    this.logProb = (ctx, action) => this.score(ctx, action);
    this.scoringUnavailable = undefined;
  }

  /** Records every completed request in `cache` and answers from it what it holds. */
  useCache(cache: ResponseCache, field = '--cache'): void {
    cache.claim(this.options.model, field);
    this.transport.cache = cache;
  }

  /** The env configuration this run uses: connect() refuses a `turnwise serve` that serves another. */
  expectEnv(env: string, params: Record<string, unknown>): void {
    this.expected = { env, params };
  }

  /** The totals of this policy's requests so far (a copy). */
  totals(): RequestTotals {
    return this.transport.totals();
  }

  /**
   * Checks the endpoint before any episode: it answers, accepts the key and lists the model. Throws an
   * InputError (one line, exit 2 in the CLI) otherwise. The listing is retried as any call is (429, 5xx,
   * timeouts); a refused key, another status or a connection nobody accepts is refused at once. Adopts
   * the listing's `turnwise.budget_aware` when the spec did not say budgetAware.
   */
  async connect(): Promise<void> {
    const cache = this.transport.cache;
    const cached = cache?.get(LISTING_KEY);
    if (cached !== undefined) return this.adopt(cached.body);
    let text: string;
    try {
      text = await this.transport.listing();
    } catch (e) {
      throw listingRefusal(e, this.field, this.options.baseUrl);
    }
    this.adopt(text);
    cache?.put(LISTING_KEY, this.options.model, { body: text, retries: 0, latencyMs: 0 });
  }

  /** Checks a model listing (the text of GET /models) and adopts what it says of the model. */
  private adopt(text: string): void {
    const { baseUrl, model } = this.options;
    const entry = listedModel<{
      turnwise?: { budget_aware?: boolean; env?: string; params?: Record<string, unknown> };
    }>(text, model, this.field, baseUrl);
    const served = entry.turnwise;
    const want = this.expected;
    if (want !== undefined && served?.env !== undefined && served.params !== undefined) {
      const a = canonical({ env: served.env, params: served.params });
      const b = canonical({ env: want.env, params: want.params });
      if (a !== b) {
        throw InputError.raw(
          this.field,
          `${baseUrl} serves ${served.env} ${canonical(served.params)}, but this run's env is ${want.env} ${canonical(want.params)}; give the same env flags to both`,
        );
      }
    }
    if (this.options.budgetAware === undefined && served?.budget_aware === true) this.budgetAware = true;
  }

  /** The prompt of a turn (what act() sends and score() renders). */
  private messages(ctx: TurnContext<unknown>): ChatMessage[] {
    const env = ctx.env;
    if (env.text === undefined) throw new Error(`env ${env.spec.id} has no text view`);
    return buildMessages(
      {
        chat: this.chat,
        mode: this.options.mode,
        text: env.text.bind(env),
        observation: ctx.observation,
        history: ctx.history,
        turn: ctx.turn,
        turnsLeft: ctx.turnsLeft,
        keep: this.options.history,
      },
      this.rendered,
    );
  }

  /** max_context: a prompt estimated (ChatML characters / 4, rounded up) over it overflows. */
  private checkContext(messages: ChatMessage[]): void {
    const max = this.options.maxContext;
    if (max === undefined) return;
    const estimate = Math.ceil(renderChatML(messages).length / 4);
    if (estimate > max) {
      throw new ContextOverflow(`openai: the prompt (about ${estimate} tokens) is over max_context=${max}`);
    }
  }

  async act(ctx: TurnContext<unknown>): Promise<Action<number>> {
    const body = this.requestBody(ctx);
    const r = await this.transport.cached('chat', '/chat/completions', body, this.bodyText(ctx, body));
    return this.read(r.response, r);
  }

  /**
   * JSON.stringify(body), byte for byte, with the messages this episode already sent taken from their
   * JSON of the previous turn: a turn serialises its new messages, not the whole conversation again.
   */
  bodyText(ctx: TurnContext<unknown>, body: Record<string, unknown>): string {
    const sent = this.rendered.get(ctx.history);
    const messages = body.messages as ChatMessage[];
    const k = sent?.messages.length ?? 0;
    const keys = Object.keys(body);
    if (
      sent === undefined ||
      k >= messages.length ||
      messages[k - 1] !== sent.messages[k - 1] ||
      keys[0] !== 'model' ||
      keys[1] !== 'messages'
    ) {
      return JSON.stringify(body);
    }
    const { model, messages: _, ...rest } = body;
    const tail = messages
      .slice(k)
      .map((m) => JSON.stringify(m))
      .join(',');
    const more = JSON.stringify(rest);
    return `{"model":${JSON.stringify(model)},"messages":[${sent.json},${tail}]${more === '{}' ? '}' : `,${more.slice(1)}`}`;
  }

  /** The chat request of a turn (its seed drawn from ctx.rng); ContextOverflow over max_context. */
  requestBody(ctx: TurnContext<unknown>): Record<string, unknown> {
    const o = this.options;
    const messages = this.messages(ctx);
    this.checkContext(messages);
    const body: Record<string, unknown> = {
      model: o.model,
      messages,
      seed: ctx.rng.uniform53(),
      max_tokens: o.maxTokens,
    };
    if (o.temperature !== undefined) body.temperature = o.temperature;
    if (o.mode === 'tools') body.tools = this.tools;
    if (o.logprobs) {
      body.logprobs = true;
      if (o.topLogprobs > 0) body.top_logprobs = o.topLogprobs;
    }
    if (o.tokenIds === true) body.return_token_ids = true;
    return body;
  }

  /** log π(action | ctx) by echo on /v1/completions (scoring.ts). */
  private async score(ctx: TurnContext<unknown>, action: number): Promise<number> {
    if (!Number.isInteger(action) || action < 0 || action >= this.chat.names.length) {
      return Number.NEGATIVE_INFINITY;
    }
    return echoScore(this.transport, this.messages(ctx), actionText(this.chat, this.options.mode, action));
  }

  /**
   * Whether the server can score (one scoring request on `ctx`'s prompt); when it cannot, logProb is
   * removed and the reason kept in scoringUnavailable (also returned). Undefined: it can.
   */
  async checkScoring(ctx: TurnContext<unknown>): Promise<string | undefined> {
    let reason: string | undefined;
    try {
      const lp = await this.score(ctx, 0);
      if (Number.isNaN(lp)) reason = 'the echoed log-probs are not numbers';
    } catch (e) {
      reason = (e as Error).message.replace(/^openai: /, '');
    }
    if (reason !== undefined) {
      this.scoringUnavailable = unavailableReason(this.id, reason);
      this.logProb = undefined;
    }
    return this.scoringUnavailable;
  }

  /** What the server supports (probe.ts). `messages` is a first-turn prompt (text mode) the model can
   * answer. */
  probe(messages: ChatMessage[]): Promise<Capabilities> {
    return probeServer(this.transport, this.chat, this.tools, messages, this.field);
  }

  /** The reply parsed into the turn's action, with its trace. */
  private read(
    res: ChatResponse,
    r: Omit<Answer, 'response' | 'text'> & { latencyMs: number },
  ): Action<number> {
    const choice = res.choices[0];
    const parsed = parseReply(this.chat, this.options.mode, choice.message);
    const trace: TurnTrace = { text: parsed.text };
    const entries = choice.logprobs?.content;
    let logp = 0;
    if (Array.isArray(entries) && entries.length > 0 && entries.every((e) => typeof e.logprob === 'number')) {
      trace.logprobs = entries.map((e) => e.logprob as number);
      logp = trace.logprobs.reduce((s, x) => s + x, 0);
      // Token ids: llama.cpp puts them in logprobs.content[].id; vLLM in choices[].token_ids.
      if (entries.every((e) => Number.isInteger(e.id) && (e.id as number) >= 0)) {
        trace.tokens = entries.map((e) => e.id as number);
      } else if (Array.isArray(choice.token_ids) && choice.token_ids.length === entries.length) {
        trace.tokens = [...choice.token_ids];
      }
    } else if (Array.isArray(choice.token_ids) && choice.token_ids.every((x) => Number.isInteger(x))) {
      trace.tokens = [...choice.token_ids];
    }
    if (res.model !== undefined) trace.model = res.model;
    if (typeof res.system_fingerprint === 'string') trace.modelVersion = res.system_fingerprint;
    const u = res.usage;
    if (u !== undefined && Number.isInteger(u.prompt_tokens) && Number.isInteger(u.completion_tokens)) {
      trace.usage = { prompt: u.prompt_tokens as number, completion: u.completion_tokens as number };
      const cached = u.prompt_tokens_details?.cached_tokens;
      if (Number.isInteger(cached)) trace.usage.cached = cached;
    }
    trace.latencyMs = r.latencyMs;
    if (typeof choice.finish_reason === 'string') trace.finishReason = choice.finish_reason;
    trace.retries = r.retries;
    trace.status = r.status;
    if (r.errors.length > 0) trace.errors = [...r.errors];
    if ('invalid' in parsed) {
      trace.invalid = parsed.invalid;
      return { action: INVALID_ACTION, logp, trace };
    }
    return { action: parsed.action, logp, trace };
  }
}
