// How `turnwise serve` reads a conversation back for a discrete env (serve/openai.ts). The last user or
// tool message carries this turn's observation, in either of two forms:
//
//   - turnwise's chat encoding (policies/chat.ts): "Turn t (N turns left).", an optional "Last action …"
//     line, "Observation:" and the env's text view — what the openai: policy sends;
//   - the env's text view as an outside agent has it from `turnwise mcp` (observe, or an action's result,
//     forwarded verbatim or inside its own words): the view's lines, optionally with MCP's
//     "Last action invalid: …; nothing moved." and "(N turns left)" lines around them.
//
// The text view is inverted over the env's finite observation space to recover the observation. Without
// a turnwise header the turn index is counted from the conversation, and the turns left are MCP's line,
// else those an earlier message said less the turns taken since, else unknown (as when the budget is not
// revealed). Earlier (observation message, assistant answer) pairs become the history (observation,
// action, reward from the next turn's feedback — 0 when it does not say; logp 0, which the server cannot
// know); a message answered by an `observe` call only looked, and is no turn.
import type { Rng } from '../core/rng.ts';
import type { ChatSpec, EnvView, StepInfo, Turn, TurnContext } from '../core/types.ts';
import {
  type ChatMessage,
  type ChatMode,
  type Feedback,
  INVALID_ACTION,
  parseReply,
  parseTurnMessage,
  systemPrompt,
} from '../policies/chat.ts';
import { OBSERVE } from './mcp.ts';
import { BadRequest } from './protocol.ts';

export interface ConversationReader {
  /**
   * The turn context the conversation encodes. With turnwise's header the last message is read now and
   * the history only when the policy reads it (most act on the current observation alone), so that a
   * turn's cost does not grow with the conversation — a BadRequest in the history still answers 400, from
   * inside act(). Without it, the conversation is read now (the turn index is counted from it).
   */
  contextOf(messages: ChatMessage[], mode: ChatMode, rng: Rng): TurnContext<unknown>;
  /** Tools mode when the conversation opens with the tools-mode system prompt (a scoring prompt). */
  modeOf(messages: ChatMessage[]): ChatMode;
  /** Whether the last message carries an observation of this env (of its map, when served with others). */
  reads(messages: ChatMessage[]): boolean;
}

/** One message that carries a turn's observation. `turn` is absent without turnwise's header. */
interface TurnText {
  index: number;
  turn: number | undefined;
  turnsLeft: number | undefined;
  feedback: Feedback | undefined;
  /** The observation, read when asked (a bad view in the history throws only when the history is read). */
  observation: () => number;
}

/** Message content as text: a string, or the text parts of a content array. */
function contentText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((p) => (typeof p === 'object' && p !== null && typeof p.text === 'string' ? p.text : ''))
    .join('');
}

const LEFT = /^\((\d+) turns? left\)$/;
const INVALID = /^Last action invalid: (.*); nothing moved\.$/;

/** The reader of `env`'s conversations; throws when the env has no text view over a finite
 * observation space (nothing to invert). */
