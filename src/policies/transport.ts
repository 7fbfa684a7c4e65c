// How an openai: policy's requests reach the server: the keep-alive client (http.ts), the run's limits
// (limits.ts), retries, the replay cache and the request totals.
//
// Retries (429, 5xx, connection errors, timeouts, bodies that do not parse) back off exponentially with
// jitter and honour Retry-After; a request that still fails throws. Any other status is no fault of the
// moment: it throws at once, as an HttpError carrying the status (ContextOverflow when the server says the
// prompt is too long).
//
// Replay: with a ResponseCache (store/replay-cache.ts, injected by the CLI's --cache FILE.sqlite) every
// completed request is recorded under requestKey(body) the moment its response arrives, with the retries
// and latency it took; a request the cache holds is answered from it with no HTTP at all.
import { createHash } from 'node:crypto';
import { ContextOverflow, InputError } from '../core/errors.ts';
import type { CachedResponse } from '../core/types.ts';
import { call, type HttpReply } from './http.ts';
import { RateLimiter, Semaphore } from './limits.ts';

export interface TransportOptions {
  /** The API base, e.g. http://127.0.0.1:8000/v1 (no trailing slash). */
  baseUrl: string;
  model: string;
  /** Requests in flight at once, shared by every episode that uses this policy. */
  concurrency: number;
  /** Per-request timeout (the spec's `timeout=`). */
  timeoutMs: number;
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay; attempt i waits about backoffMs · 2^i (jittered), at most maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Requests a minute and tokens a minute, shared by every episode; absent: unlimited. */
  rpm?: number;
  tpm?: number;
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

/** JSON with object keys sorted at every depth: equal bodies give equal text whatever their key order. */
export function canonical(value: unknown): string {
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

/** Why a listing (GET /models) failed, as one line naming `field` (an InputError: exit 2 in the CLI). */
export function listingRefusal(e: unknown, field: string, baseUrl: string): Error {
  if (e instanceof HttpError && (e.status === 401 || e.status === 403)) {
    return new InputError(
      field,
      baseUrl,
      `the server refused the key (HTTP ${e.status}); set OPENAI_API_KEY or --api-key-env`,
    );
  }
  if (e instanceof HttpError) return new InputError(field, baseUrl, `GET /models answered HTTP ${e.status}`);
  if (e instanceof RetriesSpent)
    return new InputError(field, baseUrl, `GET /models failed after ${e.attempts} attempts: ${e.last}`);
  if (e instanceof Unreachable) return new InputError(field, baseUrl, e.message);
  return e instanceof Error ? e : new Error(String(e));
}

/** The entry of `model` in a listing (the text of GET /models); an InputError naming `field` when the
 * text is not JSON or does not list the model. */
export function listedModel<E extends object>(
  text: string,
  model: string,
  field: string,
  baseUrl: string,
): E & { id?: string } {
  let listing: { data?: (E & { id?: string })[] };
  try {
    listing = JSON.parse(text) as typeof listing;
  } catch {
    throw new InputError(field, baseUrl, 'GET /models did not answer JSON');
  }
  const models = Array.isArray(listing?.data) ? listing.data : [];
  const entry = models.find((m) => m?.id === model);
  if (entry === undefined) {
    const ids = models.map((m) => m?.id).join(', ');
    throw new InputError(field, model, `the server does not list this model; it lists ${ids || 'none'}`);
  }
  return entry;
}

/** A chat (or completions) reply, as much of it as turnwise reads. */
export interface ChatResponse {
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

/** One answered request: the parsed body, its text, the retries it took, its status and why the
 * retried attempts failed. */
export interface Answer {
  response: ChatResponse;
  text: string;
  retries: number;
  status: number;
  errors: string[];
}

/** A status the server meant (not 429 or 5xx): retrying would get the same answer. */
export class HttpError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** A failure worth retrying (429, 5xx, connection, timeout, a body that does not parse). `code` is the
 * socket's for a connection error. */
class Transient extends Error {
  readonly waitMs: number | undefined;
  readonly code: string | undefined;

  constructor(message: string, waitMs?: number, code?: string) {
    super(message);
    this.waitMs = waitMs;
    this.code = code;
  }
}

/** The retries of a request are spent: `last` is why its last attempt failed. */
export class RetriesSpent extends Error {
  readonly attempts: number;
  readonly last: string;

  constructor(model: string, attempts: number, last: string) {
    super(`openai: ${model} failed after ${attempts} attempts: ${last}`);
    this.attempts = attempts;
    this.last = last;
  }
}

/** No server accepted the connection (`code`: ECONNREFUSED, ENOTFOUND). */
export class Unreachable extends Error {
  readonly code: string;

  constructor(code: string) {
    super(`cannot reach the server (${code})`);
    this.code = code;
  }
}

/** Nothing listens there (or the name does not resolve): an answer, not a fault of the moment. */
const NOBODY = new Set(['ECONNREFUSED', 'ENOTFOUND']);

const CONTEXT = /context length|context window|maximum context|too many tokens|prompt is too long/i;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** 300 ms, 60 s: how a duration is said in messages. */
const spoken = (ms: number) => (ms < 1000 || ms % 1000 !== 0 ? `${ms} ms` : `${ms / 1000} s`);

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

/** Why a request failed: undici and http.ts hide the socket's code in `cause` (ECONNREFUSED, bad port). */
export function networkReason(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}

/** What a request path needs of an attempt. */
interface Mode {
  /** The chat and scoring calls count in the totals and share the run's limits; the listing does not. */
  tallied: boolean;
  /** Parse the body as a chat reply (choices required). */
  chat: boolean;
  /** Retry a connection nobody accepted (the listing does not: nothing is there). */
  retryNobody: boolean;
}

/** The key is held here and sent as a header only; it never enters an id, a trace or an error. */
const keys = new WeakMap<Transport, string>();

export class Transport {
  readonly options: TransportOptions;
  cache: ResponseCache | undefined;
  private readonly limit: Semaphore;
  private readonly rate: RateLimiter;
  private readonly counts: RequestTotals = zeroTotals();

  constructor(options: TransportOptions, apiKey?: string) {
    this.options = options;
    this.limit = new Semaphore(options.concurrency);
    this.rate = new RateLimiter(options.rpm, options.tpm);
    if (apiKey !== undefined && apiKey !== '') keys.set(this, apiKey);
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

  /** A request answered from the cache when it holds it, else over HTTP (and then recorded). */
  async cached(
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

  /** POST path with retries; resolves to the parsed response, its status and the failed attempts. */
  async request(path: string, body: string): Promise<Answer> {
    const mode: Mode = { tallied: true, chat: true, retryNobody: true };
    const r = await this.retrying(() => this.attempt('POST', path, body, mode), mode);
    const { response, text, status } = r.value;
    const u = response?.usage;
    const prompt = Number.isInteger(u?.prompt_tokens) ? (u?.prompt_tokens as number) : 0;
    const completion = Number.isInteger(u?.completion_tokens) ? (u?.completion_tokens as number) : 0;
    this.counts.promptTokens += prompt;
    this.counts.completionTokens += completion;
    this.rate.spend(prompt + completion);
    return { response: response as ChatResponse, text, status, retries: r.retries, errors: r.errors };
  }

  /**
   * GET /models with the retries of any call (not counted in the totals); a connection that nobody
   * accepted is not retried. Throws HttpError (a status that is no fault of the moment), RetriesSpent
   * or Unreachable.
   */
  async listing(): Promise<string> {
    const mode: Mode = { tallied: false, chat: false, retryNobody: false };
    const r = await this.retrying(() => this.attempt('GET', '/models', undefined, mode), mode);
    return r.value.text;
  }

  /** `run` until it succeeds, throws what is no fault of the moment, or the retries are spent. */
  private async retrying<T>(
    run: () => Promise<T>,
    mode: Mode,
  ): Promise<{ value: T; retries: number; errors: string[] }> {
    const o = this.options;
    const errors: string[] = [];
    for (let attempt = 0; attempt <= o.retries; attempt++) {
      try {
        const value = await run();
        if (mode.tallied) this.counts.retries += attempt;
        return { value, retries: attempt, errors };
      } catch (e) {
        const nobody = e instanceof Transient && !mode.retryNobody && NOBODY.has(e.code ?? '');
        if (!(e instanceof Transient) || nobody) {
          if (mode.tallied) this.counts.failed++;
          throw nobody ? new Unreachable(e.code as string) : e;
        }
        errors.push(e.message);
        if (attempt === o.retries) break;
        // Exponential backoff with "equal jitter" (half fixed, half uniform); Retry-After wins.
        const base = Math.min(o.maxBackoffMs, o.backoffMs * 2 ** attempt);
        await sleep(e.waitMs ?? base / 2 + (Math.random() * base) / 2);
      }
    }
    if (mode.tallied) {
      this.counts.failed++;
      this.counts.retries += o.retries;
    }
    throw new RetriesSpent(o.model, o.retries + 1, errors[errors.length - 1]);
  }

  private async attempt(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    mode: Mode,
  ): Promise<{ response: ChatResponse | undefined; text: string; status: number }> {
    const o = this.options;
    if (mode.tallied) {
      await this.rate.wait();
      await this.limit.acquire();
    }
    const count = (status: string) => {
      if (!mode.tallied) return;
      this.counts.requests++;
      this.counts.byStatus[status] = (this.counts.byStatus[status] ?? 0) + 1;
    };
    try {
      let res: HttpReply;
      try {
        res = await call(`${o.baseUrl}${path}`, { method, headers: this.headers(), body }, o.timeoutMs);
      } catch (e) {
        if ((e as Error).name === 'TimeoutError') {
          count('timeout');
          throw new Transient(`timeout after ${spoken(o.timeoutMs)} (the openai: option timeout= sets it)`);
        }
        count('connection');
        const code = (e as { cause?: { code?: string } }).cause?.code;
        throw new Transient(`connection error (${networkReason(e)})`, undefined, code);
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
        throw new HttpError(res.status, `openai: HTTP ${res.status}: ${message}`);
      }
      if (!mode.chat) return { response: undefined, text, status: res.status };
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
      if (mode.tallied) this.limit.release();
    }
  }
}
