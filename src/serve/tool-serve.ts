// `turnwise serve` for tool envs (sql, code, tools, search, web): a scripted policy (policies/scripted.ts) or
// a text model (the transformer, a GGUF model: policies/text-model.ts) as an OpenAI-compatible chat
// server that an agent drives exactly as it would drive a real model, its tools served by `turnwise mcp`
// (serve/mcp.ts).
//
// A tool env's state is no function of one message (the discrete path, serve/openai.ts, inverts the text
// view instead), so each request is replayed: the conversation's first user message is the served task's
// first observation, as the agent got it from MCP `observe` (the texts of every served task are indexed
// at start); that task's episode is opened the way `turnwise mcp` opens it (same env, budget, reveal and
// episode seeds: the CLI composes it) and every assistant tool call of the conversation is played on it
// as an MCP call. A tool message is checked against the episode's answer to the call it answers — the
// agent forwards MCP results verbatim — so that a conversation this server did not produce, or one
// from another task, is a 400 naming the message, never a silent guess. The policy then acts from the
// very context the in-process rollout would hand it, with its uniform from Rng.replay(seed) (as the
// discrete path does), and the action is answered as one tool call (name + JSON arguments, which the MCP
// server takes as they are) with `logprobs.content[0].logprob` = log π(a); its `token` is the call as
// JSON (a tool call has no token id), `top_logprobs` the scripted view's gold call and menu by log π.
// A text model answers instead with its generation for that turn (serve/text-model.ts): a tool call
// with per-token log-probs, top_logprobs, ids and usage in model tokens, or — when the text is no call —
// the text as content (finish stop or length). Such a reply is a turn too: an assistant message without
// tool calls is replayed as that text (McpEpisode.reply: the invalid action the in-process rollout
// takes), answered by the user message after it, which the agent fills with the MCP result.
// The seed is the uniform itself (seed · 2^-53, Rng.replay): a client should send well-spread seeds (a
// hash, or ctx.rng.uniform53() as the openai: policy does); seeds counted 0, 1, 2 all draw ≈ 0.
//
// Tasks with the same first observation (two sql seeds can ask the same question of different rows) are
// all replayed; the tool results rule out the wrong ones. When more than one is left, the answer is
// served only if every one of them gives the same action and log-prob (the scripted policies act on the
// question, the schema and the calls taken, which such tasks share); otherwise the request is a 400.
import { Hono } from 'hono';
import { Rng } from '../core/rng.ts';
import type { Action, EnvSpec, Policy, Task, TurnContext } from '../core/types.ts';
import { textModelOf } from '../policies/text-model.ts';
import type { Faults } from './faults.ts';
import { type EdgeOptions, guardRoutes, protocolFallbacks } from './guard.ts';
import type { McpEpisode } from './mcp.ts';
import { modelIds } from './openai.ts';
import {
  BadRequest,
  chatCompletion,
  chunks,
  errorBody,
  jsonRoutes,
  serveModels,
  sse,
  wordCount,
} from './protocol.ts';
import { envCall, textCallId, textChatCompletion, writtenText } from './text-model.ts';

export interface ToolServeOptions extends EdgeOptions {
  /** A policy of the env's tool calls (oracle, oracle:eps=ε, random: policies/scripted.ts), or a
   * text model (the transformer, a GGUF model). */
  policy: Policy<unknown, unknown>;
  /** The served tasks: the conversations this server can answer. */
  tasks: readonly Task[];
  /**
   * Opens a task's episode exactly as `turnwise mcp` serves it to the agent (env, budget, reveal, episode
   * seeds); `watch` must receive every context the episode machine hands its policy (`watchPolicy`).
   */
  open(task: Task, watch: (ctx: TurnContext<unknown>) => void): Promise<McpEpisode> | McpEpisode;
  faults?: Faults;
  latencyMs?: number;
  /** The env's parameters as configured, listed in /v1/models. */
  envParams?: Record<string, unknown>;
}

/** The policy with every context it is asked to act on reported to `watch` first. */
export function watchPolicy<O, A>(policy: Policy<O, A>, watch: (ctx: TurnContext<O>) => void): Policy<O, A> {
  return {
    id: policy.id,
    budgetAware: policy.budgetAware,
    act(ctx) {
      watch(ctx);
      return policy.act(ctx);
    },
  };
}

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Message content as text: a string, or the text parts of a content array. */
function contentText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('');
}

/** An MCP result as an agent forwards it: its text parts, one per line. */
function resultText(r: { content?: unknown }): string {
  return Array.isArray(r.content)
    ? r.content.map((c) => (isObject(c) && typeof c.text === 'string' ? c.text : '')).join('\n')
    : '';
}

