// The recording proxy's memory over many large requests (issue 21 §1.8): the proxy writes each call's
// event to its SQLite store and keeps none of it, so its heap and RSS stay flat however long a session
// grows. One process, one run: a loopback upstream (node:http, a small fixed completion), the proxy
// recording into a temporary SQLite file, and a client. First the same large requests go straight to
// the upstream (the reference: what the client and the upstream themselves leave behind), then through
// the proxy, all in ONE session (the worst case for per-session memory). Memory is read after a forced
// GC (the script re-runs itself with --expose-gc). Prints one JSON object; machine-dependent, asserts
// nothing.
//   node --import tsx bench/proxy-memory.ts [--requests 1000] [--kb 256] [--concurrency 4]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProxy } from '../src/serve/proxy.ts';
import { benchArgs } from './args.ts';

// Flags are read (and refused, or --help printed) here, before the re-run below.
const { values } = benchArgs('bench/proxy-memory.ts', {
  options: {
    requests: { type: 'string', default: '1000' },
    kb: { type: 'string', default: '256' },
    concurrency: { type: 'string', default: '4' },
  },
});

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  process.exit(r.status ?? 1);
}

const requests = Number(values.requests);
const kb = Number(values.kb);
const concurrency = Number(values.concurrency);

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null },
  ],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(COMPLETION);
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
const dir = mkdtempSync(join(tmpdir(), 'turnwise-proxy-memory-'));
const store = join(dir, 'proxy.sqlite');
const proxy = await startProxy({ upstream: upstreamUrl, store });

/** A large chat request: one user message of `kb` KiB (a long tool result, a pasted file). */
const body = (i: number) =>
  JSON.stringify({
    model: 'm',
    messages: [{ role: 'user', content: `${i} ${'lorem ipsum '.repeat(Math.ceil((kb * 1024) / 12))}` }],
  });

/** `n` requests to `url` at `concurrency`. */
async function drive(url: string, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) {
        const r = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(i),
        });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
      }
    }),
  );
}

const MB = 1024 * 1024;
const memory = () => {
  (gc as () => void)();
  (gc as () => void)();
  const m = process.memoryUsage();
  return {
    rssMB: +(m.rss / MB).toFixed(1),
    heapUsedMB: +(m.heapUsed / MB).toFixed(1),
    externalMB: +(m.external / MB).toFixed(1),
  };
};

const direct = `${upstreamUrl}/chat/completions`;
const proxied = `${proxy.sessionUrl('one-long-session')}/chat/completions`;
// Warm-up: JIT, connection pools, SQLite's page cache.
await drive(direct, 20);
await drive(proxied, 20);
const before = memory();
const t0 = performance.now();
await drive(direct, requests);
const reference = { ...memory(), seconds: +((performance.now() - t0) / 1000).toFixed(2) };
const t1 = performance.now();
await drive(proxied, requests);
const after = { ...memory(), seconds: +((performance.now() - t1) / 1000).toFixed(2) };
const result = {
  requests,
  requestKB: kb,
  concurrency,
  /** Bytes the proxied requests carried in all: what holding their events would take at least. */
  proxiedMB: +((requests * body(0).length) / MB).toFixed(1),
  calls: (proxy.store.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n,
  storeMB: +(statSync(store).size / MB).toFixed(1),
  /** After the warm-up. */
  before,
  /** After as many requests straight to the upstream: the client's and upstream's own share. */
  reference,
  /** After as many through the proxy, in one session. */
  after,
  /** after − reference: what the proxy kept. */
  proxyGrowth: {
    rssMB: +(after.rssMB - reference.rssMB).toFixed(1),
    heapUsedMB: +(after.heapUsedMB - reference.heapUsedMB).toFixed(1),
  },
};
console.log(JSON.stringify(result));
await proxy.close();
await new Promise<void>((resolve) => upstream.close(() => resolve()));
rmSync(dir, { recursive: true, force: true });
