// RFC 6455 in core/websocket.ts, checked against the RFC's own examples (§1.3's handshake key, §5.7's
// frames, byte for byte) and against another implementation: the `ws` package (in node_modules as a dev
// dependency's dependency) as the peer of each end, over loopback sockets.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import {
  acceptKey,
  acceptUpgrade,
  CLOSE,
  connectWebSocket,
  encodeFrame,
  FrameParser,
  OPCODE,
  ProtocolError,
  type WebSocketConnection,
} from '../../src/core/websocket.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const HELLO = Buffer.from('Hello');
/** §5.7's masking key. */
const MASK = hex('37fa213d');

test("§1.3: the accept key of the RFC's sample nonce is s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", () => {
  assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
});

test("§5.7: the RFC's example frames, encoded and parsed byte for byte", () => {
  const cases: [string, Buffer, Buffer][] = [
    ['single-frame unmasked text "Hello"', encodeFrame(OPCODE.text, HELLO), hex('81 05 48 65 6c 6c 6f')],
    [
      'single-frame masked text "Hello"',
      encodeFrame(OPCODE.text, HELLO, true, MASK),
      hex('81 85 37 fa 21 3d 7f 9f 4d 51 58'),
    ],
    ['first fragment "Hel"', encodeFrame(OPCODE.text, Buffer.from('Hel'), false), hex('01 03 48 65 6c')],
    ['last fragment "lo"', encodeFrame(OPCODE.continuation, Buffer.from('lo')), hex('80 02 6c 6f')],
    ['unmasked ping "Hello"', encodeFrame(OPCODE.ping, HELLO), hex('89 05 48 65 6c 6c 6f')],
    [
      'masked pong "Hello"',
      encodeFrame(OPCODE.pong, HELLO, true, MASK),
      hex('8a 85 37 fa 21 3d 7f 9f 4d 51 58'),
    ],
  ];
  for (const [what, got, want] of cases) assert.deepEqual(got, want, what);
  // 256 bytes of binary: a 16-bit length; 64 KiB: a 64-bit length.
  assert.deepEqual(encodeFrame(OPCODE.binary, Buffer.alloc(256)).subarray(0, 4), hex('82 7e 01 00'));
  assert.deepEqual(
    encodeFrame(OPCODE.binary, Buffer.alloc(65536)).subarray(0, 10),
    hex('82 7f 00 00 00 00 00 01 00 00'),
  );
  // Parsed back, one byte at a time: the masked frame unmasks to "Hello".
  const p = new FrameParser(1 << 20);
  const bytes = hex('81 85 37 fa 21 3d 7f 9f 4d 51 58 01 03 48 65 6c 80 02 6c 6f');
  const frames = [...bytes].flatMap((b) => p.push(Buffer.from([b])));
  assert.deepEqual(
    frames.map((f) => [f.fin, f.opcode, f.masked, f.payload.toString()]),
    [
      [true, 1, true, 'Hello'],
      [false, 1, false, 'Hel'],
      [true, 0, false, 'lo'],
    ],
  );
  const big = new FrameParser(1 << 20).push(encodeFrame(OPCODE.binary, Buffer.alloc(65536, 7)));
  assert.equal(big[0].payload.length, 65536);
});

test('the parser refuses a frame past its limit (1009) and RSV bits without an extension (1002)', () => {
  assert.throws(
    () => new FrameParser(100).push(encodeFrame(OPCODE.text, Buffer.alloc(101))),
    (e: unknown) => e instanceof ProtocolError && e.code === CLOSE.tooBig,
  );
  assert.throws(
    () => new FrameParser(100).push(hex('c1 00')),
    (e: unknown) => e instanceof ProtocolError && e.code === CLOSE.protocolError,
  );
});

// ---------------------------------------------------------------------------------------------------
// Against the `ws` package.

const ws = await import('ws').catch(() => undefined);
const skip = ws === undefined ? 'the ws package is not in node_modules' : false;
if (skip) process.stderr.write(`websocket.test.ts: interop skipped: ${skip}\n`);

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

