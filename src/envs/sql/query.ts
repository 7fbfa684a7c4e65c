// Running an agent's SQL safely on a read-only connection. Every failure is returned as data (a tool
// error for the agent), never thrown.
//
// What is refused, and why it is enough here:
// - The connection is opened `readonly` on a deserialized in-memory copy of the task's database, so
//   INSERT/UPDATE/DELETE/DDL and writing PRAGMAs fail in SQLite itself (SQLITE_READONLY); we refuse them
//   earlier with a clear message from better-sqlite3's `stmt.readonly` (sqlite3_stmt_readonly).
// - ATTACH/DETACH count as read-only for SQLite (they change the connection, not the file) and would
//   let a query read any file on disk: refused by their leading keyword.
// - PRAGMA: only reads of an allow-list (table_info, table_xinfo, foreign_key_list, index_list,
//   index_info, table_list), never `PRAGMA x = …`.
// - load_extension is already off for SQL in better-sqlite3 (only the C API is enabled); the name is
//   refused anyway, with randomblob/zeroblob/printf/format, the usual memory bombs.
// - One statement per call (better-sqlite3 refuses more).
//
// Runaway queries. better-sqlite3 exposes neither sqlite3_interrupt nor sqlite3_progress_handler, and a
// statement runs synchronously on the calling thread, so a running statement cannot be preempted from
// JavaScript (a worker thread cannot be terminated inside native code either). The limits are therefore
// decided before and between rows, deterministically where possible:
// - recursion: a plan with a RECURSIVE STEP (a recursive CTE, with or without the RECURSIVE keyword,
//   which SQLite does not require) is refused — no template needs one;
// - cost: EXPLAIN QUERY PLAN is read, and the product over its full scans (`SCAN t`) of the scanned
//   table's row count (the largest table's for a subquery or an alias) must stay under `maxCost`
//   row visits — a four-way cross join of the generated tables is refused, a three-table join passes;
// - rows: at most `maxRows` rows are read (stmt.iterate), and a wall-clock deadline of `timeoutMs` is
//   checked between rows. Only this last check depends on the machine, and no query that passes the
//   cost bound on these small databases comes near it.
// What stays open: a query can still grow a value to SQLite's length limit (nested hex()), bounded
// by that limit only.
import type Database from 'better-sqlite3';

export interface QueryLimits {
  /** Largest estimated number of row visits (product of full-scan sizes). */
  maxCost: number;
  /** Rows read at most; a larger result is refused. */
  maxRows: number;
  /** Wall-clock deadline checked between rows, in ms. */
  timeoutMs: number;
}

export const DEFAULT_LIMITS: QueryLimits = { maxCost: 5_000_000, maxRows: 50_000, timeoutMs: 1000 };

/** Why a query gave no rows: the categories failure kinds are decided from (env.ts). */
export type QueryErrorCode =
  | 'refused'
  | 'syntax'
  | 'no-such-table'
  | 'no-such-column'
  | 'limit'
  | 'not-a-query'
  | 'sql';

export type QueryResult =
  | { ok: true; columns: string[]; rows: unknown[][] }
  | { ok: false; code: QueryErrorCode; message: string };

const PRAGMA_READS = new Set([
  'table_info',
  'table_xinfo',
  'foreign_key_list',
  'index_list',
  'index_info',
  'table_list',
]);
const BANNED_FUNCTIONS = /\b(load_extension|randomblob|zeroblob|printf|format)\s*\(/i;

/** Row values as plain JSON: blobs as hex strings (X'…'), big integers as numbers. */
const plain = (v: unknown): unknown =>
  v instanceof Uint8Array
    ? `X'${Buffer.from(v).toString('hex').toUpperCase()}'`
    : typeof v === 'bigint'
      ? Number(v)
      : v;

const fail = (code: QueryErrorCode, message: string): QueryResult => ({ ok: false, code, message });

/** The query text without comments and string literals (what keyword checks look at). */
function bare(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?(\*\/|$)/g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''");
}

function classify(e: unknown): QueryResult {
  const message = e instanceof Error ? e.message : String(e);
  if (/syntax error|incomplete input|unrecognized token/.test(message)) return fail('syntax', message);
  if (/^no such table/.test(message)) return fail('no-such-table', message);
  if (/^no such column/.test(message)) return fail('no-such-column', message);
  if (/readonly|not authorized/.test(message)) return fail('refused', message);
  if (/more than one statement/.test(message)) return fail('refused', 'one statement per call');
  return fail('sql', message);
}

/** Checks, plans and runs one read-only query. `rowCounts` maps table names to their sizes. */
export function runQuery(
  db: Database.Database,
  sql: string,
  rowCounts: ReadonlyMap<string, number>,
  limits: QueryLimits = DEFAULT_LIMITS,
): QueryResult {
  const text = bare(sql);
  const first = /^\s*([a-z]+)/i.exec(text)?.[1]?.toLowerCase() ?? '';
  if (first === 'attach' || first === 'detach')
    return fail('refused', `${first.toUpperCase()} is not allowed`);
  if (first === 'pragma') {
    const m = /^\s*pragma\s+(?:main\.)?([a-z_]+)\s*(\(\s*[^)=]*\)\s*)?;?\s*$/i.exec(text);
    if (m === null || !PRAGMA_READS.has(m[1].toLowerCase()))
      return fail('refused', `only these PRAGMA reads are allowed: ${[...PRAGMA_READS].join(', ')}`);
  }
  const banned = BANNED_FUNCTIONS.exec(text);
  if (banned !== null) return fail('refused', `${banned[1]}() is not allowed`);

  let stmt: Database.Statement;
  try {
    stmt = db.prepare(sql);
  } catch (e) {
    return classify(e);
  }
  if (!stmt.readonly) return fail('refused', 'the database is read-only: only queries are allowed');
  if (!stmt.reader) return fail('not-a-query', 'the statement returns no rows');

  if (first !== 'pragma') {
    let plan: { detail: string }[];
    try {
      plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[];
    } catch (e) {
      return classify(e);
    }
    if (plan.some((p) => p.detail.startsWith('RECURSIVE STEP')))
      return fail('refused', 'recursive queries are not allowed');
    const largest = Math.max(1, ...rowCounts.values());
    let cost = 1;
    for (const { detail } of plan) {
      const m = /^SCAN (\S+)/.exec(detail);
      if (m === null || m[1] === 'CONSTANT') continue;
      cost *= Math.max(1, rowCounts.get(m[1]) ?? largest);
    }
    if (cost > limits.maxCost) {
      return fail(
        'limit',
        `the query would visit about ${cost.toExponential(1)} rows (limit ${limits.maxCost}); join on keys instead of scanning`,
      );
    }
  }

  const columns = stmt.columns().map((c) => c.name);
  const rows: unknown[][] = [];
  const deadline = performance.now() + limits.timeoutMs;
  try {
    for (const row of stmt.raw(true).iterate() as IterableIterator<unknown[]>) {
      rows.push(row.map(plain));
      if (rows.length > limits.maxRows) return fail('limit', `more than ${limits.maxRows} rows`);
      if ((rows.length & 255) === 0 && performance.now() > deadline)
        return fail('limit', `the query ran past ${limits.timeoutMs} ms`);
    }
  } catch (e) {
    return classify(e);
  }
  return { ok: true, columns, rows };
}
