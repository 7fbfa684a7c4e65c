// The SDK adapters against real servers: each real package (openai, ai + @ai-sdk/openai-compatible,
// @openai/agents) drives a FrozenLake agent through the recording proxy in front of `turnwise serve`,
// traced in-process by its adapter; the adapter's trajectory must equal the proxy's for the same calls
// (observations, actions, log-probs, tokens, usage, finish reasons), and the actions the served policy's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  Agent,
  tool as agentTool,
  type Model,
  OpenAIChatCompletionsModel,
  OpenAIProvider,
  Runner,
  setTraceProcessors,
  setTracingDisabled,
} from '@openai/agents';
import { generateText, jsonSchema, type ModelMessage, streamText, tool, wrapLanguageModel } from 'ai';
import OpenAI from 'openai';
import { budgetAgents, budgetAgentsProvider, traceAgents } from '../../src/harness/agents-sdk.ts';
import { traceAiSdk } from '../../src/harness/ai-sdk.ts';
import { traceOpenAI } from '../../src/harness/openai-sdk.ts';
import { TraceSession, TurnBudgetExhausted } from '../../src/harness/trace.ts';
import {
  chat as chatEncoding,
  envs,
  OraclePolicy,
  type RunningServer,
  startServer,
  type Trajectory,
} from '../../src/index.ts';
import { type RunningProxy, startProxy } from '../../src/serve/proxy.ts';
import { startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';
import { type AssistantMessage, frozenConfig, playFrozenLake } from '../fixtures/frozen-chat.ts';

let server: RunningServer;
let proxy: RunningProxy;
let fixture: Upstream;
let fixtureProxy: RunningProxy;
before(async () => {
  const env = envs.make({ ...frozenConfig, seed: 0 });
  server = await startServer({ policy: new OraclePolicy({ eps: 0.3 }, 'oracle:eps=0.3'), env });
  proxy = await startProxy({ upstream: server.url, store: ':memory:' });
  fixture = await startUpstream();
  fixtureProxy = await startProxy({ upstream: fixture.url, store: ':memory:' });
});
after(async () => {
  await proxy.close();
  await server.close();
  await fixtureProxy.close();
  await fixture.close();
});

/** Everything but wall-clock latency. */
const comparable = (t: Trajectory) =>
  t.turns.map((u) => {
    const { latencyMs: _, ...trace } = u.trace ?? {};
    return {
      t: u.t,
      observation: u.observation,
      action: u.action,
      logp: u.logp,
      reward: u.reward,
      info: u.info,
      trace,
    };
  });

/** The server numbers its tool-call ids across sessions (call_N_0): two runs of one episode compare
 * with each id replaced by the order it first appears in (so a tool result still names its call). */
function renumberCalls(x: unknown): unknown {
  const ids = new Map<string, number>();
  const text = JSON.stringify(x).replace(/"call_\d+_\d+"/g, (id) => {
    if (!ids.has(id)) ids.set(id, ids.size);
    return `"call#${ids.get(id)}"`;
  });
  return JSON.parse(text);
}

async function proxyTrajectory(p: RunningProxy, id: string): Promise<Trajectory> {
  return (await (await fetch(`${p.url}/s/${id}/trajectory`)).json()) as Trajectory;
}

/** The served policy's choice in a tool call: its direction. */
const direction = (a: unknown) =>
  JSON.parse((a as AssistantMessage).tool_calls?.[0].function.arguments ?? '{}').direction as string;

test('openai SDK: traceOpenAI records what the proxy records, actions and log-probs the server gave', async () => {
  let turns = 0;
  for (const seed of [1, 2, 3]) {
    const id = `openai-${seed}`;
    const session = new TraceSession(id);
    const client = traceOpenAI(
      new OpenAI({ baseURL: proxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 }),
      session,
    );
    const actions = await playFrozenLake(seed, 12, async (messages, tools, t) => {
      const r = await client.chat.completions.create({
        model: 'oracle',
        messages: messages as OpenAI.ChatCompletionMessageParam[],
        tools: tools as OpenAI.ChatCompletionTool[],
        seed: 1000 * seed + t,
      });
      // The caller did not ask for log-probs and gets none, though both recorders have them.
      assert.equal(r.choices[0].logprobs, null);
      return r.choices[0].message as AssistantMessage;
    });
    const mine = session.trajectory();
    const theirs = await proxyTrajectory(proxy, id);
    assert.deepEqual(comparable(mine), comparable(theirs));
    assert.deepEqual(mine.outcome, theirs.outcome);
    assert.equal(mine.turns.length, actions.length);
    const names = envs.make({ ...frozenConfig, seed: 0 }).spec.chat?.names ?? [];
    assert.deepEqual(
      mine.turns.map((u) => direction(u.action)),
      actions.map((a) => names[a]),
    );
    // log π(a) of the served policy: one token per action; never 0 for an eps-oracle (every action ≥ eps/4).
    assert.ok(
      mine.turns.every(
        (u) => u.trace?.logprobs?.length === 1 && u.logp === u.trace.logprobs[0] && u.logp < 0,
      ),
    );
    assert.deepEqual(mine.mergeMismatches, []);
    turns += actions.length;
  }
  assert.ok(turns >= 6);
});

test('openai SDK streaming: the traced stream yields what the caller asked for and records the assembled answer', async () => {
  const id = 'openai-stream';
  const session = new TraceSession(id, { budget: 2 });
  const client = traceOpenAI(
    new OpenAI({ baseURL: fixtureProxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 }),
    session,
  );
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];
  const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
  let text = '';
  const seen: unknown[] = [];
  for await (const chunk of stream) {
    seen.push(chunk);
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'reply 1');
  assert.ok(
    seen.every(
      (c) =>
        (c as { choices: unknown[]; usage?: unknown }).choices.length > 0 &&
        (c as { usage?: unknown }).usage === undefined,
    ),
  );
  const tools: OpenAI.ChatCompletionTool[] = [
    { type: 'function', function: { name: 'run', parameters: { type: 'object' } } },
  ];
  const next: OpenAI.ChatCompletionMessageParam[] = [
    ...messages,
    { role: 'assistant', content: text },
    { role: 'user', content: 'again' },
  ];
  const s2 = await client.chat.completions.create({ model: 'm', messages: next, tools, stream: true });
  for await (const _ of s2);
  const mine = session.trajectory();
  assert.deepEqual(comparable(mine), comparable(await proxyTrajectory(fixtureProxy, id)));
  assert.deepEqual(mine.turns[1].action, {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'run', arguments: '{"n":3}' } }],
  });
  assert.deepEqual(mine.turns[0].trace?.logprobs, [-0.25, -0.5, -0.75]);
  // The budget: the third call never leaves the process.
  const before = fixture.received.length;
  await assert.rejects(client.chat.completions.create({ model: 'm', messages }), TurnBudgetExhausted);
  assert.equal(fixture.received.length, before);
  assert.deepEqual(session.trajectory().outcome, {
    success: false,
    return: 0,
    turns: 2,
    firstSuccessTurn: null,
    end: 'truncated',
    failure: 'budget',
  });
});

