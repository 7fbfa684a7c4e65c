// What the recording proxy (serve/proxy.ts) and the SDK adapters (harness/adapters) record, and how a
// session of model calls becomes a turnwise trajectory. Pure functions over plain JSON: the proxy, the
// adapters and the harness all build trajectories here, so the three cannot drift.
//
// One turn per successful chat-completion call. Its observation is what the client added to the
// conversation since the previous call (tool results, user turns): the new prompt must start with the
// previous prompt followed by the previous answer. A prompt that does not (the harness rewrote,
// summarised or truncated its history) is a *merge mismatch*: the turn's observation is then the whole
// prompt, `info.mergeMismatch` is set and the session counts it — the two histories are never spliced.
import type { FailureKind, Outcome, Task, Trajectory, Turn, TurnTrace } from '../core/types.ts';

/** One model request as the proxy saw it, persisted before the answer returns to the client. */
export interface CallEvent {
  /** 0-based position of the call in its session. */
  idx: number;
  /** The API path under /v1, e.g. /chat/completions. */
  path: string;
  /** The request body as the client sent it (before the proxy asked for log-probs). */
  request: unknown;
  /** What the proxy added to the forwarded request (and removed from the answer again). */
  asked?: { logprobs?: boolean; usage?: boolean };
  stream: boolean;
  /** HTTP status the client got (0: the upstream could not be reached). */
  status: number;
  /** The answer: the JSON body, or for a stream the completion assembled from its chunks. */
  response?: unknown;
  /** Wall time from the request's arrival to the answer's last byte, in ms. */
  latencyMs: number;
  /** Immediately preceding failed calls with the same request body (the client's retries). */
  retries: number;
  /** Why the call failed (upstream unreachable, refused by the proxy, a non-2xx status). */
  error?: string;
  /** Set when the proxy itself refused the call. */
  refused?: 'turn_budget_exhausted' | 'session_ended';
}

/** A session's state beside its calls. */
export interface SessionMeta {
  id: string;
  budget?: number;
  task?: Task;
  policy?: string;
  reward?: { value: number; reason?: string; success?: boolean };
  ended: boolean;
  /** The (budget+1)-th call was refused: the episode is truncated. */
  truncated: boolean;
}

/** The parts of an assistant or prompt message that identify it, in one canonical JSON shape. */
interface CanonicalMessage {
  role: string;
  content: string;
  name?: string;
  tool_calls?: { name: string; arguments: string }[];
}

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Content as text: a string, or the text parts of a content array (images count by their url). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => {
      if (!isObject(p)) return '';
      if (typeof p.text === 'string') return p.text;
      const image = p.image_url;
      return isObject(image) && typeof image.url === 'string' ? `[image ${image.url}]` : '';
    })
    .join('');
}

/** A message compared the way two clients echoing it back would agree: `content: null` and "" are the
 * same, tool calls by name and argument text, SDK-specific extras (refusal, annotations) ignored. Tool
 * call ids are left out: they are opaque handles that clients re-mint when they rebuild the history
 * (policies/chat.ts numbers them by turn), and a renamed handle changes nothing the model reads. */
export function canonicalMessage(m: unknown): CanonicalMessage {
  if (!isObject(m)) return { role: '?', content: JSON.stringify(m) };
  const c: CanonicalMessage = { role: String(m.role), content: contentText(m.content) };
  if (typeof m.name === 'string') c.name = m.name;
  if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
    c.tool_calls = m.tool_calls.map((t) => {
      const f = isObject(t) && isObject(t.function) ? t.function : {};
      return {
        name: String(f.name),
        arguments: typeof f.arguments === 'string' ? f.arguments : JSON.stringify(f.arguments ?? {}),
      };
    });
  }
  return c;
}

const same = (a: unknown, b: unknown): boolean =>
  JSON.stringify(canonicalMessage(a)) === JSON.stringify(canonicalMessage(b));

/** The first choice's message of a chat completion, or undefined when the answer has none. */
function firstChoice(response: unknown): Json | undefined {
  if (!isObject(response) || !Array.isArray(response.choices)) return undefined;
  const c = response.choices.find((x) => isObject(x) && (x.index ?? 0) === 0) ?? response.choices[0];
  return isObject(c) && isObject(c.message) ? c : undefined;
}

/** A successful chat-completion call: the ones that become turns. */
export function isTurnCall(e: CallEvent): boolean {
  return (
    e.path.endsWith('/chat/completions') &&
    e.status >= 200 &&
    e.status < 300 &&
    firstChoice(e.response) !== undefined &&
    isObject(e.request) &&
    Array.isArray(e.request.messages)
  );
}

