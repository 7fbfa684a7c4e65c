// `turnwise serve`: an in-process policy as an OpenAI-compatible chat server (hono on node:http).
//
// The served policy reads the conversation back through the chat encoding (policies/chat.ts): the last
// user/tool message is this turn's message — turn index, turns left when revealed, the env's text view —
// and the text view is inverted over the env's finite observation space to recover the observation.
// Earlier (turn message, assistant answer) pairs become the history (observation, action, reward from the
// next turn's feedback; logp 0, which the server cannot know). The policy then acts with its own
// distribution, its uniform drawn through Rng.replay(seed) from the request's `seed`, so that a client
// sending ctx.rng.uniform53() as the seed (policies/openai.ts) gets the action the policy would take
// in-process, with the same log-prob.
//
// A discrete action is one completion token: `logprobs.content[0]` = {token: the action's name, id: its
// index, logprob: log π(a)}; `top_logprobs` lists the actions by probability (an impossible one as
// −9999, OpenAI's floor, since JSON has no −∞). `n` > 1 draws choice i > 0 from Rng.derive(seed, i).
// `usage` counts whitespace-separated words of the messages, not model tokens.
//
// `stream: true` answers the same completion as server-sent events in OpenAI's (and vLLM's) chunk shape
// — role, then the content or the tool call (id and name, then the arguments) with the token's
// log-probs, then the finish reason, the usage last with stream_options.include_usage — ending with
// `data: [DONE]`. /v1/completions scores: its prompt is a ChatML rendering of the conversation
// (policies/chat.ts renderChatML) with the action's text after the opened assistant turn, and `echo` +
// `logprobs` give that text's log-prob log π(a) by `text_offset`, as vLLM's echo does.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { isDiscrete } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { ChatSpec, EnvView, Policy, StepInfo, Turn, TurnContext } from '../core/types.ts';
import {
  actionMessage,
  actionText,
  type ChatMessage,
  type ChatMode,
  completionMessage,
  INVALID_ACTION,
  type ParsedTurnMessage,
  parseChatML,
  parseReply,
  parseTurnMessage,
  systemPrompt,
} from '../policies/chat.ts';
import type { Faults } from './faults.ts';
import {
  BadRequest,
  chatCompletion,
  jsonRoutes,
  protocolFallbacks,
  requireApiKey,
  serveModels,
  sse,
  wordCount,
} from './protocol.ts';

export interface ServeOptions {
  policy: Policy<unknown, unknown>;
  /** The env the policy acts in (one fixed configuration): its spec, views and oracle. */
  env: EnvView<unknown>;
  faults?: Faults;
  /** Added before every answer. */
  latencyMs?: number;
  /** The env's parameters as configured, listed in /v1/models so that a client of another
   * configuration is refused at connect. */
  envParams?: Record<string, unknown>;
  /** When set, every /v1 request must carry `Authorization: Bearer <key>` (else 401). */
  apiKey?: string;
}

/** The ids a served policy answers to: its spec, and the bare kind (`oracle` for `oracle:eps=0.2`). */
export function modelIds(policy: Policy<unknown, unknown>): string[] {
  const kind = policy.id.split(':')[0];
  return kind === policy.id ? [policy.id] : [policy.id, kind];
}

interface ChatRequest {
  model?: unknown;
  messages?: unknown;
  tools?: unknown;
  seed?: unknown;
  n?: unknown;
  logprobs?: unknown;
  top_logprobs?: unknown;
  stream?: unknown;
  stream_options?: unknown;
}

interface CompletionRequest {
  model?: unknown;
  prompt?: unknown;
  echo?: unknown;
  logprobs?: unknown;
  max_tokens?: unknown;
  seed?: unknown;
  stream?: unknown;
}

/** OpenAI's floor for an impossible token: JSON has no −∞. */
const FLOOR = -9999;
const floor = (lp: number) => Math.max(FLOOR, lp);

