// The recording proxy's way to the upstream (serve/proxy.ts): a model call forwarded with what the proxy
// asks for beyond the client (log-probs; usage on streams), and the answer relayed back without it —
// a stream chunk by chunk, its SSE events rewritten only when the proxy asked for more — while the call's
// outcome is handed to the recorder before the answer's last byte leaves. Requests go through the one
// keep-alive client of policies/http.ts: on loopback fetch (undici) costs a few milliseconds per call
// more, the whole of the proxy's latency budget.
import { send } from '../policies/http.ts';
import { type CallEvent, StreamAssembler, stripAnswer as strip } from './proxy-record.ts';

type Json = Record<string, unknown>;
export const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

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

/** A client's request headers as the upstream gets them (`drop`: more to leave out, e.g. the proxy's key). */
export function requestHeaders(h: Headers, drop: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => {
    if (!DROP_REQUEST.includes(k) && !drop.includes(k)) out[k] = v;
  });
  return out;
}

/** An upstream's response headers as the client gets them. */
export function responseHeaders(h: Headers): Headers {
  const out = new Headers(h);
  for (const k of DROP_RESPONSE) out.delete(k);
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

/**
 * The upstream's answer to a model call sent as `forwarded`. An upstream that refuses `logprobs` (a 400
 * that says so) is asked once more as the client asked — `asked.logprobs` is then dropped and
 * `logprobsRefused()` called, so that the proxy never asks again.
 */
export async function askUpstream(
  url: string,
  headers: Record<string, string>,
  request: unknown,
  forwarded: unknown,
  asked: NonNullable<CallEvent['asked']>,
  logprobsRefused: () => void,
): Promise<Response> {
  const r = await send(url, { method: 'POST', headers, body: JSON.stringify(forwarded) });
  if (r.status !== 400 || !asked.logprobs) return r;
  const refusal = await r.text();
  if (!/logprob/i.test(refusal)) return new Response(refusal, { status: r.status, headers: r.headers });
  logprobsRefused();
  delete asked.logprobs;
  const body = { ...(forwarded as Json) };
  if (isObject(request) && 'logprobs' in request) body.logprobs = request.logprobs;
  else delete body.logprobs;
  return send(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

/** What the answer adds to the call's event. */
export type Answered = Pick<CallEvent, 'status' | 'response' | 'error'>;

/** The client's answer to the upstream's `r`; `record` receives the call's outcome exactly once. */
export async function relay(
  r: Response,
  asked: NonNullable<CallEvent['asked']>,
  record: (a: Answered) => void,
): Promise<Response> {
  const headers = responseHeaders(r.headers);
  if ((r.headers.get('content-type') ?? '').includes('text/event-stream') && r.body !== null) {
    return new Response(relayStream(r.body, r.status, asked, record), { status: r.status, headers });
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
  const out =
    Object.keys(asked).length > 0 && isObject(response) ? JSON.stringify(strip(response, asked)) : answer;
  headers.set('content-length', String(Buffer.byteLength(out)));
  return new Response(out, { status: r.status, headers });
}

/** An SSE body passed on as it arrives, assembled for the record on the way. */
function relayStream(
  upstream: ReadableStream<Uint8Array>,
  status: number,
  asked: NonNullable<CallEvent['asked']>,
  record: (a: Answered) => void,
): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const assembler = new StreamAssembler();
  const rewrite = Object.keys(asked).length > 0;
  let pending = '';
  let finished = false;
  const finish = (error?: string) => {
    if (finished) return;
    finished = true;
    record({ status, response: assembler.result(), ...(error === undefined ? {} : { error }) });
  };
  return new ReadableStream<Uint8Array>({
    // Reads until something is enqueued (or the end): a pull that enqueues nothing — a read that held
    // only the usage chunk the client did not ask for — would not be called again, and the stream stall.
    async pull(controller) {
      for (;;) {
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
        if (out.length > 0) {
          controller.enqueue(encoder.encode(out));
          return;
        }
      }
    },
    cancel(reason) {
      finish(`the client left mid-stream (${String(reason)})`);
      return reader.cancel(reason);
    },
  });
}
