// A trajectory as one chat conversation: the messages a model saw and wrote, each assistant message that
// is a turn's action tagged with its turn. The two hand-over formats (openai.ts, verl.ts) both start
// here, so a conversation exported as JSONL and as Parquet is the same one.
//
// Two sources of conversations:
// - recorded trajectories (the proxy, `harness run`, the SDK adapters: serve/proxy-record.ts): every
//   turn's observation is the list of messages that arrived since the previous call and its action the
//   assistant message, so the conversation is observation₀, action₀, observation₁, action₁, …;
// - in-process trajectories of a discrete env with a chat encoding (FrozenLake): the composition layer
//   (cli/) passes a `ChatRenderer` built from the env's own chat encoding and text view, because
//   export/ may not reach the env registry or the policies (docs/architecture.md's dependency table).
// Anything else cannot be rendered, and `conversationOf` says why instead of guessing.
import type { Trajectory } from '../core/types.ts';

/** A message in the shape OpenAI's fine-tuning API accepts (chat format, with function calling). */
export interface ExportMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** Absent on an assistant message that only calls tools (OpenAI's own fine-tuning examples). */
  content?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  /** Assistant messages only: 1 trains on the message, 0 keeps it as context (set by openai.ts). */
  weight?: 0 | 1;
}

/** A tool as OpenAI's `tools` array declares it. */
export interface ExportTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface Conversation {
  messages: ExportMessage[];
  /** For each turn t, the index in `messages` of the assistant message that is its action. */
  turnMessage: number[];
  /** The tools the model was offered; present when the trajectory called any. */
  tools?: ExportTool[];
}

/** What a renderer gives for a trajectory it knows: its messages (one assistant message per turn, in
 * turn order, as the policy wrote them) and tools; a string when it cannot render it (the reason). */
export type ChatRenderer = (
  t: Trajectory,
) => { messages: readonly unknown[]; tools?: readonly ExportTool[] } | string | undefined;

/** Why a trajectory cannot be exported, or its conversation. */
export type Rendered = Conversation | { reason: string };

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Text of a content field: a string, or the text parts of a content array; undefined when neither. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return undefined;
  if (!Array.isArray(content)) return undefined;
  const parts = content.map((p) =>
    isObject(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : null,
  );
  return parts.every((p) => p !== null) ? parts.join('') : undefined;
}

/** One message normalised to the fine-tuning shape, or the reason it cannot be (at `where`). */
function normalise(m: unknown, where: string): ExportMessage | string {
  if (!isObject(m)) return `${where} is not a message object`;
  // `developer` is the newer name of the system role; fine-tuning files take `system`.
  const role = m.role === 'developer' ? 'system' : m.role;
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    return `${where} has role ${JSON.stringify(m.role)} (system, user, assistant and tool are exported)`;
  const content = textOf(m.content);
  if (content === undefined && m.content !== null && m.content !== undefined)
    return `${where} has non-text content (images and audio are not exported)`;
  const out: ExportMessage = { role };
  if (role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
    const calls: NonNullable<ExportMessage['tool_calls']> = [];
    for (const c of m.tool_calls) {
      const f = isObject(c) && isObject(c.function) ? c.function : undefined;
      if (
        !isObject(c) ||
        typeof c.id !== 'string' ||
        c.id === '' ||
        f === undefined ||
        typeof f.name !== 'string'
      )
        return `${where} has a tool call without an id or a function name`;
      const args = typeof f.arguments === 'string' ? f.arguments : JSON.stringify(f.arguments ?? {});
      calls.push({ id: c.id, type: 'function', function: { name: f.name, arguments: args } });
    }
    if (content !== undefined && content !== '') out.content = content;
    out.tool_calls = calls;
  } else out.content = content ?? '';
  if (role === 'tool') {
    if (typeof m.tool_call_id !== 'string') return `${where} is a tool result without a tool_call_id`;
    out.tool_call_id = m.tool_call_id;
  }
  return out;
}

/** Checks what the fine-tuning API checks of a conversation's structure: every tool message answers a
 * tool call of an earlier assistant message, each call answered once; every called tool is declared. */