type OpenAIMessage = {
  role: string;
  content: string | null;
  tool_calls?: AssistantMessage['tool_calls'];
  tool_call_id?: string;
};

/** OpenAI chat messages as the AI SDK's model messages (the provider converts them back). */
function modelMessages(messages: unknown[]): ModelMessage[] {
  return (messages as OpenAIMessage[]).map((m): ModelMessage => {
    if (m.role === 'system') return { role: 'system', content: m.content ?? '' };
    if (m.role === 'user') return { role: 'user', content: m.content ?? '' };
    if (m.role === 'assistant') {
      return {
        role: 'assistant',
        content: (m.tool_calls ?? []).map((c) => ({
          type: 'tool-call' as const,
          toolCallId: c.id,
          toolName: c.function.name,
          input: JSON.parse(c.function.arguments),
        })),
      };
    }
    return {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: m.tool_call_id ?? '',
          toolName: 'move',
          output: { type: 'text', value: m.content ?? '' },
        },
      ],
    };
  });
}

test('AI SDK: the traceAiSdk middleware records what the proxy records, through @ai-sdk/openai-compatible', async () => {
  for (const seed of [4, 5]) {
    const id = `ai-${seed}`;
    const session = new TraceSession(id);
    const provider = createOpenAICompatible({ name: 'turnwise', baseURL: proxy.sessionUrl(id), apiKey: 'x' });
    const model = wrapLanguageModel({ model: provider.chatModel('oracle'), middleware: traceAiSdk(session) });
    const actions = await playFrozenLake(seed, 12, async (messages, tools, t) => {
      const fn = (tools[0] as { function: { name: string; description: string; parameters: object } })
        .function;
      const r = await generateText({
        model,
        messages: modelMessages(messages),
        tools: {
          [fn.name]: tool({ description: fn.description, inputSchema: jsonSchema(fn.parameters as never) }),
        },
        seed: 7000 + 100 * seed + t,
        maxRetries: 0,
      });
      const c = r.toolCalls[0];
      return {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: c.toolCallId,
            type: 'function',
            function: { name: c.toolName, arguments: JSON.stringify(c.input) },
          },
        ],
      };
    });
    const mine = session.trajectory();
    const theirs = await proxyTrajectory(proxy, id);
    assert.equal(mine.turns.length, actions.length);
    assert.deepEqual(comparable(mine), comparable(theirs));
    assert.deepEqual(mine.mergeMismatches, []);
    assert.ok(mine.turns.every((u) => u.logp < 0 && u.trace?.tokens?.length === 1));
  }
});

