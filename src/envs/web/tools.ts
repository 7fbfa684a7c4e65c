// The web env's actions, BrowserGym's high-level browser actions as tool calls: each declared once as a
// zod schema of its arguments, from which both the check of an action and the exported JSON Schema
// (OpenAI tools, MCP) derive. Element ids are the bids the page text shows (`[12] button 'Add to cart'`),
// given as a string or an integer.
import { z } from 'zod';
import type { ToolSchema } from '../../core/types.ts';
import { checkToolCall } from '../tool-call.ts';

const id = z
  .union([z.string().regex(/^\d{1,6}$/), z.number().int().min(0).max(999_999)])
  .describe('an element id from the page, the number in brackets, e.g. 12');

const ARGS = {
  click: z.object({ id }).strict(),
  type: z
    .object({
      id,
      text: z.string().max(200).describe('the text the box should hold (replaces what it holds)'),
    })
    .strict(),
  select: z
    .object({ id, option: z.string().min(1).max(200).describe("the option's text, as the page shows it") })
    .strict(),
  goto: z.object({ url: z.string().min(1).max(500).describe('a path on this site, e.g. /cart') }).strict(),
  back: z.object({}).strict(),
  submit: z.object({}).strict(),
  answer: z
    .object({ text: z.string().max(500).describe('your final answer or report, e.g. "done"') })
    .strict(),
} as const;

export type WebToolName = keyof typeof ARGS;
export const WEB_TOOL_NAMES = Object.keys(ARGS) as WebToolName[];

const DESCRIPTIONS: Record<WebToolName, string> = {
  click: 'Click an element: follow a link, press a button (a form is sent), tick a checkbox or radio button.',
  type: 'Fill a text box with text (what it held is replaced).',
  select: 'Choose an option of a combobox (a drop-down list) by its text.',
  goto: 'Open a path of this site, e.g. /.',
  back: 'Go back to the previous page.',
  submit: "Send the form of the field you last used (as pressing Enter), or the page's only form.",
  answer: 'Finish: give your answer or report. Ends the episode; the state of the app is checked.',
};

function jsonSchema(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
}

/** The actions as JSON-schema function declarations. */
export const WEB_TOOLS: readonly ToolSchema[] = WEB_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  parameters: jsonSchema(ARGS[name]),
}));

export type WebAction =
  | { ok: true; name: 'click'; id: string }
  | { ok: true; name: 'type'; id: string; text: string }
  | { ok: true; name: 'select'; id: string; option: string }
  | { ok: true; name: 'goto'; url: string }
  | { ok: true; name: 'back' | 'submit' }
  | { ok: true; name: 'answer'; text: string }
  | { ok: false; message: string };

/** Checks an action against the declarations: a known name and arguments that fit its schema. */
export function parseWebCall(action: unknown): WebAction {
  const r = checkToolCall(action, ARGS, 'action');
  if (!r.ok) return r;
  const a = r.args as Record<string, string | number>;
  const bid = a.id === undefined ? '' : String(a.id);
  switch (r.name) {
    case 'click':
      return { ok: true, name: 'click', id: bid };
    case 'type':
      return { ok: true, name: 'type', id: bid, text: String(a.text) };
    case 'select':
      return { ok: true, name: 'select', id: bid, option: String(a.option) };
    case 'goto':
      return { ok: true, name: 'goto', url: String(a.url) };
    case 'answer':
      return { ok: true, name: 'answer', text: String(a.text) };
    default:
      return { ok: true, name: r.name };
  }
}

/** An action as a line (`click(12)`, `type(14, "Busan")`). */
export function actionText(action: unknown): string {
  const a = parseWebCall(action);
  if (!a.ok) return JSON.stringify(action);
  switch (a.name) {
    case 'click':
      return `click(${a.id})`;
    case 'type':
      return `type(${a.id}, ${JSON.stringify(a.text)})`;
    case 'select':
      return `select(${a.id}, ${JSON.stringify(a.option)})`;
    case 'goto':
      return `goto(${JSON.stringify(a.url)})`;
    case 'answer':
      return `answer(${JSON.stringify(a.text)})`;
    default:
      return `${a.name}()`;
  }
}
