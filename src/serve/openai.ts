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
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { isDiscrete } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { ChatSpec, EnvView, Policy, StepInfo, Turn, TurnContext } from '../core/types.ts';
import {
  actionMessage,
  type ChatMessage,
  type ChatMode,
  INVALID_ACTION,
  parseReply,
  parseTurnMessage,
} from '../policies/chat.ts';
import { FaultInjector, type Faults } from './faults.ts';

export interface ServeOptions {
  policy: Policy<unknown, unknown>;
  /** The env the policy acts in (one fixed configuration): its spec, views and oracle. */
  env: EnvView<unknown>;
  faults?: Faults;
  /** Added before every answer. */
  latencyMs?: number;
}

/** The ids a served policy answers to: its spec, and the bare kind (`oracle` for `oracle:eps=0.2`). */
export function modelIds(policy: Policy<unknown, unknown>): string[] {
  const kind = policy.id.split(':')[0];
  return kind === policy.id ? [policy.id] : [policy.id, kind];
}

class BadRequest extends Error {
  readonly param: string | undefined;

  constructor(message: string, param?: string) {
    super(message);
    this.param = param;
  }
}

const errorBody = (message: string, type: string, param?: string) => ({
  error: { message, type, param: param ?? null, code: null },
});

interface ChatRequest {
  model?: unknown;
  messages?: unknown;
  tools?: unknown;
  seed?: unknown;
  n?: unknown;
  logprobs?: unknown;
  top_logprobs?: unknown;
  stream?: unknown;
}

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
  const injector = o.faults === undefined ? undefined : new FaultInjector(o.faults);
  const hanging = new Set<() => void>();
  let served = 0;

  const observationOf = (view: string, where: string): number => {
    const s = byView.get(view);
    if (s === undefined)
      throw new BadRequest(`${where}: the observation is not a view of env ${spec.id} as served`, 'messages');
    return s;
  };

  /** The turn context the conversation encodes. */
  const contextOf = (messages: ChatMessage[], mode: ChatMode, rng: Rng): TurnContext<unknown> => {
    const turns: { index: number; parsed: NonNullable<ReturnType<typeof parseTurnMessage>> }[] = [];
    messages.forEach((m, index) => {
      if ((m.role === 'user' || m.role === 'tool') && typeof m.content === 'string') {
        const parsed = parseTurnMessage(m.content);
        if (parsed !== undefined) turns.push({ index, parsed });
      }
    });
    const current = turns[turns.length - 1];
    if (current === undefined || current.index !== messages.length - 1) {
      throw new BadRequest(
        'the last message must be a turn message (see `turnwise serve --help`)',
        'messages',
      );
    }
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
    const p = current.parsed;
    return {
      observation: observationOf(p.view, `messages[${current.index}]`),
      history,
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

  const complete = async (req: ChatRequest) => {
    if (typeof req.model !== 'string' || !ids.includes(req.model)) {
      throw new BadRequest(
        `model ${JSON.stringify(req.model)} is not served; models: ${ids.join(', ')}`,
        'model',
      );
    }
    if (req.stream === true)
      throw new BadRequest('streaming is not supported by turnwise serve yet', 'stream');
    if (!Array.isArray(req.messages) || req.messages.length === 0) {
      throw new BadRequest('messages must be a non-empty array', 'messages');
    }
    const messages = req.messages as ChatMessage[];
    const tools = Array.isArray(req.tools) ? (req.tools as { function?: { name?: string } }[]) : [];
    const mode: ChatMode = tools.some((t) => t.function?.name === chat.tool) ? 'tools' : 'text';
    const n = intIn(req.n, 1, 16, 'n', 1);
    const top = intIn(req.top_logprobs, 0, 20, 'top_logprobs', 0);
    const seed =
      req.seed === undefined || req.seed === null
        ? Math.floor(Math.random() * 2 ** 53)
        : intIn(req.seed, 0, Number.MAX_SAFE_INTEGER, 'seed', 0);
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
    const words = messages.reduce(
      (s, m) => s + (typeof m.content === 'string' ? m.content.split(/\s+/).filter(Boolean).length : 0),
      0,
    );
    served++;
    return {
      id: `chatcmpl-${served}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      system_fingerprint: `turnwise:${policy.id}`,
      choices,
      usage: { prompt_tokens: words, completion_tokens: n, total_tokens: words + n },
    };
  };

  const app = new Hono();
  app.get('/health', (c) => c.json({ status: 'ok', policy: policy.id, env: spec.id }));
  app.get('/v1/models', (c) =>
    c.json({
      object: 'list',
      data: ids.map((id) => ({
        id,
        object: 'model',
        created: 0,
        owned_by: 'turnwise',
        turnwise: { policy: policy.id, env: spec.id, budget_aware: policy.budgetAware },
      })),
    }),
  );
  app.post('/v1/chat/completions', async (c: Context) => {
    if (o.latencyMs !== undefined && o.latencyMs > 0) await new Promise((r) => setTimeout(r, o.latencyMs));
    const text = await c.req.text();
    const fault = injector?.draw(text);
    if (fault === '429') {
      return c.json(errorBody('rate limited (injected fault)', 'rate_limit_error'), 429, {
        'retry-after': '1',
        'retry-after-ms': '10',
      });
    }
    if (fault === '500') return c.json(errorBody('internal error (injected fault)', 'server_error'), 500);
    if (fault === 'hang') {
      // Never answers on its own: the client must time out. Shutdown (or the client leaving) ends it.
      await new Promise<void>((resolve) => {
        hanging.add(resolve);
        c.req.raw.signal.addEventListener('abort', () => resolve());
      });
      return c.json(errorBody('the server is shutting down', 'server_error'), 503);
    }
    if (fault === 'malformed') return c.body('{"id":"chatcmpl-', 200, { 'content-type': 'application/json' });
    let req: ChatRequest;
    try {
      req = JSON.parse(text) as ChatRequest;
    } catch {
      return c.json(errorBody('the body is not JSON', 'invalid_request_error'), 400);
    }
    try {
      return c.json(await complete(req));
    } catch (e) {
      if (e instanceof BadRequest) return c.json(errorBody(e.message, 'invalid_request_error', e.param), 400);
      throw e;
    }
  });
  app.notFound((c) =>
    c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error'), 404),
  );
  app.onError((e, c) => c.json(errorBody(e.message, 'server_error'), 500));
  return {
    app,
    release: () => {
      for (const resolve of hanging) resolve();
      hanging.clear();
    },
  };
}

export interface RunningServer {
  /** The API base, http://HOST:PORT/v1. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (0 = a free port) and resolves once the socket is bound. */
export function startServer(o: ServeOptions & { port?: number; host?: string }): Promise<RunningServer> {
  const { app, release } = serveApp(o);
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
