// Hand-built trajectories for the rewards tests, and a fake judge: a real HTTP server on loopback that
// answers in the shape of OpenAI's chat completions API (GET /v1/models: {"object":"list","data":[{"id",
// "object":"model"}]}; POST /v1/chat/completions: {"id","object":"chat.completion","created","model",
// "choices":[{"index","message":{"role":"assistant","content","refusal"},"finish_reason","logprobs"}],
// "usage":{"prompt_tokens","completion_tokens","total_tokens"}}), each answer computed by the test from
// the request's messages.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Outcome, Task, Trajectory, Turn } from '../../src/core/types.ts';

export const LAKE: Task = { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 };

/** A trajectory of `actions` (turn t's observation `observations[t]`, default t) ending as `end` says. */
export function trajectory(
  id: string,
  actions: readonly unknown[],
  end: { success?: boolean; failure?: Outcome['failure']; task?: Task; observations?: unknown[] } = {},
  turn: (t: number) => Partial<Turn> = () => ({}),
): Trajectory {
  const success = end.success ?? false;
  const n = actions.length;
  return {
    id,
    task: end.task ?? LAKE,
    policy: 'hand',
    budget: 100,
    revealBudget: false,
    turns: actions.map((action, t) => ({
      t,
      observation: end.observations?.[t] ?? t,
      action,
      reward: success && t === n - 1 ? 1 : 0,
      logp: 0,
      info: {},
      ...turn(t),
    })),
    outcome: {
      success,
      return: success ? 1 : 0,
      turns: n,
      firstSuccessTurn: success ? n : null,
      end: success || end.failure != null ? 'terminated' : 'truncated',
      failure: success ? null : (end.failure ?? 'budget'),
    },
  };
}

/** A recorded chat turn's action: an assistant message, with tool calls `name(args)`. */
export const assistant = (content: string | null, calls: [string, Record<string, unknown>][] = []) => ({
  role: 'assistant',
  content,
  ...(calls.length === 0
    ? {}
    : {
        tool_calls: calls.map(([name, args], i) => ({
          id: `c${i}`,
          type: 'function',
          function: { name, arguments: JSON.stringify(args) },
        })),
      }),
});

type Json = Record<string, unknown>;
export interface Answer {
  content?: string | null;
  refusal?: string;
  finish_reason?: string;
}

export interface FakeJudge {
  url: string;
  /** The chat request bodies received, in order. */
  seen: Json[];
  close(): Promise<void>;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => resolve(s));
  });

/** A judge server for `model` whose answer to a request is `answer(its user message, the messages)`;
 * usage: 10 prompt tokens, 2 completion tokens an answer. */
export async function fakeJudge(
  model: string,
  answer: (user: string, messages: { role: string; content: string }[]) => Answer,
): Promise<FakeJudge> {
  const seen: Json[] = [];
  let n = 0;
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/v1/models')
      return send(200, {
        object: 'list',
        data: [{ id: model, object: 'model', created: 0, owned_by: 'test' }],
      });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
      return send(404, { error: { message: 'not found', type: 'invalid_request_error' } });
    const body = JSON.parse(await read(req)) as Json;
    seen.push(body);
    const messages = body.messages as { role: string; content: string }[];
    const user = messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const a = answer(user, messages);
    send(200, {
      id: `chatcmpl-${++n}`,
      object: 'chat.completion',
      created: 0,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: a.content ?? null, refusal: a.refusal ?? null },
          finish_reason: a.finish_reason ?? 'stop',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

const SUPPORTED = ['prompt', 'chosen', 'rejected', 'completion', 'messages', 'label'];

/** What TRL checks of a conversational preference example (trl/data_utils.py apply_chat_template and
 * is_conversational); throws what it would raise. */
export function trlPreference(example: Record<string, unknown>): void {
  const keys = Object.keys(example)
    .filter((k) => SUPPORTED.includes(k))
    .sort();
  assert.deepEqual(keys, ['chosen', 'prompt', 'rejected'], 'KeyError: Invalid keys in the example');
  for (const k of keys) {
    const messages = example[k] as Record<string, unknown>[];
    assert.ok(Array.isArray(messages) && messages.length > 0, `${k} is a non-empty list of messages`);
    for (const m of messages) {
      assert.ok(['system', 'user', 'assistant', 'tool'].includes(m.role as string), `${k}: role ${m.role}`);
      assert.equal(typeof m.content, 'string', `${k}: every message has a content`);
    }
  }
  const prompt = example.prompt as { role: string }[];
  assert.equal(prompt.at(-1)?.role, 'user', 'ValueError: Invalid role in the last message');
}