/** A turn of the conversation — a tool call, or a reply written as `text` (a text policy's: played as
 * the model wrote it) — where it is, and the message that answered it (if any). */
interface Step {
  name: string;
  args: Record<string, unknown>;
  text?: string;
  where: string;
  answer?: { where: string; text: string };
}

/** The conversation after the first user message as the env turns it made, each with its answer: a
 * tool call's is the tool message of its id, a reply without one's the user message after it. */
function stepsOf(messages: readonly unknown[], from: number, spec: EnvSpec): Step[] {
  const steps: Step[] = [];
  const byId = new Map<string, Step>();
  let reply: Step | undefined;
  for (let i = from + 1; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) throw new BadRequest(`messages[${i}] is not a message object`, 'messages');
    if (m.role === 'assistant' && !(Array.isArray(m.tool_calls) && m.tool_calls.length > 0)) {
      reply = { name: '', args: {}, text: contentText(m.content) ?? '', where: `messages[${i}]` };
      steps.push(reply);
    } else if (m.role === 'user' && reply !== undefined) {
      reply.answer = { where: `messages[${i}]`, text: contentText(m.content) ?? '' };
      reply = undefined;
    } else if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      m.tool_calls.forEach((call, j) => {
        const where = `messages[${i}].tool_calls[${j}]`;
        const f = isObject(call) && isObject(call.function) ? call.function : undefined;
        if (f === undefined || typeof f.name !== 'string')
          throw new BadRequest(`${where} has no function name`, 'messages');
        let args: unknown = f.arguments ?? {};
        if (typeof args === 'string') {
          try {
            args = args.trim() === '' ? {} : JSON.parse(args);
          } catch {
            throw new BadRequest(`${where}.function.arguments is not JSON`, 'messages');
          }
        }
        if (!isObject(args))
          throw new BadRequest(`${where}.function.arguments is not a JSON object`, 'messages');
        const step: Step = { name: f.name, args, where };
        const written = isObject(call) ? writtenText(spec, call.id, step) : undefined;
        if (written !== undefined) step.text = written;
        steps.push(step);
        if (isObject(call) && typeof call.id === 'string') byId.set(call.id, step);
      });
    } else if (m.role === 'tool') {
      const id = m.tool_call_id;
      const step = typeof id === 'string' ? byId.get(id) : undefined;
      if (step === undefined || step.answer !== undefined) {
        throw new BadRequest(
          `messages[${i}]: tool_call_id ${JSON.stringify(id)} answers no earlier tool call (or one answered already)`,
          'messages',
        );
      }
      step.answer = { where: `messages[${i}]`, text: contentText(m.content) ?? '' };
    }
  }
  return steps;
}

/** Where the replay of one task ended: the context to act on, or why there is none. */
type Replayed =
  | { task: Task; ctx: TurnContext<unknown>; episode: McpEpisode }
  | { task: Task; mismatch: string };

const firstDifference = (want: string, got: string): string => {
  const a = want.split('\n');
  const b = got.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const show = (s: string | undefined) => (s === undefined ? 'nothing' : JSON.stringify(s.slice(0, 120)));
  return `line ${i + 1} is ${show(b[i])}, the env answered ${show(a[i])}`;
};

/** Same action (tool call by name and arguments) and log-prob. */
const answerKey = (a: Action<unknown>) => JSON.stringify([a.action, a.logp]);

