// The run store: one SQLite file (better-sqlite3, WAL) with runs, trajectories and metrics. Rows are
// keyed so that a resumed run can neither lose nor duplicate them: (run, idx) for trajectories and
// (run, iter, key) for metrics; a second insert of the same key is an error, not a silent overwrite.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { fastTrajectory } from './fast-trajectory.ts';
import { packTrajectory, type RowColumns, unpackTrajectory } from './pack.ts';
import { asTrajectory, TrajectorySchema } from './schema.ts';

export interface RunRow {
  id: string;
  kind: string;
  config: unknown;
  status: string;
  created: string;
  updated: string;
}

type StoredRow = { idx: number; data: Buffer | string } & RowColumns;

export interface MetricRow {
  iter: number;
  key: string;
  value: number | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL,
  created TEXT NOT NULL,
  updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trajectories (
  run TEXT NOT NULL REFERENCES runs(id),
  idx INTEGER NOT NULL,
  iter INTEGER,
  task TEXT NOT NULL,
  policy TEXT NOT NULL,
  budget INTEGER NOT NULL,
  success INTEGER NOT NULL,
  turns INTEGER NOT NULL,
  ret REAL NOT NULL,
  failure TEXT,
  data BLOB NOT NULL,
  PRIMARY KEY (run, idx)
);
CREATE TABLE IF NOT EXISTS metrics (
  run TEXT NOT NULL REFERENCES runs(id),
  iter INTEGER NOT NULL,
  key TEXT NOT NULL,
  value REAL,
  PRIMARY KEY (run, iter, key)
);
CREATE TABLE IF NOT EXISTS judgements (
  run TEXT NOT NULL REFERENCES runs(id),
  idx INTEGER NOT NULL,
  iter INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run, idx)
);
CREATE TABLE IF NOT EXISTS metric_digests (
  run TEXT NOT NULL REFERENCES runs(id),
  iter INTEGER NOT NULL,
  digest TEXT NOT NULL,
  PRIMARY KEY (run, iter)
);
`;

/** The sha256 of an iteration's metrics as stored (keys sorted, non-finite as null): SQLite has no
 * checksum of its own contents, so a flipped byte in a key or a value would be read back as data. */
function metricsDigest(rows: readonly { key: string; value: number | null }[]): string {
  const sorted = [...rows].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify(sorted.map((r) => [r.key, r.value])))
    .digest('hex');
}

export class RunStore {
  readonly db: Database.Database;
  readonly path: string;

  /** `field` names the flag the path came from, for the message when it is not a usable store.
   * `readonly`: a reader's connection (the dashboard) — the file must exist and hold a run store, and
   * nothing is created, converted or written, so a live writer's file is read as it stands. */
  constructor(path: string, field = '--db', readonly = false) {
    this.path = path;
    try {
      if (readonly) {
        this.db = new Database(path, { readonly: true, fileMustExist: true });
        const tables = this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
          name: string;
        }[];
        if (!['runs', 'trajectories', 'metrics'].every((t) => tables.some((r) => r.name === t)))
          throw new Error('no runs, trajectories and metrics tables');
      } else {
        if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
        this.db = new Database(path);
        this.db.pragma('journal_mode = WAL');
        this.db.pragma('synchronous = NORMAL');
        this.db.pragma('foreign_keys = ON');
        this.db.exec(SCHEMA);
        // A damaged file can open and still fail here (a reader skips the whole-file check: it lists
        // many stores, and a damaged row is refused where it is read).
        const check = this.db.pragma('quick_check', { simple: true });
        if (check !== 'ok') throw new Error(`integrity check: ${String(check)}`);
      }
    } catch (e) {
      // SQLite's integrity report spans lines; the refusal is one.
      const reason = (e as Error).message.replace(/\s*\n\s*/g, ' ').trim();
      throw new InputError(field, path, `cannot open as a SQLite run store: ${reason}`);
    }
  }

  close(): void {
    this.db.close();
  }

  createRun(id: string, kind: string, config: unknown): void {
    const now = new Date().toISOString();
    this.db
      .prepare('INSERT INTO runs (id, kind, config, status, created, updated) VALUES (?, ?, ?, ?, ?, ?)')
      .run(id, kind, JSON.stringify(config), 'running', now, now);
  }

  run(id: string): RunRow | undefined {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as
      | (Omit<RunRow, 'config'> & { config: string })
      | undefined;
    return row === undefined ? undefined : { ...row, config: JSON.parse(row.config) };
  }

  setStatus(id: string, status: string): void {
    this.db
      .prepare('UPDATE runs SET status = ?, updated = ? WHERE id = ?')
      .run(status, new Date().toISOString(), id);
  }

  /** Appends trajectories as rows firstIdx, firstIdx+1, … in one transaction; `data` holds each one
   * packed (store/pack.ts: a few bytes a FrozenLake turn). With `full` false only the outcome columns
   * are kept and `data` holds the outcome alone. */
  addTrajectories(
    run: string,
    firstIdx: number,
    trajectories: readonly Trajectory[],
    iter: number | null = null,
    full = true,
  ): void {
    const insert = this.db.prepare(
      'INSERT INTO trajectories (run, idx, iter, task, policy, budget, success, turns, ret, failure, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.db.transaction(() => {
      trajectories.forEach((t, i) => {
        insert.run(
          run,
          firstIdx + i,
          iter,
          JSON.stringify(t.task),
          t.policy,
          t.budget,
          t.outcome.success ? 1 : 0,
          t.outcome.turns,
          t.outcome.return,
          t.outcome.failure,
          packTrajectory(t, full),
        );
      });
    })();
  }

  trajectoryCount(run: string): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM trajectories WHERE run = ?').get(run) as { n: number })
      .n;
  }

  /** The run's whole trajectories (rows stored with `full`), validated as the JSONL reader does, so a
   * −∞ log-prob (stored as null) and an LLM turn's trace come back as they went in. */
  trajectories(run: string): Trajectory[] {
    const rows = this.db
      .prepare(
        'SELECT idx, task, policy, budget, success, turns, ret, failure, data FROM trajectories WHERE run = ? ORDER BY idx',
      )
      .all(run) as StoredRow[];
    return rows.map((r) => this.decode(run, r));
  }

  /** The trajectory of row `idx` of a run (undefined: no such row), as trajectories() reads it. */
  trajectoryAt(run: string, idx: number): Trajectory | undefined {
    const r = this.db
      .prepare(
        'SELECT idx, task, policy, budget, success, turns, ret, failure, data FROM trajectories WHERE run = ? AND idx = ?',
      )
      .get(run, idx) as StoredRow | undefined;
    return r === undefined ? undefined : this.decode(run, r);
  }

  private decode(run: string, r: StoredRow): Trajectory {
    const where = `${this.path}: run ${run} row ${r.idx}`;
    let value: { turns?: unknown };
    try {
      value = unpackTrajectory(r.data, r) as { turns?: unknown };
    } catch (e) {
      throw InputError.raw(where, `cannot be read (${(e as Error).message})`);
    }
    if (value.turns === undefined) {
      throw InputError.raw(where, 'holds the outcome only (stored without turns)');
    }
    return fastTrajectory(value) ?? asTrajectory(fromZod(TrajectorySchema, value, where));
  }

  /** One training iteration — its trajectories, its metrics and, with a rubric reward, what the rubric
   * gave each trajectory (`judgements[i]` beside row firstIdx + i) — in a single transaction, so that a
   * killed run has either all of an iteration's rows or none of them. */
  addIteration(
    run: string,
    iter: number,
    firstIdx: number,
    trajectories: readonly Trajectory[],
    metrics: Record<string, number | null>,
    full = true,
    judgements?: readonly unknown[],
  ): void {
    this.db.transaction(() => {
      this.addTrajectories(run, firstIdx, trajectories, iter, full);
      this.addMetrics(run, iter, metrics);
      if (judgements !== undefined) {
        const insert = this.db.prepare('INSERT INTO judgements (run, idx, iter, data) VALUES (?, ?, ?, ?)');
        judgements.forEach((j, i) => {
          insert.run(run, firstIdx + i, iter, JSON.stringify(j));
        });
      }
    })();
  }

  /** What a rubric reward gave each trajectory of a run (train --reward), by trajectory row; none in a
   * store without the table (written before it). */
  judgements(run: string): { idx: number; iter: number; data: unknown }[] {
    const has =
      this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'judgements'").get() !==
      undefined;
    if (!has) return [];
    const rows = this.db
      .prepare('SELECT idx, iter, data FROM judgements WHERE run = ? ORDER BY idx')
      .all(run) as { idx: number; iter: number; data: string }[];
    return rows.map((r) => {
      try {
        return { idx: r.idx, iter: r.iter, data: JSON.parse(r.data) as unknown };
      } catch {
        throw InputError.raw(
          `${this.path}: run ${run} judgement ${r.idx}`,
          'is not valid JSON: the run store is damaged',
        );
      }
    });
  }

  addMetrics(run: string, iter: number, values: Record<string, number | null>): void {
    const insert = this.db.prepare('INSERT INTO metrics (run, iter, key, value) VALUES (?, ?, ?, ?)');
    const rows = Object.entries(values).map(([key, value]) => ({
      key,
      value: value === null || Number.isFinite(value) ? value : null,
    }));
    this.db.transaction(() => {
      for (const r of rows) insert.run(run, iter, r.key, r.value);
      this.db
        .prepare('INSERT INTO metric_digests (run, iter, digest) VALUES (?, ?, ?)')
        .run(run, iter, metricsDigest(rows));
    })();
  }

  /** A run's metrics by iteration and key; an iteration whose rows do not match their digest (a store
   * written before digests has none) is refused in one line naming the file. */
  metrics(run: string): MetricRow[] {
    // One read transaction: a writer that commits an iteration between the two reads (a live run read
    // by `turnwise ui`) would otherwise leave a digest without its rows — a store wrongly called damaged.
    const { rows, digests } = this.db.transaction(() => {
      const rows = this.db
        .prepare('SELECT iter, key, value FROM metrics WHERE run = ? ORDER BY iter, key')
        .all(run) as MetricRow[];
      // A store written before digests, opened read-only, has not even the table.
      const hasDigests =
        this.db
          .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'metric_digests'")
          .get() !== undefined;
      const digests = hasDigests
        ? (this.db.prepare('SELECT iter, digest FROM metric_digests WHERE run = ?').all(run) as {
            iter: number;
            digest: string;
          }[])
        : [];
      return { rows, digests };
    })();
    const byIter = new Map<number, MetricRow[]>();
    for (const r of rows) {
      const list = byIter.get(r.iter) ?? [];
      list.push(r);
      byIter.set(r.iter, list);
    }
    for (const d of digests)
      if (metricsDigest(byIter.get(d.iter) ?? []) !== d.digest)
        throw InputError.raw(
          this.path,
          `the metrics of iteration ${d.iter} do not match their checksum: the run store is damaged`,
        );
    return rows;
  }

  /** Deletes what a run wrote after iteration `iter` (resume from a checkpoint taken at `iter`). */
  truncateAfter(run: string, iter: number): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM trajectories WHERE run = ? AND iter > ?').run(run, iter);
      this.db.prepare('DELETE FROM metrics WHERE run = ? AND iter > ?').run(run, iter);
      this.db.prepare('DELETE FROM metric_digests WHERE run = ? AND iter > ?').run(run, iter);
      this.db.prepare('DELETE FROM judgements WHERE run = ? AND iter > ?').run(run, iter);
    })();
  }
}
