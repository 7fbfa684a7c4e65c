// `turnwise serve --env frozenlake` for an outside agent that knows nothing of turnwise's turn messages
// (issue 21 §1.6): its tools come from `turnwise mcp` (driven by the MCP SDK's client over stdio) and its
// model is `turnwise serve`, reached with the official openai package. The board goes to serve as MCP
// gave it — in a user message or a tool message, verbatim, as content parts, inside the agent's words —
// and each answer is the one the served policy gives in-process for that observation, with the turns
// left MCP reveals (or, when the last message does not say them, those an earlier one said less the turns
// since). A message with no board is a 400 that shows what was expected, with an example.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import OpenAI from 'openai';
import {
  chat,
  envConfig,
  envs,
  OraclePolicy,
  type Policy,
  Rng,
  type RunningServer,
  startServer,
  type Trajectory,
  type TurnContext,
} from '../../src/index.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-text-view-'));
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/** `turnwise mcp` for one frozenlake task, over stdio, as an agent harness starts it. */
async function mcp(args: string[]): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--env', 'frozenlake', ...args],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'outside-agent', version: '1.0.0' });
  closers.push(() => client.close());
  await client.connect(transport);
  return client;
}
const callTool = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;
const statusOf = (r: CallToolResult) =>
  r.structuredContent as { observation: number; done: boolean; turnsLeft?: number };

async function serve(policy: Policy<unknown, unknown>, slippery: boolean) {
  const env = envs.make({ ...envConfig('frozenlake', { map: '4x4', slippery }), seed: 0 });
  const server: RunningServer = await startServer({ policy, env });
  closers.push(() => server.close());
  return { env, server, client: new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 }) };
}

const move = (env: { spec: { chat?: Parameters<typeof chat.chatTool>[0] } }) =>
  chat.chatTool(env.spec.chat as Parameters<typeof chat.chatTool>[0]);
const observeTool = {
  type: 'function' as const,
  function: { name: 'observe', description: 'the board', parameters: { type: 'object', properties: {} } },
};

test('MCP results in tool messages, the first board in a user message: each answer is the in-process one, with the turns left MCP reveals', async () => {
  const oracle = new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2');
  const { env, client } = await serve(oracle, true);
  const store = join(dir, 'a.jsonl');
  const tools = await mcp(['--task-seed', '4', '--budget', '8', '--reveal-budget', '--store', store]);
  const first = await callTool(tools, 'observe');
  let status = statusOf(first);
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are an agent. Use the tools.' },
    { role: 'user', content: textOf(first) },
  ];
  const served: number[] = [];
  for (let t = 0; !status.done; t++) {
    const seed = 1000 + 7919 * t;
    const r = await client.chat.completions.create({
      model: 'oracle',
      messages,
      tools: [move(env), observeTool],
      seed,
      logprobs: true,
      top_logprobs: 4,
    });
    const message = r.choices[0].message;
    const call = message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    const direction = JSON.parse(call.function.arguments).direction as string;
    // In process: the same policy on the observation and turns left MCP reported, the uniform of `seed`.
    const ctx: TurnContext<unknown> = {
      observation: status.observation,
      history: [],
      turn: t,
      turnsLeft: status.turnsLeft,
      rng: Rng.replay(seed),
      env,
    };
    const local = oracle.act(ctx);
    assert.equal(direction, env.spec.chat?.names[local.action], `turn ${t}`);
    const entry = r.choices[0].logprobs?.content?.[0];
    assert.equal(entry?.logprob, local.logp, `turn ${t}`);
    const probs = oracle.probs(ctx);
    assert.deepEqual(
      Object.fromEntries((entry?.top_logprobs ?? []).map((e) => [e.token, e.logprob])),
      Object.fromEntries(env.spec.chat?.names.map((n, a) => [n, Math.max(-9999, Math.log(probs[a]))]) ?? []),
    );
    served.push(local.action);
    const result = await callTool(tools, 'move', { direction });
    status = statusOf(result);
    messages.push(message as OpenAI.ChatCompletionMessageParam, {
      role: 'tool',
      tool_call_id: call.id,
      content: textOf(result),
    });
  }
  await tools.close();
  const [episode] = readFileSync(store, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);
  assert.deepEqual(
    episode.turns.map((u) => u.action),
    served,
  );
  assert.ok(served.length >= 1);
});

