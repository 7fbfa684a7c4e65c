// The WebSocket protocol (RFC 6455), both ends, on Node's http and net: the opening handshake (§4), the
// base framing (§5.2), masking (§5.3), fragmentation (§5.4), control frames (§5.5) and the closing
// handshake (§7). Written here rather than taken from the `ws` package: `ws` is only a dev dependency of
// the checkout (an SDK's), and Node 20 has no WebSocket client. It lives in core because its two users —
// serve/openenv.ts (the server end) and envs/openenv/ (the client end) — share nothing else below them.
//
// Scope: text and binary messages, ping/pong, close with a code and a reason. No extensions
// (permessage-deflate is never negotiated: a frame with RSV bits set is a protocol error) and no
// subprotocols. Messages are delivered whole (fragments reassembled), each capped at maxMessageBytes.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type IncomingMessage, request } from 'node:http';
import { request as tlsRequest } from 'node:https';
import type { Duplex } from 'node:stream';

/** §1.3: the GUID appended to Sec-WebSocket-Key before hashing. */
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** §7.4.1 status codes used here. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  noStatus: 1005,
  abnormal: 1006,
  invalidPayload: 1007,
  tooBig: 1009,
} as const;

/** §4.2.2: Sec-WebSocket-Accept = base64(SHA-1(key + GUID)). */
export function acceptKey(key: string): string {
  return createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}

/** One frame (§5.2); a client's frames are masked with `mask` (4 bytes), a server's are not. */
export function encodeFrame(opcode: number, payload: Uint8Array, fin = true, mask?: Uint8Array): Buffer {
  const n = payload.length;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + lengthBytes + (mask === undefined ? 0 : 4));
  head[0] = (fin ? 0x80 : 0) | opcode;
  head[1] = (mask === undefined ? 0 : 0x80) | (n < 126 ? n : n < 65536 ? 126 : 127);
  if (lengthBytes === 2) head.writeUInt16BE(n, 2);
  else if (lengthBytes === 8) head.writeBigUInt64BE(BigInt(n), 2);
  if (mask === undefined) return Buffer.concat([head, payload]);
  head.set(mask, 2 + lengthBytes);
  const body = Buffer.from(payload);
  for (let i = 0; i < n; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([head, body]);
}

export interface Frame {
  fin: boolean;
  opcode: number;
  /** Unmasked. */
  payload: Buffer;
  masked: boolean;
}

/** Why a peer's bytes break the protocol: the close code to answer with, and the reason. */
export class ProtocolError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Frames out of a byte stream, incrementally: push() chunks as they arrive, take frames as they
 * complete. A frame whose payload exceeds maxPayload is refused before its payload is buffered.
 */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  private readonly maxPayload: number;

  constructor(maxPayload: number) {
    this.maxPayload = maxPayload;
  }

  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const frames: Frame[] = [];
    for (;;) {
      const b = this.buf;
      if (b.length < 2) break;
      if ((b[0] & 0x70) !== 0)
        throw new ProtocolError(CLOSE.protocolError, 'RSV bits set without an extension');
      const masked = (b[1] & 0x80) !== 0;
      let n = b[1] & 0x7f;
      let at = 2;
      if (n === 126) {
        if (b.length < 4) break;
        n = b.readUInt16BE(2);
        at = 4;
      } else if (n === 127) {
        if (b.length < 10) break;
        const big = b.readBigUInt64BE(2);
        if (big > BigInt(this.maxPayload)) throw new ProtocolError(CLOSE.tooBig, 'frame too large');
        n = Number(big);
        at = 10;
      }
      if (n > this.maxPayload) throw new ProtocolError(CLOSE.tooBig, 'frame too large');
      const maskAt = at;
      if (masked) at += 4;
      if (b.length < at + n) break;
      const payload = Buffer.from(b.subarray(at, at + n));
      if (masked) for (let i = 0; i < n; i++) payload[i] ^= b[maskAt + (i & 3)];
      frames.push({ fin: (b[0] & 0x80) !== 0, opcode: b[0] & 0x0f, payload, masked });
      this.buf = b.subarray(at + n);
    }
    return frames;
  }
}

export interface WebSocketOptions {
  /** The largest message (all its fragments) accepted; past it the connection closes with 1009. */
  maxMessageBytes?: number;
}

const DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * One open WebSocket, either end. Events: `message` (data: string for a text message, Buffer for a
 * binary one; isBinary), `close` (code, reason) once, when the connection is gone — after the closing
 * handshake, or at once when the socket ends or fails without one (code 1006).
 */
export class WebSocketConnection extends EventEmitter {
  readonly role: 'client' | 'server';
  private readonly socket: Duplex;
  private readonly parser: FrameParser;
  private readonly maxMessage: number;
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentOpcode = -1;
  private closeSent = false;
  private closed = false;
  private peerClose: { code: number; reason: string } | undefined;
  private reading = false;

