// What both served apps (serve/openai.ts for discrete envs, serve/tool-serve.ts for tool envs) answer
// alike, in OpenAI's shapes: the error body, the injected faults and latency, the JSON route (body →
// fault → parse → answer, a BadRequest as 400) and the SSE stream of a completion. The guards every edge
// shares (API key, body limit, fallbacks) are in guard.ts.
import type { Context, Hono } from 'hono';
import type { ChatMessage } from '../policies/chat.ts';
import { FaultInjector, type Faults } from './faults.ts';

/** A request the protocol refuses: 400 with OpenAI's error body, naming the parameter. */
export class BadRequest extends Error {
  readonly param: string | undefined;

  constructor(message: string, param?: string) {
    super(message);
    this.param = param;
  }
}

export const errorBody = (message: string, type: string, param?: string, code?: string) => ({
  error: { message, type, param: param ?? null, code: code ?? null },
});

/** GET /v1/models: each id as an OpenAI model, with what turnwise serves under `turnwise`. */
export function serveModels(app: Hono, ids: readonly string[], turnwise: Record<string, unknown>): void {
  app.get('/v1/models', (c) =>
    c.json({
      object: 'list',
      data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'turnwise', turnwise })),
    }),
  );
}

export interface JsonRoutes {
  /** A POST handler: the body's fault (if drawn), else `answer` of the parsed JSON object. */
  route<R extends object>(
    answer: (req: R, c: Context) => Promise<Response>,
  ): (c: Context) => Promise<Response>;
  /** Answers every hanging request (for shutdown). */
  release(): void;
}

/** The JSON routes of a served app with its injected faults (drawn from each body) and latency. */
export function jsonRoutes(o: { faults?: Faults; latencyMs?: number }): JsonRoutes {
  const injector = o.faults === undefined ? undefined : new FaultInjector(o.faults);
  const hanging = new Set<() => void>();
  /** Latency, then the injected fault for this body (a response), else undefined and the handler runs. */
  const faultFor = async (c: Context, text: string): Promise<Response | undefined> => {
    if (o.latencyMs !== undefined && o.latencyMs > 0) await new Promise((r) => setTimeout(r, o.latencyMs));
    const fault = injector?.draw(text);
    if (fault === '429') {
      return c.json(errorBody('rate limited (injected fault)', 'rate_limit_error'), 429, {
        'retry-after': '1',
        'retry-after-ms': '10',
      });
    }
    if (fault === '500') return c.json(errorBody('internal error (injected fault)', 'server_error'), 500);
    if (fault === 'hang') {
      // Never answers on its own: the client must time out. Shutdown (or the client leaving) ends it.
      await new Promise<void>((resolve) => {
        hanging.add(resolve);
        c.req.raw.signal.addEventListener('abort', () => resolve());
      });
      return c.json(errorBody('the server is shutting down', 'server_error'), 503);
    }
    if (fault === 'malformed') return c.body('{"id":"chatcmpl-', 200, { 'content-type': 'application/json' });
    return undefined;
  };
  return {
    route:
      <R extends object>(answer: (req: R, c: Context) => Promise<Response>) =>
      async (c: Context) => {
        const text = await c.req.text();
        const faulted = await faultFor(c, text);
        if (faulted !== undefined) return faulted;
        let req: unknown;
        try {
          req = JSON.parse(text);
        } catch {
          return c.json(errorBody('the body is not JSON', 'invalid_request_error'), 400);
        }
        if (typeof req !== 'object' || req === null || Array.isArray(req)) {
          return c.json(errorBody('the body is not a JSON object', 'invalid_request_error'), 400);
        }
        try {
          return await answer(req as R, c);
        } catch (e) {
          if (e instanceof BadRequest)
            return c.json(errorBody(e.message, 'invalid_request_error', e.param), 400);
          throw e;
        }
      },
    release: () => {
      for (const resolve of hanging) resolve();
      hanging.clear();
    },
  };
}

