// What a query process runs (the runner module of isolated-pool.ts): one query per job on a read-only
// connection to the task's database. Connections are kept per world (the host numbers worlds), the
// least recently used closed past MAX_CONNECTIONS. The host sends a world's database with its first
// query only (16 KB through the IPC channel cost more than the query); a job for a world the process
// does not hold is answered `missing`, and the host sends it again with the database.
import type Database from 'better-sqlite3';
import { type QueryLimits, type QueryResult, runQuery } from './query.ts';
import { openReadOnly } from './task.ts';

export interface QueryJob {
  /** The host's number for the world. */
  world: number;
  /** The database (sqlite3_serialize) and its tables' row counts, when the process may not hold it. */
  database?: { bytes: Uint8Array; rowCounts: [string, number][] };
  sql: string;
  limits: QueryLimits;
}

const MAX_CONNECTIONS = 64;

export type QueryReply = QueryResult | { missing: true };

export function createHandler(): (job: QueryJob) => QueryReply {
  const open = new Map<number, { db: Database.Database; rowCounts: Map<string, number> }>();
  return (job) => {
    let c = open.get(job.world);
    if (c === undefined) {
      if (job.database === undefined) return { missing: true };
      c = {
        db: openReadOnly({ bytes: Buffer.from(job.database.bytes) }),
        rowCounts: new Map(job.database.rowCounts),
      };
      if (open.size >= MAX_CONNECTIONS) {
        const [oldest, held] = open.entries().next().value as [number, { db: Database.Database }];
        held.db.close();
        open.delete(oldest);
      }
    } else open.delete(job.world);
    open.set(job.world, c); // most recently used last
    return runQuery(c.db, job.sql, c.rowCounts, job.limits);
  };
}
