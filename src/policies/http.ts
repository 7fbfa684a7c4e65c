// One POST over node:http(s) with a keep-alive agent per origin — the openai: policy's hot path.
// On this project's machines undici's fetch does ~300–550 loopback round trips/s where node:http with a
// keep-alive agent does ~2000 (`turnwise bench serve` measures both), so an LLM run's HTTP path would
// otherwise be the bottleneck against a fast local server. Errors keep fetch's shapes, so callers
// treat both alike: a timeout is an Error named 'TimeoutError'; a socket failure carries the socket's
// code in `cause` (ECONNREFUSED, ECONNRESET).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
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

/**
 * POST `body` to `url` with `headers`; rejects after `timeoutMs` with an Error named TimeoutError.
 * A kept-alive socket that the server closed as idle just as this request went out fails with
 * ECONNRESET before any answer: the server never read the request, so it is sent once more on a fresh
 * socket (node's documented `reusedSocket` pattern) rather than counted as a fault of the server.
 */
export async function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<HttpReply> {
  try {
    return await postOnce(url, headers, body, timeoutMs);
  } catch (e) {
    if (!(e instanceof StaleSocket)) throw e;
    return await postOnce(url, headers, body, timeoutMs);
  }
}

/** A reused keep-alive socket reset before any response: safe to send again. */
class StaleSocket extends Error {}

function postOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<HttpReply> {
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<HttpReply>((resolve, reject) => {
    let done = false;
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      f();
    };
    const req = send(
      u,
      {
        method: 'POST',
        agent: agentFor(u),
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          finish(() =>
            resolve({
              status: res.statusCode ?? 0,
              headers: headersOf(res),
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          ),
        );
        res.on('error', (e) => finish(() => reject(new Error('fetch failed', { cause: e }))));
      },
    );
    const timer = setTimeout(() => {
      const e = new Error(`timeout after ${timeoutMs} ms`);
      e.name = 'TimeoutError';
      finish(() => reject(e));
      req.destroy();
    }, timeoutMs);
    let answered = false;
    req.on('response', () => {
      answered = true;
    });
    req.on('error', (e) => {
      const stale = !answered && req.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET';
      finish(() =>
        reject(
          stale
            ? new StaleSocket('stale keep-alive socket', { cause: e })
            : new Error('fetch failed', { cause: e }),
        ),
      );
    });
    req.end(body);
  });
}
