// One session with an OpenEnv server: a WebSocket to its /ws, as OpenEnv's own client holds it
// (src/openenv/core/env_client.py's EnvClient): one message sent, the next one received as its answer,
// an {"type": "error"} answer raised — with the reference client's timeouts (10 s to connect, 60 s per
// answer). A connection that ends while an answer is awaited (the server died) rejects it.
//
// Capacity: the reference server takes max_concurrent_envs sessions (1 unless configured) and tells the
// next connection CAPACITY_REACHED with the maximum. Sessions to one server are therefore opened through a
// Gate: after a refusal, no more of this process's connections than the server takes are open at once,
// and the refused opening waits until one of our sessions ends, then tries again — on that event, never
// on a timer. A refusal while none of our sessions is open or may be (a connection whose answer is not
// read yet), and none has ended since we connected, means the server is full of other clients'
// sessions: an error, there is no event of ours to wait for.
import { CLOSE, connectWebSocket, type WebSocketConnection } from '../../core/websocket.ts';

export const CONNECT_TIMEOUT_MS = 10_000;
export const MESSAGE_TIMEOUT_MS = 60_000;
/** The reference client's max_message_size_mb default: 100 MB. */
const MAX_MESSAGE_BYTES = 100 * 1024 * 1024;

export type Reply = { type: string; data?: unknown };

/** An {"type": "error"} answer, with its code (types.py's WSErrorCode). */
export class ServerError extends Error {
  readonly code: string;
  readonly data: Record<string, unknown>;
  constructor(data: Record<string, unknown>) {
    super(
      `Server error: ${String(data.message ?? 'Unknown error')} (code: ${String(data.code ?? 'UNKNOWN')})`,
    );
    this.code = String(data.code ?? 'UNKNOWN');
    this.data = data;
  }
}

/** This process's connections to one server: how many may be open, and who waits for what. */
export class Gate {
  limit = Number.POSITIVE_INFINITY;
  /** Connections open or opening (what the limit counts). */
  open = 0;
  /** Connections whose first answer is not read yet: each may turn out to hold a session. */
  pending = 0;
  /** Sessions (connections the server accepted) open, and how many have ended so far. */
  sessions = 0;
  released = 0;
  private slots: (() => void)[] = [];
  private watchers: (() => void)[] = [];

  /** Waits for a free slot under the limit; the connection is then pending. */
  async enter(): Promise<void> {
    while (this.open >= this.limit) await new Promise<void>((r) => this.slots.push(r));
    this.open++;
    this.pending++;
  }

  /** The first answer was read: a session (accepted) or a refusal. */
  answered(accepted: boolean): void {
    this.pending--;
    if (accepted) this.sessions++;
    this.changed();
  }

  /** A connection is gone (`session`: the server had accepted it). */
  leave(session: boolean): void {
    this.open--;
    if (session) {
      this.sessions--;
      this.released++;
    }
    this.slots.shift()?.();
    this.changed();
  }

  /** Resolves at the next answer or departure. */
  next(): Promise<void> {
    return new Promise((r) => this.watchers.push(r));
  }

  private changed(): void {
    const w = this.watchers;
    this.watchers = [];
    for (const r of w) r();
  }
}

const GATES = new Map<string, Gate>();
export const gateOf = (url: string): Gate => {
  let g = GATES.get(url);
  if (g === undefined) {
    g = new Gate();
    GATES.set(url, g);
  }
  return g;
};

export class Session {
  private readonly ws: WebSocketConnection;
  private inbox: Reply[] = [];
  private waiter: { resolve: (r: Reply) => void; reject: (e: Error) => void } | undefined;
  private gone: Error | undefined;
  /** The server took this connection as a session (it did not refuse it at capacity). */
  private accepted = false;
  /** Resolves when the connection is gone (the gate is left then, not when close() is called: the
   * server counts a session until it has closed it). */
  readonly ended: Promise<void>;

