// A trajectory as a judge reads it, and as the deterministic checks read its calls: the task, each
// turn's observation and action as text, the final message, the tool calls. Three kinds of turns:
//
//   - recorded chat turns (the proxy, `harness run`): the observation is the messages that arrived,
//     the action the assistant message — rendered from the messages themselves;
//   - tool calls `{name, arguments}` (the tool envs in process): `name({...})`;
//   - discrete actions of an env with a chat encoding (FrozenLake): the action's name, and the call
//     the chat encoding makes of it (`move({"direction":"Left"})`).
//
// Observations other than messages are the env's text view, which the composition layer hands in
// (`TaskView`: rewards/ may not reach the env registry). The env's own verdict (success, rewards) is
// never part of a transcript: the judge is measured against it.
import type { ChatSpec, Task, ToolCall, Trajectory, Turn } from '../core/types.ts';

/** What a task's env offers for rendering: its text view and chat encoding (either may be absent). */
export interface TaskView {
  text?(observation: unknown): string;
  chat?: ChatSpec;
}
export type ViewOf = (task: Task) => TaskView | undefined;

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A recorded chat turn: observation a list of messages, action an assistant message. */
export const isRecorded = (turn: Turn): boolean =>
  Array.isArray(turn.observation) && isObject(turn.action) && turn.action.role === 'assistant';

const isToolCall = (a: unknown): a is ToolCall =>
  isObject(a) && typeof a.name === 'string' && isObject(a.arguments);

/** Text of a message's content: a string, or the text parts of a content array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('');
}

/** The calls of an assistant message (`tool_calls`, their JSON arguments parsed; {} when they do not). */
function messageCalls(m: Json): ToolCall[] {
  if (!Array.isArray(m.tool_calls)) return [];
  return m.tool_calls.flatMap((c) => {
    const f = isObject(c) && isObject(c.function) ? c.function : undefined;
    if (f === undefined || typeof f.name !== 'string') return [];
    let args: unknown = f.arguments;
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        args = {};
      }
    }
    return [{ name: f.name, arguments: isObject(args) ? args : {} }];
  });
}

const callText = (c: ToolCall) => `${c.name}(${JSON.stringify(c.arguments)})`;

export class Transcripts {
  constructor(private readonly viewOf: ViewOf = () => undefined) {}

  private view(t: Trajectory): TaskView | undefined {
    return this.viewOf(t.task);
  }

  /** The observation of turn i as text. */
  observation(t: Trajectory, i: number): string {
    const turn = t.turns[i];
    if (isRecorded(turn))
      return (turn.observation as unknown[])
        .map((m) => (isObject(m) ? `${String(m.role)}: ${contentText(m.content)}` : String(m)))
        .join('\n');
    const text = this.view(t)?.text;
    if (text !== undefined) return text(turn.observation);
    return typeof turn.observation === 'string' ? turn.observation : JSON.stringify(turn.observation);
  }

  /** The calls turn i made: a tool call, a recorded message's tool calls, or a discrete action as its
   * env's chat encoding calls it. An invalid action makes none. */
  calls(t: Trajectory, i: number): ToolCall[] {
    const turn = t.turns[i];
    const a = turn.action;
    if (isRecorded(turn)) return messageCalls(a as Json);
    if (turn.info.valid === false) return [];
    if (isToolCall(a)) return [a];
    const chat = this.view(t)?.chat;
    if (chat !== undefined && typeof a === 'number' && Number.isInteger(a) && a >= 0 && a < chat.names.length)
      return [{ name: chat.tool, arguments: { [chat.argument]: chat.names[a] } }];
    return [];
  }

  /** What the agent wrote at turn i: a recorded message's text and calls, a text policy's raw output,
   * a tool call, a discrete action's name. */
  action(t: Trajectory, i: number): string {
    const turn = t.turns[i];
    const a = turn.action;
    if (isRecorded(turn)) {
      const m = a as Json;
      return [contentText(m.content), ...messageCalls(m).map(callText)].filter((x) => x !== '').join('\n');
    }
    if (turn.trace?.text !== undefined) return turn.trace.text;
    if (isToolCall(a)) return callText(a);
    const chat = this.view(t)?.chat;
    if (chat !== undefined && typeof a === 'number')
      return a >= 0 && a < chat.names.length ? chat.names[a] : '(no action: the output did not parse)';
    return typeof a === 'string' ? a : JSON.stringify(a);
  }

  /** The final message: what the agent wrote at its last turn ('' with no turns). */
  final(t: Trajectory): string {
    return t.turns.length === 0 ? '' : this.action(t, t.turns.length - 1);
  }

  /** The task as the agent was given it: the env's instructions, then the first observation. */
  task(t: Trajectory): string {
    const first = t.turns.length === 0 ? '' : this.observation(t, 0);
    const instructions =
      t.turns.length > 0 && isRecorded(t.turns[0]) ? undefined : this.view(t)?.chat?.instructions;
    return instructions === undefined ? first : `${instructions}\n\n${first}`;
  }

  /** Every turn: its observation and the agent's action. */
  transcript(t: Trajectory): string {
    return t.turns
      .map(
        (_, i) =>
          `Turn ${i + 1}\nObservation:\n${this.observation(t, i)}\nAction: ${this.action(t, i)}${t.turns[i].info.valid === false ? ' (invalid)' : ''}`,
      )
      .join('\n\n');
  }

  /** The observation of the last turn (the state the final action was taken in). */
  lastObservation(t: Trajectory): string {
    return t.turns.length === 0 ? '' : this.observation(t, t.turns.length - 1);
  }
}
