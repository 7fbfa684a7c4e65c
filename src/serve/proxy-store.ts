// The recording proxy's store (serve/proxy.ts): its sessions and their calls in one SQLite file (WAL: a
// killed process keeps every committed row), and where each session stands.
//
// Memory is bounded per session whatever its length: a call's event is written to the file as it is
// recorded and not kept; a session holds its meta, its counters and the request keys of the failed calls
// since its last success (what counting a client's retries needs, at most RETRY_WINDOW of them). Reading a
// session's calls (its events, summary, trajectory) reads them from the file.
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { type CallEvent, isTurnCall, type SessionMeta, sessionTurns } from './proxy-record.ts';

/** The failed calls in a row a session remembers to count retries: a client retrying more often than this
 * in a row is counted as retrying this many times. */
export const RETRY_WINDOW = 1024;

/** What identifies a request for retry counting: its JSON (and its text, when the body was no JSON). */
export function requestKeys(request: unknown, json: string): string[] {
  const hash = (s: string) => createHash('sha256').update(s).digest('base64');
  return typeof request === 'string' ? [hash(json), hash(request)] : [hash(json)];
}

/** A failed call after the session's last success: its position and the keys of its request. */
interface Failed {
  idx: number;
  keys: string[];
}

/** A session as the proxy holds it: its meta, the calls in flight, its counters; its calls in the file. */
export class Session {
  readonly meta: SessionMeta;
  /** Calls admitted and not yet answered (they count against the budget). */
  inflight = 0;
  next: number;
  /** Successful chat calls so far (the turns the budget counts). */
  turns: number;
  private readonly store: ProxyStore;
  /** The failed calls after the last success (by position), in position order. */
  private failed: Failed[] = [];
  private lastSuccess = -1;

  constructor(store: ProxyStore, meta: SessionMeta) {
    this.store = store;
    this.meta = meta;
    this.next = 0;
    this.turns = 0;
  }

  /** The session's calls, read from the store (in call order). */
  get events(): CallEvent[] {
    return this.store.events(this.meta.id);
  }

  /** Counts a recorded call (its request keys from requestKeys). */
  count(e: CallEvent, keys: string[]): void {
    this.next = Math.max(this.next, e.idx + 1);
    if (isTurnCall(e)) this.turns++;
    if (e.status >= 200 && e.status < 300) {
      if (e.idx > this.lastSuccess) {
        this.lastSuccess = e.idx;
        this.failed = this.failed.filter((f) => f.idx > e.idx);
      }
      return;
    }
    if (e.idx < this.lastSuccess) return;
    // Calls of one session answered out of order (concurrent calls) are kept in call order.
    let at = this.failed.length;
    while (at > 0 && this.failed[at - 1].idx > e.idx) at--;
    this.failed.splice(at, 0, { idx: e.idx, keys });
    if (this.failed.length > RETRY_WINDOW) this.failed.shift();
  }

  /** Failed calls just before the next one with the same request (`keys[0]`, its JSON's): the client is
   * retrying them. */
  retriesOf(key: string): number {
    let n = 0;
    for (let i = this.failed.length - 1; i >= 0; i--) {
      if (!this.failed[i].keys.includes(key)) break;
      n++;
    }
    return n;
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  session TEXT NOT NULL, idx INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session, idx)
);
`;

/** Sessions and their events in one SQLite file. */
export class ProxyStore {
  readonly db: Database.Database;
  private readonly sessions = new Map<string, Session>();
  private readonly putSession: Database.Statement;
  private readonly putEvent: Database.Statement;
  private readonly getSession: Database.Statement;
  private readonly getEvents: Database.Statement;
  readonly defaultBudget: number | undefined;

  constructor(path: string, defaultBudget?: number) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.putSession = this.db.prepare('INSERT OR REPLACE INTO sessions (id, data) VALUES (?, ?)');
    this.putEvent = this.db.prepare('INSERT INTO events (session, idx, data) VALUES (?, ?, ?)');
    this.getSession = this.db.prepare('SELECT data FROM sessions WHERE id = ?');
    this.getEvents = this.db.prepare('SELECT data FROM events WHERE session = ? ORDER BY idx');
    this.defaultBudget = defaultBudget;
  }

  close(): void {
    this.db.close();
  }

  /** The meta of a session that has made no call yet (with the default budget). */
  freshMeta(id: string): SessionMeta {
    return {
      id,
      ended: false,
      truncated: false,
      ...(this.defaultBudget === undefined ? {} : { budget: this.defaultBudget }),
    };
  }

  /** The session, loaded from the file or created: for the calls that mean to start one (PUT
   * /s/{id}, a model call, the harness). */
  session(id: string): Session {
    const s = this.find(id);
    if (s !== undefined) return s;
    const created = new Session(this, this.freshMeta(id));
    this.sessions.set(id, created);
    this.saveMeta(created);
    return created;
  }

  /** The session when the file (or this process) has it; never creates one. */
  find(id: string): Session | undefined {
    const held = this.sessions.get(id);
    if (held !== undefined) return held;
    const row = this.getSession.get(id) as { data: string } | undefined;
    if (row === undefined) return undefined;
    const s = new Session(this, JSON.parse(row.data) as SessionMeta);
    // Its counters from its calls, read one at a time.
    for (const r of this.getEvents.iterate(id) as Iterable<{ data: string }>) {
      const e = JSON.parse(r.data) as CallEvent;
      s.count(e, requestKeys(e.request, JSON.stringify(e.request)));
    }
    this.sessions.set(id, s);
    return s;
  }

  saveMeta(s: Session): void {
    this.putSession.run(s.meta.id, JSON.stringify(s.meta));
  }

  /** Writes a call's event and counts it; the event itself is not kept. */
  addEvent(s: Session, e: CallEvent, keys: string[]): void {
    this.putEvent.run(s.meta.id, e.idx, JSON.stringify(e));
    s.count(e, keys);
  }

  /** A session's calls, in call order. */
  events(id: string): CallEvent[] {
    return (this.getEvents.all(id) as { data: string }[]).map((r) => JSON.parse(r.data) as CallEvent);
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
  const events = s.events;
  const { turns, mergeMismatches } = sessionTurns(events);
  return {
    id: s.meta.id,
    calls: events.length,
    turns: turns.length,
    budget: s.meta.budget ?? null,
    mergeMismatches: mergeMismatches.length,
    mergeMismatchTurns: mergeMismatches,
    reward: s.meta.reward ?? null,
    ended: s.meta.ended,
    truncated: s.meta.truncated,
  };
}
