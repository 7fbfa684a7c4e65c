// `turnwise serve`: an in-process policy as an OpenAI-compatible chat server (hono on node:http).
//
// The served policy reads the conversation back (serve/conversation.ts: the chat encoding of
// policies/chat.ts, inverted) into the turn context it acts on. It acts with its own
// distribution, its uniform drawn through Rng.replay(seed) from the request's `seed`, so that a client
// sending ctx.rng.uniform53() as the seed (policies/openai.ts) gets the action the policy would take
// in-process, with the same log-prob.
//
// A discrete action is one completion token: `logprobs.content[0]` = {token: the action's name, id: its
// index, logprob: log π(a)}; `top_logprobs` lists the actions by probability (an impossible one as
// −9999, OpenAI's floor, since JSON has no −∞). `n` > 1 draws choice i > 0 from Rng.derive(seed, i).
// `usage` counts whitespace-separated words of the messages, not model tokens. A text policy (the
// transformer, a GGUF model) answers instead with its own generation, token by token, its usage in
// model tokens (serve/text-model.ts). Random maps are served as a list of envs (the served tasks'): the board in the
// last message names the map whose reader reads the conversation.
//
// `stream: true` answers the same completion as server-sent events in OpenAI's (and vLLM's) chunk shape
// — role, then the content or the tool call (id and name, then the arguments) with the token's
// log-probs, then the finish reason, the usage last with stream_options.include_usage — ending with
// `data: [DONE]`. /v1/completions scores: its prompt is a ChatML rendering of the conversation
// (policies/chat.ts renderChatML) with the action's text after the opened assistant turn, closed by
// `<|im_end|>` as the openai: policy sends it, and `echo` + `logprobs` give that text's log-prob log π(a)
// by `text_offset`, as vLLM's echo does; the closing `<|im_end|>` is a token of its own with log-prob 0
// (a discrete action is one token, after which the message ends for certain).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { isDiscrete } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { ChatSpec, EnvView, Policy, TurnContext } from '../core/types.ts';
import {
  actionMessage,
  actionText,
  type ChatMessage,
  type ChatMode,
  completionMessage,
  IM_END,
  parseChatML,
  parseReply,
} from '../policies/chat.ts';
import { GgufPolicy } from '../policies/gguf.ts';
import { textModelOf } from '../policies/text-model.ts';
import { TransformerPolicy } from '../policies/transformer.ts';
import { conversationReader } from './conversation.ts';
import type { Faults } from './faults.ts';
import { type EdgeOptions, guardRoutes, protocolFallbacks } from './guard.ts';
import {
  BadRequest,
  chatCompletion,
  chunks,
  jsonRoutes,
  legacyCompletion,
  serveModels,
  sse,
  wordCount,
} from './protocol.ts';
import {
  closedReply,
  FLOOR,
  hermesCall,
  samplingOf,
  textChatCompletion,
  textCompletion,
} from './text-model.ts';

export interface ServeOptions extends EdgeOptions {
  policy: Policy<unknown, unknown>;
  /** The env the policy acts in (one fixed configuration): its spec, views and oracle; or the envs of
   * the served tasks (random maps: a conversation's board names its map). */
  env: EnvView<unknown> | readonly EnvView<unknown>[];
  faults?: Faults;
  /** Added before every answer. */
  latencyMs?: number;
  /** The env's parameters as configured, listed in /v1/models so that a client of another
   * configuration is refused at connect. */
  envParams?: Record<string, unknown>;
}

/** The ids a served policy answers to: its spec, and the bare kind (`oracle` for `oracle:eps=0.2`). */
export function modelIds(policy: Policy<unknown, unknown>): string[] {
  // A transformer loaded from its checkpoint (id: the path) answers to `transformer` too, a GGUF file
  // given as a bare path to `gguf`.
  const kind =
    policy instanceof TransformerPolicy
      ? 'transformer'
      : policy instanceof GgufPolicy
        ? 'gguf'
        : policy.id.split(':')[0];
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
  temperature?: unknown;
  top_p?: unknown;
  max_tokens?: unknown;
  return_token_ids?: unknown;
}

interface CompletionRequest {
  model?: unknown;
  prompt?: unknown;
  echo?: unknown;
  logprobs?: unknown;
  max_tokens?: unknown;
  seed?: unknown;
  stream?: unknown;
  temperature?: unknown;
  top_p?: unknown;
}

const floor = (lp: number) => Math.max(FLOOR, lp);

