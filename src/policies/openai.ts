// Any OpenAI-compatible chat endpoint as a policy over a discrete-action env (vLLM, SGLang, llama.cpp's
// server, Ollama, OpenAI, or `turnwise serve` for an in-process policy). The prompt is the env's chat
// encoding (policies/chat.ts) of the observation and the history; the reply's tool call or tagged
// answer is parsed into an action index. Malformed output is an observation, never a crash: the turn's
// action is INVALID_ACTION (the env answers valid: false) and the reason is recorded in the trace and
// told to the model next turn.
//
// Determinism: each request's `seed` is ctx.rng.uniform53() — a function of (run seed, task, sample,
// turn) — and `turnwise serve` draws its policy's uniform from exactly that number (Rng.replay), so a
// served policy acts as it would in-process. Retries (429, 5xx, connection errors, timeouts, bodies that
// do not parse) back off exponentially with jitter and honour Retry-After; a request that still fails
// throws, and the rollout ends that episode as `error` with the reason.
//
// Replay: with a ResponseCache (store/replay-cache.ts, injected by the CLI's --cache FILE.sqlite) every
// completed request is recorded under requestKey(body) the moment its response arrives, with the retries
// and latency it took; a request the cache holds is answered from it with no HTTP at all (nor does
// connect() reach the server when the cache holds the model listing), and its trace is the recorded one.
//
// Scoring (logProb, for NLL, LLR and PPO ratios): the turn's prompt rendered as ChatML (chat.ts
// renderChatML) with the action's text appended, sent to /v1/completions with echo and logprobs; the
// echoed tokens over the action's characters (text_offset) sum to log π(a). A server that cannot echo
// prompt log-probs (llama.cpp, Ollama, OpenAI's chat models) is found out by checkScoring(), which then
// removes logProb and says why: diagnostics report "unavailable" rather than a wrong number.
//
// Limits shared by every episode of a run (one policy object serves them all): `concurrency` requests in
// flight, `rpm` requests a minute (spaced evenly), `tpm` tokens a minute (the usage the server reported,
// over a sliding minute), and `max_context`: a prompt whose estimated size (ChatML characters / 4) is
// over it ends the episode as failure kind `context` before any request. Totals (requests, retries,
// failed, byStatus, tokens) are counted per policy for the run's summary.
import { createHash } from 'node:crypto';
import { ContextOverflow, InputError } from '../core/errors.ts';
import type {
  Action,
  CachedResponse,
  ChatSpec,
  EnvSpec,
  Policy,
  TurnContext,
  TurnTrace,
} from '../core/types.ts';
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
import { type HttpReply, post } from './http.ts';

export interface OpenAIOptions {
  /** The API base, e.g. http://127.0.0.1:8000/v1 (no trailing slash). */
  baseUrl: string;
  model: string;
  mode: ChatMode;
  /** Sampling temperature; absent: the server's default. */
  temperature?: number;
  maxTokens: number;
  /** Keep the last N turns of the history in the prompt; absent: all of them. */
  history?: number;
  /** Requests in flight at once, shared by every episode that uses this policy. */
  concurrency: number;
  /** Per-request timeout. */
  timeoutMs: number;
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay; attempt i waits about backoffMs · 2^i (jittered), at most maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Ask for per-token log-probs (and the top alternatives when > 0). */
  logprobs: boolean;
  topLogprobs: number;
  /** Whether the model is told the turns left and uses them; absent: what the server's model listing
   * says (`turnwise serve` states it for its policy), else false. */
  budgetAware?: boolean;
  /** Requests a minute and tokens a minute, shared by every episode; absent: unlimited. */
  rpm?: number;
  tpm?: number;
  /** Ask for the completion's token ids as vLLM's `return_token_ids` (other servers may refuse it;
   * llama.cpp gives ids in logprobs.content[] unasked). */
  tokenIds?: boolean;
  /** The model's context window in tokens: a longer prompt (estimated) ends the episode as `context`. */
  maxContext?: number;
}

/** What a policy's requests cost so far (the run's summary). Cache hits are counted apart: no HTTP. */
export interface RequestTotals {
  /** HTTP attempts made (each retry is one more). */
  requests: number;
  retries: number;
  /** Requests that still failed after their retries (each ended an episode, or a scoring call). */
  failed: number;
  /** Attempts by HTTP status, or `timeout` / `connection` when none came. */
  byStatus: Record<string, number>;
  promptTokens: number;
  completionTokens: number;
  /** Requests answered from the replay cache. */
  cached: number;
}

