// The sql env (InterCode-SQL-like): a question about a generated SQLite database, answered with tool
// calls. Actions are `{name, arguments}` (tools.ts); the observation is plain JSON: the question and
// what the last call returned. Queries run in a child process the host kills at the deadline
// (query-pool.ts), so a step that runs a query returns a promise; list_tables and describe_table are
// answered from the world's schema, synchronously.
//
// Which calls end the episode: only `submit` with well-formed arguments (InterCode: submit ends it).
//   reward 1 (the gold result, in the gold order if ordered)      → success (success = reward exactly 1)
//   a result that is not the gold one (reward < 1)                → `wrong-answer`
//   a query naming a table or column that does not exist         → `misperception` (valid = false)
//   a refused statement (write, ATTACH, PRAGMA write, …), a syntax
//   error, a statement without rows                              → `invalid-action` (valid = false)
//   a query over the cost/row/time limits, any other SQL error    → `wrong-answer` (valid = false)
// Every other failure is a tool error the agent sees and may recover from: `info.valid = false`, the
// message in the observation, `info.error` its category — an unknown tool or arguments that fail the
// schema (also for submit), an unknown table in describe_table, a failing execute_sql.
// An imagined env (world-model rehearsal, `toolAnswers().imagine`) answers every call from a learned table
// and runs no query; a call the table does not know ends the episode with `info.halted` (reward 0).
// `info.quality` (the per-turn step-quality proxy): the multiset IoU of an executed or submitted
// query's result with the gold result (0 when it gave no rows); absent for list_tables/describe_table.
import type {
  Env,
  EnvSpec,
  MaybePromise,
  ScriptedView,
  StepInfo,
  StepResult,
  ToolAnswers,
  ToolCall,
  Turn,
} from '../../core/types.ts';
import { toolEnvSpec } from '../tool-call.ts';
import { DEFAULT_LIMITS, type QueryErrorCode, type QueryLimits, type QueryResult } from './query.ts';
import { queryPool, runQueryIsolated } from './query-pool.ts';
import { exactScore, interCodeScore, multisetIoU, rowKey } from './reward.ts';
import type { SqlWorld } from './task.ts';
import { parseCall, SQL_TOOLS } from './tools.ts';

/** How an env runs a query: runQueryIsolated (the default), or runQuery on a connection of this process
 * for a reference measurement of trusted queries (bench/sandbox.ts). */
export type QueryRunner = (world: SqlWorld, sql: string, limits: QueryLimits) => MaybePromise<QueryResult>;

export interface ColumnInfo {
  name: string;
  type: string;
  primaryKey: boolean;
  references?: string;
}

export type ToolOutput =
  | { tables: string[] }
  | { table: string; columns: ColumnInfo[]; rows: number }
  | { columns: string[]; rows: unknown[][]; total: number; reward?: number };

export interface LastCall {
  tool: string;
  ok: boolean;
  output?: ToolOutput;
  error?: string;
}

export interface SqlObservation {
  question: string;
  /** What the last tool call returned; null before the first call. */
  last: LastCall | null;
}

export const SQL_MAX_TURNS = 20;

export function sqlSpec(): EnvSpec {
  return toolEnvSpec('sql', SQL_TOOLS, SQL_MAX_TURNS);
}

interface SqlSnapshot {
  obs: SqlObservation;
  done: boolean;
}

/** How a failing submitted query ends the episode (see the header). */
const SUBMIT_FAILURE: Record<QueryErrorCode, 'misperception' | 'invalid-action' | 'wrong-answer'> = {
  'no-such-table': 'misperception',
  'no-such-column': 'misperception',
  refused: 'invalid-action',
  syntax: 'invalid-action',
  'not-a-query': 'invalid-action',
  limit: 'wrong-answer',
  sql: 'wrong-answer',
};

export class SqlEnv implements Env<SqlObservation, ToolCall> {
  readonly spec: EnvSpec = sqlSpec();
  readonly world: SqlWorld;
  private readonly limits: QueryLimits;
  private readonly runner: QueryRunner;
  private obs: SqlObservation;
  private done = false;
  private closed = false;
  private holding = false;
  private readonly goldKeys: string[];

  /** With `lookup` (world-model rehearsal, `toolAnswers().imagine`), every call's answer comes from it —
   * no query runs — and a call it has no answer for halts the episode. */
  constructor(
    world: SqlWorld,
    limits: QueryLimits = DEFAULT_LIMITS,
    runner: QueryRunner = runQueryIsolated,
    private readonly lookup?: (key: string) => unknown,
  ) {
    this.world = world;
    this.limits = limits;
    this.runner = runner;
    this.obs = { question: world.question.text, last: null };
    this.goldKeys = world.gold.rows.map(rowKey);
  }

  reset(_seed: number): SqlObservation {
    this.alive();
    this.done = false;
    this.obs = { question: this.world.question.text, last: null };
    return this.obs;
  }

