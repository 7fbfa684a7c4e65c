// Preference pairs for DPO-style trainers: TRL's conversational preference format, one JSON object a
// line, `{"prompt": [messages], "chosen": [messages], "rejected": [messages]}` (TRL's dataset formats:
// "preference" type, "conversational" format; trl/data_utils.py apply_chat_template reads exactly these
// keys and renders prompt + chosen and prompt + rejected with the model's chat template). Every message
// has a role and a content (TRL's is_conversational reads both); an assistant message that only calls
// tools has content "" beside its tool_calls. `tools` is added when the conversations called tools:
// TRL's trainers pass an example's `tools` to the chat template.
//
// The prompt is what both conversations share: their longest common prefix of messages, cut after its
// last user message (TRL requires the prompt to end with the user's turn); chosen and rejected are the
// rest of each — for a multi-turn episode, every later assistant, tool and user message. Which of two
// trajectories is chosen is decided elsewhere (rewards/: the preference criterion or a rubric's scores).
import type { Conversation, ExportMessage, ExportTool } from './conversation.ts';

export interface PreferenceRow {
  prompt: ExportMessage[];
  chosen: ExportMessage[];
  rejected: ExportMessage[];
  tools?: ExportTool[];
}

/** A message as TRL reads it: a role and a content, always. */
const withContent = (m: ExportMessage): ExportMessage => ({ ...m, content: m.content ?? '' });

/** The row of a chosen and a rejected conversation of the same task, or why they make none. */
export function preferenceRow(
  chosen: Conversation,
  rejected: Conversation,
): PreferenceRow | { reason: string } {
  const a = chosen.messages.map(withContent);
  const b = rejected.messages.map(withContent);
  let common = 0;
  while (common < a.length && common < b.length && JSON.stringify(a[common]) === JSON.stringify(b[common]))
    common++;
  let cut = common;
  while (cut > 0 && a[cut - 1].role !== 'user') cut--;
  if (cut === 0) return { reason: 'the two conversations share no prompt ending with a user message' };
  if (cut === a.length || cut === b.length)
    return { reason: 'one conversation has nothing after the shared prompt' };
  const tools = chosen.tools ?? rejected.tools;
  const row: PreferenceRow = { prompt: a.slice(0, cut), chosen: a.slice(cut), rejected: b.slice(cut) };
  return tools === undefined ? row : { ...row, tools: [...tools] };
}

/** The JSONL text of the rows (one line each, a newline after every line). */
export const preferenceJsonl = (rows: readonly PreferenceRow[]): string =>
  rows.map((r) => `${JSON.stringify(r)}\n`).join('');
