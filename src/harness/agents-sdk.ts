// traceAgents(session): a trace processor for the OpenAI Agents SDK (@openai/agents: addTraceProcessor /
// setTraceProcessors). Every generation span — one model call of OpenAIChatCompletionsModel, whose span
// data holds the messages sent and the chat completion received — becomes one call event of a
// TraceSession, so the trajectory is the proxy's for the same calls. A processor observes and cannot
// change requests: ask for log-probs with modelSettings.providerData {logprobs: true}, and bound the
// turns with the Runner's maxTurns or the proxy's --budget (a processor cannot refuse a call).
// Responses-API models trace only a response id: use OpenAIChatCompletionsModel (or the proxy).
// Types only: the SDK is an optional peer dependency.
import type { TracingProcessor } from '@openai/agents';
import { asJson, type OpenCall, type TraceSession } from './trace.ts';

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
      if (session !== undefined) open.set(span.spanId, session.begin(undefined, false));
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
