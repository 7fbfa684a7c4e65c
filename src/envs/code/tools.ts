// The code env's tools, each declared once as a zod schema of its arguments, from which both the check
// of an action and the exported JSON Schema (OpenAI tools, MCP) derive.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

/** Longest program accepted, in characters (a schema bound: longer code is tool misuse). */
export const MAX_CODE = 20_000;

const code = z.string().min(1).max(MAX_CODE).describe('a JavaScript script that defines the function');

const ARGS = {
  run_tests: z.object({ code }).strict(),
  submit: z.object({ code: code.describe('the final program; it is graded on the hidden tests') }).strict(),
} as const;

export type CodeToolName = keyof typeof ARGS;
export const CODE_TOOL_NAMES = Object.keys(ARGS) as CodeToolName[];

const DESCRIPTIONS: Record<CodeToolName, string> = {
  run_tests:
    'Run the code on the visible examples in the sandbox; returns how many pass and each failing case (input, expected, got or the error). Does not end the episode.',
  submit:
    'Submit the code: it is graded on the hidden tests (the visible examples among them). Ends the episode.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

/** The tools as JSON-schema function declarations. */
export const CODE_TOOLS: readonly ToolSchema[] = CODE_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  parameters: jsonSchema(ARGS[name]),
}));

export type ParsedCodeCall = { ok: true; name: CodeToolName; code: string } | { ok: false; message: string };

/** Checks an action against the tool declarations: a known name and arguments that fit its schema. */
export function parseCodeCall(action: unknown): ParsedCodeCall {
  const r = checkToolCall(action, ARGS, 'tool');
  if (!r.ok) return r;
  return { ok: true, name: r.name, code: (r.args as { code: string }).code };
}
