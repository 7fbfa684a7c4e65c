// traceAiSdk(session): a Vercel AI SDK middleware (`wrapLanguageModel({ model, middleware })`) that
// records an OpenAI-compatible chat model's calls (@ai-sdk/openai-compatible, @ai-sdk/openai) in a
// TraceSession, as the proxy records them: the HTTP body the provider sent and the raw answer it got
// (the raw chunks of a stream, asked for with includeRawChunks and kept from the caller unless it asked).
// Log-probs are asked for through the provider's options ({[provider]: {logprobs: true}}, which the
// openai-compatible provider puts in the body). Usage on streams needs the provider created with
// `includeUsage: true` (the provider decides stream_options itself). Types only: `ai` is optional.
import type { LanguageModelMiddleware } from 'ai';
import type { CallEvent } from '../serve/proxy-record.ts';
import { StreamAssembler } from '../serve/proxy-record.ts';
import { asJson, type TraceSession } from './trace.ts';

type Json = Record<string, unknown>;
type Params = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params'];
interface Asked {
  logprobs?: boolean;
  raw?: boolean;
}

export interface TraceAiSdkOptions {
  /** Ask for log-probs the caller did not ask for (default true). */
  askLogprobs?: boolean;
}

/** The body the provider sent, without what the middleware added (as the proxy records a request). */
function requestOf(body: unknown, asked: Asked): unknown {
  const parsed = typeof body === 'string' ? (JSON.parse(body) as unknown) : asJson(body);
  if (asked.logprobs && typeof parsed === 'object' && parsed !== null) delete (parsed as Json).logprobs;
  return parsed;
}

export function traceAiSdk(session: TraceSession, o: TraceAiSdkOptions = {}): LanguageModelMiddleware {
  const askedFor = new WeakMap<object, Asked>();
  return {
    specificationVersion: 'v3',
    transformParams: async ({ params, model, type }) => {
      const provider = model.provider.split('.')[0];
      const options = (params.providerOptions ?? {}) as Record<string, Json>;
      const mine = options[provider] ?? {};
      const asked: Asked = {};
      const p: Params = { ...params };
      if (o.askLogprobs !== false && mine.logprobs === undefined) {
        p.providerOptions = {
          ...options,
          [provider]: { ...mine, logprobs: true },
        } as Params['providerOptions'];
        asked.logprobs = true;
      }
      if (type === 'stream' && params.includeRawChunks !== true) {
        p.includeRawChunks = true;
        asked.raw = true;
      }
      askedFor.set(p, asked);
      return p;
    },
    wrapGenerate: async ({ doGenerate, params }) => {
      const asked = askedFor.get(params) ?? {};
      const call = session.begin({ prompt: asJson(params.prompt) }, false);
      let r: Awaited<ReturnType<typeof doGenerate>>;
      try {
        r = await doGenerate();
      } catch (e) {
        const err = e as { statusCode?: number; message?: string };
        call.end({ status: err.statusCode ?? 0, error: String(err.message ?? e) });
        throw e;
      }
      const body = r.response?.body;
      call.end({
        status: 200,
        request: requestOf(r.request?.body, asked),
        response: typeof body === 'string' ? JSON.parse(body) : asJson(body),
        asked: asked.logprobs ? { logprobs: true } : undefined,
      });
      return r;
    },
    wrapStream: async ({ doStream, params }) => {
      const asked = askedFor.get(params) ?? {};
      const call = session.begin({ prompt: asJson(params.prompt), stream: true }, true);
      let r: Awaited<ReturnType<typeof doStream>>;
      try {
        r = await doStream();
      } catch (e) {
        const err = e as { statusCode?: number; message?: string };
        call.end({ status: err.statusCode ?? 0, error: String(err.message ?? e) });
        throw e;
      }
      const request = requestOf(r.request?.body, asked);
      const assembler = new StreamAssembler();
      const recorded: CallEvent['asked'] = asked.logprobs ? { logprobs: true } : undefined;
      const stream = r.stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            if (part.type === 'raw') {
              assembler.chunk(asJson(part.rawValue));
              if (asked.raw) return;
            }
            controller.enqueue(part);
          },
          flush() {
            call.end({ status: 200, request, response: assembler.result(), asked: recorded });
          },
        }),
      );
      return { ...r, stream };
    },
  };
}
