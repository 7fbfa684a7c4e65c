// `turnwise proxy`: a recording OpenAI-compatible proxy in front of any upstream, for agents turnwise
// does not run in-process (any harness, any language). Each session has its own base URL,
// http://HOST:PORT/s/{session}/v1; everything under it is forwarded to the upstream, streams chunk by
// chunk, and every model request is recorded as one event (serve/proxy-record.ts) in a SQLite file
// (serve/proxy-store.ts), written before the answer's last byte reaches the client, so a killed proxy
// loses nothing answered.
//
// The proxy asks the upstream for token log-probs (and, on streams, for usage) where the client did not,
// and removes them from the answer again, so the client gets what it asked for (serve/proxy-upstream.ts).
// An upstream that refuses `logprobs` (400) is asked once more without, and never again.
//
// A turn budget (per proxy, or per session through PUT /s/{session}) refuses the (T+1)-th model call
// with an OpenAI-shaped error of type `turn_budget_exhausted` (status 400, which SDKs do not retry) and
// marks the session truncated: failure kind `budget`, as the in-process rollout loop would.
//
// A model call is composed of three pieces: the budget (admit or refuse), the record (one event per
// call, the in-flight count), the upstream (ask and relay).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import type { Task, Trajectory } from '../core/types.ts';
import { send } from '../policies/http.ts';
import { type EdgeOptions, guardRoutes, protocolFallbacks } from './guard.ts';
import { errorBody } from './protocol.ts';
import { augmentRequest, type CallEvent, sessionTrajectory } from './proxy-record.ts';
import { ProxyStore, requestKeys, type Session, sessionSummary } from './proxy-store.ts';
import {
  type Answered,
  askUpstream,
  isObject,
  relay,
  requestHeaders,
  responseHeaders,
} from './proxy-upstream.ts';

export { ProxyStore, sessionSummary } from './proxy-store.ts';

export interface ProxyOptions extends EdgeOptions {
  /** The upstream API base, e.g. http://127.0.0.1:8000/v1 (requests under /s/{id}/v1 go below it). */
  upstream: string;
  /** The SQLite file the sessions and events persist in (':memory:' for none). */
  store: string;
  /** Default turn budget of a session (model calls). */
  budget?: number;
  /** Ask the upstream for log-probs the client did not ask for (default true). */
  askLogprobs?: boolean;
  /** The key sent to the upstream as `Authorization: Bearer …`. Absent: the client's own Authorization
   * header is forwarded — unless `apiKey` is set, whose header is the proxy's and never forwarded. */
  upstreamApiKey?: string;
}

/** The model calls: chat completions, legacy completions, responses. */
const MODEL_PATH = /\/(chat\/completions|completions|responses)$/;

type Refusal = 'turn_budget_exhausted' | 'session_ended';

/** The budget: why a session takes no more model calls, if it does not (calls in flight count). */
function admit(s: Session): Refusal | undefined {
  if (s.meta.ended) return 'session_ended';
  if (s.meta.budget !== undefined && s.turns + s.inflight >= s.meta.budget) return 'turn_budget_exhausted';
  return undefined;
}

/** A model call's body, read: its JSON (or its text when it is none) and the keys retries are counted by;
 * undefined when it cannot be written back (nested too deep for JSON.stringify). */
function readRequest(text: string): { request: unknown; keys: string[] } | undefined {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    request = text;
  }
  try {
    return { request, keys: requestKeys(request, JSON.stringify(request)) };
  } catch {
    return undefined;
  }
}

export interface ProxyApp {
  app: Hono;
  store: ProxyStore;
  /** The session as a turnwise trajectory (an empty one for an id the store does not have). */
  trajectory(id: string): Trajectory & { mergeMismatches: number[] };
}