export function conversationReader(env: EnvView<unknown>, chat: ChatSpec): ConversationReader {
  const spec = env.spec;
  const text = env.text?.bind(env);
  if (text === undefined || spec.observations === undefined) {
    throw new Error(`env ${spec.id} needs a text view over a finite observation space to be served`);
  }
  // The text view, inverted: FrozenLake's board shows the cell, so each view names one observation.
  const byView = new Map<string, number>();
  for (let s = 0; s < spec.observations; s++) byView.set(text(s), s);
  const heights = [...new Set([...byView.keys()].map((v) => v.split('\n').length))];
  const example = text(0);

  const observationOf = (view: string, where: string): number => {
    const s = byView.get(view);
    if (s === undefined)
      throw new BadRequest(`${where}: the observation is not a view of env ${spec.id} as served`, 'messages');
    return s;
  };

  /** The last view of the env among the lines of `lines` (whole lines only), or undefined. */
  const lastView = (lines: readonly string[]): number | undefined => {
    for (let i = lines.length - 1; i >= 0; i--) {
      for (const h of heights) {
        if (i + h > lines.length) continue;
        const s = byView.get(lines.slice(i, i + h).join('\n'));
        if (s !== undefined) return s;
      }
    }
    return undefined;
  };

  /** What message `index` says of its turn, or undefined when it carries no observation. */
  const turnText = (m: ChatMessage, index: number): TurnText | undefined => {
    if (m.role !== 'user' && m.role !== 'tool') return undefined;
    const content = contentText(m.content as unknown);
    if (content === undefined) return undefined;
    const p = parseTurnMessage(content);
    if (p !== undefined) {
      const observation = () => observationOf(p.view, `messages[${index}]`);
      return { index, turn: p.turn, turnsLeft: p.turnsLeft, feedback: p.feedback, observation };
    }
    const lines = content.split(/\r?\n/);
    const s = lastView(lines);
    if (s === undefined) return undefined;
    const left = lines.map((l) => LEFT.exec(l.trim())).find((x) => x !== null);
    const invalid = lines.map((l) => INVALID.exec(l.trim())).find((x) => x !== null);
    return {
      index,
      turn: undefined,
      turnsLeft: left === undefined ? undefined : Number(left[1]),
      feedback: invalid === undefined ? undefined : { invalid: invalid[1] },
      observation: () => s,
    };
  };

  /** An assistant message that only looked (MCP's read-only `observe`): the message before it is no turn. */
  const looks = (m: ChatMessage | undefined) =>
    m?.role === 'assistant' && m.tool_calls?.[0]?.function.name === OBSERVE;

  /** The conversation's turn messages, the last message last (it must be one), turn indices counted
   * where no header gives them. */
  const turnTexts = (messages: ChatMessage[]): (TurnText & { turn: number })[] => {
    const out: (TurnText & { turn: number })[] = [];
    for (let index = 0; index < messages.length; index++) {
      const last = index === messages.length - 1;
      const m = turnText(messages[index], index);
      if (m === undefined || (!last && looks(messages[index + 1]))) continue;
      out.push({ ...m, turn: m.turn ?? (out.length === 0 ? 0 : out[out.length - 1].turn + 1) });
    }
    return out;
  };

  /** The history: each turn message but the last with the answer after it. */
  const historyOf = (turns: readonly TurnText[], messages: ChatMessage[], mode: ChatMode): Turn[] => {
    const history: Turn[] = [];
    for (let i = 0; i + 1 < turns.length; i++) {
      const { index, turn: t } = turns[i];
      const answer = messages[index + 1];
      const reply =
        answer?.role === 'assistant' ? parseReply(chat, mode, answer) : { invalid: 'no answer', text: '' };
      const next = turns[i + 1].feedback;
      const valid = 'action' in reply && !(next !== undefined && 'invalid' in next);
      const info: StepInfo = valid ? {} : { valid: false };
      const said = next !== undefined && 'invalid' in next ? next.invalid : undefined;
      const turn: Turn = {
        t: t as number,
        observation: turns[i].observation(),
        action: 'action' in reply ? reply.action : INVALID_ACTION,
        reward: next !== undefined && 'reward' in next ? next.reward : 0,
        logp: 0,
        info,
      };
      // An invalid turn keeps the reason the next message told and the text the model wrote, as the
      // in-process trace has them (a text policy reads its earlier replies back).
      if (!valid) {
        const content = answer?.role === 'assistant' ? contentText(answer.content as unknown) : undefined;
        turn.trace = {
          invalid: said ?? ('invalid' in reply ? reply.invalid : 'not an action'),
          ...(content === undefined ? {} : { text: content }),
        };
      }
      history.push(turn);
    }
    return history;
  };

  /** The 400 of a conversation whose last message carries no observation: what was expected, an example. */
  const expected = (messages: ChatMessage[]) => {
    const i = messages.length - 1;
    const role = messages[i]?.role;
    const where =
      role === 'user' || role === 'tool'
        ? `messages[${i}] has no observation of env ${spec.id}`
        : `messages[${i}] is a message of role ${JSON.stringify(role)}`;
    return new BadRequest(
      `${where}: the last message must be a user or tool message with the env's text view, as turnwise mcp's observe gives it — for example ${JSON.stringify(example)} — optionally with "(N turns left)" on a line of its own, or turnwise's turn message ("Turn 1 (N turns left).\\nObservation:\\n" and the view; see \`turnwise serve --help\`)`,
      'messages',
    );
  };

  return {
    contextOf(messages, mode, rng) {
      const lastIndex = messages.length - 1;
      const last = turnText(messages[lastIndex], lastIndex);
      if (last === undefined) throw expected(messages);
      if (last.turn !== undefined) {
        // turnwise's header: the history read only when the policy asks for it.
        const head = last;
        let history: Turn[] | undefined;
        return {
          observation: head.observation(),
          get history() {
            history ??= historyOf(turnTexts(messages), messages, mode);
            return history;
          },
          turn: head.turn as number,
          turnsLeft: head.turnsLeft,
          rng,
          env,
        };
      }
      const turns = turnTexts(messages);
      const now = turns[turns.length - 1];
      const said = turns.findLast((x) => x.turnsLeft !== undefined);
      const history = historyOf(turns, messages, mode);
      return {
        observation: now.observation(),
        history,
        turn: now.turn,
        turnsLeft:
          said === undefined ? undefined : Math.max(0, (said.turnsLeft as number) - (now.turn - said.turn)),
        rng,
        env,
      };
    },
    reads(messages) {
      const i = messages.length - 1;
      const m = messages[i];
      if (m === undefined) return false;
      const content = contentText(m.content as unknown);
      const p = content === undefined ? undefined : parseTurnMessage(content);
      if (p !== undefined) return byView.has(p.view);
      return turnText(m, i) !== undefined;
    },
    modeOf: (messages) =>
      messages[0]?.role === 'system' && messages[0].content === systemPrompt(chat, 'tools')
        ? 'tools'
        : 'text',
  };
}
