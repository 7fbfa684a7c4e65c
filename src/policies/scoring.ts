// Scoring through an OpenAI-compatible server (logProb, for NLL, LLR and PPO ratios): the turn's prompt
// rendered as ChatML (chat.ts renderChatML) with the action's text appended and the message closed by
// `<|im_end|>`, sent to /v1/completions with echo and logprobs; the echoed tokens over the action's
// characters and the end marker (text_offset) sum to log π(a) — lm-eval-harness's loglikelihood of the
// reply being exactly that text. The end marker is in the score because a chat model's reply is the text
// and then its end-of-turn token (Qwen's <|im_end|> is a token of its own, whose log-prob vLLM echoes);
// without it the score is that of every reply that starts with the text. A server whose action is one
// token (turnwise serve of a discrete policy) gives the marker log-prob 0. A server that cannot echo prompt log-probs (llama.cpp, Ollama,
// OpenAI's chat models) is found out by the policy's checkScoring(), which then removes logProb and says
// why (unavailableReason): diagnostics report "unavailable" rather than a wrong number.
import { type ChatMessage, IM_END, renderChatML } from './chat.ts';
import type { ChatResponse, Transport } from './transport.ts';

/** A /v1/completions reply, as much of it as scoring reads. */
export interface CompletionResponse {
  choices: {
    text?: string;
    logprobs?: { tokens?: unknown[]; token_logprobs?: unknown[]; text_offset?: unknown[] } | null;
  }[];
  usage?: ChatResponse['usage'];
}

/** log π of the characters [from, to) of an echoed prompt: the sum of the log-probs of the tokens that
 * overlap them (−9999, OpenAI's floor, is −∞); undefined when the echo has no usable log-probs there. */
export function echoedLogProb(
  logprobs: CompletionResponse['choices'][number]['logprobs'],
  from: number,
  to: number,
): number | undefined {
  const lps = logprobs?.token_logprobs;
  const offsets = logprobs?.text_offset;
  if (!Array.isArray(lps) || !Array.isArray(offsets) || lps.length !== offsets.length) return undefined;
  let sum = 0;
  let covered = false;
  for (let i = 0; i < offsets.length; i++) {
    const start = offsets[i] as number;
    const end = i + 1 < offsets.length ? (offsets[i + 1] as number) : Number.POSITIVE_INFINITY;
    if (typeof start !== 'number' || end <= from || start >= to) continue;
    const lp = lps[i];
    if (typeof lp !== 'number') return undefined;
    sum += lp <= -9999 ? Number.NEGATIVE_INFINITY : lp;
    covered = true;
  }
  return covered ? sum : undefined;
}

/** The echo request that scores the reply `completion` (closed by <|im_end|>) after the conversation
 * `messages`, and where the scored range (the completion and its end marker) starts and ends in its
 * prompt. */
export function echoRequest(
  model: string,
  messages: readonly ChatMessage[],
  completion: string,
): { body: Record<string, unknown>; from: number; to: number } {
  const head = renderChatML(messages);
  const prompt = head + completion + IM_END;
  return {
    body: { model, prompt, echo: true, logprobs: 1, max_tokens: 1, temperature: 0 },
    from: head.length,
    to: prompt.length,
  };
}

/** log π(completion | messages) by echo (answered from the cache when it holds the request). */
export async function echoScore(
  transport: Transport,
  messages: readonly ChatMessage[],
  completion: string,
): Promise<number> {
  const model = transport.options.model;
  const { body, from, to } = echoRequest(model, messages, completion);
  const r = await transport.cached('score', '/completions', body);
  const lp = echoedLogProb((r.response as CompletionResponse).choices[0]?.logprobs, from, to);
  if (lp === undefined) throw new Error(`openai: ${model}: the server did not echo the prompt's log-probs`);
  return lp;
}

/** Why a policy cannot score, as diagnostics print it. */
export function unavailableReason(policyId: string, reason: string): string {
  return `${policyId}: scoring unavailable (${reason}); NLL, LLR and PPO ratios need prompt log-probs (/v1/completions with echo and logprobs: vLLM, SGLang, turnwise serve; not llama.cpp, Ollama or OpenAI chat models)`;
}