  step(action: ToolCall): MaybePromise<StepResult<SqlObservation>> {
    this.alive();
    const call = parseCall(action);
    const tool = typeof (action as Partial<ToolCall> | null)?.name === 'string' ? action.name : '?';
    if (this.done) return this.toolError(tool, 'the episode is over (submitted)', 'over', true);
    if (!call.ok) return this.toolError(tool, call.message, 'schema');
    if (this.lookup !== undefined) return this.imagined(tool, call);
    if (call.name === 'list_tables') {
      return this.result(tool, { tables: this.world.tables.map((t) => t.name) }, {});
    }
    if (call.name === 'describe_table') {
      const t = this.world.tables.find((x) => x.name === call.table);
      if (t === undefined) {
        return this.toolError(
          tool,
          `no such table: ${call.table}; tables are ${this.world.tables.map((x) => x.name).join(', ')}`,
          'no-such-table',
        );
      }
      const columns = t.columns.map((c) => ({
        name: c.name,
        type: c.type,
        primaryKey: c.name === 'id',
        ...(c.references === undefined ? {} : { references: c.references }),
      }));
      return this.result(tool, { table: t.name, columns, rows: this.world.rowCounts.get(t.name) ?? 0 }, {});
    }
    const { name, query } = call;
    this.hold();
    const r = this.runner(this.world, query, this.limits);
    return r instanceof Promise ? r.then((x) => this.queried(tool, name, x)) : this.queried(tool, name, r);
  }

  private queried(tool: string, name: 'execute_sql' | 'submit', r: QueryResult): StepResult<SqlObservation> {
    if (name === 'execute_sql') {
      if (!r.ok) return this.toolError(tool, r.message, r.code, false, { quality: 0 });
      const quality = multisetIoU(r.rows.map(rowKey), this.goldKeys);
      return this.result(tool, this.table(r.columns, r.rows), { quality });
    }
    // submit
    this.done = true;
    if (!r.ok) {
      return this.toolError(tool, r.message, r.code, true, {
        quality: 0,
        success: false,
        failure: SUBMIT_FAILURE[r.code],
      });
    }
    const score = (this.world.params.reward === 'exact' ? exactScore : interCodeScore)(
      r.rows,
      this.world.gold.rows,
      this.world.ordered,
    );
    const success = score.reward === 1;
    const info: StepInfo = { quality: score.iou, iou: score.iou, tau: score.tau, success };
    if (!success) info.failure = 'wrong-answer';
    const output = { ...this.table(r.columns, r.rows), reward: score.reward };
    this.obs = { question: this.obs.question, last: { tool, ok: true, output } };
    return { observation: this.obs, reward: score.reward, terminated: true, info: { tool, ...info } };
  }

  /** A step answered by the world model: its recorded answer, or a halt where it has none. */
  private imagined(tool: string, call: ValidSqlCall): StepResult<SqlObservation> {
    const a = this.lookup!(sqlCallKey(call)) as SqlAnswer | undefined;
    if (a === undefined) {
      this.done = true;
      return this.toolError(tool, 'the world model does not know this call', 'unknown', true, {
        halted: true,
      });
    }
    if ('last' in a) {
      this.obs = { question: this.obs.question, last: a.last };
      return { observation: this.obs, reward: 0, terminated: false, info: a.info };
    }
    // submit: the episode ends (what its last observation showed was never recorded: only whether it worked)
    this.done = true;
    this.obs = { question: this.obs.question, last: { tool, ok: a.info.valid !== false } };
    return { observation: this.obs, reward: a.reward, terminated: true, info: a.info };
  }

  toolAnswers(): ToolAnswers {
    return {
      answerOf: (turn, next) => recordedSqlAnswer(turn, next as SqlObservation | undefined),
      imagine: (lookup) => new SqlEnv(this.world, this.limits, this.runner, lookup) as Env<unknown, unknown>,
    };
  }

  private alive(): void {
    if (this.closed) throw new Error('sql env: used after close()');
  }

  /** From its first query until close(), the env holds the query processes' pool. */
  private hold(): void {
    if (this.holding) return;
    this.holding = true;
    queryPool.acquire();
  }

  private table(columns: string[], rows: unknown[][]): ToolOutput {
    return { columns, rows: rows.slice(0, this.world.params.rows), total: rows.length };
  }

  private result(tool: string, output: ToolOutput, info: StepInfo): StepResult<SqlObservation> {
    this.obs = { question: this.obs.question, last: { tool, ok: true, output } };
    return { observation: this.obs, reward: 0, terminated: false, info: { tool, ...info } };
  }

  private toolError(
    tool: string,
    message: string,
    code: string,
    terminated = false,
    extra: StepInfo = {},
  ): StepResult<SqlObservation> {
    this.obs = { question: this.obs.question, last: { tool, ok: false, error: message } };
    return {
      observation: this.obs,
      reward: 0,
      terminated,
      info: { tool, valid: false, error: code, ...extra },
    };
  }

  /** The state part of an observation: the question and what the last call returned (not which call). */
  stateKey(o: SqlObservation): string {
    return JSON.stringify([o.question, o.last?.output ?? o.last?.error ?? null]);
  }

  text(o: SqlObservation): string {
    return renderObservation(o);
  }

