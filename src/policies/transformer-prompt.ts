// The text a language agent reads and writes, shared by the in-process transformer policy
// (policies/transformer.ts) and the expert transcripts it is cloned from (train/transcripts.ts), so that
// behaviour-cloning targets and the policy's own output are the same text.
//
// A prompt is a chat (nn/tokenizer.ts encodeChat: each message <|role|> text <|end|>, then the opened
// <|assistant|>):
//   system     the task's instructions and, in tools mode, the tools, one JSON declaration per line
//   user       the first kept turn's message; tool (or user) the later ones
//   assistant  each earlier action as the model writes it: a Hermes tool call
//              `<tool_call>\n{"name":…,"arguments":…}\n</tool_call>`, or `<answer>Name</answer>` in text mode
// - a discrete env with a chat encoding (FrozenLake): the messages policies/chat.ts builds for the
//   `openai:` policy (buildMessages: turn index, turns left, feedback, the text view), with the tools
//   written into the system message as a chat template does;
// - a tool env (sql, tools, code, search): the text view of each observation — the first as `user`, each
//   later one as the `tool` result of the call before it — as an MCP agent sees it.
//
// Context rule (fitPrompt): the prompt keeps the system message, the current turn's message and the
// most recent earlier turns (each its message and its action, whole) that fit in ctx − room tokens,
// where room is what the reply may use (max_tokens); older turns are dropped first. When the system
// message and the current turn alone do not fit, the turn raises ContextOverflow (failure kind
// `context`).
import { ContextOverflow } from '../core/errors.ts';
import type { EnvSpec, ToolCall, Turn, TurnContext } from '../core/types.ts';
import type { ChatRole, Tokenizer } from '../nn/tokenizer.ts';
import {
  actionText,
  buildMessages,
  type ChatMessage,
  type ChatMode,
  chatTool,
  completionMessage,
  INVALID_ACTION,
  parseReply,
  systemPrompt,
  toolCallText,
} from './chat.ts';

export interface PromptMessage {
  role: ChatRole;
  text: string;
}

/** What a turn's prompt is built from (a TurnContext's fields, the env's text view, the mode). */
export interface PromptView {
  spec: EnvSpec;
  mode: ChatMode;
  text: (observation: unknown) => string;
  observation: unknown;
  history: readonly Turn[];
  turn: number;
  turnsLeft: number | undefined;
}

/** The system message: the instructions and, in tools mode, the tools the model may call. */
export function systemText(spec: EnvSpec, mode: ChatMode = 'tools'): string {
  const chat = spec.chat;
  if (chat !== undefined && mode === 'text') return systemPrompt(chat, 'text');
  const tools = spec.tools ?? (chat === undefined ? [] : [chatTool(chat).function]);
  const head =
    chat !== undefined
      ? systemPrompt(chat, 'tools')
      : `You act in the ${spec.id} environment. Each turn, call exactly one of the tools.`;
  return [head, 'Tools:', ...tools.map((t) => JSON.stringify(t))].join('\n');
}

/** A chat message's text as the model reads it (a tool call in Hermes form). */
const messageText = (m: ChatMessage): string => {
  const call = m.tool_calls?.[0];
  return call === undefined ? (m.content ?? '') : toolCallText(call.function.name, call.function.arguments);
};

/** An earlier turn's action in a tool env, as the model wrote it (or would have, for an expert's). */
function toolActionText(turn: Turn): string {
  if (turn.info.valid === false && turn.trace?.text !== undefined) return turn.trace.text;
  const a = turn.action as Partial<ToolCall> | null;
  if (typeof a === 'object' && a !== null && typeof a.name === 'string')
    return toolCallText(a.name, JSON.stringify(a.arguments ?? {}));
  return turn.trace?.text ?? '';
}

/** What a turn's prompt is built from, read off its context; a budget-blind model (trained without the
 * turns left) is not shown them. */
export function promptView(ctx: TurnContext<unknown>, mode: ChatMode, budgetAware: boolean): PromptView {
  const env = ctx.env;
  if (env.text === undefined) throw new Error(`env ${env.spec.id} has no text view`);
  return {
    spec: env.spec,
    mode,
    text: env.text.bind(env),
    observation: ctx.observation,
    history: ctx.history,
    turn: ctx.turn,
    turnsLeft: budgetAware ? ctx.turnsLeft : undefined,
  };
}

/** Whether an env is one the text prompt can render: a chat encoding, or tools. */
export function hasTextPrompt(spec: EnvSpec): boolean {
  return (typeof spec.actions === 'number' && spec.chat !== undefined) || spec.tools !== undefined;
}

/**
 * The messages of a turn's prompt (the opened assistant turn excluded), keeping the last `keep` earlier
 * turns (all of them when undefined).
 */
