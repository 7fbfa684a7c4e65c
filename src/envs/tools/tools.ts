// The tools env's functions: each declared once as a zod schema of its arguments, from which both the
// check of an action and the exported JSON Schema (OpenAI tools, MCP) derive. Tasks without a ticketing
// system (domains files, bank, mixed) declare the file and bank functions only, as before tickets
// existed; tasks of the tickets and all domains declare the ticket functions too.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

const file = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,40}$/)
  .describe('a file name in the working directory, e.g. notes.txt');
const account = z.string().min(1).max(40).describe('an account id from list_accounts, e.g. ACC-1042');
const amount = z.number().int().positive().max(1_000_000).describe('a whole number of dollars');

const ticket = z.string().min(1).max(40).describe('a ticket id, e.g. T-104');
const priority = z.enum(['low', 'medium', 'high']);
const staff = z.string().min(1).max(40).describe('a staff member, e.g. Dana');

const BASE_ARGS = {
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

const TICKET_ARGS = {
  search_tickets: z
    .object({
      query: z.string().max(100).optional().describe('words the title contains (case-insensitive)'),
      status: z.enum(['open', 'in_progress', 'closed']).optional(),
      assignee: staff.optional(),
    })
    .strict(),
  get_ticket: z.object({ ticket }).strict(),
  create_ticket: z
    .object({ title: z.string().min(1).max(100).describe('the ticket title'), priority })
    .strict(),
  assign_ticket: z.object({ ticket, assignee: staff }).strict(),
  set_priority: z.object({ ticket, priority }).strict(),
  comment_ticket: z.object({ ticket, text: z.string().min(1).max(200).describe('the comment') }).strict(),
  close_ticket: z.object({ ticket }).strict(),
} as const;

const { finish, ...BASE_WITHOUT_FINISH } = BASE_ARGS;
const ARGS = { ...BASE_WITHOUT_FINISH, ...TICKET_ARGS, finish } as const;

export type ToolsToolName = keyof typeof ARGS;
/** Every function, ticket functions included (finish last). */
export const TOOLS_TOOL_NAMES = Object.keys(ARGS) as ToolsToolName[];
export const TICKET_TOOL_NAMES = Object.keys(TICKET_ARGS) as ToolsToolName[];

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
  search_tickets: 'Find tickets by title words, status and/or assignee (id, title, status of each).',
  get_ticket: "A ticket's title, status, assignee, priority and comments.",
  create_ticket: 'Open a new ticket (status open, unassigned); returns its id. Tickets cannot be deleted.',
  assign_ticket: 'Assign a ticket to a staff member; an open ticket becomes in_progress.',
  set_priority: "Change a ticket's priority.",
  comment_ticket: 'Add a comment to a ticket.',
  close_ticket: 'Close a ticket. A closed ticket cannot be reopened or changed.',
  finish: 'Declare the request done. Ends the episode; the final state and your results are checked.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

const declare = (names: readonly ToolsToolName[]): readonly ToolSchema[] =>
  names.map((name) => ({ name, description: DESCRIPTIONS[name], parameters: jsonSchema(ARGS[name]) }));

/** The file and bank functions as JSON-schema declarations (tasks without tickets). */
export const TOOLS_TOOLS: readonly ToolSchema[] = declare(Object.keys(BASE_ARGS) as ToolsToolName[]);
/** Every function, ticket functions included (tasks of the tickets and all domains). */
export const TOOLS_TOOLS_TICKETS: readonly ToolSchema[] = declare(TOOLS_TOOL_NAMES);

/** The declarations of a task: with the ticket functions when it has a ticketing system. */
export const toolsOf = (tickets: boolean): readonly ToolSchema[] =>
  tickets ? TOOLS_TOOLS_TICKETS : TOOLS_TOOLS;

export type ParsedToolCall =
  | { ok: true; name: ToolsToolName; args: Record<string, string | number> }
  | { ok: false; message: string };

/** Checks an action against the declarations: a known name and arguments that fit its schema; ticket
 * functions are known only with `tickets`. */
export function parseToolCall(action: unknown, tickets = false): ParsedToolCall {
  const r = checkToolCall(action, tickets ? ARGS : (BASE_ARGS as unknown as typeof ARGS), 'function');
  return r.ok ? { ok: true, name: r.name, args: r.args as Record<string, string | number> } : r;
}
