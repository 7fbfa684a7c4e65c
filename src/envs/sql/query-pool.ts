// The sql env's queries run in child processes (isolated-pool.ts), never on the caller's thread: SQLite
// here cannot be interrupted from inside (query.ts), and a worker thread cannot be terminated while it is
// inside native code, so only a process can be stopped whatever the query does. The host gives a query
// its `timeoutMs` plus KILL_GRACE_MS (time for the check between rows to answer first), then kills the
// process (SIGKILL) and answers `limit`: "the query ran past … ms", the message the check between rows
// gives; a fresh process takes the next query. Each process's memory is capped at PROCESS_MEMORY_MB
// (SQLite's allocations past it fail: "out of memory", a `limit` too).
//
// The host checks what crosses back as well: at most maxRows rows, error messages cut to ERROR_CHARS.
// Processes: at most PROCESSES, made when a query needs one; the pool is held by every sql env from its
// first query to close(), and its processes end IDLE_MS (5 s) after none holds it (and with the parent,
// always).
import { availableParallelism } from 'node:os';
import { IsolatedPool } from '../isolated-pool.ts';
import { ERROR_CHARS, pastDeadline, type QueryLimits, type QueryResult } from './query.ts';
import type { QueryJob, QueryReply } from './query-runner.ts';
import type { SqlWorld } from './task.ts';

/** Time past a query's timeoutMs before its process is killed. */
export const KILL_GRACE_MS = 250;
/** Memory of a query process (data segment; its V8 heap is half of it), in MB. */
export const PROCESS_MEMORY_MB = 320;
/** Query processes at most. */
export const PROCESSES = Math.max(1, Math.min(2, availableParallelism()));

export const queryPool = new IsolatedPool<QueryJob, QueryReply>({
  module: new URL('./query-runner.ts', import.meta.url),
  isolation: 'process',
  size: PROCESSES,
  memoryMb: PROCESS_MEMORY_MB,
  name: 'query process',
});

const worldIds = new WeakMap<SqlWorld, number>();
const sent = new WeakSet<SqlWorld>();
let nextWorld = 0;

/** Runs one read-only query on the world's database in a query process, under the host's deadline. */
export async function runQueryIsolated(
  world: SqlWorld,
  sql: string,
  limits: QueryLimits,
): Promise<QueryResult> {
  let id = worldIds.get(world);
  if (id === undefined) {
    id = nextWorld++;
    worldIds.set(world, id);
  }
  const deadline = limits.timeoutMs + KILL_GRACE_MS;
  // The database goes with a world's first query, and again to a process that answers `missing`.
  const database = { bytes: world.bytes, rowCounts: [...world.rowCounts] };
  const first = !sent.has(world);
  sent.add(world);
  let ran = await queryPool.run({ world: id, sql, limits, ...(first ? { database } : {}) }, deadline);
  if (ran.ok && 'missing' in ran.value)
    ran = await queryPool.run({ world: id, database, sql, limits }, deadline);
  if (!ran.ok) {
    const message =
      ran.kind === 'timeout' ? pastDeadline(limits) : `the query stopped its process: ${ran.message}`;
    return { ok: false, code: 'limit', message };
  }
  const r = ran.value as QueryResult;
  if (!r.ok) return r.message.length > ERROR_CHARS ? { ...r, message: r.message.slice(0, ERROR_CHARS) } : r;
  if (r.rows.length > limits.maxRows)
    return { ok: false, code: 'limit', message: `more than ${limits.maxRows} rows` };
  return r;
}