/** Totals before any request. */
export function zeroTotals(): RequestTotals {
  return {
    requests: 0,
    retries: 0,
    failed: 0,
    byStatus: {},
    promptTokens: 0,
    completionTokens: 0,
    cached: 0,
  };
}

export type { CachedResponse };

/** Where completed requests are recorded and replayed from (store/replay-cache.ts is the SQLite one). */
export interface ResponseCache {
  /** Refuses (InputError) a cache recorded for other models. */
  claim(model: string, field?: string): void;
  get(key: string): CachedResponse | undefined;
  put(key: string, model: string, entry: CachedResponse): void;
}

/** What `turnwise probe` reports of a server. */
export interface Capabilities {
  chat: boolean;
  tools: boolean;
  logprobs: boolean;
  topLogprobs: boolean;
  tokenIds: boolean;
  promptLogprobs: boolean;
  seed: boolean;
  n: boolean;
}

/** JSON with object keys sorted at every depth: equal bodies give equal text whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The cache key of a chat request: sha256 of its canonical JSON body (model, messages, tools, seed,
 * sampling parameters — the key is a header and never part of it). Scoring requests are `score:…`. */
export function requestKey(body: unknown, kind: 'chat' | 'score' = 'chat'): string {
  return `${kind}:${createHash('sha256').update(canonical(body)).digest('hex')}`;
}

/** The cache key of the model listing connect() reads. */
export const LISTING_KEY = 'GET /models';

/** The key is held here and sent as a header only; it never enters an id, a trace or an error. */
const keys = new WeakMap<OpenAIPolicy, string>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One answered request: the parsed body, its text, the retries it took, its status and why the
 * retried attempts failed. */
interface Answer {
  response: ChatResponse;
  text: string;
  retries: number;
  status: number;
  errors: string[];
}

class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(n: number) {
    this.free = n;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.free++;
  }
}

/** A failure worth retrying (429, 5xx, connection, timeout, a body that does not parse). */
class Transient extends Error {
  readonly waitMs: number | undefined;

  constructor(message: string, waitMs?: number) {
    super(message);
    this.waitMs = waitMs;
  }
}

/** rpm: requests spaced 60000/rpm ms apart; tpm: a request waits while the last minute's reported
 * tokens reach tpm. One limiter per policy, so every episode of a run shares it. */
export class RateLimiter {
  private next = 0;
  private readonly spent: { at: number; tokens: number }[] = [];
  private readonly rpm: number | undefined;
  private readonly tpm: number | undefined;
  /** The window of both limits (a minute; shorter only in tests). */
  private readonly windowMs: number;

  constructor(rpm: number | undefined, tpm: number | undefined, windowMs = 60_000) {
    this.rpm = rpm;
    this.tpm = tpm;
    this.windowMs = windowMs;
  }

  async wait(): Promise<void> {
    if (this.rpm !== undefined) {
      const now = performance.now();
      const at = Math.max(now, this.next);
      this.next = at + this.windowMs / this.rpm;
      if (at > now) await sleep(at - now);
    }
    if (this.tpm === undefined) return;
    for (;;) {
      const now = performance.now();
      while (this.spent.length > 0 && this.spent[0].at <= now - this.windowMs) this.spent.shift();
      const used = this.spent.reduce((s, x) => s + x.tokens, 0);
      if (used < this.tpm) return;
      await sleep(this.spent[0].at + this.windowMs - now + 1);
    }
  }

  spend(tokens: number): void {
    if (this.tpm !== undefined && tokens > 0) this.spent.push({ at: performance.now(), tokens });
  }
}

interface CompletionResponse {
  choices: {
    text?: string;
    logprobs?: { tokens?: unknown[]; token_logprobs?: unknown[]; text_offset?: unknown[] } | null;
  }[];
  usage?: ChatResponse['usage'];
}

/** log π of the characters [from, to) of an echoed prompt: the sum of the log-probs of the tokens that
 * overlap them (−9999, OpenAI's floor, is −∞); undefined when the echo has no usable log-probs there. */
export function echoedLogProb(
  logprobs: CompletionResponse['choices'][number]['logprobs'],
  from: number,
  to: number,
): number | undefined {
  const lps = logprobs?.token_logprobs;
  const offsets = logprobs?.text_offset;
  if (!Array.isArray(lps) || !Array.isArray(offsets) || lps.length !== offsets.length) return undefined;
  let sum = 0;
  let covered = false;
  for (let i = 0; i < offsets.length; i++) {
    const start = offsets[i] as number;
    const end = i + 1 < offsets.length ? (offsets[i + 1] as number) : Number.POSITIVE_INFINITY;
    if (typeof start !== 'number' || end <= from || start >= to) continue;
    const lp = lps[i];
    if (typeof lp !== 'number') return undefined;
    sum += lp <= -9999 ? Number.NEGATIVE_INFINITY : lp;
    covered = true;
  }
  return covered ? sum : undefined;
}