/** The hono app and what it holds; `release()` answers every hanging request (for shutdown). */
export function serveApp(o: ServeOptions): { app: Hono; release(): void } {
  const { policy, env } = o;
  const spec = env.spec;
  const chat: ChatSpec | undefined = typeof spec.actions === 'number' ? spec.chat : undefined;
  if (chat === undefined) throw new Error(`env ${spec.id} has no chat encoding`);
  if (env.text === undefined || spec.observations === undefined) {
    throw new Error(`env ${spec.id} needs a text view over a finite observation space to be served`);
  }
  // The text view, inverted: FrozenLake's board shows the cell, so each view names one observation.
  const byView = new Map<string, number>();
  for (let s = 0; s < spec.observations; s++) byView.set(env.text(s), s);
  const nA = spec.actions as number;
  const ids = modelIds(policy);
  let served = 0;

  const observationOf = (view: string, where: string): number => {
    const s = byView.get(view);
    if (s === undefined)
      throw new BadRequest(`${where}: the observation is not a view of env ${spec.id} as served`, 'messages');
    return s;
  };

  /** The turns before the last turn message, read back from the conversation. */
  const historyOf = (messages: ChatMessage[], mode: ChatMode): Turn[] => {
    const turns: { index: number; parsed: NonNullable<ReturnType<typeof parseTurnMessage>> }[] = [];
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

  /**
   * The turn context the conversation encodes. The last message is read now; the history only when the
   * policy reads it (most act on the current observation alone), so that a turn's cost does not grow with
   * the conversation — a BadRequest in the history still answers 400, from inside act().
   */
  const contextOf = (messages: ChatMessage[], mode: ChatMode, rng: Rng): TurnContext<unknown> => {
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
  };

  const intIn = (x: unknown, lo: number, hi: number, param: string, fallback: number): number => {
    if (x === undefined || x === null) return fallback;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < lo || x > hi) {
      throw new BadRequest(`${param} must be an integer from ${lo} to ${hi}`, param);
    }
    return x;
  };

  const checkModel = (model: unknown): string => {
    if (typeof model !== 'string' || !ids.includes(model)) {
      throw new BadRequest(
        `model ${JSON.stringify(model)} is not served; models: ${ids.join(', ')}`,
        'model',
      );
    }
    return model;
  };
  const seedOf = (x: unknown) =>
    x === undefined || x === null
      ? Math.floor(Math.random() * 2 ** 53)
      : intIn(x, 0, Number.MAX_SAFE_INTEGER, 'seed', 0);
  const scorer = policy.logProb?.bind(policy);
  /** log π(action | ctx): the policy's logProb, else its probs. */
  const logProbOf = async (ctx: TurnContext<unknown>, action: number): Promise<number> => {
    if (scorer !== undefined) return await scorer(ctx, action);
    if (isDiscrete(policy)) return Math.log(policy.probs(ctx)[action]);
    throw new BadRequest(`policy ${policy.id} cannot score actions`, 'prompt');
  };
  const modeOf = (messages: ChatMessage[]): ChatMode =>
    messages[0]?.role === 'system' && messages[0].content === systemPrompt(chat, 'tools') ? 'tools' : 'text';

  /**
   * /v1/completions over a ChatML rendering (policies/chat.ts renderChatML): with text after the opened
   * assistant turn, that text is scored — the echoed prompt is two tokens, the conversation (log-prob
   * null, as OpenAI gives the first token) and the completion (log π(action), −9999 when it is not an
   * action or has probability 0); with none, the policy acts and its action's text is the completion.
   */
  const completeText = async (req: CompletionRequest) => {
    const model = checkModel(req.model);
    const prompt = Array.isArray(req.prompt) && req.prompt.length === 1 ? req.prompt[0] : req.prompt;
    if (typeof prompt !== 'string') throw new BadRequest('prompt must be one string', 'prompt');
    const parsed = parseChatML(prompt);
    if (parsed === undefined) {
      throw new BadRequest(
        'prompt must be a conversation in ChatML ending in an opened assistant turn (policies/chat.ts renderChatML)',
        'prompt',
      );
    }
    const top = intIn(req.logprobs, 0, 20, 'logprobs', 0);
    const wantLogprobs = req.logprobs !== undefined && req.logprobs !== null;
    const maxTokens = intIn(req.max_tokens, 0, 1_000_000, 'max_tokens', 16);
    const mode = modeOf(parsed.messages);
    const ctx = contextOf(parsed.messages, mode, Rng.replay(seedOf(req.seed)));
    const head = prompt.slice(0, prompt.length - parsed.completion.length);
    const alternatives = async () => {
      const alts: Record<string, number> = {};
      const lps = await Promise.all(Array.from({ length: nA }, (_, a) => logProbOf(ctx, a)));
      const order = lps.map((lp, a) => ({ a, lp })).sort((x, y) => y.lp - x.lp || x.a - y.a);
      for (const { a, lp } of order.slice(0, top)) alts[actionText(chat, mode, a)] = floor(lp);
      return alts;
    };
    const tokens: string[] = [];
    const lps: (number | null)[] = [];
    const offsets: number[] = [];
    const tops: (Record<string, number> | null)[] = [];
    let text = '';
    if (req.echo === true) {
      tokens.push(head);
      lps.push(null);
      offsets.push(0);
      tops.push(null);
      if (parsed.completion !== '') {
        const reply = parseReply(chat, mode, completionMessage(parsed.completion));
        const lp = 'action' in reply ? await logProbOf(ctx, reply.action) : Number.NEGATIVE_INFINITY;
        tokens.push(parsed.completion);
        lps.push(floor(lp));
        offsets.push(head.length);
        tops.push(top > 0 ? await alternatives() : null);
      }
      text = prompt;
    }
    let generated = 0;
    let finish = 'length';
    if (maxTokens > 0) {
      finish = 'stop';
      if (parsed.completion === '') {
        const { action, logp } = await policy.act(ctx);
        const out = actionText(chat, mode, action as number);
        tokens.push(out);
        lps.push(floor(logp));
        offsets.push(text.length);
        tops.push(top > 0 ? await alternatives() : null);
        text += out;
        generated = 1;
      }
    }
    served++;
    const words = prompt.split(/\s+/).filter(Boolean).length;
    return {
      id: `cmpl-${served}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model,
      system_fingerprint: `turnwise:${policy.id}`,
      choices: [
        {
          index: 0,
          text,
          logprobs: wantLogprobs
            ? { tokens, token_logprobs: lps, top_logprobs: tops, text_offset: offsets }
            : null,
          finish_reason: finish,
        },
      ],
      usage: { prompt_tokens: words, completion_tokens: generated, total_tokens: words + generated },
    };
  };

  const complete = async (req: ChatRequest) => {
    const model = checkModel(req.model);
    if (!Array.isArray(req.messages) || req.messages.length === 0) {
      throw new BadRequest('messages must be a non-empty array', 'messages');
    }
    const messages = req.messages as ChatMessage[];
    const tools = Array.isArray(req.tools) ? (req.tools as { function?: { name?: string } }[]) : [];
    const mode: ChatMode = tools.some((t) => t.function?.name === chat.tool) ? 'tools' : 'text';
    const n = intIn(req.n, 1, 16, 'n', 1);
    const top = intIn(req.top_logprobs, 0, 20, 'top_logprobs', 0);
    const seed = seedOf(req.seed);
    const choices = [];
    for (let i = 0; i < n; i++) {
      const rng = Rng.replay(i === 0 ? seed : Rng.derive(seed, i).uniform53());
      const ctx = contextOf(messages, mode, rng);
      if (policy.budgetAware && ctx.turnsLeft === undefined) {
        throw new BadRequest(
          `policy ${policy.id} acts on the turns left; the turn message must say "(N turns left)" (reveal the budget)`,
          'messages',
        );
      }
      const probs = isDiscrete(policy) ? policy.probs(ctx) : undefined;
      const { action, logp } = await policy.act(ctx);
      if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action >= nA) {
        throw new Error(`policy ${policy.id} returned ${String(action)}, not an action of ${spec.id}`);
      }
      const message = { ...actionMessage(chat, mode, action, ctx.turn), role: 'assistant' as const };
      if (mode === 'tools' && message.tool_calls !== undefined)
        message.tool_calls[0].id = `call_${served}_${i}`;
      const entry: Record<string, unknown> = {
        token: chat.names[action],
        logprob: logp,
        id: action,
        bytes: null,
      };
      if (top > 0) {
        const alts =
          probs === undefined
            ? [{ a: action, lp: logp }]
            : Array.from({ length: nA }, (_, a) => ({ a, lp: Math.max(-9999, Math.log(probs[a])) }));
        alts.sort((x, y) => y.lp - x.lp || x.a - y.a);
        entry.top_logprobs = alts
          .slice(0, top)
          .map(({ a, lp }) => ({ token: chat.names[a], logprob: lp, id: a, bytes: null }));
      }
      choices.push({
        index: i,
        message,
        finish_reason: mode === 'tools' ? 'tool_calls' : 'stop',
        logprobs: req.logprobs === true ? { content: [entry] } : null,
      });
    }
    const promptWords = messages.reduce(
      (s, m) => s + (typeof m.content === 'string' ? wordCount(m.content) : 0),
      0,
    );
    return chatCompletion({ id: ++served, model, policy: policy.id, choices, promptWords });
  };

  const app = new Hono();
  const routes = jsonRoutes(o);
  requireApiKey(app, o.apiKey);
  app.get('/health', (c) => c.json({ status: 'ok', policy: policy.id, env: spec.id }));
  serveModels(app, ids, {
    policy: policy.id,
    env: spec.id,
    ...(o.envParams === undefined ? {} : { params: o.envParams }),
    budget_aware: policy.budgetAware,
  });
  app.post(
    '/v1/chat/completions',
    routes.route<ChatRequest>(async (req) => {
      const res = await complete(req);
      if (req.stream !== true) return Response.json(res);
      const usage =
        typeof req.stream_options === 'object' &&
        (req.stream_options as { include_usage?: unknown } | null)?.include_usage === true;
      return sse(chunks(res, usage));
    }),
  );
  app.post(
    '/v1/completions',
    routes.route<CompletionRequest>(async (req) => {
      if (req.stream === true)
        throw new BadRequest('streaming is served on /v1/chat/completions only', 'stream');
      return Response.json(await completeText(req));
    }),
  );
  protocolFallbacks(app);
  return { app, release: routes.release };
}

type Completion = {
  id: string;
  created: number;
  model: string;
  system_fingerprint: string;
  choices: {
    index: number;
    message: ChatMessage;
    finish_reason: string;
    logprobs: { content: Record<string, unknown>[] } | null;
  }[];
  usage: Record<string, number>;
};

/**
 * A chat completion as the chunks of an OpenAI/vLLM stream: per choice the role, then the content (or
 * the tool call: its id and name, then its arguments) carrying the token's log-probs, then an empty delta
 * with the finish reason; with `stream_options.include_usage`, a last chunk with no choices and the usage.
 */
export function chunks(res: Completion, includeUsage: boolean): unknown[] {
  const head = {
    id: res.id,
    object: 'chat.completion.chunk',
    created: res.created,
    model: res.model,
    system_fingerprint: res.system_fingerprint,
  };
  const chunk = (index: number, delta: unknown, logprobs: unknown, finish: string | null) => ({
    ...head,
    choices: [{ index, delta, logprobs, finish_reason: finish }],
  });
  const out: unknown[] = [];
  for (const c of res.choices) {
    const call = c.message.tool_calls?.[0];
    if (call === undefined) {
      out.push(chunk(c.index, { role: 'assistant', content: '' }, null, null));
      out.push(chunk(c.index, { content: c.message.content }, c.logprobs, null));
    } else {
      out.push(
        chunk(
          c.index,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                index: 0,
                id: call.id,
                type: 'function',
                function: { name: call.function.name, arguments: '' },
              },
            ],
          },
          null,
          null,
        ),
      );
      out.push(
        chunk(
          c.index,
          { tool_calls: [{ index: 0, function: { arguments: call.function.arguments } }] },
          c.logprobs,
          null,
        ),
      );
    }
    out.push(chunk(c.index, {}, null, c.finish_reason));
  }
  if (includeUsage) out.push({ ...head, choices: [], usage: res.usage });
  return out;
}

/** Server-sent events: one `data: JSON` event per chunk, then `data: [DONE]`. */
export interface RunningServer {
  /** The API base, http://HOST:PORT/v1. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A served app built elsewhere (serve/tool-serve.ts for tool envs), listened on as serveApp's is. */
export interface ServedApp {
  served: { app: Hono; release(): void };
}

/** Listens on host:port (0 = a free port) and resolves once the socket is bound. */
export function startServer(
  o: (ServeOptions | ServedApp) & { port?: number; host?: string },
): Promise<RunningServer> {
  const { app, release } = 'served' in o ? o.served : serveApp(o);
  const host = o.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: app.fetch, port: o.port ?? 0, hostname: host, createServer },
      (info: AddressInfo) => {
        const hostPart = info.family === 'IPv6' ? `[${info.address}]` : info.address;
        resolve({
          url: `http://${hostPart}:${info.port}/v1`,
          port: info.port,
          close: () =>
            new Promise<void>((done) => {
              release();
              server.close(() => done());
              if ('closeAllConnections' in server) server.closeAllConnections();
            }),
        });
      },
    );
    server.once('error', reject);
  });
}