  constructor(socket: Duplex, role: 'client' | 'server', options: WebSocketOptions = {}, head?: Buffer) {
    super();
    this.socket = socket;
    this.role = role;
    this.maxMessage = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE;
    this.parser = new FrameParser(this.maxMessage);
    socket.on('close', () =>
      this.finish(this.peerClose?.code ?? CLOSE.abnormal, this.peerClose?.reason ?? ''),
    );
    socket.on('error', () => socket.destroy());
    // Bytes that came with the handshake are the first frames. Frames are read from when the first
    // 'message' listener is attached: a socket emits what it has on the next tick, before a caller that
    // awaited this connection could attach one, and a message nobody hears would be lost.
    // Closing starts reading too: the peer's close frame and end must be read for the socket to close.
    if (head !== undefined && head.length > 0) socket.unshift(head);
    this.on('newListener', this.listening);
  }

  private readonly listening = (event: string | symbol) => {
    if (event === 'message') this.start();
  };

  private start(): void {
    if (this.reading) return;
    this.reading = true;
    this.off('newListener', this.listening);
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
  }

  /** Whether send() still reaches the peer (no close sent or received). */
  get open(): boolean {
    return !this.closeSent && !this.closed;
  }

  send(data: string | Uint8Array): void {
    if (!this.open) throw new Error('WebSocket is not open');
    const binary = typeof data !== 'string';
    this.write(binary ? OPCODE.binary : OPCODE.text, binary ? data : Buffer.from(data, 'utf8'));
  }

  ping(payload: Uint8Array = Buffer.alloc(0)): void {
    if (this.open) this.write(OPCODE.ping, payload);
  }

  /** Starts the closing handshake (§7.1.2); the socket ends when the peer answers (or ends itself). */
  close(code: number = CLOSE.normal, reason = ''): void {
    if (this.closeSent || this.closed) return;
    this.start();
    this.closeSent = true;
    const r = Buffer.from(reason, 'utf8').subarray(0, 123);
    const payload = Buffer.alloc(2 + r.length);
    payload.writeUInt16BE(code, 0);
    r.copy(payload, 2);
    this.write(OPCODE.close, payload);
    // The server closes the TCP connection first (§7.1.1); a client waits for it.
    if (this.peerClose !== undefined || this.role === 'server') this.socket.end();
  }

  /** Ends the connection at once, without a closing handshake (a peer that broke the protocol). */
  destroy(): void {
    this.socket.destroy();
  }

  private write(opcode: number, payload: Uint8Array): void {
    const mask = this.role === 'client' ? randomBytes(4) : undefined;
    this.socket.write(encodeFrame(opcode, payload, true, mask));
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    let frames: Frame[];
    try {
      frames = this.parser.push(chunk);
      for (const f of frames) this.frame(f);
    } catch (e) {
      if (e instanceof ProtocolError) this.fail(e.code, e.message);
      else throw e;
    }
  }

  private frame(f: Frame): void {
    // §5.1: a client masks every frame, a server none.
    if (f.masked !== (this.role === 'server'))
      throw new ProtocolError(
        CLOSE.protocolError,
        f.masked ? 'masked frame from a server' : 'unmasked frame from a client',
      );
    if (f.opcode >= 8) {
      if (!f.fin || f.payload.length > 125) throw new ProtocolError(CLOSE.protocolError, 'bad control frame');
      if (f.opcode === OPCODE.ping) {
        if (this.open) this.write(OPCODE.pong, f.payload);
      } else if (f.opcode === OPCODE.close) this.receivedClose(f.payload);
      else if (f.opcode !== OPCODE.pong) throw new ProtocolError(CLOSE.protocolError, 'unknown opcode');
      return;
    }
    if (f.opcode === OPCODE.continuation) {
      if (this.fragmentOpcode < 0)
        throw new ProtocolError(CLOSE.protocolError, 'continuation without a start');
    } else if (f.opcode === OPCODE.text || f.opcode === OPCODE.binary) {
      if (this.fragmentOpcode >= 0)
        throw new ProtocolError(CLOSE.protocolError, 'new message inside a fragmented one');
      this.fragmentOpcode = f.opcode;
    } else throw new ProtocolError(CLOSE.protocolError, 'unknown opcode');
    this.fragmentBytes += f.payload.length;
    if (this.fragmentBytes > this.maxMessage) throw new ProtocolError(CLOSE.tooBig, 'message too large');
    this.fragments.push(f.payload);
    if (!f.fin) return;
    const data = this.fragments.length === 1 ? this.fragments[0] : Buffer.concat(this.fragments);
    const binary = this.fragmentOpcode === OPCODE.binary;
    this.fragments = [];
    this.fragmentBytes = 0;
    this.fragmentOpcode = -1;
    if (this.closeSent) return; // §7.1.4: after sending a close, data is discarded
    if (binary) this.emit('message', data, true);
    else {
      let text: string;
      try {
        text = utf8.decode(data);
      } catch {
        throw new ProtocolError(CLOSE.invalidPayload, 'text message is not UTF-8');
      }
      this.emit('message', text, false);
    }
  }

