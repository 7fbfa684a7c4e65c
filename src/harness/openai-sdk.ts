// traceOpenAI(client, session): records an `openai` SDK client's chat completions in a TraceSession,
// as the proxy would record them over HTTP — log-probs (and a stream's usage) asked for and removed again
// from what the caller gets, streams assembled chunk by chunk as the caller iterates them. The SDK is
// an optional peer dependency: only its types are imported here, and the client is the caller's.
import type OpenAI from 'openai';
import { augmentRequest, StreamAssembler, stripAnswer } from '../serve/proxy-record.ts';
import { asJson, type TraceSession } from './trace.ts';

type Json = Record<string, unknown>;

type Body = OpenAI.Chat.ChatCompletionCreateParams;

/** What is patched: `create` as one signature (the SDK's last overload: either body, any answer). */
interface Completions {
  create(body: Body, options?: unknown): Promise<unknown>;
}

/** The SDK's stream (openai/core/streaming): an async iterable of chunks built from an iterator. */
interface SdkStream {
  controller: AbortController;
  [Symbol.asyncIterator](): AsyncIterator<unknown>;
  constructor: new (
    iterator: () => AsyncIterator<unknown>,
    controller: AbortController,
    client?: unknown,
  ) => unknown;
}

export interface TraceOpenAIOptions {
  /** Ask for log-probs the caller did not ask for (default true). */
  askLogprobs?: boolean;
}

/** Patches `client.chat.completions.create` in place (and returns the client): every call is admitted by
 * the session's budget (TurnBudgetExhausted past it) and recorded when its answer is complete. */
export function traceOpenAI<C extends Pick<OpenAI, 'chat'>>(
  client: C,
  session: TraceSession,
  o: TraceOpenAIOptions = {},
): C {
  const completions: Completions = client.chat.completions;
  const create = completions.create.bind(completions);
  completions.create = async (body: Body, options?: unknown) => {
    const stream = body.stream === true;
    const call = session.begin(asJson(body), stream);
    const { forwarded, asked } = augmentRequest(body, o.askLogprobs !== false);
    let answer: unknown;
    try {
      answer = await create(forwarded as Body, options);
    } catch (e) {
      const err = e as { status?: number; message?: string };
      call.end({ status: typeof err.status === 'number' ? err.status : 0, error: String(err.message ?? e) });
      throw e;
    }
    if (!stream) {
      call.end({ status: 200, response: asJson(answer), asked });
      return stripAnswer(answer as Json, asked);
    }
    const s = answer as SdkStream;
    const assembler = new StreamAssembler();
    const wrapped = async function* () {
      try {
        for await (const chunk of s) {
          assembler.chunk(asJson(chunk));
          const c = chunk as Json;
          // The usage-only chunk the caller did not ask for is not passed on.
          if (asked.usage && Array.isArray(c.choices) && c.choices.length === 0 && c.usage) continue;
          yield stripAnswer(c, asked);
        }
        call.end({ status: 200, response: assembler.result(), asked });
      } catch (e) {
        call.end({
          status: 200,
          response: assembler.result(),
          asked,
          error: `stream broke: ${(e as Error).message}`,
        });
        throw e;
      } finally {
        // The caller stopped iterating early.
        call.end({ status: 200, response: assembler.result(), asked, error: 'the caller left mid-stream' });
      }
    };
    return new s.constructor(() => wrapped(), s.controller, client);
  };
  return client;
}