test('AI SDK streaming: raw chunks assembled into the answer, kept from the caller', async () => {
  const id = 'ai-stream';
  const session = new TraceSession(id);
  const provider = createOpenAICompatible({
    name: 'turnwise',
    baseURL: fixtureProxy.sessionUrl(id),
    apiKey: 'x',
    includeUsage: true,
  });
  const model = wrapLanguageModel({ model: provider.chatModel('m'), middleware: traceAiSdk(session) });
  const r = streamText({ model, messages: [{ role: 'user', content: 'hi' }], maxRetries: 0 });
  let text = '';
  const types = new Set<string>();
  for await (const part of r.fullStream) {
    types.add(part.type);
    if (part.type === 'text-delta') text += part.text;
  }
  assert.equal(text, 'reply 1');
  assert.ok(!types.has('raw'));
  const mine = session.trajectory();
  assert.deepEqual(comparable(mine), comparable(await proxyTrajectory(fixtureProxy, id)));
  assert.deepEqual(mine.turns[0].action, { role: 'assistant', content: 'reply 1' });
  assert.deepEqual(mine.turns[0].trace?.usage, { prompt: 10, completion: 3 });
});

/** A FrozenLake agent of the Agents SDK whose move() tool steps the env in-process, for `horizon` moves
 * (or until the episode ends); `model` is an SDK Model or a name for the Runner's provider. */
function frozenAgent(seed: number, horizon: number, model: Model | string) {
  const e = envs.make({ ...frozenConfig, seed });
  const chat = e.spec.chat;
  if (chat === undefined || e.text === undefined) throw new Error('frozenlake has a chat encoding');
  let obs = e.reset(seed) as number;
  let t = 0;
  let over = false;
  const head = (k: number) => `Turn ${k + 1} (${horizon - k} turns left).`;
  const move = agentTool({
    name: chat.tool,
    description: `Take one action: ${chat.names.join(', ')}.`,
    strict: false,
    parameters: {
      type: 'object' as const,
      properties: { [chat.argument]: { type: 'string', enum: [...chat.names] } },
      required: [chat.argument],
      additionalProperties: true as const,
    },
    execute: async (args) => {
      const r = e.step(chat.names.indexOf((args as Record<string, string>)[chat.argument])) as {
        observation: number;
        reward: number;
        terminated: boolean;
      };
      obs = r.observation;
      t++;
      over = r.terminated || t >= horizon;
      return `${head(t)}\nLast action: reward ${r.reward}.\nObservation:\n${e.text?.(obs)}`;
    },
  });
  const agent = new Agent({
    name: 'frozen',
    instructions: chatEncoding.systemPrompt(chat, 'tools'),
    model,
    modelSettings: { providerData: { logprobs: true, seed: 4242 + seed } },
    tools: [move],
    toolUseBehavior: () =>
      over
        ? { isFinalOutput: true, isInterrupted: undefined, finalOutput: 'done' }
        : { isFinalOutput: false, isInterrupted: undefined },
  });
  return { agent, input: `${head(0)}\nObservation:\n${e.text(obs)}`, moves: () => t };
}