  snapshot(): SqlSnapshot {
    return JSON.parse(JSON.stringify({ obs: this.obs, done: this.done })) as SqlSnapshot;
  }

  restore(snapshot: unknown, _seed?: number): void {
    const s = snapshot as SqlSnapshot;
    this.alive();
    this.obs = JSON.parse(JSON.stringify(s.obs)) as SqlObservation;
    this.done = s.done;
  }

  scripted(): ScriptedView<ToolCall> {
    return sqlScripted(this.world);
  }

  /** Releases the query processes (they end 5 s after no env holds them); a second call does nothing. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.holding) queryPool.release();
  }
}

type ValidSqlCall = Extract<ReturnType<typeof parseCall>, { ok: true }>;

/** What a world model files for a call (train/rehearsal-tools.ts): a non-final call's result as the next
 * observation showed it and the turn's info; a submit's reward and info (the episode ended there). The
 * same whatever the episode did before: the database is read-only and the tools keep nothing. */
export type SqlAnswer = { last: LastCall; info: StepInfo } | { reward: number; info: StepInfo };

/** The key a world model files a call's answer under. */
export function sqlCallKey(call: ValidSqlCall): string {
  if (call.name === 'list_tables') return JSON.stringify(['list_tables']);
  if (call.name === 'describe_table') return JSON.stringify(['describe_table', call.table]);
  return JSON.stringify([call.name, call.query]);
}

/** A recorded turn's call and answer (ToolAnswers.answerOf): undefined for a malformed call, one whose
 * answer the trajectory does not show (the last turn, unless a submit), or a halted one. */
export function recordedSqlAnswer(
  turn: Turn,
  next: SqlObservation | undefined,
): { key: string; answer: SqlAnswer } | undefined {
  const call = parseCall(turn.action);
  if (!call.ok || turn.info.halted === true || turn.info.error === 'over') return undefined;
  const key = sqlCallKey(call);
  if (call.name === 'submit') return { key, answer: { reward: turn.reward, info: turn.info } };
  if (next?.last == null) return undefined;
  return { key, answer: { last: next.last, info: turn.info } };
}

/** The observation as text for an LLM: the question, the tools, and the last result as a table. */
export function renderObservation(o: SqlObservation): string {
  const lines = [
    `Question: ${o.question}`,
    'Tools: list_tables(), describe_table(table), execute_sql(query), submit(query) — submit ends the episode.',
  ];
  const last = o.last;
  if (last === null) return lines.join('\n');
  if (!last.ok) {
    lines.push(`${last.tool} failed: ${last.error}`);
    return lines.join('\n');
  }
  const out = last.output as ToolOutput;
  if ('tables' in out) lines.push(`Tables: ${out.tables.join(', ')}`);
  else if ('table' in out) {
    lines.push(`Table ${out.table} (${out.rows} rows):`);
    for (const c of out.columns) {
      const notes = [c.primaryKey ? 'primary key' : '', c.references ? `references ${c.references}` : '']
        .filter((x) => x !== '')
        .join(', ');
      lines.push(`  ${c.name} ${c.type}${notes ? ` (${notes})` : ''}`);
    }
  } else {
    lines.push(
      `${last.tool} result: ${out.total} row(s)${out.rows.length < out.total ? `, first ${out.rows.length} shown` : ''}`,
    );
    lines.push(out.columns.join(' | '));
    for (const r of out.rows) lines.push(r.map((v) => (v === null ? 'NULL' : String(v))).join(' | '));
    if (out.reward !== undefined) lines.push(`reward ${out.reward}`);
  }
  return lines.join('\n');
}

const keyOf = (a: unknown) =>
  JSON.stringify(typeof a === 'object' && a !== null ? [(a as ToolCall).name, (a as ToolCall).arguments] : a);
const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });

/** The gold path (list_tables → describe the gold's tables → execute the gold → submit it) and a menu of
 * simple valid calls: list_tables, describe every table, and four simple queries per table, each
 * executed or submitted. */
export function sqlScripted(world: SqlWorld): ScriptedView<ToolCall> {
  const gold = world.question.gold;
  const path = [
    call('list_tables'),
    ...world.question.tables.map((t) => call('describe_table', { table: t })),
    call('execute_sql', { query: gold }),
  ];
  const submitGold = call('submit', { query: gold });
  const queries = world.tables.flatMap((t) => [
    `SELECT * FROM ${t.name} LIMIT 5`,
    `SELECT COUNT(*) FROM ${t.name}`,
    `SELECT ${t.columns[1].name} FROM ${t.name}`,
    `SELECT * FROM ${t.name} WHERE id = 1`,
  ]);
  const menu: ToolCall[] = [
    call('list_tables'),
    ...world.tables.map((t) => call('describe_table', { table: t.name })),
    ...queries.map((q) => call('execute_sql', { query: q })),
    ...queries.map((q) => call('submit', { query: q })),
  ];
  return {
    goldAction(history: readonly Turn<unknown, unknown>[]): ToolCall {
      const taken = new Set(history.map((t) => keyOf(t.action)));
      return path.find((a) => !taken.has(keyOf(a))) ?? submitGold;
    },
    validActions: () => menu,
  };
}