/** The action of a call: the assistant message as the model produced it (role, content, tool calls). */
export function actionOf(message: Json): Json {
  const action: Json = {
    role: 'assistant',
    content: typeof message.content === 'string' ? message.content : null,
  };
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
    action.tool_calls = message.tool_calls.map((t) => {
      const call = t as Json;
      const f = (call.function ?? {}) as Json;
      return { id: call.id, type: 'function', function: { name: f.name, arguments: f.arguments } };
    });
  }
  return action;
}

/** The trace of a call: text, token ids and log-probs (when the upstream gave them), usage, latency. */
export function traceOf(e: CallEvent): TurnTrace {
  const response = e.response as Json;
  const choice = firstChoice(response) as Json;
  const message = choice.message as Json;
  const trace: TurnTrace = {};
  if (typeof message.content === 'string') trace.text = message.content;
  const content = isObject(choice.logprobs) ? choice.logprobs.content : undefined;
  if (Array.isArray(content) && content.length > 0) {
    // −9999 is OpenAI's floor for an impossible token (JSON has no −∞).
    trace.logprobs = content.map((t) => {
      const lp = isObject(t) && typeof t.logprob === 'number' ? t.logprob : Number.NEGATIVE_INFINITY;
      return lp <= -9999 ? Number.NEGATIVE_INFINITY : lp;
    });
    const ids = content.map((t) => (isObject(t) ? (t.id ?? t.token_id) : undefined));
    if (ids.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0))
      trace.tokens = ids as number[];
  }
  if (typeof response.model === 'string') trace.model = response.model;
  if (typeof response.system_fingerprint === 'string') trace.modelVersion = response.system_fingerprint;
  const usage = response.usage;
  if (
    isObject(usage) &&
    typeof usage.prompt_tokens === 'number' &&
    typeof usage.completion_tokens === 'number'
  ) {
    trace.usage = { prompt: usage.prompt_tokens, completion: usage.completion_tokens };
    const details = usage.prompt_tokens_details;
    if (isObject(details) && typeof details.cached_tokens === 'number')
      trace.usage.cached = details.cached_tokens;
  }
  trace.latencyMs = e.latencyMs;
  if (typeof choice.finish_reason === 'string') trace.finishReason = choice.finish_reason;
  if (e.retries > 0) trace.retries = e.retries;
  return trace;
}

export interface SessionTurns {
  turns: Turn[];
  /** Turn indices whose prompt did not extend the previous prompt + answer. */
  mergeMismatches: number[];
}

/** The turns of a session's calls (in call order), with the merge check between consecutive ones. */
export function sessionTurns(events: readonly CallEvent[]): SessionTurns {
  const turns: Turn[] = [];
  const mergeMismatches: number[] = [];
  let expected: unknown[] | undefined;
  for (const e of events) {
    if (!isTurnCall(e)) continue;
    const messages = (e.request as Json).messages as unknown[];
    const message = (firstChoice(e.response) as Json).message as Json;
    const t = turns.length;
    let observation: unknown[] = messages;
    const info: Turn['info'] = {};
    if (expected !== undefined) {
      const extends_ = expected.length <= messages.length && expected.every((m, i) => same(m, messages[i]));
      if (extends_) observation = messages.slice(expected.length);
      else {
        mergeMismatches.push(t);
        info.mergeMismatch = true;
      }
    }
    const trace = traceOf(e);
    const logp = trace.logprobs === undefined ? 0 : trace.logprobs.reduce((s, x) => s + x, 0);
    turns.push({ t, observation, action: actionOf(message), reward: 0, logp, info, trace });
    expected = [...messages, message];
  }
  return { turns, mergeMismatches };
}

/** A session as a turnwise trajectory. Rewards: the session's reward on the last turn (0 elsewhere);
 * success = the reward says so, or value > 0. The end: budget refusal → truncated (`budget`); no turn
 * or an error → error; otherwise terminated, a failure `wrong-answer` unless it succeeded. */
export function sessionTrajectory(
  meta: SessionMeta,
  events: readonly CallEvent[],
  o: { error?: string } = {},
): Trajectory & { mergeMismatches: number[] } {
  const { turns, mergeMismatches } = sessionTurns(events);
  const reward = meta.reward;
  const value = reward?.value ?? 0;
  if (turns.length > 0) turns[turns.length - 1].reward = value;
  const success = reward === undefined ? false : (reward.success ?? value > 0);
  let outcome: Outcome;
  const base = { return: turns.length > 0 ? value : 0, turns: turns.length };
  if (o.error !== undefined) {
    outcome = {
      ...base,
      success: false,
      firstSuccessTurn: null,
      end: 'error',
      failure: 'error',
      error: o.error,
    };
  } else if (meta.truncated && !success) {
    outcome = { ...base, success: false, firstSuccessTurn: null, end: 'truncated', failure: 'budget' };
  } else {
    const failure: FailureKind | null = success ? null : 'wrong-answer';
    outcome = {
      ...base,
      success,
      firstSuccessTurn: success ? Math.max(1, turns.length) : null,
      end: 'terminated',
      failure,
    };
  }
  return {
    id: meta.id,
    task: meta.task ?? { env: 'proxy', params: {}, seed: 0 },
    policy: meta.policy ?? 'proxy',
    budget: meta.budget ?? Math.max(1, turns.length),
    revealBudget: false,
    turns,
    outcome,
    mergeMismatches,
  };
}