/** The characters JavaScript's \s matches (what `usage` splits words on), as a lookup table. */
const SPACE = new Uint8Array(0x3001);
for (const c of [9, 10, 11, 12, 13, 32, 160, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000]) SPACE[c] = 1;
for (let c = 0x2000; c <= 0x200a; c++) SPACE[c] = 1;

/** Whitespace-separated words (what `usage` counts: serve has no tokenizer), without a split per message. */
export function wordCount(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c === 0xfeff || (c < 0x3001 && SPACE[c] === 1);
    if (!space && !inWord) n++;
    inWord = !space;
  }
  return n;
}

/** A chat.completion around `choices`: the prompt's words as its prompt tokens, one token a choice
 * (a text policy gives its model's token counts instead). */
export function chatCompletion<C>(o: {
  id: number;
  model: string;
  policy: string;
  choices: C[];
  promptWords: number;
  completionTokens?: number;
}) {
  const n = o.completionTokens ?? o.choices.length;
  return {
    id: `chatcmpl-${o.id}`,
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model: o.model,
    system_fingerprint: `turnwise:${o.policy}`,
    choices: o.choices,
    usage: { prompt_tokens: o.promptWords, completion_tokens: n, total_tokens: o.promptWords + n },
  };
}

/** A text_completion (/v1/completions) of one choice, with its usage. */
export function legacyCompletion(o: {
  id: number;
  model: string;
  policy: string;
  text: string;
  logprobs: unknown;
  finish: string;
  promptTokens: number;
  completionTokens: number;
}) {
  return {
    id: `cmpl-${o.id}`,
    object: 'text_completion' as const,
    created: Math.floor(Date.now() / 1000),
    model: o.model,
    system_fingerprint: `turnwise:${o.policy}`,
    choices: [{ index: 0, text: o.text, logprobs: o.logprobs, finish_reason: o.finish }],
    usage: {
      prompt_tokens: o.promptTokens,
      completion_tokens: o.completionTokens,
      total_tokens: o.promptTokens + o.completionTokens,
    },
  };
}

export type Completion = {
  id: string;
  created: number;
  model: string;
  system_fingerprint: string;
  choices: {
    index: number;
    message: ChatMessage;
    finish_reason: string;
    logprobs: { content: Record<string, unknown>[] } | null;
  }[];
  usage: Record<string, number>;
};

/**
 * A chat completion as the chunks of an OpenAI/vLLM stream: per choice the role, then the content (or
 * the tool call: its id and name, then its arguments) carrying the token's log-probs, then an empty delta
 * with the finish reason; with `stream_options.include_usage`, a last chunk with no choices and the usage.
 */
export function chunks(res: Completion, includeUsage: boolean): unknown[] {
  const head = {
    id: res.id,
    object: 'chat.completion.chunk',
    created: res.created,
    model: res.model,
    system_fingerprint: res.system_fingerprint,
  };
  const chunk = (index: number, delta: unknown, logprobs: unknown, finish: string | null) => ({
    ...head,
    choices: [{ index, delta, logprobs, finish_reason: finish }],
  });
  const out: unknown[] = [];
  for (const c of res.choices) {
    const call = c.message.tool_calls?.[0];
    if (call === undefined) {
      out.push(chunk(c.index, { role: 'assistant', content: '' }, null, null));
      out.push(chunk(c.index, { content: c.message.content }, c.logprobs, null));
    } else {
      out.push(
        chunk(
          c.index,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                index: 0,
                id: call.id,
                type: 'function',
                function: { name: call.function.name, arguments: '' },
              },
            ],
          },
          null,
          null,
        ),
      );
      out.push(
        chunk(
          c.index,
          { tool_calls: [{ index: 0, function: { arguments: call.function.arguments } }] },
          c.logprobs,
          null,
        ),
      );
    }
    out.push(chunk(c.index, {}, null, c.finish_reason));
  }
  if (includeUsage) out.push({ ...head, choices: [], usage: res.usage });
  return out;
}

/** A completion's chunks as one SSE body, ending with [DONE]. */
export function sse(events: unknown[]): Response {
  const body = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
  return new Response(body, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
  });
}
