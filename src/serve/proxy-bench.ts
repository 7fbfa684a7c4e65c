// The recording proxy's cost per call: the same chat requests sent to an upstream directly and through
// the proxy (recording into a real SQLite file), alternating one and the other so that both see the same
// machine noise, on loopback. The figure is the added latency: per pair, proxied − direct, its p50 and
// p99 (the goal: p50 ≤ 1 ms). The upstream is a node:http server answering a fixed completion at once,
// so that what is measured is the proxy, not a model.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProxy } from './proxy.ts';

export interface ProxyBenchOptions {
  /** Timed pairs of calls (each pair: one direct, one proxied). */
  calls: number;
  /** Untimed pairs first (JIT, connection pools). */
  warmup: number;
  /** Calls per proxy session (an episode's length). */
  sessionLength: number;
  stream: boolean;
}

export interface ProxyBenchResult {
  calls: number;
  stream: boolean;
  /** Latency of a direct call, ms. */
  direct: { p50: number; p99: number };
  proxied: { p50: number; p99: number };
  /** proxied − direct per pair, ms. */
  added: { p50: number; p99: number; mean: number };
  goalP50Ms: number;
  store: 'sqlite-file';
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 0,
  model: 'bench',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null },
  ],
  usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
});
const CHUNKS = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: 'o' }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: 'k' }, finish_reason: 'stop' }] },
]
  .map(
    (c) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', model: 'bench', ...c })}\n\n`,
  )
  .join('');

function upstream(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let stream = false;
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      stream = Buffer.concat(parts).includes('"stream":true');
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`${CHUNKS}data: [DONE]\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(COMPLETION);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server }),
    ),
  );
}

export async function benchProxy(o: ProxyBenchOptions): Promise<ProxyBenchResult> {
  const up = await upstream();
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-bench-proxy-'));
  const proxy = await startProxy({ upstream: up.url, store: join(dir, 'proxy.sqlite') });
  try {
    const body = (i: number) =>
      JSON.stringify({
        model: 'bench',
        stream: o.stream,
        messages: [
          { role: 'system', content: 'You are a benchmark.' },
          { role: 'user', content: `call ${i}` },
        ],
      });
    const call = async (base: string, i: number) => {
      const t0 = performance.now();
      const r = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(i),
      });
      await r.text();
      if (r.status !== 200) throw new Error(`status ${r.status} from ${base}`);
      return performance.now() - t0;
    };
    const direct: number[] = [];
    const proxied: number[] = [];
    const added: number[] = [];
    for (let i = 0; i < o.warmup + o.calls; i++) {
      const session = proxy.sessionUrl(`bench-${Math.floor(i / o.sessionLength)}`);
      // Alternate which goes first, so neither always pays for the other's garbage.
      const [d, p] =
        i % 2 === 0
          ? [await call(up.url, i), await call(session, i)]
          : [await call(session, i), await call(up.url, i)].reverse();
      if (i < o.warmup) continue;
      direct.push(d);
      proxied.push(p);
      added.push(p - d);
    }
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const [sd, sp, sa] = [sorted(direct), sorted(proxied), sorted(added)];
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    return {
      calls: o.calls,
      stream: o.stream,
      direct: { p50: r3(quantile(sd, 0.5)), p99: r3(quantile(sd, 0.99)) },
      proxied: { p50: r3(quantile(sp, 0.5)), p99: r3(quantile(sp, 0.99)) },
      added: {
        p50: r3(quantile(sa, 0.5)),
        p99: r3(quantile(sa, 0.99)),
        mean: r3(added.reduce((s, x) => s + x, 0) / added.length),
      },
      goalP50Ms: 1,
      store: 'sqlite-file',
    };
  } finally {
    await proxy.close();
    await new Promise<void>((r) => up.server.close(() => r()));
    up.server.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  }
}
