// The sql env as a registered env: params, tasks → worlds (cached), env construction, the task's
// description (with its gold) and the database file of a task.
import { writeFileSync } from 'node:fs';
import type { Task } from '../../core/types.ts';
import { SqlEnv } from './env.ts';
import { sqlWorld } from './task.ts';

export * from './domains.ts';
export * from './env.ts';
export * from './query.ts';
export * from './query-pool.ts';
export type * from './query-runner.ts';
export * from './questions.ts';
export * from './reward.ts';
export * from './task.ts';
export * from './tools.ts';

export function makeSqlEnv(task: Task): SqlEnv {
  return new SqlEnv(sqlWorld(task));
}

/** Plain data describing a task: its schema, question, level and template; the gold query and result
 * with `gold`. */
export function describeSql(task: Task, gold = false): Record<string, unknown> {
  const w = sqlWorld(task);
  const out: Record<string, unknown> = {
    domain: w.domain.id,
    level: w.question.level,
    template: w.question.template,
    question: w.question.text,
    ordered: w.ordered,
    tables: w.tables.map((t) => ({ name: t.name, rows: w.rowCounts.get(t.name), columns: t.columns })),
  };
  if (gold) out.gold = { query: w.question.gold, columns: w.gold.columns, rows: w.gold.rows };
  return out;
}

/** Writes the task's database (SQLite's file format) to `path`; refuses to overwrite (flag 'wx'). */
export function exportSqlDatabase(task: Task, path: string): number {
  const bytes = sqlWorld(task).bytes;
  writeFileSync(path, bytes, { flag: 'wx' });
  return bytes.length;
}
