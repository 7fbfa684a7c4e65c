// OpenAI fine-tuning JSONL (chat format, with function calling): one line per trajectory,
// `{"messages":[…],"tools":[…]}`, `tools` only when the conversation called tools. Every assistant
// message carries `weight`: 1 when its turn's advantage is above the threshold (credit says the turn
// helped), 0 otherwise — so supervised fine-tuning learns the turns credit picked, in the context of
// the whole episode, and not a copy of the final reward. Assistant messages that are no turn's action
// (prefilled by the harness, inside an observation) are context: weight 0.
import type { Conversation, ExportMessage, ExportTool } from './conversation.ts';

export interface OpenAIExample {
  messages: ExportMessage[];
  tools?: ExportTool[];
}

/** The weight of a turn with this advantage: OpenAI's weights are 0 or 1. */
export const weightOf = (advantage: number, threshold: number): 0 | 1 => (advantage > threshold ? 1 : 0);

/** The fine-tuning example of a conversation, weighted by its turns' advantages. */
export function openaiExample(
  c: Conversation,
  advantages: readonly number[],
  threshold: number,
): OpenAIExample {
  if (advantages.length !== c.turnMessage.length)
    throw new Error(`${advantages.length} advantages for ${c.turnMessage.length} turns`);
  const turnOf = new Map(c.turnMessage.map((m, t) => [m, t]));
  const messages = c.messages.map((m, i): ExportMessage => {
    if (m.role !== 'assistant') return { ...m };
    const t = turnOf.get(i);
    return { ...m, weight: t === undefined ? 0 : weightOf(advantages[t], threshold) };
  });
  return c.tools === undefined ? { messages } : { messages, tools: c.tools };
}

/** The JSONL text of the examples (one line each, a newline after every line). */
export const openaiJsonl = (examples: readonly OpenAIExample[]): string =>
  examples.map((e) => `${JSON.stringify(e)}\n`).join('');
