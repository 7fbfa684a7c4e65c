// The chat encoding of a discrete-action env: the messages an LLM policy sends (policies/openai.ts) and
// that `turnwise serve` reads back (serve/), so the two sides cannot drift. One conversation per
// episode:
//
//   system     spec.chat.instructions + how to answer (the tool, or `<answer>Name</answer>`)
//   user       Turn 1 (100 turns left).          ← "(… turns left)" only when the budget is revealed
//              Observation:
//              <env.text(observation)>
//   assistant  tool call move({"direction":"Right"})   |   <answer>Right</answer>
//   tool/user  Turn 2 (99 turns left).
//              Last action: reward 0.             |   Last action invalid: no tool call; nothing moved.
//              Observation:
//              …
//
// The turn index and the turns left are written in every turn message, so that a prompt that keeps
// only the last N turns (`history=N`) still tells a budget-aware policy where it is. In tools mode the
// turn after a valid tool call is the tool's result (role `tool`), as the OpenAI protocol requires.
import type { ChatSpec, EnvSpec, Turn } from '../core/types.ts';

export type ChatMode = 'tools' | 'text';

/** The action a policy records when the model's output is not an action: outside every discrete action
 * space, so the env answers `valid: false` and nothing moves. */
export const INVALID_ACTION = -1;

/** An OpenAI chat message, as much of it as this encoding uses. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The env's chat encoding, or undefined when it has none. */
export function chatSpec(spec: EnvSpec): ChatSpec | undefined {
  return typeof spec.actions === 'number' ? spec.chat : undefined;
}

export function systemPrompt(chat: ChatSpec, mode: ChatMode): string {
  const names = chat.names.join(', ');
  return mode === 'tools'
    ? `${chat.instructions}\nEach turn, call the tool ${chat.tool} once, with ${chat.argument} one of ${names}.`
    : `${chat.instructions}\nEach turn, answer with one action in tags, for example <answer>${chat.names[0]}</answer>; the action is one of ${names}.`;
}

/** The one tool of tools mode: `move(direction: Left|Down|Right|Up)` for FrozenLake. */
export function chatTool(chat: ChatSpec): ChatTool {
  return {
    type: 'function',
    function: {
      name: chat.tool,
      description: `Take one action: ${chat.names.join(', ')}.`,
      parameters: {
        type: 'object',
        properties: { [chat.argument]: { type: 'string', enum: [...chat.names] } },
        required: [chat.argument],
        additionalProperties: false,
      },
    },
  };
}

/** What the previous turn did, as the next turn message says it. */
export type Feedback = { reward: number } | { invalid: string };

export function turnMessage(
  turn: number,
  turnsLeft: number | undefined,
  feedback: Feedback | undefined,
  view: string,
): string {
  const left = turnsLeft === undefined ? '' : ` (${turnsLeft} ${turnsLeft === 1 ? 'turn' : 'turns'} left)`;
  const lines = [`Turn ${turn + 1}${left}.`];
  if (feedback !== undefined) {
    lines.push(
      'invalid' in feedback
        ? `Last action invalid: ${feedback.invalid}; nothing moved.`
        : `Last action: reward ${feedback.reward}.`,
    );
  }
  lines.push('Observation:', view);
  return lines.join('\n');
}

export interface ParsedTurnMessage {
  turn: number;
  turnsLeft: number | undefined;
  feedback: Feedback | undefined;
  view: string;
}

const HEAD = /^Turn (\d+)(?: \((\d+) turns? left\))?\.$/;

/** The inverse of turnMessage; undefined when the text is not a turn message. */
export function parseTurnMessage(text: string): ParsedTurnMessage | undefined {
  const lines = text.split('\n');
  const head = HEAD.exec(lines[0] ?? '');
  if (head === null) return undefined;
  let i = 1;
  let feedback: Feedback | undefined;
  const invalid = /^Last action invalid: (.*); nothing moved\.$/.exec(lines[i] ?? '');
  const reward = /^Last action: reward (.*)\.$/.exec(lines[i] ?? '');
  if (invalid !== null) {
    feedback = { invalid: invalid[1] };
    i++;
  } else if (reward !== null && Number.isFinite(Number(reward[1]))) {
    feedback = { reward: Number(reward[1]) };
    i++;
  }
  if (lines[i] !== 'Observation:') return undefined;
  return {
    turn: Number(head[1]) - 1,
    turnsLeft: head[2] === undefined ? undefined : Number(head[2]),
    feedback,
    view: lines.slice(i + 1).join('\n'),
  };
}

/** The assistant message that carries an action: the tool call, or the tagged answer. */
export function actionMessage(chat: ChatSpec, mode: ChatMode, action: number, t: number): ChatMessage {
  const name = chat.names[action];
  if (mode === 'text') return { role: 'assistant', content: `<answer>${name}</answer>` };
  return {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: `call_${t}`,
        type: 'function',
        function: { name: chat.tool, arguments: JSON.stringify({ [chat.argument]: name }) },
      },
    ],
  };
}

