// The tools env's functions: each declared once as a zod schema of its arguments, from which both the
// check of an action and the exported JSON Schema (OpenAI tools, MCP) derive.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

const file = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,40}$/)
  .describe('a file name in the working directory, e.g. notes.txt');
const account = z.string().min(1).max(40).describe('an account id from list_accounts, e.g. ACC-1042');
const amount = z.number().int().positive().max(1_000_000).describe('a whole number of dollars');

const ARGS = {
  ls: z.object({}).strict(),
  cat: z.object({ file }).strict(),
  cp: z.object({ src: file, dst: file.describe('a new file name (must not exist)') }).strict(),
  mv: z.object({ src: file, dst: file.describe('a new file name (must not exist)') }).strict(),
  append: z.object({ file, text: z.string().min(1).max(200).describe('one line of text') }).strict(),
  rm: z.object({ file }).strict(),
  list_accounts: z.object({}).strict(),
  get_balance: z.object({ account }).strict(),
  deposit: z.object({ account, amount }).strict(),
  withdraw: z.object({ account, amount }).strict(),
  transfer: z.object({ from: account, to: account, amount }).strict(),
  close_account: z.object({ account }).strict(),
  finish: z.object({}).strict(),
} as const;

export type ToolsToolName = keyof typeof ARGS;
export const TOOLS_TOOL_NAMES = Object.keys(ARGS) as ToolsToolName[];

const DESCRIPTIONS: Record<ToolsToolName, string> = {
  ls: 'List the files of the working directory.',
  cat: "A file's contents.",
  cp: 'Copy a file to a new name.',
  mv: 'Rename a file (the new name must not exist).',
  append: 'Append one line to the end of a file.',
  rm: 'Delete a file. Cannot be undone.',
  list_accounts: 'List the open bank accounts (id and owner).',
  get_balance: "An account's balance.",
  deposit: 'Deposit money into an account.',
  withdraw: 'Withdraw money from an account (at most its balance).',
  transfer: 'Move money from one account to another (at most the balance of the first).',
  close_account: 'Close an account; its balance is paid out. Cannot be undone.',
  finish: 'Declare the request done. Ends the episode; the final state and your results are checked.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

/** The functions as JSON-schema declarations. */
export const TOOLS_TOOLS: readonly ToolSchema[] = TOOLS_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  parameters: jsonSchema(ARGS[name]),
}));

export type ParsedToolCall =
  | { ok: true; name: ToolsToolName; args: Record<string, string | number> }
  | { ok: false; message: string };

/** Checks an action against the declarations: a known name and arguments that fit its schema. */
export function parseToolCall(action: unknown): ParsedToolCall {
  const r = checkToolCall(action, ARGS, 'function');
  return r.ok ? { ok: true, name: r.name, args: r.args as Record<string, string | number> } : r;
}
