// `turnwise serve` of a text policy (policies/text-model.ts: the transformer of policies/transformer.ts,
// or a GGUF model run by llama.cpp, policies/gguf.ts): the reply is the model's own generation, token by
// token, where a discrete policy's is one action token (serve/openai.ts). What follows says <|end|>, the
// transformer's end-of-action token; a GGUF model's is its end-of-generation token (llama.cpp's EOG set:
// a generation stops on any of them, and a closed reply is scored with the one its chat template closes
// an assistant message with).
//
// Chat completions. The policy acts on the conversation's turn context with its uniform from
// Rng.replay(seed) (as every served policy), so a client sending ctx.rng.uniform53() as `seed` gets the
// in-process tokens. The message is the generated text as `content`; when the text is a call it is that
// call in `tool_calls` instead (finish_reason `tool_calls`), as vLLM's hermes tool parser returns it: on
// a discrete env (serve/openai.ts), one Hermes block (`<tool_call>\n{"name":…,"arguments":…}\n
// </tool_call>`, policies/chat.ts completionMessage) when the request offers the env's tool; on a tool env
// (serve/tool-serve.ts), the call the policy takes in process (a block whose arguments are a JSON object,
// policies/transformer-prompt.ts parseGeneration), whatever the request offers — anything else is the
// text the env gets as an invalid action, answered as content for the agent to play as text (MCP
// McpEpisode.reply). A tool env's call written other than in its canonical block carries the text in its
// id (textCallId), so that the replay records the turn as in process. `logprobs.content` has one entry per generated
// token — its text, log π_τ,p, UTF-8 bytes and `id` (as llama.cpp gives it), and `top_logprobs` from the
// same distribution (−9999, OpenAI's floor, outside the nucleus) — and the last entry is the end-of-action
// token `<|end|>` when the generation stopped on it: it is not in the content (a chat server's
// end-of-turn token never is), but its log-prob is the model's choice to stop, so the entries sum to the
// turn's logp in process. `return_token_ids: true` adds vLLM's `token_ids` (per choice, <|end|>
// included) and `prompt_token_ids`. `usage` counts the model's tokens. finish_reason: `stop` on
// <|end|>, `length` at max_tokens or the context's end.
//
// Sampling: a request's `temperature` and `top_p` are honoured (the tokens are drawn from π_τ,p of the
// request's values, and the log-probs are that distribution's); absent, the policy's own (the
// in-process values). `max_tokens` is capped at the policy's reply limit. A prompt that cannot fit the
// context is a 400 (vLLM's answer to a prompt over max_model_len).
//
// Completions (/v1/completions, the scoring endpoint): after the ChatML conversation's opened assistant
// turn, the completion's text is tokenized as the model writes it and scored by teacher forcing with the
// policy's own τ and p (what logProb uses, whatever the request's temperature: it applies to generated
// tokens only). `<|im_end|>`, ChatML's end of message, closing the completion is scored as <|end|>, so
// that the echo of a closed reply (the openai: policy's request, policies/scoring.ts) sums to logProb(ctx,
// action); an open one is the prefix's probability.

import { ContextOverflow } from '../core/errors.ts';
import type { Action, EnvSpec, ToolCall, TurnContext } from '../core/types.ts';
import type { ChatMessage, ChatMode } from '../policies/chat.ts';
import { completionMessage, IM_END, toolCallText } from '../policies/chat.ts';
import type { TextModel } from '../policies/text-model.ts';
import type { ReplyOptions, ScoredReply } from '../policies/transformer.ts';
import { parseGeneration } from '../policies/transformer-prompt.ts';
import { BadRequest, chatCompletion } from './protocol.ts';

/** OpenAI's floor for an impossible token: JSON has no −∞. */
export const FLOOR = -9999;
const floor = (lp: number) => Math.max(FLOOR, lp);

interface SamplingRequest {
  temperature?: unknown;
  top_p?: unknown;
  max_tokens?: unknown;
}