export function promptMessages(v: PromptView, keep?: number): PromptMessage[] {
  const system: PromptMessage = { role: 'system', text: systemText(v.spec, v.mode) };
  const chat = v.spec.chat;
  if (chat !== undefined && typeof v.spec.actions === 'number') {
    const messages = buildMessages({
      chat,
      mode: v.mode,
      text: v.text,
      observation: v.observation,
      history: v.history,
      turn: v.turn,
      turnsLeft: v.turnsLeft,
      keep,
    });
    return [system, ...messages.slice(1).map((m) => ({ role: m.role, text: messageText(m) }))];
  }
  if (v.spec.tools === undefined)
    throw new Error(`env ${v.spec.id} has neither a chat encoding nor tools to render as a chat`);
  const first = keep === undefined ? 0 : Math.max(0, v.history.length - keep);
  const out: PromptMessage[] = [system];
  // The first message after the system one is the user's; each later one the result of the call before.
  const observation = (o: unknown) => {
    out.push({ role: out.length === 1 ? 'user' : 'tool', text: v.text(o) });
  };
  for (let i = first; i < v.history.length; i++) {
    observation(v.history[i].observation);
    out.push({ role: 'assistant', text: toolActionText(v.history[i]) });
  }
  observation(v.observation);
  return out;
}

/** A turn's prompt in tokens, with the number of earlier turns it kept (the context rule above). */
export function fitPrompt(
  tokenizer: Tokenizer,
  v: PromptView,
  ctx: number,
  room: number,
): { tokens: number[]; kept: number } {
  const all = promptMessages(v);
  // Lengths under encodeChat: role token + text + <|end|>; a kept turn's role may change (tool → user)
  // when the turn before it is dropped, which does not change its length.
  const sizes = all.map((m) => tokenizer.encode(m.text).length + 2);
  const n = v.history.length;
  const budget = ctx - room;
  let used = sizes[0] + sizes[sizes.length - 1] + 1; // system, this turn's message, <|assistant|>
  if (used > budget)
    throw new ContextOverflow(
      `transformer: the system message and this turn's message take ${used} tokens; the context of ${ctx} less ${room} for the reply leaves ${budget}`,
    );
  let kept = 0;
  while (kept < n) {
    // Earlier turn n−1−kept: its message and its action.
    const i = sizes.length - 2 - 2 * kept;
    const more = sizes[i] + sizes[i - 1];
    if (used + more > budget) break;
    used += more;
    kept++;
  }
  const messages = kept === n ? all : promptMessages(v, kept);
  return { tokens: tokenizer.encodeChat(messages, 'assistant'), kept };
}

/** max_tokens of a tool env's reply when none is given. */
export const TOOL_REPLY_TOKENS = 128;

/** The room a reply gets when max_tokens is not given: on a discrete env its longest action in tokens
 * (`length` of the text) plus the end token, on a tool env TOOL_REPLY_TOKENS. */
export function longestReply(env: EnvSpec, mode: ChatMode, length: (text: string) => number): number {
  if (typeof env.actions !== 'number') return TOOL_REPLY_TOKENS;
  let most = 0;
  for (let a = 0; a < env.actions; a++) most = Math.max(most, length(renderAction(env, mode, a) ?? '') + 1);
  return most;
}

/** An action as the model writes it: a tool call (tools mode or a tool env) or `<answer>Name</answer>`. */
export function renderAction(spec: EnvSpec, mode: ChatMode, action: unknown): string | undefined {
  const chat = spec.chat;
  if (chat !== undefined && typeof spec.actions === 'number') {
    const ok = typeof action === 'number' && Number.isInteger(action) && action >= 0 && action < spec.actions;
    return ok ? actionText(chat, mode, action) : undefined;
  }
  const a = action as Partial<ToolCall> | null;
  if (typeof a !== 'object' || a === null || typeof a.name !== 'string') return undefined;
  return toolCallText(a.name, JSON.stringify(a.arguments ?? {}));
}

/** A generation read as the `openai:` policy reads a reply: a `<tool_call>` block is a tool call (its
 * parser's tools mode), anything else is read as text mode's `<answer>…</answer>` when it has one or
 * the mode is text. A tool env takes tool calls only. Invalid: the action the env refuses, and why. */
export function parseGeneration(
  spec: EnvSpec,
  mode: ChatMode,
  text: string,
): { action: unknown; invalid?: string } {
  const message = completionMessage(text);
  const chat = spec.chat;
  if (chat !== undefined && typeof spec.actions === 'number') {
    const hasCall = (message.tool_calls?.length ?? 0) > 0;
    const asText = !hasCall && (mode === 'text' || text.includes('<answer>'));
    const parsed = parseReply(chat, asText ? 'text' : 'tools', message);
    return 'invalid' in parsed
      ? { action: INVALID_ACTION, invalid: parsed.invalid }
      : { action: parsed.action };
  }
  const call = message.tool_calls?.[0]?.function;
  if (call === undefined)
    return { action: text, invalid: text.trim() === '' ? 'empty message' : 'no tool call' };
  let args: unknown;
  try {
    args = JSON.parse(call.arguments ?? '');
  } catch {
    return { action: text, invalid: 'the arguments are not JSON' };
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { action: text, invalid: 'the arguments are not a JSON object' };
  const action: ToolCall = { name: call.name ?? '', arguments: args as Record<string, unknown> };
  return { action };
}
