// The policy's POST (src/policies/http.ts) against a real node:http server that resets connections: a
// kept-alive socket reset before any answer is sent again once on a fresh socket (the server closed it
// as idle as the request went out); a reset of a fresh socket is the server's fault and stays an error.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, test } from 'node:test';
import { post } from '../../src/policies/http.ts';

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

/** A server that resets a socket at its `resetAt`-th request (1-based), answering the others. */
async function resetting(
  resetAt: number,
): Promise<{ url: string; sockets: Set<Socket>; answered: () => number }> {
  const perSocket = new WeakMap<Socket, number>();
  const sockets = new Set<Socket>();
  let answered = 0;
  const server = createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    sockets.add(req.socket);
    req.resume();
    req.on('end', () => {
      if (n === resetAt) {
        req.socket.resetAndDestroy();
        return;
      }
      answered++;
      res.end(JSON.stringify({ n }));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/x`,
    sockets,
    answered: () => answered,
  };
}

test('a reused keep-alive socket reset before the answer is retried once on a fresh socket', async () => {
  const s = await resetting(2);
  const first = await post(s.url, {}, '{}', 5000);
  assert.deepEqual(JSON.parse(first.text), { n: 1 });
  // The second request goes out on the kept-alive socket, which the server resets: sent again on a new one.
  const second = await post(s.url, {}, '{}', 5000);
  assert.equal(second.status, 200);
  assert.deepEqual(JSON.parse(second.text), { n: 1 }, 'answered as the first request of a fresh socket');
  assert.equal(s.sockets.size, 2);
  assert.equal(s.answered(), 2);
});

test('a fresh socket reset is an error (fetch failed, ECONNRESET in cause), not retried', async () => {
  const s = await resetting(1);
  await assert.rejects(post(s.url, {}, '{}', 5000), (e: Error) => {
    assert.equal(e.message, 'fetch failed');
    assert.equal((e.cause as NodeJS.ErrnoException).code, 'ECONNRESET');
    return true;
  });
  assert.equal(s.sockets.size, 1, 'no second attempt');
  assert.equal(s.answered(), 0);
});
