// What both served apps (serve/openai.ts for discrete envs, serve/tool-serve.ts for tool envs) answer
// alike, in OpenAI's shapes: the error body, the API-key check, the injected faults and latency, the
// JSON route (body → fault → parse → answer, a BadRequest as 400) and the SSE stream of a completion.
import type { Context, Hono } from 'hono';
import { FaultInjector, type Faults } from './faults.ts';

/** A request the protocol refuses: 400 with OpenAI's error body, naming the parameter. */
export class BadRequest extends Error {
  readonly param: string | undefined;

  constructor(message: string, param?: string) {
    super(message);
    this.param = param;
  }
}

export const errorBody = (message: string, type: string, param?: string) => ({
  error: { message, type, param: param ?? null, code: null },
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

/** Every /v1 route answers 401 without `Authorization: Bearer KEY` (when a key is set). */
export function requireApiKey(app: Hono, apiKey: string | undefined): void {
  if (apiKey === undefined) return;
  const want = `Bearer ${apiKey}`;
  app.use('/v1/*', async (c, next) => {
    if (c.req.header('authorization') !== want) {
      return c.json(errorBody('invalid or missing API key', 'invalid_request_error'), 401);
    }
    await next();
  });
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

/** A completion's chunks as one SSE body, ending with [DONE]. */
export function sse(events: unknown[]): Response {
  const body = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
  return new Response(body, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
  });
}

/** 404 for an unknown route and OpenAI's body for an error the handlers did not expect. */
export function protocolFallbacks(app: Hono): void {
  app.notFound((c) =>
    c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error'), 404),
  );
  app.onError((e, c) => c.json(errorBody(e.message, 'server_error'), 500));
}