/** A request's sampling parameters, checked (400 naming the parameter). */
export function samplingOf(req: SamplingRequest): ReplyOptions {
  const o: ReplyOptions = {};
  const { temperature: t, top_p: p, max_tokens: m } = req;
  if (t !== undefined && t !== null) {
    if (typeof t !== 'number' || !(t >= 0 && t <= 10))
      throw new BadRequest('temperature must be a number from 0 to 10 (0 = greedy)', 'temperature');
    o.temperature = t;
  }
  if (p !== undefined && p !== null) {
    if (typeof p !== 'number' || !(p > 0 && p <= 1))
      throw new BadRequest('top_p must be a number in (0, 1]', 'top_p');
    o.topP = p;
  }
  if (m !== undefined && m !== null) {
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 1)
      throw new BadRequest('max_tokens must be an integer ≥ 1', 'max_tokens');
    o.maxTokens = m;
  }
  return o;
}

/** A token as a logprobs entry: its text (a special's name; U+FFFD for a partial character), bytes, id. */
function tokenOf(policy: TextModel, id: number) {
  const bytes = policy.tokenizer.tokenBytes(id);
  const token = policy.tokenizer.isSpecial(id)
    ? policy.tokenizer.tokenText(id)
    : new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
  return { token, bytes: Array.from(bytes), id };
}

/** `logprobs.content` of a generation: each token with its log-prob and its `top` alternatives. */
function contentEntries(
  policy: TextModel,
  tokens: readonly number[],
  logprobs: readonly number[],
  top: readonly { id: number; logprob: number }[][],
) {
  return tokens.map((id, j) => {
    const t = tokenOf(policy, id);
    return {
      token: t.token,
      logprob: floor(logprobs[j]),
      bytes: t.bytes,
      id,
      top_logprobs: (top[j] ?? []).map((a) => {
        const x = tokenOf(policy, a.id);
        return { token: x.token, logprob: floor(a.logprob), bytes: x.bytes, id: a.id };
      }),
    };
  });
}

/** How a generation's text is answered: as this tool call (name, JSON arguments), or as content. */
export type CallReader = (text: string) => { name: string; arguments: string } | undefined;

/** A discrete env's reading: one Hermes block is a call when the request offers the tool (mode tools),
 * whatever it calls, as vLLM's hermes parser reads it (the client's parser judges it). */
export const hermesCall =
  (mode: ChatMode): CallReader =>
  (text) => {
    const f = mode === 'tools' ? completionMessage(text).tool_calls?.[0]?.function : undefined;
    return f === undefined ? undefined : { name: f.name ?? '', arguments: f.arguments ?? '' };
  };

/** A tool env's reading: the call the policy takes in process (parseGeneration: a block whose
 * arguments are a JSON object), else content — the text the env is handed as an invalid action. */
export const envCall =
  (spec: EnvSpec): CallReader =>
  (text) => {
    const parsed = parseGeneration(spec, 'tools', text);
    const call = parsed.action as ToolCall;
    return parsed.invalid === undefined
      ? { name: call.name, arguments: JSON.stringify(call.arguments) }
      : undefined;
  };

/** The id of a served text policy's call: call_{turn}_{choice}, and — when the model did not write the
 * call's canonical Hermes block (other spacing or key order) — that text in base64url, so that the
 * replay takes the turn as written: in process the text is kept, and a call the env refuses is shown
 * back to the model as it was written. */
export function textCallId(turn: number, i: number, text: string, spec: EnvSpec): string {
  const call = envCall(spec)(text);
  const canonical = call === undefined ? text : toolCallText(call.name, call.arguments);
  return text === canonical
    ? `call_${turn}_${i}`
    : `call_${turn}_${i}_${Buffer.from(text).toString('base64url')}`;
}

