// Running an agent's SQL safely on a read-only connection. Every failure is returned as data (a tool
// error for the agent), never thrown. The env runs this in a child process that the host kills at the
// deadline (query-pool.ts); here is what holds inside that process.
//
// What is refused, and why it is enough here:
// - The connection is opened `readonly` on a deserialized in-memory copy of the task's database, so
//   INSERT/UPDATE/DELETE/DDL and writing PRAGMAs fail in SQLite itself (SQLITE_READONLY); we refuse them
//   earlier with a clear message from better-sqlite3's `stmt.readonly` (sqlite3_stmt_readonly).
// - Functions are judged by what SQLite resolves, not by how the query spells them: the statement's
//   bytecode (EXPLAIN) names every function it calls, whatever the quoting or case ("printf", [printf],
//   PRINTF), and one in REFUSED_FUNCTIONS refuses the query. ATTACH and DETACH compile to calls of
//   sqlite_attach/sqlite_detach (they count as read-only for SQLite and would let a query read any file
//   on disk), so they are refused the same way. The memory bombs among them (randomblob, zeroblob,
//   printf, format) and load_extension are also overridden on the connection by functions that throw
//   (`guardConnection`): an application-defined function wins SQLite's resolution over a built-in of the
//   same name at every arity, so even a call the bytecode check missed never reaches the built-in.
// - PRAGMA: only reads of an allow-list (table_info, table_xinfo, foreign_key_list, index_list,
//   index_info, table_list), never `PRAGMA x = …` (an allow-list over the statement's whole text: any
//   other shape is refused). The pragma table-valued functions (pragma_table_info(…)) exist only for
//   pragmas without side effects.
// - One statement per call (better-sqlite3 refuses more).
//
// Runaway queries. This SQLite is built without a progress callback (SQLITE_OMIT_PROGRESS_CALLBACK) and
// better-sqlite3 exposes neither sqlite3_interrupt nor sqlite3_limit, so nothing inside the process can
// stop a running statement: one aggregate step over a huge product, or over a virtual table (json_each
// of a generated array, dbstat, a pragma function) that no plan estimate sees, runs as long as it runs.
// The hard bounds are therefore the process's (query-pool.ts): it is killed at the deadline and its
// memory is capped (SQLite's allocations fail with "out of memory" past it). The checks here give the
// usual cases a clear, deterministic answer before that:
// - recursion: a plan with a RECURSIVE STEP (a recursive CTE, with or without the RECURSIVE keyword,
//   which SQLite does not require) is refused — no template needs one;
// - cost: EXPLAIN QUERY PLAN is read, and the product over its full scans (`SCAN t`) of the scanned
//   table's row count (the largest table's for a subquery, an alias or a virtual table) must stay under
//   `maxCost` row visits — a four-way cross join of the generated tables is refused, a three-table join
//   passes;
// - size: at most `maxRows` rows and `maxChars` characters (text and blobs as shown, 8 per other value)
//   are read (stmt.iterate), so no more crosses to the host; a wall-clock deadline of `timeoutMs` is
//   checked between rows (the same message as the kill, so the observation does not depend on which
//   one fired). Error messages are cut to ERROR_CHARS.
import type Database from 'better-sqlite3';

export interface QueryLimits {
  /** Largest estimated number of row visits (product of full-scan sizes). */
  maxCost: number;
  /** Rows read at most; a larger result is refused. */
  maxRows: number;
  /** Characters of a result read at most (text and blob values as shown, 8 per other value). */
  maxChars: number;
  /** Wall-clock deadline of a query, in ms (checked between rows; the host kills the process past it). */
  timeoutMs: number;
}

export const DEFAULT_LIMITS: QueryLimits = {
  maxCost: 5_000_000,
  maxRows: 50_000,
  maxChars: 1_000_000,
  timeoutMs: 1000,
};

/** Longest error message kept, in characters. */
export const ERROR_CHARS = 1000;

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
/** Functions a query may not call, by the name SQLite resolves; the value is what the agent is told. */
const REFUSED_FUNCTIONS = new Map([
  ['load_extension', 'load_extension() is not allowed'],
  ['randomblob', 'randomblob() is not allowed'],
  ['zeroblob', 'zeroblob() is not allowed'],
  ['printf', 'printf() is not allowed'],
  ['format', 'format() is not allowed'],
  ['sqlite_attach', 'ATTACH is not allowed'],
  ['sqlite_detach', 'DETACH is not allowed'],
]);
/** Those a connection overrides (sqlite_attach/sqlite_detach are compiled in, not looked up by name). */
const OVERRIDDEN = ['load_extension', 'randomblob', 'zeroblob', 'printf', 'format'];
/** What a text must contain for one of them to be called (sqlite_attach: the ATTACH keyword). */
const SPELLED = ['load_extension', 'randomblob', 'zeroblob', 'printf', 'format', 'attach', 'detach'];
/** Opcodes whose P4 names the function they call, as `name(nArg)`. */
const CALLS = new Set(['Function', 'PureFunc', 'AggStep', 'AggStep1', 'AggFinal', 'AggValue', 'AggInverse']);

