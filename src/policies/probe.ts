// `turnwise probe`: what an OpenAI-compatible server supports, by small real requests (one per
// capability, each on its own). Each goes through the policy's transport, so a transient fault (429 with
// Retry-After, 5xx, a timeout, a truncated body) is retried as for any call; only a refusal (400, 404,
// 422) or a reply without the field says "unsupported". A capability whose request still fails after its
// retries is no answer at all: the probe stops with an InputError naming it, rather than report false.
import { InputError } from '../core/errors.ts';
import type { ChatSpec } from '../core/types.ts';
import { actionText, type ChatMessage, type ChatTool, renderChatML } from './chat.ts';
import { type CompletionResponse, echoedLogProb } from './scoring.ts';
import { type ChatResponse, HttpError, type Transport } from './transport.ts';

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

/** max_tokens of the tool-call request (the others ask 16). */
const TOOL_CALL_TOKENS = 256;

/** The statuses that say "not supported" (the parameter or the route is refused). */
const REFUSED = new Set([400, 404, 422]);

type Reply = Record<string, unknown> & ChatResponse;

/**
 * What the server behind `transport` supports. `messages` is a first-turn prompt (text mode) the model
 * can answer, `tools` the env's tool, `chat` its encoding; `field` names the target in a refusal.
 */
export async function probeServer(
  transport: Transport,
  chat: ChatSpec,
  tools: readonly ChatTool[],
  messages: ChatMessage[],
  field: string,
): Promise<Capabilities> {
  const { model, baseUrl } = transport.options;
  const post = async (capability: string, path: string, extra: Record<string, unknown>) => {
    try {
      const r = await transport.request(path, JSON.stringify({ model, max_tokens: 16, ...extra }));
      return r.response as Reply;
    } catch (e) {
      if (e instanceof HttpError && REFUSED.has(e.status)) return undefined;
      const reason = (e as Error).message.replace(/^openai: /, '');
      throw new InputError(field, baseUrl, `the request for ${capability} got no answer: ${reason}`);
    }
  };
  const ask = (capability: string, extra: Record<string, unknown>) =>
    post(capability, '/chat/completions', { messages, ...extra });
  const first = (r: ChatResponse | undefined) => (Array.isArray(r?.choices) ? r.choices[0] : undefined);
  const entries = (r: ChatResponse | undefined) => {
    const c = first(r)?.logprobs?.content;
    return Array.isArray(c) && c.length > 0 && c.every((e) => typeof e.logprob === 'number') ? c : undefined;
  };
  const seedA = await ask('seed', { seed: 12345, temperature: 1, logprobs: true });
  const seedB = await ask('seed', { seed: 12345, temperature: 1, logprobs: true });
  // A tool call takes more tokens than a short answer (a Hermes block is ~20 of Qwen's, ~30 of a small
  // BPE's): cut at 16 it would come back as truncated content, and the server's tools read as absent.
  const toolReply = await ask('tools', { tools, max_tokens: TOOL_CALL_TOKENS });
  const top = await ask('topLogprobs', { logprobs: true, top_logprobs: 2 });
  const ids = await ask('tokenIds', { logprobs: true, return_token_ids: true });
  const prompt = await ask('promptLogprobs', { prompt_logprobs: 1 });
  const head = renderChatML(messages);
  const scored = head + actionText(chat, 'text', 0);
  const echo = await post('promptLogprobs', '/completions', {
    prompt: scored,
    echo: true,
    logprobs: 1,
    max_tokens: 1,
  });
  const n = await ask('n', { n: 2, seed: 1 });
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