/** The text a call's id carries (textCallId), checked to be that call; undefined for other ids. */
export function writtenText(
  spec: EnvSpec,
  id: unknown,
  step: { name: string; args: Record<string, unknown>; where: string },
): string | undefined {
  const m = typeof id === 'string' ? /^call_\d+_\d+_([A-Za-z0-9_-]+)$/.exec(id) : null;
  if (m === null) return undefined;
  const text = Buffer.from(m[1], 'base64url').toString();
  const call = envCall(spec)(text);
  if (call?.name !== step.name || call.arguments !== JSON.stringify(step.args))
    throw new BadRequest(`${step.where}.id carries a reply that is not this call`, 'messages');
  return text;
}

/** The policy's replies as OpenAI chat choices, with the usage in model tokens. */
export async function textChoices(
  policy: TextModel,
  ctxs: readonly TurnContext<unknown>[],
  readCall: CallReader,
  o: ReplyOptions & {
    logprobs: boolean;
    tokenIds: boolean;
    callId: (i: number, text: string) => string;
  },
) {
  const replies = await policy.replies(ctxs, o);
  let completion = 0;
  let prompt = 0;
  const choices = replies.map((r, i) => {
    if (r instanceof Error) throw overflowAs(r, 'messages');
    const trace = (r.action as Action<unknown>).trace ?? {};
    const tokens = trace.tokens ?? [];
    prompt = trace.usage?.prompt ?? 0;
    completion += tokens.length;
    const text = trace.text ?? '';
    const call = readCall(text);
    const message: ChatMessage =
      call === undefined
        ? { role: 'assistant', content: text }
        : {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: o.callId(i, text), type: 'function', function: call }],
          };
    const finish = call !== undefined ? 'tool_calls' : trace.finishReason === 'stop' ? 'stop' : 'length';
    return {
      index: i,
      message,
      finish_reason: finish,
      logprobs: o.logprobs
        ? { content: contentEntries(policy, tokens, trace.logprobs ?? [], o.top ? r.top : []) }
        : null,
      ...(o.tokenIds ? { token_ids: tokens } : {}),
    };
  });
  return { choices, prompt, completion };
}

/** A chat completion of a text policy acting on `ctxs` (one per choice, each with its own rng): the
 * request's sampling, logprobs and return_token_ids (vLLM's prompt_token_ids beside the choices). */
export async function textChatCompletion(
  policy: TextModel,
  ctxs: readonly TurnContext<unknown>[],
  req: SamplingRequest & { logprobs?: unknown; return_token_ids?: unknown },
  o: {
    id: number;
    model: string;
    top: number;
    readCall: CallReader;
    callId: (i: number, text: string) => string;
  },
) {
  const tokenIds = req.return_token_ids === true;
  const r = await textChoices(policy, ctxs, o.readCall, {
    ...samplingOf(req),
    top: o.top,
    logprobs: req.logprobs === true,
    tokenIds,
    callId: o.callId,
  });
  const res = chatCompletion({
    id: o.id,
    model: o.model,
    policy: policy.id,
    choices: r.choices,
    promptWords: r.prompt,
    completionTokens: r.completion,
  });
  return tokenIds ? { ...res, prompt_token_ids: (await policy.prompt(ctxs[0])).tokens } : res;
}

/** Each token's character offset in `text` (the decoded tokens): where its first byte's character starts. */
function charOffsets(policy: TextModel, text: string, ids: readonly number[]): number[] {
  const encoder = new TextEncoder();
  const charAt: number[] = [];
  for (let c = 0; c < text.length; ) {
    const units = (text.codePointAt(c) as number) > 0xffff ? 2 : 1;
    const n = encoder.encode(text.slice(c, c + units)).length;
    for (let b = 0; b < n; b++) charAt.push(c);
    c += units;
  }
  let bytes = 0;
  return ids.map((id) => {
    const at = charAt[bytes] ?? text.length;
    bytes += policy.tokenizer.tokenBytes(id).length;
    return at;
  });
}