test('Agents SDK: the traceAgents processor records what the proxy records, through OpenAIChatCompletionsModel', async () => {
  let current: TraceSession | undefined;
  // Only this processor: no exporter reaches the network.
  setTraceProcessors([traceAgents(() => current)]);
  setTracingDisabled(false);
  for (const seed of [6, 7]) {
    const id = `agents-${seed}`;
    current = new TraceSession(id);
    const budget = 12;
    const client = new OpenAI({ baseURL: proxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 });
    const a = frozenAgent(seed, budget, new OpenAIChatCompletionsModel(client, 'oracle'));
    await new Runner({ tracingDisabled: false, traceIncludeSensitiveData: true }).run(a.agent, a.input, {
      maxTurns: budget + 1,
    });
    const mine = current.trajectory();
    const theirs = await proxyTrajectory(proxy, id);
    assert.equal(mine.turns.length, a.moves());
    assert.deepEqual(comparable(mine), comparable(theirs));
    assert.deepEqual(mine.mergeMismatches, []);
    assert.ok(mine.turns.every((u) => u.logp < 0 && u.trace?.tokens?.length === 1));
  }
  setTraceProcessors([]);
});

test('Agents SDK budget: budgetAgents refuses the (T+1)-th call in-process, truncated as budget, the trajectory the proxy records under --budget T', async () => {
  let current: TraceSession | undefined;
  setTraceProcessors([traceAgents(() => current)]);
  setTracingDisabled(false);
  const runner = new Runner({ tracingDisabled: false, traceIncludeSensitiveData: true });
  const T = 3;
  // Episodes that last more than T moves (4 and 12 unbudgeted): the agent would make a (T+1)-th call.
  for (const seed of [8, 10]) {
    // In-process: the proxy in front has no budget; only the wrapper can stop the fourth call.
    const id = `agents-budget-${seed}`;
    current = new TraceSession(id, { budget: T });
    const client = new OpenAI({ baseURL: proxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 });
    const mineAgent = frozenAgent(
      seed,
      12,
      budgetAgents(new OpenAIChatCompletionsModel(client, 'oracle'), current),
    );
    await assert.rejects(runner.run(mineAgent.agent, mineAgent.input, { maxTurns: 20 }), (e: unknown) => {
      assert.ok(e instanceof TurnBudgetExhausted, String(e));
      assert.equal(e.code, 'turn_budget_exhausted');
      assert.equal(e.message, `turn budget exhausted: this session allows ${T} model calls`);
      return true;
    });
    const mine = current.trajectory();
    // The proxy saw T calls of this session, none refused: the (T+1)-th never left the process.
    const seen = (await (await fetch(`${proxy.url}/s/${id}/events`)).json()) as { status: number }[];
    assert.deepEqual(
      seen.map((e) => e.status),
      Array(T).fill(200),
    );
    assert.equal(mineAgent.moves(), T);

    // The same episode through a proxy session with budget T and no wrapper: the proxy refuses (400).
    const pid = `agents-proxy-budget-${seed}`;
    const put = await fetch(`${proxy.url}/s/${pid}`, { method: 'PUT', body: JSON.stringify({ budget: T }) });
    assert.equal(put.status, 200);
    current = undefined;
    const viaProxy = new OpenAI({ baseURL: proxy.sessionUrl(pid), apiKey: 'x', maxRetries: 0 });
    const theirsAgent = frozenAgent(seed, 12, new OpenAIChatCompletionsModel(viaProxy, 'oracle'));
    await assert.rejects(
      runner.run(theirsAgent.agent, theirsAgent.input, { maxTurns: 20 }),
      /turn budget exhausted/,
    );
    const refused = (await (await fetch(`${proxy.url}/s/${pid}/events`)).json()) as { refused?: string }[];
    assert.deepEqual(
      refused.map((e) => e.refused ?? null),
      [...Array(T).fill(null), 'turn_budget_exhausted'],
    );
    const theirs = await proxyTrajectory(proxy, pid);
    assert.deepEqual(renumberCalls(comparable(mine)), renumberCalls(comparable(theirs)));
    assert.deepEqual(mine.outcome, theirs.outcome);
    assert.deepEqual(mine.outcome, {
      success: false,
      return: 0,
      turns: T,
      firstSuccessTurn: null,
      end: 'truncated',
      failure: 'budget',
    });
    assert.equal(mine.budget, T);
    assert.equal(theirs.budget, T);
    assert.ok(mine.turns.every((u) => u.logp < 0));
  }
  setTraceProcessors([]);
});

