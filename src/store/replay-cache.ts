// The replay cache of `--cache FILE.sqlite` (issue 12): every completed request of an openai: policy,
// one row per request, written (better-sqlite3, WAL) as soon as its response arrives, so that a run
// killed with kill -9 and rerun with the same file repeats none of them. Rows are keyed by the canonical
// hash of the request body (policies/openai.ts requestKey: model, messages, tools, seed, sampling
// parameters; never the API key). The file records the models it holds; a policy of a model the file
// does not hold refuses it (InputError, exit 2) unless the file is empty.
import Database from 'better-sqlite3';
import { InputError } from '../core/errors.ts';

import type { CachedResponse } from '../core/types.ts';

export type { CachedResponse };

const SCHEMA = `
CREATE TABLE IF NOT EXISTS models (model TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS responses (
  key TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  body TEXT NOT NULL,
  retries INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  created TEXT NOT NULL
);`;

/** Columns added after the first files were written: added to an older file when it is opened. */
const ADDED = { status: 'INTEGER', errors: 'TEXT' } as const;

export class ReplayCache {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<
    [string],
    { body: string; retries: number; latency_ms: number; status: number | null; errors: string | null }
  >;
  private readonly putStmt: Database.Statement<
    [string, string, string, number, number, number | null, string | null, string]
  >;
  /** Requests answered from the file, and rows written, since it was opened. */
  hits = 0;
  writes = 0;

  constructor(file: string, field = '--cache') {
    this.file = file;
    try {
      this.db = new Database(file);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('busy_timeout = 5000');
      this.db.exec(SCHEMA);
      const have = new Set(
        (this.db.prepare('PRAGMA table_info(responses)').all() as { name: string }[]).map((c) => c.name),
      );
      for (const [name, type] of Object.entries(ADDED)) {
        if (!have.has(name)) this.db.exec(`ALTER TABLE responses ADD COLUMN ${name} ${type}`);
      }
      this.getStmt = this.db.prepare(
        'SELECT body, retries, latency_ms, status, errors FROM responses WHERE key = ?',
      );
      this.putStmt = this.db.prepare(
        'INSERT OR IGNORE INTO responses (key, model, body, retries, latency_ms, status, errors, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
    } catch (e) {
      throw new InputError(field, file, `cannot open as a replay cache (${(e as Error).message})`);
    }
  }

  /** Claims the file for a model: refuses a file that holds other models only (InputError). */
  claim(model: string, field = '--cache'): void {
    const models = (this.db.prepare('SELECT model FROM models').all() as { model: string }[]).map(
      (r) => r.model,
    );
    if (models.length > 0 && !models.includes(model)) {
      throw new InputError(
        field,
        this.file,
        `a replay cache of ${models.join(', ')}, not of ${model}; give another file`,
      );
    }
    this.db.prepare('INSERT OR IGNORE INTO models (model) VALUES (?)').run(model);
  }

  get(key: string): CachedResponse | undefined {
    const row = this.getStmt.get(key);
    if (row === undefined) return undefined;
    this.hits++;
    const entry: CachedResponse = { body: row.body, retries: row.retries, latencyMs: row.latency_ms };
    if (row.status !== null) entry.status = row.status;
    if (row.errors !== null) entry.errors = JSON.parse(row.errors) as string[];
    return entry;
  }

  put(key: string, model: string, entry: CachedResponse): void {
    this.putStmt.run(
      key,
      model,
      entry.body,
      entry.retries,
      entry.latencyMs,
      entry.status ?? null,
      entry.errors === undefined ? null : JSON.stringify(entry.errors),
      new Date().toISOString(),
    );
    this.writes++;
  }

  /** The number of responses the file holds. */
  size(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM responses').get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