export function structureProblem(c: Conversation): string | undefined {
  const open = new Set<string>();
  const seen = new Set<string>();
  const declared = c.tools === undefined ? undefined : new Set(c.tools.map((t) => t.function.name));
  for (const [i, m] of c.messages.entries()) {
    for (const call of m.tool_calls ?? []) {
      if (seen.has(call.id)) return `message ${i} repeats the tool call id ${JSON.stringify(call.id)}`;
      seen.add(call.id);
      open.add(call.id);
      if (declared !== undefined && !declared.has(call.function.name))
        return `message ${i} calls the tool ${JSON.stringify(call.function.name)}, which the env does not declare`;
    }
    if (m.role === 'tool') {
      if (m.tool_call_id === undefined || !open.has(m.tool_call_id))
        return `message ${i} is a tool result for ${JSON.stringify(m.tool_call_id)}, which no earlier assistant message called`;
      open.delete(m.tool_call_id);
    }
  }
  if (seen.size > 0 && c.tools === undefined)
    return 'it calls tools but the tools it was offered are unknown';
  return undefined;
}

/** A recorded turn: observation a list of messages, action an assistant message. */
const isRecordedTurn = (turn: Trajectory['turns'][number]): boolean =>
  Array.isArray(turn.observation) && isObject(turn.action) && turn.action.role === 'assistant';

/**
 * The conversation of a recorded trajectory: each turn's new messages, then its action. A turn whose
 * prompt did not extend the previous one (`info.mergeMismatch`: the harness rewrote its history) has
 * no place in one conversation, and the trajectory is refused rather than spliced.
 */
function recordedConversation(t: Trajectory, tools: readonly ExportTool[] | undefined): Rendered {
  const messages: ExportMessage[] = [];
  const turnMessage: number[] = [];
  for (const turn of t.turns) {
    if (turn.info.mergeMismatch === true)
      return {
        reason: `turn ${turn.t}'s prompt does not extend the previous prompt and answer (a merge mismatch): it is not one conversation`,
      };
    for (const [j, m] of (turn.observation as unknown[]).entries()) {
      const n = normalise(m, `turn ${turn.t}'s observation message ${j}`);
      if (typeof n === 'string') return { reason: n };
      messages.push(n);
    }
    const a = normalise(turn.action, `turn ${turn.t}'s action`);
    if (typeof a === 'string') return { reason: a };
    turnMessage.push(messages.length);
    messages.push(a);
  }
  return withTools({ messages, turnMessage }, tools);
}

const withTools = (c: Conversation, tools: readonly ExportTool[] | undefined): Rendered => {
  const called = c.messages.some((m) => m.tool_calls !== undefined);
  const conversation: Conversation = called && tools !== undefined ? { ...c, tools: [...tools] } : c;
  const problem = structureProblem(conversation);
  return problem === undefined ? conversation : { reason: problem };
};

/** The conversation of one rendered by a ChatRenderer: its messages normalised, one assistant message
 * per turn (in order) that are the turns' actions. */
function renderedConversation(
  t: Trajectory,
  r: { messages: readonly unknown[]; tools?: readonly ExportTool[] },
): Rendered {
  const messages: ExportMessage[] = [];
  const turnMessage: number[] = [];
  for (const [i, m] of r.messages.entries()) {
    const n = normalise(m, `rendered message ${i}`);
    if (typeof n === 'string') return { reason: n };
    if (n.role === 'assistant') turnMessage.push(messages.length);
    messages.push(n);
  }
  if (turnMessage.length !== t.turns.length)
    return {
      reason: `the renderer gave ${turnMessage.length} assistant messages for ${t.turns.length} turns`,
    };
  return withTools({ messages, turnMessage }, r.tools);
}

export interface ConversationOptions {
  /** Renders in-process trajectories (the CLI builds it from the env's chat encoding). */
  render?: ChatRenderer;
  /** The tools a task's env declares (recorded trajectories do not carry their requests' `tools`). */
  toolsOf?: (t: Trajectory) => readonly ExportTool[] | undefined;
}

/** A trajectory's conversation, or why it has none. */
export function conversationOf(t: Trajectory, o: ConversationOptions = {}): Rendered {
  if (t.turns.length === 0) return { reason: 'it has no turns' };
  if (t.turns.every(isRecordedTurn)) return recordedConversation(t, o.toolsOf?.(t));
  const r = o.render?.(t);
  if (typeof r === 'string') return { reason: r };
  if (r !== undefined) return renderedConversation(t, r);
  return {
    reason: `its turns are not recorded chat calls and env ${JSON.stringify(t.task.env)} has no chat encoding to render them`,
  };
}