class RefusedCall extends Error {}

/** Overrides the refused functions on a connection by ones that throw (see the header). */
export function guardConnection(db: Database.Database): Database.Database {
  for (const name of OVERRIDDEN) {
    const message = REFUSED_FUNCTIONS.get(name) as string;
    db.function(name, { varargs: true }, () => {
      throw new RefusedCall(message);
    });
  }
  return db;
}

/** The first refused function the statement's bytecode calls, if any. A name SQLite resolves is spelled
 * in the query's text (identifiers have no escapes, and SQLite folds case in ASCII only), so a text that
 * contains none of them, in any case, needs no look at the bytecode: most queries are not compiled
 * twice for it. */
function refusedCall(db: Database.Database, sql: string): string | undefined {
  const lower = sql.toLowerCase();
  if (!SPELLED.some((name) => lower.includes(name))) return undefined;
  const program = db.prepare(`EXPLAIN ${sql}`).raw(true).all() as unknown[][];
  for (const [, opcode, , , , p4] of program) {
    if (!CALLS.has(opcode as string) || typeof p4 !== 'string') continue;
    const refused = REFUSED_FUNCTIONS.get(p4.replace(/\(.*$/, '').toLowerCase());
    if (refused !== undefined) return refused;
  }
  return undefined;
}

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
  const message = (e instanceof Error ? e.message : String(e)).slice(0, ERROR_CHARS);
  if (e instanceof RefusedCall) return fail('refused', message);
  if (/out of memory|string or blob too big/.test(message)) return fail('limit', message);
  if (/syntax error|incomplete input|unrecognized token/.test(message)) return fail('syntax', message);
  if (/^no such table/.test(message)) return fail('no-such-table', message);
  if (/^no such column/.test(message)) return fail('no-such-column', message);
  if (/readonly|not authorized/.test(message)) return fail('refused', message);
  if (/more than one statement/.test(message)) return fail('refused', 'one statement per call');
  return fail('sql', message);
}

/** What a query past its deadline is told (by the check between rows or by the host's kill). */
export const pastDeadline = (limits: QueryLimits) => `the query ran past ${limits.timeoutMs} ms`;

/** Checks, plans and runs one read-only query. `rowCounts` maps table names to their sizes. */
export function runQuery(
  db: Database.Database,
  sql: string,
  rowCounts: ReadonlyMap<string, number>,
  limits: QueryLimits = DEFAULT_LIMITS,
): QueryResult {
  const text = bare(sql);
  const first = /^\s*([a-z]+)/i.exec(text)?.[1]?.toLowerCase() ?? '';
  if (first === 'pragma') {
    const m = /^\s*pragma\s+(?:main\.)?([a-z_]+)\s*(\(\s*[^)=]*\)\s*)?;?\s*$/i.exec(text);
    if (m === null || !PRAGMA_READS.has(m[1].toLowerCase()))
      return fail('refused', `only these PRAGMA reads are allowed: ${[...PRAGMA_READS].join(', ')}`);
  }

  let stmt: Database.Statement;
  let refused: string | undefined;
  try {
    stmt = db.prepare(sql);
    refused = refusedCall(db, sql);
  } catch (e) {
    return classify(e);
  }
  if (refused !== undefined) return fail('refused', refused);
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
  let chars = 0;
  try {
    for (const row of stmt.raw(true).iterate() as IterableIterator<unknown[]>) {
      const values = row.map(plain);
      for (const v of values) chars += typeof v === 'string' ? v.length : 8;
      rows.push(values);
      if (rows.length > limits.maxRows) return fail('limit', `more than ${limits.maxRows} rows`);
      if (chars > limits.maxChars)
        return fail('limit', `the result is over ${limits.maxChars} characters (${rows.length} rows read)`);
      if ((rows.length & 255) === 0 && performance.now() > deadline)
        return fail('limit', pastDeadline(limits));
    }
  } catch (e) {
    return classify(e);
  }
  return { ok: true, columns, rows };
}