test('Agents SDK budget, streamed, through a Runner modelProvider: budgetAgentsProvider counts only answered calls', async () => {
  const id = 'agents-budget-stream';
  const session = new TraceSession(id, { budget: 2 });
  setTraceProcessors([traceAgents(session)]);
  setTracingDisabled(false);
  const client = new OpenAI({ baseURL: proxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 });
  const provider = budgetAgentsProvider(
    new OpenAIProvider({ openAIClient: client, useResponses: false }),
    session,
  );
  // A failed call does not count: the upstream is down for the first attempt (an unreachable base URL).
  const down = budgetAgents(
    new OpenAIChatCompletionsModel(
      new OpenAI({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'x', maxRetries: 0 }),
      'oracle',
    ),
    session,
  );
  const a0 = frozenAgent(10, 12, down);
  await assert.rejects(
    new Runner().run(a0.agent, a0.input, { stream: true, maxTurns: 20 }).then(async (r) => {
      for await (const _ of r);
      await r.completed;
      if (r.error) throw r.error;
    }),
  );
  const a = frozenAgent(10, 12, 'oracle');
  const runner = new Runner({
    modelProvider: provider,
    tracingDisabled: false,
    traceIncludeSensitiveData: true,
  });
  const r = await runner.run(a.agent, a.input, { stream: true, maxTurns: 20 });
  let events = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of r) events++;
      await r.completed;
      if (r.error) throw r.error;
    })(),
    TurnBudgetExhausted,
  );
  assert.ok(events > 0);
  assert.equal(a.moves(), 2);
  const mine = session.trajectory();
  assert.equal(mine.turns.length, 2);
  assert.deepEqual(mine.outcome, {
    success: false,
    return: 0,
    turns: 2,
    firstSuccessTurn: null,
    end: 'truncated',
    failure: 'budget',
  });
  const seen = (await (await fetch(`${proxy.url}/s/${id}/events`)).json()) as {
    status: number;
    stream: boolean;
  }[];
  assert.deepEqual(
    seen.map((e) => [e.status, e.stream]),
    [
      [200, true],
      [200, true],
    ],
  );
  setTraceProcessors([]);
});

test('Agents SDK: the processor alone observes, never refuses — a call past a budget it cannot stop is recorded as made', async () => {
  const id = 'agents-observe-only';
  const session = new TraceSession(id, { budget: 1 });
  setTraceProcessors([traceAgents(session)]);
  setTracingDisabled(false);
  const client = new OpenAI({ baseURL: proxy.sessionUrl(id), apiKey: 'x', maxRetries: 0 });
  const a = frozenAgent(10, 2, new OpenAIChatCompletionsModel(client, 'oracle'));
  await new Runner({ tracingDisabled: false, traceIncludeSensitiveData: true }).run(a.agent, a.input, {
    maxTurns: 5,
  });
  assert.equal(a.moves(), 2);
  const mine = session.trajectory();
  assert.deepEqual(comparable(mine), comparable(await proxyTrajectory(proxy, id)));
  assert.equal(mine.turns.length, 2);
  assert.equal(mine.outcome.end, 'terminated');
  assert.ok(session.events.every((e) => e.refused === undefined));
  setTraceProcessors([]);
});