interface ChatResponse {
  model?: string;
  system_fingerprint?: string | null;
  choices: {
    message?: {
      content?: string | null;
      tool_calls?: { function?: { name?: string; arguments?: string } }[] | null;
    };
    finish_reason?: string | null;
    logprobs?: { content?: { token?: string; logprob?: number; id?: number }[] | null } | null;
    token_ids?: number[];
  }[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
  };
}

const CONTEXT = /context length|context window|maximum context|too many tokens|prompt is too long/i;

/** Retry-After in ms: OpenAI's `retry-after-ms`, else `Retry-After` as seconds or an HTTP date. */
function retryAfter(h: Headers): number | undefined {
  const ms = Number(h.get('retry-after-ms'));
  if (h.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = h.get('retry-after');
  if (ra === null) return undefined;
  const s = Number(ra);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(ra);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Why fetch failed: undici hides the socket's code in `cause` (ECONNREFUSED, ECONNRESET, bad port). */
function networkReason(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
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
  private readonly limit: Semaphore;
  private readonly rate: RateLimiter;
  private cache: ResponseCache | undefined;
  private expected: { env: string; params: Record<string, unknown> } | undefined;
  private readonly counts: RequestTotals = zeroTotals();
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
    this.limit = new Semaphore(options.concurrency);
    this.rate = new RateLimiter(options.rpm, options.tpm);
    this.logProb = (ctx, action) => this.score(ctx, action);
    this.scoringUnavailable = undefined;
    if (apiKey !== undefined && apiKey !== '') keys.set(this, apiKey);
  }

  /** Records every completed request in `cache` and answers from it what it holds. */
  useCache(cache: ResponseCache, field = '--cache'): void {
    cache.claim(this.options.model, field);
    this.cache = cache;
  }

  /** The env configuration this run uses: connect() refuses a `turnwise serve` that serves another. */
  expectEnv(env: string, params: Record<string, unknown>): void {
    this.expected = { env, params };
  }

  /** The totals of this policy's requests so far (a copy). */
  totals(): RequestTotals {
    return { ...this.counts, byStatus: { ...this.counts.byStatus } };
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json' };
    const key = keys.get(this);
    if (key !== undefined) h.authorization = `Bearer ${key}`;
    return h;
  }

  /**
   * Checks the endpoint before any episode: it answers, accepts the key and lists the model. Throws an
   * InputError (one line, exit 2 in the CLI) otherwise. Adopts the listing's `turnwise.budget_aware`
   * when the spec did not say budgetAware.
   */
  async connect(): Promise<void> {
    const { baseUrl, model, timeoutMs } = this.options;
    const cached = this.cache?.get(LISTING_KEY);
    if (cached !== undefined) return this.adopt(cached.body);
    let res: Response;
    try {
      res = await fetch(`${baseUrl}/models`, {
        headers: this.headers(),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new InputError(this.field, baseUrl, `cannot reach the server (${networkReason(e)})`);
    }
    if (res.status === 401 || res.status === 403) {
      throw new InputError(
        this.field,
        baseUrl,
        `the server refused the key (HTTP ${res.status}); set OPENAI_API_KEY or --api-key-env`,
      );
    }
    if (!res.ok) throw new InputError(this.field, baseUrl, `GET /models answered HTTP ${res.status}`);
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new InputError(this.field, baseUrl, `cannot read GET /models (${networkReason(e)})`);
    }
    this.adopt(text);
    this.cache?.put(LISTING_KEY, model, { body: text, retries: 0, latencyMs: 0 });
  }

  /** Checks a model listing (the text of GET /models) and adopts what it says of the model. */
  private adopt(text: string): void {
    const { baseUrl, model } = this.options;
    let listing: {
      data?: {
        id?: string;
        turnwise?: { budget_aware?: boolean; env?: string; params?: Record<string, unknown> };
      }[];
    };
    try {
      listing = JSON.parse(text) as typeof listing;
    } catch {
      throw new InputError(this.field, baseUrl, 'GET /models did not answer JSON');
    }
    const models = Array.isArray(listing.data) ? listing.data : [];
    const entry = models.find((m) => m.id === model);
    if (entry === undefined) {
      const ids = models.map((m) => m.id).join(', ');
      throw new InputError(
        this.field,
        model,
        `the server does not list this model; it lists ${ids || 'none'}`,
      );
    }
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
    const r = await this.cached('chat', '/chat/completions', body, this.bodyText(ctx, body));
    return this.read(r.response as ChatResponse, r);
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

  /** A request answered from the cache when it holds it, else over HTTP (and then recorded). */
  private async cached(
    kind: 'chat' | 'score',
    path: string,
    body: Record<string, unknown>,
    text?: string,
  ): Promise<Answer & { latencyMs: number }> {
    const key = this.cache === undefined ? undefined : requestKey(body, kind);
    const hit = key === undefined ? undefined : this.cache?.get(key);
    if (hit !== undefined) {
      this.counts.cached++;
      return {
        response: JSON.parse(hit.body) as ChatResponse,
        text: hit.body,
        retries: hit.retries,
        status: hit.status ?? 200,
        errors: hit.errors ?? [],
        latencyMs: hit.latencyMs,
      };
    }
    const t0 = performance.now();
    const answer = await this.request(path, text ?? JSON.stringify(body));
    const latencyMs = performance.now() - t0;
    if (key !== undefined) {
      this.cache?.put(key, this.options.model, {
        body: answer.text,
        retries: answer.retries,
        latencyMs,
        status: answer.status,
        errors: answer.errors,
      });
    }
    return { ...answer, latencyMs };
  }

  /** log π(action | ctx) by echo on /v1/completions (see the header). */
  private async score(ctx: TurnContext<unknown>, action: number): Promise<number> {
    if (!Number.isInteger(action) || action < 0 || action >= this.chat.names.length) {
      return Number.NEGATIVE_INFINITY;
    }
    const head = renderChatML(this.messages(ctx));
    const prompt = head + actionText(this.chat, this.options.mode, action);
    const body = {
      model: this.options.model,
      prompt,
      echo: true,
      logprobs: 1,
      max_tokens: 1,
      temperature: 0,
    };
    const r = await this.cached('score', '/completions', body);
    const lp = echoedLogProb(
      (r.response as CompletionResponse).choices[0]?.logprobs,
      head.length,
      prompt.length,
    );
    if (lp === undefined) {
      throw new Error(`openai: ${this.options.model}: the server did not echo the prompt's log-probs`);
    }
    return lp;
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
      this.scoringUnavailable = `${this.id}: scoring unavailable (${reason}); NLL, LLR and PPO ratios need prompt log-probs (/v1/completions with echo and logprobs: vLLM, SGLang, turnwise serve; not llama.cpp, Ollama or OpenAI chat models)`;
      this.logProb = undefined;
    }
    return this.scoringUnavailable;
  }

  /**
   * What the server supports, by small real requests (one per capability, each on its own: a 4xx or
   * a reply without the field is false). `messages` is a first-turn prompt (text mode) the model can
   * answer.
   */
  async probe(messages: ChatMessage[]): Promise<Capabilities> {
    const o = this.options;
    const post = async (path: string, extra: Record<string, unknown>) => {
      try {
        const res = await fetch(`${o.baseUrl}${path}`, {
          method: 'POST',
          headers: this.headers(),
          body: JSON.stringify({ model: o.model, max_tokens: 16, ...extra }),
          signal: AbortSignal.timeout(o.timeoutMs),
        });
        if (!res.ok) return undefined;
        return (await res.json()) as Record<string, unknown> & ChatResponse;
      } catch {
        return undefined;
      }
    };
    const chat = (extra: Record<string, unknown>) => post('/chat/completions', { messages, ...extra });
    const first = (r: ChatResponse | undefined) => (Array.isArray(r?.choices) ? r.choices[0] : undefined);
    const entries = (r: ChatResponse | undefined) => {
      const c = first(r)?.logprobs?.content;
      return Array.isArray(c) && c.length > 0 && c.every((e) => typeof e.logprob === 'number')
        ? c
        : undefined;
    };
    const seedA = await chat({ seed: 12345, temperature: 1, logprobs: true });
    const seedB = await chat({ seed: 12345, temperature: 1, logprobs: true });
    const tools = await chat({ tools: this.tools });
    const top = await chat({ logprobs: true, top_logprobs: 2 });
    const ids = await chat({ logprobs: true, return_token_ids: true });
    const prompt = await chat({ prompt_logprobs: 1 });
    const head = renderChatML(messages);
    const scored = head + actionText(this.chat, 'text', 0);
    const echo = await post('/completions', { prompt: scored, echo: true, logprobs: 1, max_tokens: 1 });
    const n = await chat({ n: 2, seed: 1 });
    const idList = entries(ids);
    const tokenIds =
      (idList?.every((e) => Number.isInteger(e.id)) ?? false) || Array.isArray(first(ids)?.token_ids);
    const echoed = echoedLogProb(
      (echo as CompletionResponse | undefined)?.choices?.[0]?.logprobs,
      head.length,
      scored.length,
    );
    const toolCalls = first(tools)?.message?.tool_calls;
    const reply = (r: ChatResponse | undefined) =>
      JSON.stringify([first(r)?.message ?? null, entries(r)?.map((e) => [e.token, e.logprob]) ?? null]);
    return {
      chat: typeof first(seedA)?.message === 'object',
      tools: Array.isArray(toolCalls) && toolCalls.length > 0,
      logprobs: entries(seedA) !== undefined,
      topLogprobs:
        ((entries(top)?.[0] as { top_logprobs?: unknown[] } | undefined)?.top_logprobs?.length ?? 0) > 0,
      tokenIds,
      promptLogprobs: Array.isArray(prompt?.prompt_logprobs) || echoed !== undefined,
      seed: seedA !== undefined && seedB !== undefined && reply(seedA) === reply(seedB),
      n: Array.isArray(n?.choices) && n.choices.length === 2,
    };
  }

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

  /** POST path with retries; resolves to the parsed response, its status and the failed attempts. */
  private async request(path: string, body: string): Promise<Answer> {
    const o = this.options;
    const errors: string[] = [];
    for (let attempt = 0; attempt <= o.retries; attempt++) {
      try {
        const answer = await this.attempt(path, body);
        this.counts.retries += attempt;
        const u = answer.response.usage;
        const prompt = Number.isInteger(u?.prompt_tokens) ? (u?.prompt_tokens as number) : 0;
        const completion = Number.isInteger(u?.completion_tokens) ? (u?.completion_tokens as number) : 0;
        this.counts.promptTokens += prompt;
        this.counts.completionTokens += completion;
        this.rate.spend(prompt + completion);
        return { ...answer, retries: attempt, errors };
      } catch (e) {
        if (!(e instanceof Transient)) {
          this.counts.failed++;
          throw e;
        }
        errors.push(e.message);
        if (attempt === o.retries) break;
        // Exponential backoff with "equal jitter" (half fixed, half uniform); Retry-After wins.
        const base = Math.min(o.maxBackoffMs, o.backoffMs * 2 ** attempt);
        await sleep(e.waitMs ?? base / 2 + (Math.random() * base) / 2);
      }
    }
    this.counts.failed++;
    this.counts.retries += o.retries;
    throw new Error(
      `openai: ${o.model} failed after ${o.retries + 1} attempts: ${errors[errors.length - 1]}`,
    );
  }

  private async attempt(
    path: string,
    body: string,
  ): Promise<{ response: ChatResponse; text: string; status: number }> {
    const o = this.options;
    await this.rate.wait();
    await this.limit.acquire();
    const count = (status: string) => {
      this.counts.requests++;
      this.counts.byStatus[status] = (this.counts.byStatus[status] ?? 0) + 1;
    };
    try {
      let res: HttpReply;
      try {
        res = await post(`${o.baseUrl}${path}`, this.headers(), body, o.timeoutMs);
      } catch (e) {
        if ((e as Error).name === 'TimeoutError') {
          count('timeout');
          throw new Transient(`timeout after ${o.timeoutMs} ms`);
        }
        count('connection');
        throw new Transient(`connection error (${networkReason(e)})`);
      }
      const text = res.text;
      count(String(res.status));
      if (res.status === 429 || res.status >= 500) {
        throw new Transient(`HTTP ${res.status}`, retryAfter(res.headers));
      }
      if (res.status < 200 || res.status > 299) {
        let message = text.slice(0, 200);
        try {
          const m = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
          if (typeof m === 'string') message = m;
        } catch {}
        if (CONTEXT.test(message)) throw new ContextOverflow(`openai: ${message}`);
        throw new Error(`openai: HTTP ${res.status}: ${message}`);
      }
      let json: ChatResponse;
      try {
        json = JSON.parse(text) as ChatResponse;
      } catch {
        throw new Transient('malformed response body (not JSON)');
      }
      if (!Array.isArray(json?.choices) || json.choices.length === 0 || typeof json.choices[0] !== 'object') {
        throw new Transient('malformed response body (no choices)');
      }
      return { response: json, text, status: res.status };
    } finally {
      this.limit.release();
    }
  }
}