/** Our server end on a free port: every connection echoes text as `echo:` + text and closes on "bye". */
async function ourEchoServer(): Promise<{ url: string; closes: Promise<number>[] }> {
  const closes: Promise<number>[] = [];
  const server = createServer((_req, res) => res.end('no'));
  server.on('upgrade', (req, socket, head) => {
    const c = acceptUpgrade(req, socket, head, { maxMessageBytes: 1 << 16 });
    if (c === undefined) return;
    closes.push(new Promise((r) => c.on('close', (code: number) => r(code))));
    c.on('message', (data: string | Buffer, binary: boolean) => {
      if (binary) c.send(Buffer.concat([Buffer.from('bin:'), data as Buffer]));
      else if (data === 'bye') c.close(CLOSE.normal, 'bye');
      else c.send(`echo:${data}`);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`, closes };
}

test('our server end, a `ws` client: text, binary, a message of 40 000 characters, the closing handshake', {
  skip,
}, async () => {
  const { url, closes } = await ourEchoServer();
  const client = new ws!.WebSocket(url);
  const inbox: string[] = [];
  let next: (() => void) | undefined;
  client.on('message', (d, isBinary) => {
    inbox.push(isBinary ? `[${(d as Buffer).toString()}]` : d.toString());
    next?.();
  });
  const received = (n: number) =>
    new Promise<void>((r) => {
      next = () => inbox.length >= n && r();
      next();
    });
  await new Promise((r) => client.once('open', r));
  client.send('héllo ✓');
  client.send(Buffer.from('raw'));
  const long = 'x'.repeat(40_000);
  client.send(long);
  await received(3);
  assert.deepEqual(inbox, ['echo:héllo ✓', '[bin:raw]', `echo:${long}`]);
  const closed = new Promise<[number, string]>((r) =>
    client.on('close', (code, reason) => r([code, reason.toString()])),
  );
  client.send('bye');
  assert.deepEqual(await closed, [1000, 'bye']);
  assert.equal(await closes[0], 1000);
});

test('our server end refuses a message past its limit with 1009', { skip }, async () => {
  const { url } = await ourEchoServer();
  const client = new ws!.WebSocket(url);
  await new Promise((r) => client.once('open', r));
  const closed = new Promise<number>((r) => client.on('close', (code) => r(code)));
  client.send('y'.repeat((1 << 16) + 1));
  assert.equal(await closed, 1009);
});

test('our client end, a `ws` server: the handshake, echo, a ping answered, a fragmented message, close', {
  skip,
}, async () => {
  const wss = new ws!.WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  const pong = new Promise<string>((resolve) => {
    wss.on('connection', (peer) => {
      peer.on('pong', (d) => resolve(d.toString()));
      peer.on('message', (d) => {
        const text = d.toString();
        if (text === 'fragments') {
          // Three frames of one message (ws's fin option): our end reassembles them.
          peer.send('ab', { fin: false });
          peer.send('cd', { fin: false });
          peer.send('ef', { fin: true });
        } else peer.send(`echo:${text}`);
      });
      peer.ping('are you there');
    });
  });
  const port = (wss.address() as AddressInfo).port;
  const c: WebSocketConnection = await connectWebSocket(`ws://127.0.0.1:${port}/x`, { timeoutMs: 5000 });
  const inbox: string[] = [];
  let wake: (() => void) | undefined;
  c.on('message', (d: string) => {
    inbox.push(d);
    wake?.();
  });
  const until = (n: number) =>
    new Promise<void>((r) => {
      wake = () => inbox.length >= n && r();
      wake();
    });
  assert.equal(await pong, 'are you there');
  c.send('hi');
  c.send('fragments');
  await until(2);
  assert.deepEqual(inbox, ['echo:hi', 'abcdef']);
  const closed = new Promise<number>((r) => c.on('close', (code: number) => r(code)));
  c.close(CLOSE.normal);
  assert.equal(await closed, 1000);
  await new Promise((r) => wss.close(r));
});

test('our client end: a handshake answered by plain HTTP is refused with its status', async () => {
  const server = createServer((_req, res) => {
    res.statusCode = 404;
    res.end('{"detail":"Not Found"}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await assert.rejects(
    connectWebSocket(`ws://127.0.0.1:${port}/ws`),
    /HTTP 404 instead of a WebSocket handshake/,
  );
});
