// How `turnwise serve` reads a conversation back for a discrete env (serve/openai.ts): the chat encoding
// of policies/chat.ts, inverted. The last user/tool message is this turn's message — turn index, turns
// left when revealed, the env's text view — and the text view is inverted over the env's finite
// observation space to recover the observation. Earlier (turn message, assistant answer) pairs become the
// history (observation, action, reward from the next turn's feedback; logp 0, which the server cannot
// know).
import type { Rng } from '../core/rng.ts';
import type { ChatSpec, EnvView, StepInfo, Turn, TurnContext } from '../core/types.ts';
import {
  type ChatMessage,
  type ChatMode,
  INVALID_ACTION,
  type ParsedTurnMessage,
  parseReply,
  parseTurnMessage,
  systemPrompt,
} from '../policies/chat.ts';
import { BadRequest } from './protocol.ts';

export interface ConversationReader {
  /**
   * The turn context the conversation encodes. The last message is read now; the history only when the
   * policy reads it (most act on the current observation alone), so that a turn's cost does not grow with
   * the conversation — a BadRequest in the history still answers 400, from inside act().
   */
  contextOf(messages: ChatMessage[], mode: ChatMode, rng: Rng): TurnContext<unknown>;
  /** Tools mode when the conversation opens with the tools-mode system prompt (a scoring prompt). */
  modeOf(messages: ChatMessage[]): ChatMode;
}

/** The reader of `env`'s conversations; throws when the env has no text view over a finite
 * observation space (nothing to invert). */
export function conversationReader(env: EnvView<unknown>, chat: ChatSpec): ConversationReader {
  const spec = env.spec;
  if (env.text === undefined || spec.observations === undefined) {
    throw new Error(`env ${spec.id} needs a text view over a finite observation space to be served`);
  }
  // The text view, inverted: FrozenLake's board shows the cell, so each view names one observation.
  const byView = new Map<string, number>();
  for (let s = 0; s < spec.observations; s++) byView.set(env.text(s), s);

  const observationOf = (view: string, where: string): number => {
    const s = byView.get(view);
    if (s === undefined)
      throw new BadRequest(`${where}: the observation is not a view of env ${spec.id} as served`, 'messages');
    return s;
  };

  /** The turns before the last turn message, read back from the conversation. */
  const historyOf = (messages: ChatMessage[], mode: ChatMode): Turn[] => {
    const turns: { index: number; parsed: ParsedTurnMessage }[] = [];
    for (let index = 0; index + 1 < messages.length; index++) {
      const m = messages[index];
      if ((m.role === 'user' || m.role === 'tool') && typeof m.content === 'string') {
        const parsed = parseTurnMessage(m.content);
        if (parsed !== undefined) turns.push({ index, parsed });
      }
    }
    const last = messages[messages.length - 1] as ChatMessage & { content: string };
    turns.push({ index: messages.length - 1, parsed: parseTurnMessage(last.content) as ParsedTurnMessage });
    const history: Turn[] = [];
    for (let i = 0; i + 1 < turns.length; i++) {
      const { index, parsed } = turns[i];
      const answer = messages[index + 1];
      const reply =
        answer?.role === 'assistant' ? parseReply(chat, mode, answer) : { invalid: 'no answer', text: '' };
      const next = turns[i + 1].parsed.feedback;
      const valid = 'action' in reply && !(next !== undefined && 'invalid' in next);
      const info: StepInfo = valid ? {} : { valid: false };
      const turn: Turn = {
        t: parsed.turn,
        observation: observationOf(parsed.view, `messages[${index}]`),
        action: 'action' in reply ? reply.action : INVALID_ACTION,
        reward: next !== undefined && 'reward' in next ? next.reward : 0,
        logp: 0,
        info,
      };
      if (!valid) turn.trace = { invalid: 'invalid' in reply ? reply.invalid : 'not an action' };
      history.push(turn);
    }
    return history;
  };

  return {
    contextOf(messages, mode, rng) {
      const last = messages[messages.length - 1];
      const p =
        (last.role === 'user' || last.role === 'tool') && typeof last.content === 'string'
          ? parseTurnMessage(last.content)
          : undefined;
      if (p === undefined) {
        throw new BadRequest(
          'the last message must be a turn message (see `turnwise serve --help`)',
          'messages',
        );
      }
      let history: Turn[] | undefined;
      return {
        observation: observationOf(p.view, `messages[${messages.length - 1}]`),
        get history() {
          history ??= historyOf(messages, mode);
          return history;
        },
        turn: p.turn,
        turnsLeft: p.turnsLeft,
        rng,
        env,
      };
    },
    modeOf: (messages) =>
      messages[0]?.role === 'system' && messages[0].content === systemPrompt(chat, 'tools')
        ? 'tools'
        : 'text',
  };
}
