// A sql task = (params, seed) → a database and a question. Params:
//   level   1 | 2 | 3 | 'mixed' (default): the question's difficulty (questions.ts); mixed draws it
//           uniformly from the seed;
//   domain  'shop' | 'school' | 'library' | 'mixed' (default): the schema; mixed draws it from the seed;
//   rows    how many result rows a tool result shows (default 20; the total count is always given);
//   reward  'intercode' (default: multiset IoU scaled by Kendall-τ on ordered questions) | 'exact'.
// The database is built in memory from the seed, serialized (SQLite's own file format), and every env
// instance opens its own read-only connection on a copy of those bytes. Worlds are cached per
// (params, seed): they are immutable.
import Database from 'better-sqlite3';
import { z } from 'zod';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Task } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import {
  DOMAIN_IDS,
  DOMAINS,
  type Domain,
  type DomainId,
  generateRows,
  type Rows,
  type TableDef,
  tableDefs,
} from './domains.ts';
import { guardConnection } from './query.ts';
import { LEVELS, type Level, makeQuestion, type Question } from './questions.ts';
import { isOrdered } from './reward.ts';

const ParamsSchema = z
  .object({
    level: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal('mixed')]).optional(),
    domain: z.enum(['shop', 'school', 'library', 'mixed']).optional(),
    rows: z.number().int().min(1).max(1000).optional(),
    reward: z.enum(['intercode', 'exact']).optional(),
  })
  .strict();

export interface SqlParams {
  level: Level | 'mixed';
  domain: DomainId | 'mixed';
  rows: number;
  reward: 'intercode' | 'exact';
}

/** Validates raw params (throws InputError) and returns the canonical form written into trajectories. */
export function sqlParams(raw: Record<string, unknown>): SqlParams {
  const p = fromZod(ParamsSchema, raw, 'params');
  return {
    level: p.level ?? 'mixed',
    domain: p.domain ?? 'mixed',
    rows: p.rows ?? 20,
    reward: p.reward ?? 'intercode',
  };
}

export interface SqlWorld {
  domain: Domain;
  tables: TableDef[];
  rows: Rows;
  rowCounts: ReadonlyMap<string, number>;
  /** The database file's bytes (sqlite3_serialize). */
  bytes: Buffer;
  question: Question;
  gold: { columns: string[]; rows: unknown[][] };
  ordered: boolean;
  params: SqlParams;
}

function createSql(defs: TableDef[]): string {
  return defs
    .map((t) => {
      const cols = t.columns.map((c) => {
        let s = `${c.name} ${c.type}`;
        if (c.name === 'id') s += ' PRIMARY KEY';
        else s += ' NOT NULL';
        if (c.references !== undefined) {
          const [rt, rc] = c.references.split('.');
          s += ` REFERENCES ${rt}(${rc})`;
        }
        return s;
      });
      return `CREATE TABLE ${t.name} (${cols.join(', ')});`;
    })
    .join('\n');
}

/** Builds a task's world from scratch (sqlWorld caches it). */
export function buildSqlWorld(params: SqlParams, seed: number): SqlWorld {
  const rng = Rng.derive(seed, STREAM.task, 0x5e1);
  const domainId = params.domain === 'mixed' ? DOMAIN_IDS[rng.int(DOMAIN_IDS.length)] : params.domain;
  const level = params.level === 'mixed' ? LEVELS[rng.int(LEVELS.length)] : params.level;
  const domain = DOMAINS[domainId];
  const tables = tableDefs(domain);
  const rows = generateRows(domain, rng);
  const db = new Database(':memory:');
  try {
    db.exec(createSql(tables));
    db.transaction(() => {
      for (const t of tables) {
        const ins = db.prepare(`INSERT INTO ${t.name} VALUES (${t.columns.map(() => '?').join(', ')})`);
        for (const r of rows[t.name]) ins.run(...r);
      }
    })();
    const run = (sql: string) => db.prepare(sql).raw(true).all() as unknown[][];
    const question = makeQuestion(domain, rows, level, rng, (gold) => run(gold).length);
    const goldStmt = db.prepare(question.gold);
    const gold = {
      columns: goldStmt.columns().map((c) => c.name),
      rows: goldStmt.raw(true).all() as unknown[][],
    };
    return {
      domain,
      tables,
      rows,
      rowCounts: new Map(tables.map((t) => [t.name, rows[t.name].length])),
      bytes: db.serialize(),
      question,
      gold,
      ordered: isOrdered(question.gold),
      params,
    };
  } finally {
    db.close();
  }
}

const cache = new Map<string, SqlWorld>();
const MAX_WORLDS = 1024;

/** The task's world (built once per params and seed). */
export function sqlWorld(task: Task): SqlWorld {
  const params = sqlParams(task.params);
  const key = JSON.stringify([params.level, params.domain, params.rows, params.reward, task.seed]);
  let world = cache.get(key);
  if (world === undefined) {
    world = buildSqlWorld(params, task.seed);
    if (cache.size >= MAX_WORLDS) cache.delete(cache.keys().next().value as string);
    cache.set(key, world);
  }
  return world;
}

/** A read-only connection on a private copy of the world's database, its refused functions overridden
 * (query.ts). */
export function openReadOnly(world: Pick<SqlWorld, 'bytes'>): Database.Database {
  return guardConnection(new Database(Buffer.from(world.bytes), { readonly: true }));
}