/** The chat request as forwarded: log-probs asked for (unless `askLogprobs` is false or the client asked
 * itself) and, on a stream, usage; `asked` says what was added, for `stripAnswer`. */
export function augmentRequest(
  request: unknown,
  askLogprobs: boolean,
): { forwarded: unknown; asked: NonNullable<CallEvent['asked']> } {
  const asked: NonNullable<CallEvent['asked']> = {};
  if (!isObject(request)) return { forwarded: request, asked };
  const body: Json = { ...request };
  if (askLogprobs && body.logprobs !== true) {
    body.logprobs = true;
    asked.logprobs = true;
  }
  const so = isObject(body.stream_options) ? body.stream_options : {};
  if (body.stream === true && so.include_usage !== true) {
    body.stream_options = { ...so, include_usage: true };
    asked.usage = true;
  }
  return { forwarded: body, asked };
}

/** A completion (or a stream chunk) without what the proxy asked for and the client did not (a copy). */
export function stripAnswer(body: Json, asked: CallEvent['asked']): Json {
  const out = { ...body };
  if (asked?.logprobs && Array.isArray(out.choices)) {
    out.choices = out.choices.map((c) => (isObject(c) && 'logprobs' in c ? { ...c, logprobs: null } : c));
  }
  if (asked?.usage) delete out.usage;
  return out;
}

/** The assembled completion of an SSE chat stream: what a non-streaming call would have returned. */
export class StreamAssembler {
  private buffer = '';
  private readonly choices = new Map<
    number,
    {
      content: string;
      hasContent: boolean;
      tools: Json[];
      logprobs: unknown[];
      finish: unknown;
      role: string;
    }
  >();
  private meta: Json = {};
  private usage: unknown;
  done = false;

  /** Feeds decoded text; complete `data:` events are parsed as they arrive. */
  push(text: string): void {
    this.buffer += text;
    let nl = this.buffer.indexOf('\n');
    while (nl >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      this.line(line);
      nl = this.buffer.indexOf('\n');
    }
  }

  private line(line: string): void {
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trim();
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    try {
      this.chunk(JSON.parse(data));
    } catch {
      // Not JSON: a keep-alive or a comment.
    }
  }

  /** Feeds one parsed chunk (an SDK's stream yields these). */
  chunk(chunk: unknown): void {
    if (!isObject(chunk)) return;
    for (const k of ['id', 'model', 'created', 'system_fingerprint'])
      if (chunk[k] !== undefined) this.meta[k] = chunk[k];
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) return;
    for (const c of chunk.choices) {
      if (!isObject(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = this.choices.get(index);
      if (acc === undefined) {
        acc = { content: '', hasContent: false, tools: [], logprobs: [], finish: null, role: 'assistant' };
        this.choices.set(index, acc);
      }
      const delta = isObject(c.delta) ? c.delta : {};
      if (typeof delta.content === 'string') {
        acc.content += delta.content;
        acc.hasContent = true;
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const d of delta.tool_calls) {
          if (!isObject(d)) continue;
          const i = typeof d.index === 'number' ? d.index : acc.tools.length;
          const f = isObject(d.function) ? d.function : {};
          if (acc.tools[i] === undefined)
            acc.tools[i] = { id: d.id, type: 'function', function: { name: '', arguments: '' } };
          const t = acc.tools[i];
          if (d.id !== undefined) t.id = d.id;
          const tf = t.function as Json;
          if (typeof f.name === 'string') tf.name = `${tf.name}${f.name}`;
          if (typeof f.arguments === 'string') tf.arguments = `${tf.arguments}${f.arguments}`;
        }
      }
      if (isObject(c.logprobs) && Array.isArray(c.logprobs.content)) acc.logprobs.push(...c.logprobs.content);
      if (c.finish_reason !== undefined && c.finish_reason !== null) acc.finish = c.finish_reason;
    }
  }

  result(): Json {
    const choices = [...this.choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => {
        const message: Json = { role: c.role, content: c.hasContent ? c.content : null };
        if (c.tools.length > 0) message.tool_calls = c.tools.filter(Boolean);
        return {
          index,
          message,
          finish_reason: c.finish,
          logprobs: c.logprobs.length > 0 ? { content: c.logprobs } : null,
        };
      });
    const r: Json = { ...this.meta, object: 'chat.completion', choices };
    if (this.usage !== undefined) r.usage = this.usage;
    return r;
  }
}