test('boards in user messages (content parts, inside the agent’s words), text mode: the greedy oracle, told the turns left, reaches the goal in the 6 turns of its budget', async () => {
  const { client } = await serve(new OraclePolicy({}, 'oracle'), false);
  const tools = await mcp(['--task-seed', '0', '--budget', '6', '--reveal-budget']);
  let result = await callTool(tools, 'observe');
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'Answer with <answer>Direction</answer>.' },
  ];
  let turns = 0;
  while (!statusOf(result).done) {
    messages.push({
      role: 'user',
      content: [{ type: 'text', text: `The board now:\n${textOf(result)}\nWhere do you go?` }],
    });
    const r = await client.chat.completions.create({ model: 'oracle', messages, seed: turns });
    const answer = r.choices[0].message.content ?? '';
    messages.push({ role: 'assistant', content: answer });
    const direction = /<answer>(\w+)<\/answer>/.exec(answer)?.[1];
    result = await callTool(tools, 'move', { direction });
    turns++;
  }
  assert.match(textOf(result), /Episode over: success after 6 turn\(s\)/);
  assert.equal(turns, 6);
});

test('the turns left, the turn index and the history are read from the session: observe calls are no turns', async () => {
  const seen: TurnContext<unknown>[] = [];
  const oracle = new OraclePolicy({}, 'oracle');
  const recorder: Policy<unknown, unknown> = {
    id: 'oracle',
    budgetAware: true,
    act: (ctx) => {
      seen.push({ ...ctx, history: ctx.history.map((h) => ({ ...h })) });
      return oracle.act(ctx as TurnContext<unknown>);
    },
  };
  const { env, server } = await serve(recorder, false);
  const board = (o: number) => env.text?.(o) as string;
  const call = (id: string, name: string, args: string) => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
  });
  const messages = [
    { role: 'system', content: 'Play.' },
    { role: 'user', content: 'Go.' },
    call('c0', 'observe', '{}'),
    { role: 'tool', tool_call_id: 'c0', content: `${board(0)}\n(10 turns left)` },
    call('c1', 'move', '{"direction":"Right"}'),
    { role: 'tool', tool_call_id: 'c1', content: `${board(1)}\n(9 turns left)` },
    call('c2', 'move', '{"direction":"Up"}'),
    {
      role: 'tool',
      tool_call_id: 'c2',
      content: `${board(1)}\nLast action invalid: the move hit the wall; nothing moved.\n(8 turns left)`,
    },
    call('c3', 'move', '{"direction":"Right"}'),
    { role: 'user', content: board(2) },
  ];
  const r = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'oracle', messages, tools: [move(env), observeTool], seed: 5 }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  const [ctx] = seen;
  assert.equal(ctx.observation, 2);
  assert.equal(ctx.turn, 3);
  assert.equal(ctx.turnsLeft, 7, 'the 8 said at turn 2, less one turn since');
  assert.deepEqual(
    ctx.history.map((h) => [h.t, h.observation, h.action, h.info.valid ?? true]),
    [
      [0, 0, 2, true],
      [1, 1, 3, false],
      [2, 1, 2, true],
    ],
  );
});

test('a last message without a board: 400 saying what was expected, with an example', async () => {
  const { env, server } = await serve(new OraclePolicy({ horizon: 20 }, 'oracle:horizon=20'), false);
  const ask = async (messages: unknown[], policyModel = 'oracle') => {
    const r = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: policyModel, messages }),
    });
    return { status: r.status, message: ((await r.json()) as { error: { message: string } }).error.message };
  };
  const r = await ask([{ role: 'user', content: 'Where is the goal?' }]);
  assert.equal(r.status, 400);
  assert.ok(r.message.startsWith('messages[0] has no observation of env frozenlake: '), r.message);
  assert.ok(r.message.includes(JSON.stringify(env.text?.(0))), r.message);
  assert.match(r.message, /as turnwise mcp's observe gives it/);
  const a = await ask([
    { role: 'user', content: env.text?.(0) },
    { role: 'assistant', content: '<answer>Down</answer>' },
  ]);
  assert.equal(a.status, 400);
  assert.match(a.message, /^messages\[1\] is a message of role "assistant": the last message must be/);
});

test('a budget-aware policy and a conversation that never says the turns left: 400 naming where they come from', async () => {
  const { env, server } = await serve(new OraclePolicy({}, 'oracle'), false);
  const r = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'oracle', messages: [{ role: 'user', content: env.text?.(0) }] }),
  });
  assert.equal(r.status, 400);
  assert.match(
    ((await r.json()) as { error: { message: string } }).error.message,
    /^policy oracle acts on the turns left, which the conversation does not say: reveal the budget \(turnwise mcp --reveal-budget/,
  );
});