/** The hono app for a tool env; `release()` answers every hanging request (for shutdown). */
export async function toolServeApp(o: ToolServeOptions): Promise<{ app: Hono; release(): void }> {
  const { policy } = o;
  if (o.tasks.length === 0) throw new Error('tool serve: no tasks to serve');
  const envId = o.tasks[0].env;
  const textModel = textModelOf(policy);
  const ids = modelIds(policy);
  let served = 0;

  // The index: each served task's first observation as `observe` gives it.
  const byFirst = new Map<string, Task[]>();
  let envSpec: EnvSpec | undefined;
  for (const task of o.tasks) {
    const episode = await o.open(task, () => {});
    envSpec ??= episode.spec;
    const text = resultText(await episode.call('observe', {}));
    await episode.finish();
    byFirst.set(text, [...(byFirst.get(text) ?? []), task]);
  }
  const spec = envSpec as EnvSpec;
  const seeds = o.tasks.map((t) => t.seed);
  const servedTasks =
    seeds.length <= 8
      ? `seeds ${seeds.join(', ')}`
      : `${seeds.length} tasks, seeds ${seeds[0]}…${seeds.at(-1)}`;

  /** Plays the conversation's calls on the task's episode; the episode is left open on success and
   * finished (its env closed) on every other path. */
  const replay = async (task: Task, steps: readonly Step[]): Promise<Replayed> => {
    let ctx: TurnContext<unknown> | undefined;
    const episode = await o.open(task, (c) => {
      ctx = c;
    });
    let mismatch: string | undefined;
    try {
      for (const step of steps) {
        if (episode.done) {
          mismatch = `${step.where}: the episode was over before this call`;
          break;
        }
        const played =
          step.text === undefined ? episode.call(step.name, step.args) : episode.reply(step.text);
        const text = resultText(await played);
        if (step.answer !== undefined && step.answer.text !== text) {
          mismatch = `${step.answer.where}: ${firstDifference(text, step.answer.text)}`;
          break;
        }
      }
      // A read-only call: it waits for the episode to be ready (the first context) when no call came.
      if (mismatch === undefined) await episode.call('observe', {});
      if (mismatch === undefined && (episode.done || ctx === undefined)) {
        const out = episode.result?.outcome;
        const why =
          out?.end === 'truncated'
            ? `its turn budget (${out.turns}) is spent: serve with the harness's --budget`
            : 'there is no action to take';
        mismatch = `the episode is over after ${steps.at(-1)?.where ?? 'no call'}; ${why}`;
      }
    } catch (e) {
      await episode.finish();
      throw e;
    }
    if (mismatch === undefined && ctx !== undefined) return { task, ctx, episode };
    await episode.finish();
    return { task, mismatch: mismatch as string };
  };

  const intIn = (x: unknown, lo: number, hi: number, param: string, fallback: number): number => {
    if (x === undefined || x === null) return fallback;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < lo || x > hi)
      throw new BadRequest(`${param} must be an integer from ${lo} to ${hi}`, param);
    return x;
  };

  /** log π of the actions the policy could take, best first: the scripted view's gold action and menu. */
  const alternatives = async (ctx: TurnContext<unknown>, top: number, chosen: Action<unknown>) => {
    const view = ctx.env.scripted?.();
    const score = policy.logProb?.bind(policy);
    if (view === undefined || score === undefined) return [{ action: chosen.action, lp: chosen.logp }];
    const seen = new Set<string>();
    const out: { action: unknown; lp: number }[] = [];
    for (const a of [view.goldAction(ctx.history), ...view.validActions(ctx.history)]) {
      const k = JSON.stringify(a);
      if (seen.has(k)) continue;
      seen.add(k);
      out.push({ action: a, lp: Math.max(-9999, await score(ctx, a)) });
    }
    return out.sort((x, y) => y.lp - x.lp).slice(0, top);
  };

  const ambiguous = (live: readonly { task: Task }[]) =>
    new BadRequest(
      `the conversation fits ${envId} tasks ${live.map((r) => r.task.seed).join(', ')} (same first observation, same tool results), on which policy ${policy.id} acts differently; serve fewer tasks`,
      'messages',
    );

  const asCall = (action: unknown, where: string): { name: string; arguments: string } => {
    if (!isObject(action) || typeof action.name !== 'string')
      throw new Error(`policy ${policy.id} returned ${JSON.stringify(action)}, not a tool call (${where})`);
    return { name: action.name, arguments: JSON.stringify(action.arguments ?? {}) };
  };

  const complete = async (req: Json) => {
    const model = req.model;
    if (typeof model !== 'string' || !ids.includes(model))
      throw new BadRequest(
        `model ${JSON.stringify(model)} is not served; models: ${ids.join(', ')}`,
        'model',
      );
    if (!Array.isArray(req.messages) || req.messages.length === 0)
      throw new BadRequest('messages must be a non-empty array', 'messages');
    const messages = req.messages as unknown[];
    const n = intIn(req.n, 1, 16, 'n', 1);
    const top = intIn(req.top_logprobs, 0, 20, 'top_logprobs', 0);
    const seed =
      req.seed === undefined || req.seed === null
        ? Math.floor(Math.random() * 2 ** 53)
        : intIn(req.seed, 0, Number.MAX_SAFE_INTEGER, 'seed', 0);
    const u = messages.findIndex((m) => isObject(m) && m.role === 'user');
    if (u < 0)
      throw new BadRequest('no user message: the first one must be the task’s first observation', 'messages');
    const first = contentText((messages[u] as Json).content) ?? '';
    const candidates = byFirst.get(first);
    if (candidates === undefined) {
      throw new BadRequest(
        `messages[${u}]: the first user message is not the first observation of a served ${envId} task (${servedTasks}); send the text of MCP observe verbatim`,
        'messages',
      );
    }
    const steps = stepsOf(messages, u, spec);
    const settled = await Promise.allSettled(candidates.map((task) => replay(task, steps)));
    const replays = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const live = replays.filter((r): r is Extract<Replayed, { ctx: unknown }> => 'ctx' in r);
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed !== undefined) {
      await Promise.all(live.map((r) => r.episode.finish()));
      throw failed.reason;
    }
    try {
      if (live.length === 0) {
        const why = replays.map((r) => ('mismatch' in r ? r.mismatch : '')).filter((x) => x !== '');
        const each =
          candidates.length === 1
            ? why[0]
            : replays.map((r, i) => `task ${r.task.seed}: ${why[i]}`).join('; ');
        throw new BadRequest(
          `the conversation is not an episode of ${envId} task ${candidates.map((t) => t.seed).join(' or ')}: ${each}`,
          'messages',
        );
      }
      const uniformOf = (i: number) => (i === 0 ? seed : Rng.derive(seed, i).uniform53());
      if (textModel !== undefined) {
        const ctx = live[0].ctx;
        // Tasks alike so far (same first observation, same results) give the model the same prompt.
        const promptOf = async (c: TurnContext<unknown>) => {
          try {
            return (await textModel.prompt(c)).tokens.join(',');
          } catch {
            return 'overflow';
          }
        };
        if (new Set(await Promise.all(live.map((r) => promptOf(r.ctx)))).size > 1) throw ambiguous(live);
        const ctxs = Array.from({ length: n }, (_, i) => ({ ...ctx, rng: Rng.replay(uniformOf(i)) }));
        return await textChatCompletion(textModel, ctxs, req, {
          id: ++served,
          model,
          top,
          readCall: envCall(spec),
          callId: (i, text) => textCallId(ctx.turn, i, text, spec),
        });
      }
      const tools = Array.isArray(req.tools)
        ? new Set(req.tools.map((t) => (isObject(t) && isObject(t.function) ? t.function.name : undefined)))
        : undefined;
      const choices = [];
      for (let i = 0; i < n; i++) {
        const uniform = uniformOf(i);
        const answers = await Promise.all(
          live.map(async (r) => policy.act({ ...r.ctx, rng: Rng.replay(uniform) })),
        );
        if (new Set(answers.map(answerKey)).size > 1) throw ambiguous(live);
        const chosen = answers[0];
        const call = asCall(chosen.action, `turn ${live[0].ctx.turn}`);
        if (tools !== undefined && !tools.has(call.name))
          throw new BadRequest(
            `tools: the policy calls ${call.name}, which the request does not offer`,
            'tools',
          );
        // One "token" per action, as the discrete path answers: the tool call as its JSON.
        const entry: Json = {
          token: JSON.stringify(chosen.action),
          logprob: Math.max(-9999, chosen.logp),
          bytes: null,
        };
        if (top > 0) {
          entry.top_logprobs = (await alternatives(live[0].ctx, top, chosen)).map((a) => ({
            token: JSON.stringify(a.action),
            logprob: a.lp,
            bytes: null,
          }));
        }
        choices.push({
          index: i,
          message: {
            role: 'assistant' as const,
            content: null,
            tool_calls: [{ id: `call_${live[0].ctx.turn}_${i}`, type: 'function' as const, function: call }],
          },
          finish_reason: 'tool_calls',
          logprobs: req.logprobs === true ? { content: [entry] } : null,
        });
      }
      const promptWords = messages.reduce<number>(
        (s, m) => s + (isObject(m) ? wordCount(contentText(m.content) ?? '') : 0),
        0,
      );
      return chatCompletion({ id: ++served, model, policy: policy.id, choices, promptWords });
    } finally {
      await Promise.all(live.map((r) => r.episode.finish()));
    }
  };

  const app = new Hono();
  const routes = jsonRoutes(o);
  guardRoutes(app, o);
  app.get('/health', (c) => c.json({ status: 'ok', policy: policy.id, env: envId, tasks: seeds.length }));
  serveModels(app, ids, {
    policy: policy.id,
    env: envId,
    ...(o.envParams === undefined ? {} : { params: o.envParams }),
    tasks: seeds,
    budget_aware: policy.budgetAware,
  });
  app.post(
    '/v1/chat/completions',
    routes.route<Json>(async (req) => {
      const res = await complete(req);
      if (req.stream !== true) return Response.json(res);
      const usage = isObject(req.stream_options) && req.stream_options.include_usage === true;
      return sse(chunks(res, usage));
    }),
  );
  app.post('/v1/completions', (c) =>
    c.json(
      errorBody(
        `/v1/completions is not served for tool env ${envId}; use /v1/chat/completions`,
        'invalid_request_error',
      ),
      404,
    ),
  );
  protocolFallbacks(app, o.onInternalError);
  return { app, release: routes.release };
}