export function proxyApp(o: ProxyOptions): ProxyApp {
  const upstream = o.upstream.replace(/\/+$/, '');
  const store = new ProxyStore(o.store, o.budget);
  let logprobsRefused = o.askLogprobs === false;
  const app = new Hono();
  guardRoutes(app, o);
  /** The client's headers as the upstream gets them: the proxy's own key never goes on. */
  const upstreamHeaders = (c: Context) => {
    const h = requestHeaders(
      c.req.raw.headers,
      o.apiKey !== undefined || o.upstreamApiKey !== undefined ? ['authorization'] : [],
    );
    if (o.upstreamApiKey !== undefined) h.authorization = `Bearer ${o.upstreamApiKey}`;
    return h;
  };

  /** The proxy's own refusal of a call, recorded as the call's event. */
  const refuse = (c: Context, s: Session, request: unknown, keys: string[], kind: Refusal) => {
    const message =
      kind === 'turn_budget_exhausted'
        ? `turn budget exhausted: this session allows ${s.meta.budget} model calls`
        : 'this session has ended (POST /s/{session}/end); start a new session';
    const status = kind === 'turn_budget_exhausted' ? 400 : 409;
    const e: CallEvent = {
      idx: s.next++,
      path: '/chat/completions',
      request,
      stream: false,
      status,
      latencyMs: 0,
      retries: 0,
      error: message,
      refused: kind,
    };
    if (kind === 'turn_budget_exhausted' && !s.meta.truncated) {
      s.meta.truncated = true;
      store.saveMeta(s);
    }
    store.addEvent(s, e, keys);
    return c.json(errorBody(message, kind, undefined, kind), status);
  };

  /** The record: admits a call (in flight until recorded) and returns its recorder. The recorder takes
   * the call out of flight first, whatever happens after, and records once: later calls do nothing. */
  const recorder = (
    s: Session,
    sub: string,
    read: { request: unknown; keys: string[] },
    asked: CallEvent['asked'],
    t0: number,
  ) => {
    const idx = s.next++;
    const retries = s.retriesOf(read.keys[0]);
    const { request } = read;
    const stream = isObject(request) && request.stream === true;
    s.inflight++;
    let recorded = false;
    return (a: Answered) => {
      if (recorded) return;
      recorded = true;
      s.inflight--;
      const e: CallEvent = {
        idx,
        path: sub,
        request,
        stream,
        retries,
        latencyMs: performance.now() - t0,
        ...(asked !== undefined && Object.keys(asked).length > 0 ? { asked } : {}),
        ...a,
      };
      store.addEvent(s, e, read.keys);
    };
  };

  const forwardModel = async (c: Context, id: string, sub: string, url: string): Promise<Response> => {
    const t0 = performance.now();
    const read = readRequest(await c.req.text());
    if (read === undefined) {
      const message = 'the request body nests too deeply to be forwarded and recorded';
      return c.json(errorBody(message, 'invalid_request_error'), 400);
    }
    const s = store.session(id);
    const refusal = admit(s);
    if (refusal !== undefined) return refuse(c, s, read.request, read.keys, refusal);
    const { forwarded, asked } = sub.endsWith('/chat/completions')
      ? augmentRequest(read.request, !logprobsRefused)
      : { forwarded: read.request, asked: {} };
    const record = recorder(s, sub, read, asked, t0);
    try {
      const r = await askUpstream(url, upstreamHeaders(c), read.request, forwarded, asked, () => {
        logprobsRefused = true;
      });
      return await relay(r, asked, record);
    } catch (e) {
      const message = `upstream ${upstream} unreachable: ${(e as Error).message}`;
      record({ status: 502, error: message });
      return c.json(errorBody(message, 'upstream_error'), 502);
    }
  };

  /** The session a route reads or changes: 404 when the store has none (only PUT and model calls
   * create sessions). */
  const known = (c: Context) => store.find(c.req.param('session') ?? '');
  const unknown = (c: Context) =>
    c.json(
      errorBody(
        `no session ${JSON.stringify(c.req.param('session'))}: a session begins with PUT /s/{session} or its first model call`,
        'invalid_request_error',
      ),
      404,
    );

  app.get('/health', (c) => c.json({ status: 'ok', upstream }));

  app.all('/s/:session/v1/*', async (c) => {
    const id = c.req.param('session');
    const prefix = `/s/${encodeURIComponent(id)}/v1`;
    const path = new URL(c.req.url).pathname;
    const sub = path.startsWith(prefix) ? path.slice(prefix.length) : path.replace(/^\/s\/[^/]+\/v1/, '');
    const query = new URL(c.req.url).search;
    const url = `${upstream}${sub}${query}`;
    if (c.req.method === 'POST' && MODEL_PATH.test(sub)) return forwardModel(c, id, sub, url);
    // Anything else (models, files, embeddings) passes through unrecorded, and opens no session.
    try {
      const hasBody = c.req.method !== 'GET' && c.req.method !== 'HEAD';
      const r = await send(url, {
        method: c.req.method,
        headers: upstreamHeaders(c),
        body: hasBody ? new Uint8Array(await c.req.arrayBuffer()) : undefined,
      });
      return new Response(r.body, { status: r.status, headers: responseHeaders(r.headers) });
    } catch (e) {
      return c.json(
        errorBody(`upstream ${upstream} unreachable: ${(e as Error).message}`, 'upstream_error'),
        502,
      );
    }
  });

  app.put('/s/:session', async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as unknown;
    if (!isObject(body))
      return c.json(errorBody('the body must be a JSON object', 'invalid_request_error'), 400);
    const { budget, task, policy } = body;
    if (budget !== undefined && !(Number.isInteger(budget) && (budget as number) >= 1)) {
      return c.json(
        errorBody(`budget: got ${JSON.stringify(budget)}; expected an integer ≥ 1`, 'invalid_request_error'),
        400,
      );
    }
    const s = store.session(c.req.param('session'));
    if (budget !== undefined) s.meta.budget = budget as number;
    if (task !== undefined) s.meta.task = task as Task;
    if (typeof policy === 'string') s.meta.policy = policy;
    store.saveMeta(s);
    return c.json(sessionSummary(s));
  });
  app.get('/s/:session', (c) => {
    const s = known(c);
    return s === undefined ? unknown(c) : c.json(sessionSummary(s));
  });
  app.get('/s/:session/events', (c) => {
    const s = known(c);
    return s === undefined ? unknown(c) : c.json(s.events);
  });
  app.get('/s/:session/trajectory', (c) => {
    const s = known(c);
    return s === undefined ? unknown(c) : c.json(sessionTrajectory(s.meta, s.events));
  });
  app.post('/s/:session/reward', async (c) => {
    const s = known(c);
    if (s === undefined) return unknown(c);
    const body = (await c.req.json().catch(() => undefined)) as unknown;
    if (!isObject(body) || typeof body.value !== 'number' || !Number.isFinite(body.value)) {
      return c.json(
        errorBody(
          `value: got ${JSON.stringify(isObject(body) ? body.value : body)}; expected a finite number`,
          'invalid_request_error',
        ),
        400,
      );
    }
    s.meta.reward = {
      value: body.value,
      ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
      ...(typeof body.success === 'boolean' ? { success: body.success } : {}),
    };
    store.saveMeta(s);
    return c.json(sessionSummary(s));
  });
  app.post('/s/:session/end', (c) => {
    const s = known(c);
    if (s === undefined) return unknown(c);
    s.meta.ended = true;
    store.saveMeta(s);
    return c.json(sessionSummary(s));
  });
  protocolFallbacks(app, o.onInternalError);
  return {
    app,
    store,
    trajectory: (id) => {
      const s = store.find(id);
      return sessionTrajectory(s?.meta ?? store.freshMeta(id), s?.events ?? []);
    },
  };
}

export interface RunningProxy extends ProxyApp {
  /** http://HOST:PORT */
  url: string;
  port: number;
  /** The OpenAI base URL of a session: http://HOST:PORT/s/{id}/v1. */
  sessionUrl(id: string): string;
  close(): Promise<void>;
}

/** Listens on host:port (0 = a free port) and resolves once the socket is bound. */
export function startProxy(o: ProxyOptions & { port?: number; host?: string }): Promise<RunningProxy> {
  const p = proxyApp(o);
  const host = o.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: p.app.fetch, port: o.port ?? 0, hostname: host, createServer },
      (info: AddressInfo) => {
        const url = `http://${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}`;
        resolve({
          ...p,
          url,
          port: info.port,
          sessionUrl: (id) => `${url}/s/${encodeURIComponent(id)}/v1`,
          close: () =>
            new Promise<void>((done) => {
              server.close(() => {
                p.store.close();
                done();
              });
              if ('closeAllConnections' in server) server.closeAllConnections();
            }),
        });
      },
    );
    server.once('error', (e) => {
      p.store.close();
      reject(e);
    });
  });
}