export interface PromptInput {
  chat: ChatSpec;
  mode: ChatMode;
  /** The text view of an observation. */
  text: (o: unknown) => string;
  observation: unknown;
  history: readonly Turn[];
  turn: number;
  turnsLeft: number | undefined;
  /** Keep only the last N turns of the history (undefined: all of it). */
  keep?: number;
}

/** The messages buildMessages rendered for a history's first `upTo` turns (system message first). */
export interface RenderedHistory {
  upTo: number;
  /** The last rendered turn (the history must still hold it there) and the episode's constants. */
  last: Turn | undefined;
  mode: ChatMode;
  anchor: number | undefined;
  messages: ChatMessage[];
  /** The JSON of `messages` without the brackets (elements joined by commas), built as they were. */
  json: string;
}

/** Memo of buildMessages for histories that only grow (an episode's turns), keyed by the history array. */
export type MessagesMemo = WeakMap<readonly Turn[], RenderedHistory>;

/**
 * The whole prompt of a turn: system, then the kept history (turn message, the model's answer), then
 * this turn's message. A turn's total of turns left is its own: turnsLeft + (turn − t). With `memo`
 * (and the whole history kept), the turns rendered for an earlier turn of the same episode are reused,
 * so a turn costs its own messages rather than the whole history again — the same messages either way.
 */
export function buildMessages(p: PromptInput, memo?: MessagesMemo): ChatMessage[] {
  const { chat, mode, history, turn, turnsLeft } = p;
  const anchor = turnsLeft === undefined ? undefined : turnsLeft + turn;
  const prev = memo === undefined || p.keep !== undefined ? undefined : memo.get(history);
  const reuse =
    prev !== undefined &&
    prev.mode === mode &&
    prev.anchor === anchor &&
    prev.upTo <= history.length &&
    (prev.upTo === 0 || history[prev.upTo - 1] === prev.last);
  const messages: ChatMessage[] = reuse
    ? prev.messages.slice()
    : [{ role: 'system', content: systemPrompt(chat, mode) }];
  const first = reuse ? prev.upTo : p.keep === undefined ? 0 : Math.max(0, history.length - p.keep);
  const leftAt = (t: number) => (turnsLeft === undefined ? undefined : turnsLeft + (turn - t));
  // A turn message goes as a tool result when the turn before was a valid tool call.
  const push = (content: string) => {
    const prev = messages[messages.length - 1];
    const call = prev.tool_calls?.[0];
    if (call !== undefined) messages.push({ role: 'tool', tool_call_id: call.id, content });
    else messages.push({ role: 'user', content });
  };
  const feedbackAfter = (i: number): Feedback | undefined => {
    if (i < 0) return undefined;
    const prev = history[i];
    return prev.info.valid === false
      ? { invalid: prev.trace?.invalid ?? 'not an action' }
      : { reward: prev.reward };
  };
  const from = messages.length;
  for (let i = first; i < history.length; i++) {
    const h = history[i];
    push(turnMessage(h.t, leftAt(h.t), feedbackAfter(i - 1), p.text(h.observation)));
    const a = h.action;
    if (h.info.valid !== false && typeof a === 'number' && a >= 0 && a < chat.names.length) {
      messages.push(actionMessage(chat, mode, a, h.t));
    } else messages.push({ role: 'assistant', content: h.trace?.text ?? '' });
  }
  if (memo !== undefined && p.keep === undefined) {
    const added = messages
      .slice(from)
      .map((m) => JSON.stringify(m))
      .join(',');
    const before = reuse ? prev.json : JSON.stringify(messages[0]);
    memo.set(history, {
      upTo: history.length,
      last: history[history.length - 1],
      mode,
      anchor,
      messages: messages.slice(),
      json: added === '' ? before : `${before},${added}`,
    });
  }
  push(turnMessage(turn, turnsLeft, feedbackAfter(history.length - 1), p.text(p.observation)));
  return messages;
}

/** The model's reply parsed into an action index, or the reason it is not one. */
export type ParsedReply = { action: number; text: string } | { invalid: string; text: string };

interface ReplyMessage {
  content?: string | null;
  tool_calls?: { function?: { name?: string; arguments?: string } }[] | null;
}

function nameToAction(chat: ChatSpec, name: unknown): number {
  if (typeof name !== 'string') return -1;
  const want = name.trim().toLowerCase();
  return chat.names.findIndex((n) => n.toLowerCase() === want);
}

/** Reads a tool call (tools mode) or a tagged answer (text mode); anything else is `invalid` with the
 * reason the agent will be told. */