  private receivedClose(payload: Buffer): void {
    let code: number = CLOSE.noStatus;
    let reason = '';
    if (payload.length === 1) throw new ProtocolError(CLOSE.protocolError, 'close frame of one byte');
    if (payload.length >= 2) {
      code = payload.readUInt16BE(0);
      try {
        reason = utf8.decode(payload.subarray(2));
      } catch {
        throw new ProtocolError(CLOSE.invalidPayload, 'close reason is not UTF-8');
      }
    }
    this.peerClose = { code, reason };
    if (!this.closeSent) {
      // §5.5.1: answer with a close frame echoing the status code.
      this.closeSent = true;
      const echo = Buffer.alloc(code === CLOSE.noStatus ? 0 : 2);
      if (echo.length === 2) echo.writeUInt16BE(code, 0);
      this.write(OPCODE.close, echo);
    }
    this.socket.end();
  }

  private fail(code: number, reason: string): void {
    if (!this.closeSent) {
      this.closeSent = true;
      const payload = Buffer.alloc(2);
      payload.writeUInt16BE(code, 0);
      this.write(OPCODE.close, Buffer.concat([payload, Buffer.from(reason, 'utf8').subarray(0, 123)]));
    }
    this.peerClose ??= { code, reason };
    // A peer that broke the protocol is not waited for: the socket goes once the close frame is out.
    this.socket.end(() => this.socket.destroy());
  }

  private finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close', code, reason);
  }
}

/** Why a handshake was refused, as an HTTP status and a message. */
export interface UpgradeRefusal {
  status: number;
  message: string;
}

/** §4.2.1: what makes a request a valid opening handshake; a refusal otherwise. */
export function checkUpgrade(req: IncomingMessage): UpgradeRefusal | undefined {
  const h = req.headers;
  if (req.method !== 'GET') return { status: 405, message: 'a WebSocket handshake is a GET' };
  if ((h.upgrade ?? '').toLowerCase() !== 'websocket')
    return { status: 400, message: 'Upgrade: websocket is missing' };
  const connection = (h.connection ?? '').toLowerCase().split(/\s*,\s*/);
  if (!connection.includes('upgrade')) return { status: 400, message: 'Connection: Upgrade is missing' };
  const key = h['sec-websocket-key'];
  if (typeof key !== 'string' || Buffer.from(key, 'base64').length !== 16)
    return { status: 400, message: 'Sec-WebSocket-Key is not 16 bytes in base64' };
  if (h['sec-websocket-version'] !== '13')
    return { status: 426, message: 'Sec-WebSocket-Version must be 13' };
  return undefined;
}

/** The server's end of the handshake on an http.Server 'upgrade' event: 101 and a connection, or the
 * refusal written as an HTTP response (and undefined). */
export function acceptUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: WebSocketOptions = {},
): WebSocketConnection | undefined {
  const refusal = checkUpgrade(req);
  if (refusal !== undefined) {
    refuseUpgrade(socket, refusal);
    return undefined;
  }
  const accept = acceptKey(req.headers['sec-websocket-key'] as string);
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
  );
  return new WebSocketConnection(socket, 'server', options, head);
}

/** Answers a handshake with an HTTP error and closes the socket. */
export function refuseUpgrade(socket: Duplex, refusal: UpgradeRefusal, body?: string): void {
  const text = body ?? refusal.message;
  const reasons: Record<number, string> = {
    400: 'Bad Request',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    426: 'Upgrade Required',
  };
  socket.end(
    `HTTP/1.1 ${refusal.status} ${reasons[refusal.status] ?? 'Error'}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n${refusal.status === 426 ? 'Sec-WebSocket-Version: 13\r\n' : ''}\r\n${text}`,
  );
}

export interface ConnectOptions extends WebSocketOptions {
  /** Milliseconds for the TCP connection and the handshake. */
  timeoutMs?: number;
}

/** The client's end (§4.1): connects to ws://HOST:PORT/PATH or wss://… (http:// and https:// taken as
 * those), checks the server's accept key, and resolves with the open connection. */
export function connectWebSocket(url: string, options: ConnectOptions = {}): Promise<WebSocketConnection> {
  const u = new URL(url.replace(/^ws(s?):/, 'http$1:'));
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return Promise.reject(new Error(`${url}: expected ws://, wss://, http:// or https://`));
  const tls = u.protocol === 'https:';
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = (tls ? tlsRequest : request)({
      host: u.hostname.replace(/^\[|\]$/g, ''),
      port: u.port === '' ? (tls ? 443 : 80) : Number(u.port),
      path: `${u.pathname}${u.search}`,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
      },
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => req.destroy(new Error(`no WebSocket handshake within ${options.timeoutMs} ms`)),
            options.timeoutMs,
          );
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
    };
    req.on('upgrade', (res, socket, head) => {
      done();
      if (res.headers['sec-websocket-accept'] !== acceptKey(key)) {
        socket.destroy();
        reject(new Error(`${url}: the server's Sec-WebSocket-Accept does not match the key`));
        return;
      }
      resolve(new WebSocketConnection(socket, 'client', options, head));
    });
    req.on('response', (res) => {
      done();
      res.resume();
      reject(new Error(`${url}: HTTP ${res.statusCode} instead of a WebSocket handshake`));
    });
    req.on('error', (e) => {
      done();
      reject(e);
    });
    req.end();
  });
}
