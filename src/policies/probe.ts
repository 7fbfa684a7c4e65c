// `turnwise probe`: what an OpenAI-compatible server supports, by small real requests (one per
// capability, each on its own: any failure or a reply without the field is false).
import type { ChatSpec } from '../core/types.ts';
import { actionText, type ChatMessage, type ChatTool, renderChatML } from './chat.ts';
import { type CompletionResponse, echoedLogProb } from './scoring.ts';
import type { ChatResponse, Transport } from './transport.ts';

/** What `turnwise probe` reports of a server. */
export interface Capabilities {
  chat: boolean;
  tools: boolean;
  logprobs: boolean;
  topLogprobs: boolean;
  tokenIds: boolean;
  promptLogprobs: boolean;
  seed: boolean;
  n: boolean;
}

type Reply = Record<string, unknown> & ChatResponse;

/**
 * What the server behind `transport` supports. `messages` is a first-turn prompt (text mode) the model
 * can answer, `tools` the env's tool, `chat` its encoding.
 */
export async function probeServer(
  transport: Transport,
  chat: ChatSpec,
  tools: readonly ChatTool[],
  messages: ChatMessage[],
): Promise<Capabilities> {
  const { model } = transport.options;
  const post = async (path: string, extra: Record<string, unknown>) => {
    try {
      const r = await transport.once('POST', path, JSON.stringify({ model, max_tokens: 16, ...extra }));
      if (r.status < 200 || r.status > 299) return undefined;
      return JSON.parse(r.text) as Reply;
    } catch {
      return undefined;
    }
  };
  const ask = (extra: Record<string, unknown>) => post('/chat/completions', { messages, ...extra });
  const first = (r: ChatResponse | undefined) => (Array.isArray(r?.choices) ? r.choices[0] : undefined);
  const entries = (r: ChatResponse | undefined) => {
    const c = first(r)?.logprobs?.content;
    return Array.isArray(c) && c.length > 0 && c.every((e) => typeof e.logprob === 'number') ? c : undefined;
  };
  const seedA = await ask({ seed: 12345, temperature: 1, logprobs: true });
  const seedB = await ask({ seed: 12345, temperature: 1, logprobs: true });
  const toolReply = await ask({ tools });
  const top = await ask({ logprobs: true, top_logprobs: 2 });
  const ids = await ask({ logprobs: true, return_token_ids: true });
  const prompt = await ask({ prompt_logprobs: 1 });
  const head = renderChatML(messages);
  const scored = head + actionText(chat, 'text', 0);
  const echo = await post('/completions', {
    prompt: scored,
    echo: true,
    logprobs: 1,
    max_tokens: 1,
  });
  const n = await ask({ n: 2, seed: 1 });
  const idList = entries(ids);
  const tokenIds =
    (idList?.every((e) => Number.isInteger(e.id)) ?? false) || Array.isArray(first(ids)?.token_ids);
  const echoed = echoedLogProb(
    (echo as CompletionResponse | undefined)?.choices?.[0]?.logprobs,
    head.length,
    scored.length,
  );
  const toolCalls = first(toolReply)?.message?.tool_calls;
  const reply = (r: ChatResponse | undefined) =>
    JSON.stringify([first(r)?.message ?? null, entries(r)?.map((e) => [e.token, e.logprob]) ?? null]);
  return {
    chat: typeof first(seedA)?.message === 'object',
    tools: Array.isArray(toolCalls) && toolCalls.length > 0,
    logprobs: entries(seedA) !== undefined,
    topLogprobs:
      ((entries(top)?.[0] as { top_logprobs?: unknown[] } | undefined)?.top_logprobs?.length ?? 0) > 0,
    tokenIds,
    promptLogprobs: Array.isArray(prompt?.prompt_logprobs) || echoed !== undefined,
    seed: seedA !== undefined && seedB !== undefined && reply(seedA) === reply(seedB),
    n: Array.isArray(n?.choices) && n.choices.length === 2,
  };
}
