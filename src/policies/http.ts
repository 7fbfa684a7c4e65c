// The one HTTP client of turnwise's HTTP edges: node:http(s) with a keep-alive agent per origin, used by
// the openai: policy (a buffered reply with a timeout) and by the recording proxy (serve/proxy.ts: the
// upstream's reply as a web Response whose body streams as it arrives). On this project's machines
// undici's fetch does ~300–550 loopback round trips/s where node:http with a keep-alive agent does ~2000
// (`turnwise bench serve` measures both), so an LLM run's HTTP path — and the proxy's added latency —
// would otherwise be the bottleneck against a fast local server. Errors keep fetch's shapes, so callers
// treat both alike: a timeout is an Error named 'TimeoutError'; a socket failure is 'fetch failed' with
// the socket's error (its code: ECONNREFUSED, ECONNRESET) in `cause`.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';

export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
}

export interface HttpInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

const agents = new Map<string, HttpAgent>();

function agentFor(url: URL): HttpAgent {
  let agent = agents.get(url.origin);
  if (agent === undefined) {
    // Idle keep-alive sockets are unref'd by node, so they never keep a finished run alive.
    agent =
      url.protocol === 'https:' ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    agents.set(url.origin, agent);
  }
  return agent;
}

function headersOf(res: IncomingMessage): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) h.append(k, x);
  }
  return h;
}

/** A reused keep-alive socket reset before any response: safe to send again. */
class StaleSocket extends Error {}

/** One request; resolves with the response head (its body unread). Aborting `signal` destroys the
 * request (its body too, once it streams) and rejects with the signal's reason. */
function openOnce(url: URL, init: HttpInit, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers = { ...init.headers };
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
  return new Promise<IncomingMessage>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let answered = false;
    const req = send(url, { method: init.method, agent: agentFor(url), headers }, (res) => {
      answered = true;
      resolve(res);
    });
    const abort = () => req.destroy(signal?.reason as Error);
    signal?.addEventListener('abort', abort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', abort));
    req.on('error', (e) => {
      if (answered) return;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const stale = req.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET';
      reject(
        stale
          ? new StaleSocket('stale keep-alive socket', { cause: e })
          : new Error('fetch failed', { cause: e }),
      );
    });
    req.end(init.body);
  });
}

/**
 * Sends `init` to `url` and resolves with the response head. A kept-alive socket that the server closed
 * as idle just as this request went out fails with ECONNRESET before any answer: the server never read
 * the request, so it is sent once more on a fresh socket (node's documented `reusedSocket` pattern)
 * rather than counted as a fault of the server. A request the caller aborted is never sent again.
 */
async function open(url: string, init: HttpInit, signal?: AbortSignal): Promise<IncomingMessage> {
  const u = new URL(url);
  try {
    return await openOnce(u, init, signal);
  } catch (e) {
    if (!(e instanceof StaleSocket)) throw e;
    return await openOnce(u, init, signal);
  }
}

/** The body of `res` as text; an abort of `signal` rejects with its reason. */
function readText(res: IncomingMessage, signal: AbortSignal): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', (e) => reject(signal.aborted ? signal.reason : new Error('fetch failed', { cause: e })));
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** The whole reply of `init` at `url`; rejects after `timeoutMs` with an Error named TimeoutError (the
 * request destroyed, never sent again). */
export async function call(url: string, init: HttpInit, timeoutMs: number): Promise<HttpReply> {
  const timeout = new AbortController();
  const timer = setTimeout(() => {
    const e = new Error(`timeout after ${timeoutMs} ms`);
    e.name = 'TimeoutError';
    timeout.abort(e);
  }, timeoutMs);
  try {
    const res = await open(url, init, timeout.signal);
    const text = await readText(res, timeout.signal);
    return { status: res.statusCode ?? 0, headers: headersOf(res), text };
  } finally {
    clearTimeout(timer);
  }
}

/** POST `body` to `url` with `headers`; rejects after `timeoutMs` with an Error named TimeoutError. */
export function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<HttpReply> {
  return call(url, { method: 'POST', headers, body }, timeoutMs);
}

/** Statuses whose response has no body. */
const NO_BODY = new Set([101, 204, 205, 304]);

/** One request answered as a web Response whose body streams as the server sends it (no timeout: the
 * caller's client decides how long to wait; `signal` aborts it). */
export async function send(url: string, init: HttpInit & { signal?: AbortSignal }): Promise<Response> {
  const res = await open(url, init, init.signal);
  const status = res.statusCode ?? 502;
  if (NO_BODY.has(status)) {
    res.resume();
    return new Response(null, { status, headers: headersOf(res) });
  }
  return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, { status, headers: headersOf(res) });
}