export function parseReply(chat: ChatSpec, mode: ChatMode, message: ReplyMessage | undefined): ParsedReply {
  const content = typeof message?.content === 'string' ? message.content : '';
  const allowed = chat.names.join(', ');
  if (mode === 'tools') {
    const call = message?.tool_calls?.[0]?.function;
    if (call === undefined) {
      return { invalid: content.trim() === '' ? 'empty message' : 'no tool call', text: content };
    }
    const text = `${call.name ?? ''}(${call.arguments ?? ''})`;
    if (call.name !== chat.tool) {
      return { invalid: `unknown tool ${JSON.stringify(call.name ?? '')}; call ${chat.tool}`, text };
    }
    let args: unknown;
    try {
      args = JSON.parse(call.arguments ?? '');
    } catch {
      return { invalid: 'the arguments are not JSON', text };
    }
    const value =
      typeof args === 'object' && args !== null
        ? (args as Record<string, unknown>)[chat.argument]
        : undefined;
    const action = nameToAction(chat, value);
    if (action < 0) return { invalid: `${chat.argument} must be one of ${allowed}`, text };
    return { action, text };
  }
  if (content.trim() === '') return { invalid: 'empty message', text: content };
  const answers = [...content.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  if (answers.length === 0) return { invalid: 'no <answer>…</answer> in the message', text: content };
  const action = nameToAction(chat, answers[answers.length - 1][1]);
  if (action < 0) return { invalid: `the answer must be one of ${allowed}`, text: content };
  return { action, text: content };
}

// Scoring. A chat server scores an action through /v1/completions with `echo` and `logprobs`: the
// conversation rendered as one text (ChatML, the template of Qwen and many open models), the assistant
// turn opened, and the action's text appended; the echoed prompt's token log-probs over the action's
// characters (by `text_offset`) sum to log π(action | conversation) — lm-eval-harness's loglikelihood.

const IM_START = '<|im_start|>';
/** ChatML's end of a message: after a reply, the model's end-of-turn token. */
export const IM_END = '<|im_end|>';

/** The conversation as ChatML text, the assistant turn opened (what a model continues). */
export function renderChatML(messages: readonly ChatMessage[]): string {
  const parts = messages.map((m) => {
    const content =
      m.tool_calls !== undefined && m.tool_calls.length > 0
        ? m.tool_calls.map((c) => toolCallText(c.function.name, c.function.arguments)).join('\n')
        : (m.content ?? '');
    return `${IM_START}${m.role}\n${content}${IM_END}\n`;
  });
  return `${parts.join('')}${IM_START}assistant\n`;
}

/** A tool call as Hermes/Qwen models write it. */
export function toolCallText(name: string, args: string): string {
  let parsed: unknown = args;
  try {
    parsed = JSON.parse(args);
  } catch {}
  return `<tool_call>\n${JSON.stringify({ name, arguments: parsed })}\n</tool_call>`;
}

/** The text of an action as the model would write it in this mode: what scoring appends to the prompt. */
export function actionText(chat: ChatSpec, mode: ChatMode, action: number): string {
  const name = chat.names[action];
  if (mode === 'text') return `<answer>${name}</answer>`;
  return toolCallText(chat.tool, JSON.stringify({ [chat.argument]: name }));
}

/** The inverse of renderChatML + an action's text: the messages, and the text after the opened assistant
 * turn (the scored completion). Undefined when the text is not such a rendering. */
export function parseChatML(text: string): { messages: ChatMessage[]; completion: string } | undefined {
  const open = `${IM_START}assistant\n`;
  const at = text.lastIndexOf(open);
  if (at < 0) return undefined;
  const head = text.slice(0, at);
  const completion = text.slice(at + open.length);
  const messages: ChatMessage[] = [];
  const block = /<\|im_start\|>(system|user|assistant|tool)\n([\s\S]*?)<\|im_end\|>\n/gy;
  let m: RegExpExecArray | null = block.exec(head);
  let end = 0;
  while (m !== null) {
    const role = m[1] as ChatMessage['role'];
    const content = m[2];
    const call = /^<tool_call>\n([\s\S]*)\n<\/tool_call>$/.exec(content);
    if (role === 'assistant' && call !== null) {
      let fn: { name?: unknown; arguments?: unknown } = {};
      try {
        fn = JSON.parse(call[1]) as typeof fn;
      } catch {}
      const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? null);
      const id = `call_${messages.length}`;
      messages.push({
        role,
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: String(fn.name ?? ''), arguments: args } }],
      });
    } else if (role === 'tool') {
      const prev = messages[messages.length - 1]?.tool_calls?.[0]?.id ?? '';
      messages.push({ role, content, tool_call_id: prev });
    } else messages.push({ role, content });
    end = block.lastIndex;
    m = block.exec(head);
  }
  if (end !== head.length || messages.length === 0) return undefined;
  return { messages, completion };
}

/** The reply message a scored completion stands for (a tool call in ChatML, or text). */
export function completionMessage(completion: string): {
  content: string | null;
  tool_calls?: ReplyMessage['tool_calls'];
} {
  const text = completion.replace(/<\|im_end\|>[\s\S]*$/, '');
  const call = /^<tool_call>\n([\s\S]*)\n<\/tool_call>$/.exec(text);
  if (call === null) return { content: text };
  try {
    const fn = JSON.parse(call[1]) as { name?: unknown; arguments?: unknown };
    const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? null);
    return { content: null, tool_calls: [{ function: { name: String(fn.name ?? ''), arguments: args } }] };
  } catch {
    return { content: text };
  }
}