/** The hono app and what it holds; `release()` answers every hanging request (for shutdown). */
export function serveApp(o: ServeOptions): { app: Hono; release(): void } {
  const { policy } = o;
  const served = Array.isArray(o.env) ? o.env : [o.env as EnvView<unknown>];
  const spec = served[0].spec;
  const chat: ChatSpec | undefined = typeof spec.actions === 'number' ? spec.chat : undefined;
  if (chat === undefined) throw new Error(`env ${spec.id} has no chat encoding`);
  const readers = served.map((env) => conversationReader(env, chat));
  /** The reader of the env whose board the last message shows (the first, when none does: its 400). */
  const readerOf = (messages: ChatMessage[]) =>
    readers.length === 1 ? readers[0] : (readers.find((r) => r.reads(messages)) ?? readers[0]);
  const textModel = textModelOf(policy);
  const nA = spec.actions as number;
  const ids = modelIds(policy);
  let answered = 0;

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
    const reader = readerOf(parsed.messages);
    const mode = reader.modeOf(parsed.messages);
    const ctx = reader.contextOf(parsed.messages, mode, Rng.replay(seedOf(req.seed)));
    if (textModel !== undefined) {
      const r = await textCompletion(textModel, ctx, prompt, parsed.completion, {
        ...samplingOf({ temperature: req.temperature, top_p: req.top_p }),
        ...(maxTokens > 0 ? { maxTokens } : {}),
        echo: req.echo === true,
        top,
        generate: maxTokens > 0,
      });
      return legacyCompletion({
        id: ++answered,
        model,
        policy: policy.id,
        text: r.text,
        logprobs: wantLogprobs
          ? { tokens: r.tokens, token_logprobs: r.lps, top_logprobs: r.tops, text_offset: r.offsets }
          : null,
        finish: r.finish,
        promptTokens: r.promptTokens,
        completionTokens: r.generated,
      });
    }
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
      const { body, closed } = closedReply(parsed.completion);
      if (body !== '') {
        const reply = parseReply(chat, mode, completionMessage(body));
        const lp = 'action' in reply ? await logProbOf(ctx, reply.action) : Number.NEGATIVE_INFINITY;
        tokens.push(body);
        lps.push(floor(lp));
        offsets.push(head.length);
        tops.push(top > 0 ? await alternatives() : null);
      }
      // The action is one token: the message ends after it for certain.
      if (closed) {
        tokens.push(IM_END);
        lps.push(0);
        offsets.push(head.length + body.length);
        tops.push(top > 0 ? { [IM_END]: 0 } : null);
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
    const words = prompt.split(/\s+/).filter(Boolean).length;
    return legacyCompletion({
      id: ++answered,
      model,
      policy: policy.id,
      text,
      logprobs: wantLogprobs
        ? { tokens, token_logprobs: lps, top_logprobs: tops, text_offset: offsets }
        : null,
      finish,
      promptTokens: words,
      completionTokens: generated,
    });
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
    const reader = readerOf(messages);
    const contexts = Array.from({ length: n }, (_, i) => {
      const rng = Rng.replay(i === 0 ? seed : Rng.derive(seed, i).uniform53());
      const ctx = reader.contextOf(messages, mode, rng);
      if (policy.budgetAware && ctx.turnsLeft === undefined) {
        throw new BadRequest(
          `policy ${policy.id} acts on the turns left, which the conversation does not say: reveal the budget (turnwise mcp --reveal-budget writes "(N turns left)" in every result; turnwise's turn message says "Turn t (N turns left).")`,
          'messages',
        );
      }
      return ctx;
    });
    // The tool calls are numbered by the answers before this one; the completion by this one.
    const before = answered;
    const id = answered + 1;
    if (textModel !== undefined) {
      answered = id;
      return textChatCompletion(textModel, contexts, req, {
        id,
        model,
        top,
        readCall: hermesCall(mode),
        callId: (i) => `call_${before}_${i}`,
      });
    }
    const choices = [];
    for (let i = 0; i < n; i++) {
      const ctx = contexts[i];
      const probs = isDiscrete(policy) ? policy.probs(ctx) : undefined;
      const { action, logp } = await policy.act(ctx);
      if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action >= nA) {
        throw new Error(`policy ${policy.id} returned ${String(action)}, not an action of ${spec.id}`);
      }
      const message = { ...actionMessage(chat, mode, action, ctx.turn), role: 'assistant' as const };
      if (mode === 'tools' && message.tool_calls !== undefined)
        message.tool_calls[0].id = `call_${before}_${i}`;
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
    answered = id;
    return chatCompletion({ id, model, policy: policy.id, choices, promptWords });
  };

  const app = new Hono();
  const routes = jsonRoutes(o);
  guardRoutes(app, o);
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
  protocolFallbacks(app, o.onInternalError);
  return { app, release: routes.release };
}

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
