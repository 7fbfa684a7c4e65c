// The recording proxy's store (serve/proxy.ts): its sessions and their calls in one SQLite file (WAL: a
// killed process keeps every committed row), and where each session stands.
import Database from 'better-sqlite3';
import { type CallEvent, isTurnCall, type SessionMeta, sessionTurns } from './proxy-record.ts';

/** A session as the proxy holds it: its meta, its calls, the calls still in flight. */
export interface Session {
  meta: SessionMeta;
  events: CallEvent[];
  /** Calls admitted and not yet answered (they count against the budget). */
  inflight: number;
  next: number;
  /** Successful chat calls so far (the turns the budget counts). */
  turns: number;
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
  readonly defaultBudget: number | undefined;

  constructor(path: string, defaultBudget?: number) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.putSession = this.db.prepare('INSERT OR REPLACE INTO sessions (id, data) VALUES (?, ?)');
    this.putEvent = this.db.prepare('INSERT INTO events (session, idx, data) VALUES (?, ?, ?)');
    this.defaultBudget = defaultBudget;
  }

  close(): void {
    this.db.close();
  }

  /** The session, loaded from the file or created (with the default budget). */
  session(id: string): Session {
    let s = this.sessions.get(id);
    if (s !== undefined) return s;
    const row = this.db.prepare('SELECT data FROM sessions WHERE id = ?').get(id) as
      | { data: string }
      | undefined;
    const events = (
      this.db.prepare('SELECT data FROM events WHERE session = ? ORDER BY idx').all(id) as { data: string }[]
    ).map((r) => JSON.parse(r.data) as CallEvent);
    const meta: SessionMeta =
      row === undefined
        ? {
            id,
            ended: false,
            truncated: false,
            ...(this.defaultBudget === undefined ? {} : { budget: this.defaultBudget }),
          }
        : (JSON.parse(row.data) as SessionMeta);
    s = {
      meta,
      events,
      inflight: 0,
      next: events.length === 0 ? 0 : events[events.length - 1].idx + 1,
      turns: events.filter(isTurnCall).length,
    };
    this.sessions.set(id, s);
    if (row === undefined) this.saveMeta(s);
    return s;
  }

  saveMeta(s: Session): void {
    this.putSession.run(s.meta.id, JSON.stringify(s.meta));
  }

  addEvent(s: Session, e: CallEvent): void {
    this.putEvent.run(s.meta.id, e.idx, JSON.stringify(e));
    s.events.push(e);
    // Calls of one session answered out of order (concurrent calls) are kept in arrival order.
    const n = s.events.length;
    if (n > 1 && s.events[n - 2].idx > e.idx) s.events.sort((a, b) => a.idx - b.idx);
    if (isTurnCall(e)) s.turns++;
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
  const { turns, mergeMismatches } = sessionTurns(s.events);
  return {
    id: s.meta.id,
    calls: s.events.length,
    turns: turns.length,
    budget: s.meta.budget ?? null,
    mergeMismatches: mergeMismatches.length,
    mergeMismatchTurns: mergeMismatches,
    reward: s.meta.reward ?? null,
    ended: s.meta.ended,
    truncated: s.meta.truncated,
  };
}