/** The ContextOverflow of a prompt as the 400 a server gives a prompt over its context. */
function overflowAs(e: Error, param: string): Error {
  return e instanceof ContextOverflow ? new BadRequest(e.message, param) : e;
}

/** A scored completion: the reply's text, and whether `<|im_end|>` closes it (400 when text follows it). */
export function closedReply(completion: string): { body: string; closed: boolean } {
  const close = completion.indexOf(IM_END);
  if (close >= 0 && close + IM_END.length !== completion.length)
    throw new BadRequest(`the completion goes on after ${IM_END}, the end of the message`, 'prompt');
  return close >= 0
    ? { body: completion.slice(0, close), closed: true }
    : { body: completion, closed: false };
}

/** A /v1/completions answer of a text policy: the echoed completion's tokens scored (with the closing
 * <|im_end|> as <|end|>); with no completion, the reply it generates (up to max_tokens). Legacy shapes:
 * per token its text, log-prob, character offset and {text: log-prob} alternatives. */
export async function textCompletion(
  policy: TextModel,
  ctx: TurnContext<unknown>,
  prompt: string,
  completion: string,
  o: ReplyOptions & { echo: boolean; top: number; generate: boolean },
) {
  const head = prompt.slice(0, prompt.length - completion.length);
  const { body, closed } = closedReply(completion);
  const ids = await policy.tokenizer.encode(body);
  const out = {
    tokens: [] as string[],
    lps: [] as (number | null)[],
    offsets: [] as number[],
    tops: [] as (Record<string, number> | null)[],
    text: '',
    promptTokens: 0,
    generated: 0,
    finish: 'length',
  };
  const alts = (list: readonly { id: number; logprob: number }[] | undefined) => {
    if (o.top === 0 || list === undefined) return null;
    const alt: Record<string, number> = {};
    for (const a of list) {
      const t = tokenOf(policy, a.id).token;
      if (!(t in alt)) alt[t] = floor(a.logprob);
    }
    return alt;
  };
  const push = (token: string, lp: number | null, at: number, top: Record<string, number> | null) => {
    out.tokens.push(token);
    out.lps.push(lp);
    out.offsets.push(at);
    out.tops.push(top);
  };
  if (o.echo) {
    const all = closed ? [...ids, await policy.endToken] : ids;
    let scored: ScoredReply;
    try {
      scored = await policy.scoreReply(ctx, all, o.top);
    } catch (e) {
      throw overflowAs(e as Error, 'prompt');
    }
    out.promptTokens = scored.prompt + all.length;
    push(head, null, 0, null);
    const at = charOffsets(policy, body, ids);
    ids.forEach((id, j) => {
      push(tokenOf(policy, id).token, floor(scored.logprobs[j]), head.length + at[j], alts(scored.top[j]));
    });
    if (closed) {
      const j = ids.length;
      push(IM_END, floor(scored.logprobs[j]), head.length + body.length, alts(scored.top[j]));
      out.finish = 'stop';
    }
    out.text = prompt;
  }
  if (o.generate && completion === '') {
    const [r] = await policy.replies([ctx], o);
    if (r instanceof Error) throw overflowAs(r, 'prompt');
    const trace = r.action.trace ?? {};
    const gen = trace.tokens ?? [];
    const text = trace.text ?? '';
    out.promptTokens = trace.usage?.prompt ?? out.promptTokens;
    out.finish = trace.finishReason === 'stop' ? 'stop' : 'length';
    const at = charOffsets(policy, text, gen);
    gen.forEach((id, j) => {
      // The end token closes the text: listed, with its log-prob, as no characters at its end.
      const end = out.finish === 'stop' && j === gen.length - 1;
      const lp = floor(trace.logprobs?.[j] ?? Number.NEGATIVE_INFINITY);
      push(
        end ? '' : tokenOf(policy, id).token,
        lp,
        out.text.length + (end ? text.length : at[j]),
        alts(r.top[j]),
      );
    });
    out.text += text;
    out.generated = gen.length;
  }
  return out;
}
