// `turnwise proxy`: a recording OpenAI-compatible proxy in front of any upstream, for agents turnwise
// does not run in-process (any harness, any language). Each session has its own base URL,
// http://HOST:PORT/s/{session}/v1; everything under it is forwarded to the upstream, streams chunk by
// chunk, and every model request is recorded as one event (serve/proxy-record.ts) in a SQLite file,
// written before the answer's last byte reaches the client, so a killed proxy loses nothing answered.
//
// The proxy asks the upstream for token log-probs (and, on streams, for usage) where the client did not,
// and removes them from the answer again, so the client gets what it asked for. An upstream that
// refuses `logprobs` (400) is asked once more without, and never again.
//
// A turn budget (per proxy, or per session through PUT /s/{session}) refuses the (T+1)-th model call
// with an OpenAI-shaped error of type `turn_budget_exhausted` (status 400, which SDKs do not retry) and
// marks the session truncated: failure kind `budget`, as the in-process rollout loop would.
import { createServer, Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { serve } from '@hono/node-server';
import Database from 'better-sqlite3';
import { type Context, Hono } from 'hono';
import type { Task, Trajectory } from '../core/types.ts';
import {
  augmentRequest,
  type CallEvent,
  isTurnCall,
  type SessionMeta,
  StreamAssembler,
  sessionTrajectory,
  sessionTurns,
  stripAnswer as strip,
} from './proxy-record.ts';

export interface ProxyOptions {
  /** The upstream API base, e.g. http://127.0.0.1:8000/v1 (requests under /s/{id}/v1 go below it). */
  upstream: string;
  /** The SQLite file the sessions and events persist in (':memory:' for none). */
  store: string;
  /** Default turn budget of a session (model calls). */
  budget?: number;
  /** Ask the upstream for log-probs the client did not ask for (default true). */
  askLogprobs?: boolean;
}

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

const errorBody = (message: string, type: string, code: string | null = null) => ({
  error: { message, type, param: null, code },
});

/** A session as the proxy holds it: its meta, its calls, the calls still in flight. */
interface Session {
  meta: SessionMeta;
  events: CallEvent[];
  /** Calls admitted and not yet answered (they count against the budget). */
  inflight: number;
  next: number;
  /** Successful chat calls so far (the turns the budget counts). */
  turns: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  session TEXT NOT NULL, idx INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session, idx)
);
`;

/** Sessions and their events in one SQLite file (WAL: a killed process keeps every committed row). */
export class ProxyStore {
  readonly db: Database.Database;
  private readonly sessions = new Map<string, Session>();
  private readonly putSession: Database.Statement;
  private readonly putEvent: Database.Statement;
  readonly defaultBudget: number | undefined;

  constructor(path: string, defaultBudget?: number) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.putSession = this.db.prepare('INSERT OR REPLACE INTO sessions (id, data) VALUES (?, ?)');
    this.putEvent = this.db.prepare('INSERT INTO events (session, idx, data) VALUES (?, ?, ?)');
    this.defaultBudget = defaultBudget;
  }

  close(): void {
    this.db.close();
  }

  /** The session, loaded from the file or created (with the default budget). */
  session(id: string): Session {
    let s = this.sessions.get(id);
    if (s !== undefined) return s;
    const row = this.db.prepare('SELECT data FROM sessions WHERE id = ?').get(id) as
      | { data: string }
      | undefined;
    const events = (
      this.db.prepare('SELECT data FROM events WHERE session = ? ORDER BY idx').all(id) as { data: string }[]
    ).map((r) => JSON.parse(r.data) as CallEvent);
    const meta: SessionMeta =
      row === undefined
        ? {
            id,
            ended: false,
            truncated: false,
            ...(this.defaultBudget === undefined ? {} : { budget: this.defaultBudget }),
          }
        : (JSON.parse(row.data) as SessionMeta);
    s = {
      meta,
      events,
      inflight: 0,
      next: events.length === 0 ? 0 : events[events.length - 1].idx + 1,
      turns: events.filter(isTurnCall).length,
    };
    this.sessions.set(id, s);
    if (row === undefined) this.saveMeta(s);
    return s;
  }

  saveMeta(s: Session): void {
    this.putSession.run(s.meta.id, JSON.stringify(s.meta));
  }

  addEvent(s: Session, e: CallEvent): void {
    this.putEvent.run(s.meta.id, e.idx, JSON.stringify(e));
    s.events.push(e);
    // Calls of one session answered out of order (concurrent calls) are kept in arrival order.
    const n = s.events.length;
    if (n > 1 && s.events[n - 2].idx > e.idx) s.events.sort((a, b) => a.idx - b.idx);
    if (isTurnCall(e)) s.turns++;
  }

  /** Every session id in the file. */
  ids(): string[] {
    return (this.db.prepare('SELECT id FROM sessions ORDER BY id').all() as { id: string }[]).map(
      (r) => r.id,
    );
  }
}

/** Where a session stands: calls, turns, the merge mismatches, its reward and end. */
export function sessionSummary(s: { meta: SessionMeta; events: readonly CallEvent[] }) {
  const { turns, mergeMismatches } = sessionTurns(s.events);
  return {
    id: s.meta.id,
    calls: s.events.length,
    turns: turns.length,
    budget: s.meta.budget ?? null,
    mergeMismatches: mergeMismatches.length,
    mergeMismatchTurns: mergeMismatches,
    reward: s.meta.reward ?? null,
    ended: s.meta.ended,
    truncated: s.meta.truncated,
  };
}

// Upstream calls go through node:http with keep-alive agents rather than fetch: on loopback fetch
// (undici) costs a few milliseconds per call more, the whole of the proxy's latency budget.
const httpAgent = new HttpAgent({ keepAlive: true });
const httpsAgent = new HttpsAgent({ keepAlive: true });
const NO_BODY = new Set([101, 204, 205, 304]);

/** One upstream request, answered as a web Response whose body streams as the upstream sends it. */
function send(
  url: string,
  init: { method: string; headers: Headers; body?: string | Uint8Array; signal?: AbortSignal },
): Promise<Response> {
  const u = new URL(url);
  const https = u.protocol === 'https:';
  const headers: Record<string, string> = {};
  init.headers.forEach((v, k) => {
    headers[k] = v;
  });
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      u,
      { method: init.method, headers, agent: https ? httpsAgent : httpAgent, signal: init.signal },
      (res) => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (v === undefined) continue;
          for (const x of Array.isArray(v) ? v : [v]) out.append(k, x);
        }
        const status = res.statusCode ?? 502;
        const body = NO_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        if (body === null) res.resume();
        resolve(new Response(body, { status, headers: out }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The model calls: chat completions, legacy completions, responses. */
const MODEL_PATH = /\/(chat\/completions|completions|responses)$/;
/** Hop-by-hop headers and the ones the proxy recomputes. */
const DROP_REQUEST = [
  'host',
  'connection',
  'content-length',
  'accept-encoding',
  'keep-alive',
  'transfer-encoding',
];
const DROP_RESPONSE = ['connection', 'content-length', 'content-encoding', 'keep-alive', 'transfer-encoding'];

function forwardHeaders(h: Headers, drop: readonly string[]): Headers {
  const out = new Headers(h);
  for (const k of drop) out.delete(k);
  return out;
}

/** Rewrites complete SSE events (separated by a blank line), dropping the usage-only chunk the client
 * did not ask for. Returns the text to send and keeps the incomplete tail. */
function rewriteEvents(buffer: string, asked: CallEvent['asked']): { out: string; rest: string } {
  let out = '';
  let rest = buffer;
  for (let m = /\r?\n\r?\n/.exec(rest); m !== null; m = /\r?\n\r?\n/.exec(rest)) {
    const event = rest.slice(0, m.index);
    rest = rest.slice(m.index + m[0].length);
    const lines = event.split(/\r?\n/);
    let keep = true;
    const rewritten = lines.map((line) => {
      if (!line.startsWith('data:')) return line;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return line;
      try {
        const chunk = JSON.parse(data) as unknown;
        if (!isObject(chunk)) return line;
        if (asked?.usage && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage)
          keep = false;
        return `data: ${JSON.stringify(strip(chunk, asked))}`;
      } catch {
        return line;
      }
    });
    if (keep) out += `${rewritten.join('\n')}\n\n`;
  }
  return { out, rest };
}

export interface ProxyApp {
  app: Hono;
  store: ProxyStore;
  /** The session as a turnwise trajectory. */
  trajectory(id: string): Trajectory & { mergeMismatches: number[] };
}

export function proxyApp(o: ProxyOptions): ProxyApp {
  const upstream = o.upstream.replace(/\/+$/, '');
  const store = new ProxyStore(o.store, o.budget);
  let logprobsRefused = o.askLogprobs === false;
  const app = new Hono();

  /** Failed calls just before this one with the same body: the client is retrying them. */
  const retriesOf = (s: Session, text: string): number => {
    let n = 0;
    for (let i = s.events.length - 1; i >= 0; i--) {
      const e = s.events[i];
      if (e.status >= 200 && e.status < 300) break;
      if (JSON.stringify(e.request) !== text && e.request !== text) break;
      n++;
    }
    return n;
  };

  const refuse = (
    c: Context,
    s: Session,
    request: unknown,
    kind: 'turn_budget_exhausted' | 'session_ended',
  ) => {
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
    store.addEvent(s, e);
    return c.json(errorBody(message, kind, kind), status);
  };

  const forwardModel = async (c: Context, s: Session, sub: string, url: string): Promise<Response> => {
    const t0 = performance.now();
    const text = await c.req.text();
    let request: unknown;
    try {
      request = JSON.parse(text);
    } catch {
      request = text;
    }
    if (s.meta.ended) return refuse(c, s, request, 'session_ended');
    if (s.meta.budget !== undefined && s.turns + s.inflight >= s.meta.budget) {
      return refuse(c, s, request, 'turn_budget_exhausted');
    }
    const idx = s.next++;
    s.inflight++;
    const retries = retriesOf(s, JSON.stringify(request));
    const stream = isObject(request) && request.stream === true;
    const { forwarded: augmented, asked } = sub.endsWith('/chat/completions')
      ? augmentRequest(request, !logprobsRefused)
      : { forwarded: request, asked: {} };
    let forwarded = augmented;
    const headers = forwardHeaders(c.req.raw.headers, DROP_REQUEST);
    const record = (e: Omit<CallEvent, 'idx' | 'path' | 'request' | 'retries' | 'stream' | 'latencyMs'>) => {
      s.inflight--;
      const event: CallEvent = {
        idx,
        path: sub,
        request,
        stream,
        retries,
        latencyMs: performance.now() - t0,
        ...(Object.keys(asked).length > 0 ? { asked } : {}),
        ...e,
      };
      store.addEvent(s, event);
    };
    // Streams go through fetch, whose body is read as it arrives; whole answers through send().
    const upstreamCall = stream ? fetch : send;
    let r: Response;
    try {
      r = await upstreamCall(url, { method: 'POST', headers, body: JSON.stringify(forwarded) });
      const refusal = r.status === 400 && asked.logprobs ? await r.text() : undefined;
      if (refusal !== undefined && !/logprob/i.test(refusal)) {
        r = new Response(refusal, { status: r.status, headers: r.headers });
      } else if (refusal !== undefined) {
        // The upstream does not do log-probs: ask once more as the client asked, and never again.
        logprobsRefused = true;
        delete asked.logprobs;
        const body = { ...(forwarded as Json) };
        if (isObject(request) && 'logprobs' in request) body.logprobs = request.logprobs;
        else delete body.logprobs;
        forwarded = body;
        r = await upstreamCall(url, { method: 'POST', headers, body: JSON.stringify(forwarded) });
      }
    } catch (e) {
      const message = `upstream ${upstream} unreachable: ${(e as Error).message}`;
      record({ status: 502, error: message });
      return c.json(errorBody(message, 'upstream_error'), 502);
    }
    const outHeaders = forwardHeaders(r.headers, DROP_RESPONSE);
    const type = r.headers.get('content-type') ?? '';
    if (type.includes('text/event-stream') && r.body !== null) {
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      const assembler = new StreamAssembler();
      const rewrite = Object.keys(asked).length > 0;
      let pending = '';
      let finished = false;
      const finish = (error?: string) => {
        if (finished) return;
        finished = true;
        record({
          status: r.status,
          response: assembler.result(),
          ...(error === undefined ? {} : { error }),
        });
      };
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (e) {
            finish(`stream broke: ${(e as Error).message}`);
            controller.error(e);
            return;
          }
          if (chunk.done) {
            const tail = decoder.decode();
            assembler.push(`${tail}\n`);
            if (rewrite) {
              const { out, rest } = rewriteEvents(`${pending}${tail}`, asked);
              const text = rest.length > 0 ? `${out}${rest}` : out;
              if (text.length > 0) controller.enqueue(encoder.encode(text));
            }
            finish();
            controller.close();
            return;
          }
          const text = decoder.decode(chunk.value, { stream: true });
          assembler.push(text);
          if (!rewrite) {
            controller.enqueue(chunk.value);
            return;
          }
          const { out, rest } = rewriteEvents(pending + text, asked);
          pending = rest;
          if (out.length > 0) controller.enqueue(encoder.encode(out));
        },
        cancel(reason) {
          finish(`the client left mid-stream (${String(reason)})`);
          return reader.cancel(reason);
        },
      });
      return new Response(body, { status: r.status, headers: outHeaders });
    }
    const answer = await r.text();
    let response: unknown = answer;
    try {
      response = JSON.parse(answer);
    } catch {
      // Not JSON: recorded as text, forwarded as it came.
    }
    const ok = r.status >= 200 && r.status < 300;
    record({ status: r.status, response, ...(ok ? {} : { error: `upstream status ${r.status}` }) });
    if (Object.keys(asked).length > 0 && isObject(response)) {
      const stripped = JSON.stringify(strip(response, asked));
      outHeaders.set('content-length', String(Buffer.byteLength(stripped)));
      return new Response(stripped, { status: r.status, headers: outHeaders });
    }
    outHeaders.set('content-length', String(Buffer.byteLength(answer)));
    return new Response(answer, { status: r.status, headers: outHeaders });
  };

  app.get('/health', (c) => c.json({ status: 'ok', upstream }));

  app.all('/s/:session/v1/*', async (c) => {
    const id = c.req.param('session');
    const prefix = `/s/${encodeURIComponent(id)}/v1`;
    const path = new URL(c.req.url).pathname;
    const sub = path.startsWith(prefix) ? path.slice(prefix.length) : path.replace(/^\/s\/[^/]+\/v1/, '');
    const query = new URL(c.req.url).search;
    const url = `${upstream}${sub}${query}`;
    const s = store.session(id);
    if (c.req.method === 'POST' && MODEL_PATH.test(sub)) return forwardModel(c, s, sub, url);
    // Anything else (models, files, embeddings) passes through unrecorded.
    try {
      const hasBody = c.req.method !== 'GET' && c.req.method !== 'HEAD';
      const r = await fetch(url, {
        method: c.req.method,
        headers: forwardHeaders(c.req.raw.headers, DROP_REQUEST),
        body: hasBody ? new Uint8Array(await c.req.arrayBuffer()) : undefined,
      });
      return new Response(r.body, { status: r.status, headers: forwardHeaders(r.headers, DROP_RESPONSE) });
    } catch (e) {
      return c.json(
        errorBody(`upstream ${upstream} unreachable: ${(e as Error).message}`, 'upstream_error'),
        502,
      );
    }
  });

  app.put('/s/:session', async (c) => {
    const s = store.session(c.req.param('session'));
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
    if (budget !== undefined) s.meta.budget = budget as number;
    if (task !== undefined) s.meta.task = task as Task;
    if (typeof policy === 'string') s.meta.policy = policy;
    store.saveMeta(s);
    return c.json(sessionSummary(s));
  });
  app.get('/s/:session', (c) => c.json(sessionSummary(store.session(c.req.param('session')))));
  app.get('/s/:session/events', (c) => c.json(store.session(c.req.param('session')).events));
  app.get('/s/:session/trajectory', (c) => {
    const s = store.session(c.req.param('session'));
    return c.json(sessionTrajectory(s.meta, s.events));
  });
  app.post('/s/:session/reward', async (c) => {
    const s = store.session(c.req.param('session'));
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
    const s = store.session(c.req.param('session'));
    s.meta.ended = true;
    store.saveMeta(s);
    return c.json(sessionSummary(s));
  });
  app.notFound((c) =>
    c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error'), 404),
  );
  app.onError((e, c) => c.json(errorBody(e.message, 'server_error'), 500));
  return {
    app,
    store,
    trajectory: (id) => {
      const s = store.session(id);
      return sessionTrajectory(s.meta, s.events);
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