  private constructor(ws: WebSocketConnection, gate: Gate, url: string) {
    this.ws = ws;
    let ended!: () => void;
    this.ended = new Promise((r) => (ended = r));
    ws.on('message', (data: string | Buffer) => {
      let reply: Reply;
      try {
        reply = JSON.parse(String(data)) as Reply;
      } catch {
        reply = {
          type: 'error',
          data: { message: `not JSON: ${String(data).slice(0, 80)}`, code: 'INVALID_JSON' },
        };
      }
      const w = this.waiter;
      this.waiter = undefined;
      if (w !== undefined) w.resolve(reply);
      else this.inbox.push(reply);
    });
    ws.on('close', (code: number) => {
      this.gone = new Error(
        `the OpenEnv server at ${url} closed the session (WebSocket ${code}${code === CLOSE.abnormal ? ': the connection dropped' : ''})`,
      );
      gate.leave(this.accepted);
      ended();
      const w = this.waiter;
      this.waiter = undefined;
      w?.reject(this.gone);
    });
  }

  /** Opens a session on the server at `url` (http://…), waiting at its gate; retries a CAPACITY_REACHED
   * refusal each time one of this process's sessions on it closes. `first` is sent at once and its
   * answer returned (a refusal arrives as the answer to the first message). */
  static async open(
    url: string,
    first: Record<string, unknown>,
  ): Promise<{ session: Session; reply: Reply }> {
    const gate = gateOf(url);
    for (;;) {
      await gate.enter();
      const released = gate.released;
      let ws: WebSocketConnection;
      try {
        ws = await connectWebSocket(`${url}/ws`, {
          timeoutMs: CONNECT_TIMEOUT_MS,
          maxMessageBytes: MAX_MESSAGE_BYTES,
        });
      } catch (e) {
        gate.answered(false);
        gate.leave(false);
        throw new Error(
          `cannot open a session at ${url}/ws: ${(e as Error).message || (e as NodeJS.ErrnoException).code}`,
        );
      }
      const session = new Session(ws, gate, url);
      let reply: Reply;
      try {
        reply = await session.raw(first);
      } catch (e) {
        gate.answered(false);
        session.close();
        throw e;
      }
      const data = (reply.data ?? {}) as Record<string, unknown>;
      const refused = reply.type === 'error' && data.code === 'CAPACITY_REACHED';
      // A connection already gone has left the gate as no session (the answer came before its end).
      session.accepted = !refused && session.gone === undefined;
      gate.answered(session.accepted);
      if (!refused) return { session, reply };
      session.close();
      await session.ended;
      const max = typeof data.max_sessions === 'number' ? data.max_sessions : 1;
      gate.limit = Math.max(1, Math.min(gate.limit, max));
      // Tried again once a session of ours has ended since we connected; while none has, and none is
      // open or may be (a connection whose answer is not read), the server is full of others' sessions.
      while (gate.released === released) {
        if (gate.sessions === 0 && gate.pending === 0) throw new ServerError(data);
        await gate.next();
      }
    }
  }

  /** Sends a message and returns the next one received, an error answer included. A message that came
   * before this one was sent is its answer (the reference client reads so: a refusal sent on connecting,
   * the connection closed after it, is the answer to the first message). */
  private raw(message: Record<string, unknown>): Promise<Reply> {
    const queued = this.inbox.shift();
    if (queued !== undefined) {
      if (this.ws.open) this.ws.send(JSON.stringify(message));
      return Promise.resolve(queued);
    }
    if (this.gone !== undefined) return Promise.reject(this.gone);
    try {
      this.ws.send(JSON.stringify(message));
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new Error(`no answer from the OpenEnv server within ${MESSAGE_TIMEOUT_MS / 1000} s`));
        this.close();
      }, MESSAGE_TIMEOUT_MS);
      this.waiter = {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  /** Sends a message and returns its answer; an error answer throws a ServerError. */
  async request(message: Record<string, unknown>): Promise<Reply> {
    return answer(await this.raw(message));
  }

  /** Whether the connection still stands. */
  get alive(): boolean {
    return this.gone === undefined && this.ws.open;
  }

  /** {"type": "close"}, then the closing handshake (EnvClient.disconnect); a server that does not end
   * the connection within the connect timeout is cut off. */
  close(): void {
    if (!this.ws.open) return;
    try {
      this.ws.send(JSON.stringify({ type: 'close' }));
    } catch {
      // best effort, as the reference client's
    }
    this.ws.close();
    setTimeout(() => this.ws.destroy(), CONNECT_TIMEOUT_MS).unref();
  }
}

/** An answer as the reference client takes it: an error raised, anything else returned. */
export function answer(reply: Reply): Reply {
  if (reply.type === 'error') throw new ServerError((reply.data ?? {}) as Record<string, unknown>);
  return reply;
}
