// The sql env's tools: each declared once as a zod schema of its arguments, from which both the check
// of an action and the exported JSON Schema (OpenAI tools, MCP) derive.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

const query = z.string().min(1).max(20_000).describe('one SQLite query (SELECT or WITH …)');

const ARGS = {
  list_tables: z.object({}).strict(),
  describe_table: z.object({ table: z.string().min(1).describe('a table name from list_tables') }).strict(),
  execute_sql: z.object({ query }).strict(),
  submit: z.object({ query: query.describe('the final answer query; its result is scored') }).strict(),
} as const;

export type SqlToolName = keyof typeof ARGS;
export const SQL_TOOL_NAMES = Object.keys(ARGS) as SqlToolName[];

const DESCRIPTIONS: Record<SqlToolName, string> = {
  list_tables: 'List the tables of the database.',
  describe_table: "A table's columns (name, type, primary key, foreign key) and its row count.",
  execute_sql:
    'Run a read-only query and see its result (the first rows and the total count). Does not end the episode.',
  submit: 'Submit the query whose result answers the question. Ends the episode; the result is scored.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

/** The tools as JSON-schema function declarations. */
export const SQL_TOOLS: readonly ToolSchema[] = SQL_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  parameters: jsonSchema(ARGS[name]),
}));

export type ParsedCall =
  | { ok: true; name: 'list_tables' }
  | { ok: true; name: 'describe_table'; table: string }
  | { ok: true; name: 'execute_sql' | 'submit'; query: string }
  | { ok: false; message: string };

/** Checks an action against the tool declarations: a known name and arguments that fit its schema. */
export function parseCall(action: unknown): ParsedCall {
  const r = checkToolCall(action, ARGS, 'tool');
  if (!r.ok) return r;
  const { name } = r;
  const data = r.args as Record<string, string>;
  if (name === 'describe_table') return { ok: true, name, table: data.table };
  if (name === 'execute_sql' || name === 'submit') return { ok: true, name, query: data.query };
  return { ok: true, name: 'list_tables' };
}
