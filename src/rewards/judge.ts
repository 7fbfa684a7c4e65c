// An LLM judge: its client and how its answers are read. The client is the `openai:` policy's
// transport (policies/transport.ts) — the keep-alive client, the run's limits (concurrency, rpm, tpm),
// retries with backoff, the replay cache and the request totals — sending chat completions with the
// judge's temperature (0 unless its spec says) and a seed drawn from the request itself, so that the
// same prompt is the same request (answered from the replay cache when it holds it, and by
// `turnwise serve` with the same draw).
//
// An answer is read by the criterion's parser. An answer that says nothing the parser can read, is
// off the scale, is a refusal (the message's `refusal`, finish_reason `content_filter`, or nothing
// written), or a request that failed after its retries, is a judge error: recorded with the call,
// never read as a score.
import { createHash } from 'node:crypto';
import { ContextOverflow, InputError } from '../core/errors.ts';
import type { OpenAIOptions } from '../policies/openai.ts';
import {
  HttpError,
  LISTING_KEY,
  listedModel,
  listingRefusal,
  type RequestTotals,
  type ResponseCache,
  RetriesSpent,
  Transport,
} from '../policies/transport.ts';
import {
  compile,
  type Message,
  normalise,
  onScale,
  type ParserSpec,
  PLACEHOLDER,
  type ScaleSpec,
  scaleText,
} from './rubric.ts';

/** A reply's text, or why it is no answer. */
export type Reply = { text: string } | { error: string };

export class JudgeClient {
  readonly options: OpenAIOptions;
  /** The field its errors name (`lake.json criteria[2].judge`). */
  readonly field: string;
  private readonly transport: Transport;

  constructor(options: OpenAIOptions, field: string, apiKey?: string) {
    this.options = options;
    this.field = field;
    this.transport = new Transport(options, apiKey);
  }

  /** Records every request in `cache` and answers from it what it holds. */
  useCache(cache: ResponseCache, field = '--cache'): void {
    cache.claim(this.options.model, field);
    this.transport.cache = cache;
  }

  /** Checks the endpoint before any work: it answers and lists the model (an InputError naming the
   * criterion's `judge` field otherwise). A cache that holds the listing answers for it. */
  async connect(): Promise<void> {
    const { baseUrl, model } = this.options;
    const cache = this.transport.cache;
    const cached = cache?.get(LISTING_KEY);
    let text: string;
    if (cached !== undefined) text = cached.body;
    else {
      try {
        text = await this.transport.listing();
      } catch (e) {
        throw listingRefusal(e, this.field, baseUrl);
      }
    }
    listedModel(text, model, this.field, baseUrl);
    if (cached === undefined) cache?.put(LISTING_KEY, model, { body: text, retries: 0, latencyMs: 0 });
  }

  totals(): RequestTotals {
    return this.transport.totals();
  }

  /** The judge's answer to `messages`, or why there is none. */
  async ask(messages: readonly Message[]): Promise<Reply> {
    const o = this.options;
    const body: Record<string, unknown> = {
      model: o.model,
      messages,
      max_tokens: o.maxTokens,
      seed: seedOf(messages),
    };
    if (o.temperature !== undefined) body.temperature = o.temperature;
    let choice: { message?: unknown; finish_reason?: string | null } | undefined;
    try {
      choice = (await this.transport.cached('chat', '/chat/completions', body)).response.choices[0];
    } catch (e) {
      if (e instanceof RetriesSpent || e instanceof HttpError || e instanceof ContextOverflow)
        return { error: `the request failed: ${e.message.replace(/^openai: /, '')}` };
      throw e;
    }
    const message = (choice?.message ?? {}) as { content?: unknown; refusal?: unknown };
    if (typeof message.refusal === 'string' && message.refusal !== '')
      return { error: `the judge refused: ${message.refusal}` };
    if (choice?.finish_reason === 'content_filter') return { error: 'the judge refused (content_filter)' };
    const text = typeof message.content === 'string' ? message.content : '';
    if (text.trim() === '') return { error: 'the judge wrote nothing' };
    return { text };
  }
}

/** A request's seed: a function of its messages (53 bits of their hash), so a prompt asked again is the
 * same request. */
function seedOf(messages: readonly Message[]): number {
  const h = createHash('sha256').update(JSON.stringify(messages)).digest();
  return h.readUIntBE(0, 6) * 32 + (h[6] >> 3);
}

/** The judge client of every distinct endpoint and options among `specs` (one client per spec string
 * shared by its criteria, so their limits and totals are one). */
export function judgeClients(
  specs: readonly { judge: string; options: OpenAIOptions; field: string }[],
  apiKey?: string,
): Map<string, JudgeClient> {
  const clients = new Map<string, JudgeClient>();
  for (const s of specs)
    if (!clients.has(s.judge)) clients.set(s.judge, new JudgeClient(s.options, s.field, apiKey));
  return clients;
}

/** A template's {{placeholders}} filled in. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
}

export const fillPrompt = (prompt: readonly Message[], values: Record<string, string>): Message[] =>
  prompt.map((m) => ({ role: m.role, content: fill(m.content, values) }));

type Read<T> = { value: T } | { error: string };

const short = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);

/** The last match of `re` (global) in text, or undefined. */
function lastMatch(text: string, re: RegExp): RegExpExecArray | undefined {
  let last: RegExpExecArray | undefined;
  for (const m of text.matchAll(re)) last = m as RegExpExecArray;
  return last;
}

/** A value on the scale, or the error saying it is off it. */
function onto(x: number, scale: ScaleSpec, text: string): Read<number> {
  if (!Number.isFinite(x)) return { error: `no number in the answer ${short(text)}` };
  if (!onScale(x, scale)) return { error: `${x} is off the scale (${scaleText(scale)})` };
  return { value: x };
}

