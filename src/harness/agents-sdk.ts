// traceAgents(session): a trace processor for the OpenAI Agents SDK (@openai/agents: addTraceProcessor /
// setTraceProcessors). Every generation span — one model call of OpenAIChatCompletionsModel, whose span
// data holds the messages sent and the chat completion received — becomes one call event of a
// TraceSession, so the trajectory is the proxy's for the same calls. A processor observes and cannot
// change requests: ask for log-probs with modelSettings.providerData {logprobs: true}.
// Responses-API models trace only a response id: use OpenAIChatCompletionsModel (or the proxy).
//
// budgetAgents(model, session) / budgetAgentsProvider(provider, session): the turn budget in-process,
// which a processor cannot enforce. The SDK's `Model` (getResponse / getStreamedResponse) wrapped so that
// the session's (T+1)-th model call throws TurnBudgetExhausted (`turn_budget_exhausted`) before it
// reaches the model, the session truncated (failure kind `budget`) exactly as the proxy does it: a call
// counts against T while in flight and, once answered, if it succeeded; a failed call does not. The
// count is the session's, shared by every wrapper of it (an agent and its handoffs' models). The refused
// call is recorded with the ModelRequest the SDK gave (it never became a chat-completions body).
// Types only: the SDK is an optional peer dependency.
import type {
  Model,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelRetryAdvice,
  ModelRetryAdviceRequest,
  StreamEvent,
  TracingProcessor,
} from '@openai/agents';
import { asJson, type OpenCall, type TraceSession, TurnBudgetExhausted } from './trace.ts';

type Json = Record<string, unknown>;

/** Which session a span belongs to: one session for everything, or chosen by trace id. */
export type SessionOf = TraceSession | ((traceId: string) => TraceSession | undefined);

export function traceAgents(sessions: SessionOf): TracingProcessor {
  const pick = typeof sessions === 'function' ? sessions : () => sessions;
  const open = new Map<string, OpenCall>();
  const data = (span: { spanData: unknown }) => span.spanData as Json;
  return {
    async onTraceStart() {},
    async onTraceEnd() {},
    async onSpanStart(span) {
      if (data(span).type !== 'generation') return;
      const session = pick(span.traceId);
      // Admitted when the call starts, so calls keep their order; the request is known at the end.
      // Observed, not admitted: the call is made whatever the budget (budgetAgents enforces it).
      if (session !== undefined) open.set(span.spanId, session.begin(undefined, false, undefined, false));
    },
    async onSpanEnd(span) {
      const call = open.get(span.spanId);
      if (call === undefined) return;
      open.delete(span.spanId);
      const d = data(span);
      const output = Array.isArray(d.output) ? d.output[0] : undefined;
      const request = { model: d.model, messages: asJson(d.input) };
      const error = span.error === null ? undefined : String(span.error.message);
      call.end({
        status: error === undefined && output !== undefined ? 200 : 0,
        request,
        response: asJson(output),
        ...(error === undefined ? {} : { error }),
      });
    },
    async shutdown() {},
    async forceFlush() {},
  };
}

/** The session a model call belongs to: one session, or the current one (undefined: no budget). */
export type CurrentSession = TraceSession | (() => TraceSession | undefined);

/** Calls of a session admitted by budgetAgents: answered successfully, and in flight. */
interface Count {
  ok: number;
  inflight: number;
}
const counts = new WeakMap<TraceSession, Count>();

/** What the refused call asked for, as plain JSON. */
const refusedRequest = (r: ModelRequest): unknown =>
  asJson({ systemInstructions: r.systemInstructions, input: r.input, tools: r.tools });

/** Admits a call of `session` or throws its refusal; the returned function settles the call. */
function admit(session: TraceSession | undefined, r: ModelRequest, stream: boolean): (ok: boolean) => void {
  if (session === undefined) return () => {};
  let c = counts.get(session);
  if (c === undefined) {
    c = { ok: 0, inflight: 0 };
    counts.set(session, c);
  }
  const budget = session.meta.budget;
  if (budget !== undefined && c.ok + c.inflight >= budget) throw session.refuse(refusedRequest(r), stream);
  const count = c;
  count.inflight++;
  let open = true;
  return (ok) => {
    if (!open) return;
    open = false;
    count.inflight--;
    if (ok) count.ok++;
  };
}

/** `model` under the session's turn budget (TraceSession's `budget`). */
export function budgetAgents(model: Model, session: CurrentSession): Model {
  const pick = typeof session === 'function' ? session : () => session;
  const wrapped: Model = {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      const settle = admit(pick(), request, false);
      try {
        const r = await model.getResponse(request);
        settle(true);
        return r;
      } catch (e) {
        settle(false);
        throw e;
      }
    },
    async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
      const settle = admit(pick(), request, true);
      let done = false;
      try {
        for await (const event of model.getStreamedResponse(request)) {
          if (event.type === 'response_done') done = true;
          yield event;
        }
      } finally {
        // A stream that broke, or that its reader left, before the response was done is a failed call.
        settle(done);
      }
    },
  };
  // The refusal is final: no retry policy may replay a call the budget refused.
  wrapped.getRetryAdvice = (
    args: ModelRetryAdviceRequest,
  ): ModelRetryAdvice | undefined | Promise<ModelRetryAdvice | undefined> =>
    args.error instanceof TurnBudgetExhausted
      ? { suggested: false, reason: args.error.message }
      : model.getRetryAdvice?.(args);
  return wrapped;
}

/** Every model of `provider` under the session's turn budget (for a Runner's `modelProvider`). */
export function budgetAgentsProvider(provider: ModelProvider, session: CurrentSession): ModelProvider {
  return {
    async getModel(name?: string): Promise<Model> {
      return budgetAgents(await provider.getModel(name), session);
    },
  };
}
