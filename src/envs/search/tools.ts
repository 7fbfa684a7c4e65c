// The search env's tools: each declared once as a zod schema of its arguments, from which both the
// check of an action and the exported JSON Schema (OpenAI tools, MCP) derive.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

const ARGS = {
  search: z
    .object({ query: z.string().min(1).max(500).describe('keywords, e.g. a name or a description') })
    .strict(),
  open: z
    .object({ doc: z.string().min(1).max(40).describe('a document id from search results, e.g. d017') })
    .strict(),
  answer: z.object({ text: z.string().min(1).max(200).describe('the final answer: a name') }).strict(),
} as const;

export type SearchToolName = keyof typeof ARGS;
export const SEARCH_TOOL_NAMES = Object.keys(ARGS) as SearchToolName[];

const DESCRIPTIONS: Record<SearchToolName, string> = {
  search: 'Search the document collection (BM25): the top 5 documents with id, title and a snippet.',
  open: "A document's full text.",
  answer: 'Give the final answer (a name). Ends the episode; it is compared with the gold answer.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

/** The tools as JSON-schema function declarations. */
export const SEARCH_TOOLS: readonly ToolSchema[] = SEARCH_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  parameters: jsonSchema(ARGS[name]),
}));

export type ParsedSearchCall =
  | { ok: true; name: 'search'; query: string }
  | { ok: true; name: 'open'; doc: string }
  | { ok: true; name: 'answer'; text: string }
  | { ok: false; message: string };

/** Checks an action against the declarations: a known name and arguments that fit its schema. */
export function parseSearchCall(action: unknown): ParsedSearchCall {
  const r = checkToolCall(action, ARGS, 'tool');
  if (!r.ok) return r;
  const a = r.args as Record<string, string>;
  if (r.name === 'search') return { ok: true, name: 'search', query: a.query };
  if (r.name === 'open') return { ok: true, name: 'open', doc: a.doc };
  return { ok: true, name: 'answer', text: a.text };
}

/** Answer normalisation for exact match: lower case, punctuation to spaces, leading article dropped,
 * whitespace collapsed. */
export function normaliseAnswer(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .replace(/^(the|a|an) /, '');
}