/** The JSON object an answer holds: all of it, a ```json fence, or from its first { to its last }. */
function jsonOf(text: string): unknown {
  const tries = [
    text.trim(),
    /```(?:json)?\s*([\s\S]*?)```/.exec(text)?.[1],
    text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1),
  ];
  for (const t of tries) {
    if (t === undefined || t === '') continue;
    try {
      return JSON.parse(t);
    } catch {}
  }
  return undefined;
}

/** A dotted field of a JSON value. */
function fieldOf(value: unknown, path: string): unknown {
  let v = value;
  for (const k of path.split('.'))
    v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/**
 * A pointwise answer read by its parser: a value on the scale (yes-no: 1 or 0), or why it cannot be.
 * `values` fill the placeholders of a regex parser's `expect`.
 */
export function readPoint(
  text: string,
  parser: ParserSpec,
  scale: ScaleSpec,
  values: Record<string, string>,
): Read<number> {
  const top = scale === 'yes-no' ? 1 : scale.max;
  const bottom = scale === 'yes-no' ? 0 : scale.min;
  switch (parser.kind) {
    case 'number': {
      if (parser.pattern !== undefined) {
        const m = compile(parser.pattern, undefined, 'pattern').exec(text);
        if (m === null) return { error: `the answer does not match ${parser.pattern}: ${short(text)}` };
        return onto(Number((m[1] ?? m[0]).trim()), scale, text);
      }
      const m = lastMatch(text, /-?\d+(?:\.\d+)?/g);
      return m === undefined
        ? { error: `no number in the answer ${short(text)}` }
        : onto(Number(m[0]), scale, text);
    }
    case 'yes-no': {
      const m = lastMatch(text, /\b(yes|no)\b/gi);
      return m === undefined
        ? { error: `neither yes nor no in the answer ${short(text)}` }
        : { value: m[1].toLowerCase() === 'yes' ? 1 : 0 };
    }
    case 'regex': {
      const m = compile(parser.pattern, undefined, 'pattern').exec(text);
      if (m === null) return { error: `the answer does not match ${parser.pattern}: ${short(text)}` };
      const got = m[1] ?? m[0];
      if (parser.expect !== undefined) return { value: got === fill(parser.expect, values) ? top : bottom };
      if (parser.map !== undefined)
        return Object.hasOwn(parser.map, got)
          ? { value: parser.map[got] }
          : { error: `${short(got)} is not in the parser's map` };
      return onto(Number(got.trim()), scale, text);
    }
    case 'json': {
      const v = fieldOf(jsonOf(text), parser.field);
      if (typeof v === 'boolean' && scale === 'yes-no') return { value: v ? 1 : 0 };
      if (typeof v !== 'number')
        return { error: `no number at ${parser.field} in the answer ${short(text)}` };
      return onto(v, scale, text);
    }
    case 'choice':
      return { error: 'a choice parser reads pairwise answers' };
  }
}

/** A pairwise answer: 1 when the first shown is the better, 0 when the second is. */
export function readChoice(text: string, parser: Extract<ParserSpec, { kind: 'choice' }>): Read<number> {
  const [first, second] = parser.labels ?? ['A', 'B'];
  let got: string | undefined;
  if (parser.pattern !== undefined) {
    const m = compile(parser.pattern, undefined, 'pattern').exec(text);
    got = m === null ? undefined : (m[1] ?? m[0]).trim();
  } else {
    const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    got = lastMatch(text, new RegExp(`(?<![\\w])(${esc(first)}|${esc(second)})(?![\\w])`, 'g'))?.[1];
  }
  if (got === first) return { value: 1 };
  if (got === second) return { value: 0 };
  return { error: `the answer names neither ${first} nor ${second}: ${short(text)}` };
}

/** A group answer: each of the k trajectories' value on the scale, by `trajectory_id` (1-based) when the
 * entries carry one, else in order. */
export function readGroup(
  text: string,
  parser: Extract<ParserSpec, { kind: 'json' }>,
  scale: ScaleSpec,
  k: number,
): Read<number[]> {
  const list = fieldOf(jsonOf(text), parser.field);
  if (!Array.isArray(list)) return { error: `no list at ${parser.field} in the answer ${short(text)}` };
  if (list.length !== k) return { error: `${list.length} scores for ${k} trajectories` };
  const values: (number | undefined)[] = new Array(k).fill(undefined);
  for (const [i, e] of list.entries()) {
    const entry = typeof e === 'object' && e !== null ? (e as Record<string, unknown>) : undefined;
    const x = entry === undefined ? e : entry.score;
    const id = entry?.trajectory_id;
    const at = id === undefined ? i : Number(id) - 1;
    if (!Number.isInteger(at) || at < 0 || at >= k || values[at] !== undefined)
      return { error: `entry ${i + 1} names trajectory ${JSON.stringify(id)}: not one of 1..${k} once each` };
    if (typeof x !== 'number') return { error: `entry ${i + 1} has no numeric score` };
    const v = onto(x, scale, text);
    if ('error' in v) return v;
    values[at] = v.value;
  }
  return { value: values as number[] };
}

export { normalise };

/** Refuses (InputError) a rubric whose judges of different models would share one replay cache: the
 * cache file records the models it holds, one each. */
export function checkOneModel(models: readonly string[], field: string, file: string): void {
  const distinct = [...new Set(models)];
  if (distinct.length > 1)
    throw new InputError(
      field,
      file,
      `a replay cache holds one model's requests, and the rubric's judges use ${distinct.join(', ')}; give no cache, or judges of one model`,
    );
}
