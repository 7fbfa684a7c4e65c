// `turnwise serve` for a tool env (serve/tool-serve.ts): a scripted sql policy behind real HTTP, driven by
// the official openai SDK as an agent drives a model, its tool calls played on the task's MCP episode
// (opened as `turnwise mcp` opens it). Served equals in-process: the actions and log-probs are those of
// the in-process rollout loop whose policy draws the same uniforms (Rng.replay of each request's seed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { Rng } from '../../src/core/rng.ts';
import type { Policy, Task, ToolCall, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { mcpEpisodeOpener } from '../../src/harness/mcp-episode.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { episodeSeeds, runEpisode } from '../../src/rollout/episode.ts';
import { parseFaults } from '../../src/serve/faults.ts';
import { type RunningServer, startServer } from '../../src/serve/openai.ts';
import { toolServeApp } from '../../src/serve/tool-serve.ts';
import { firstSpawned } from '../cli/run.ts';

const BUDGET = 8;
const EPS = 0.3;
const config = envConfig('sql', {});
const tasks = makeTasks(config, 3, 0);
const open = mcpEpisodeOpener(envs.make, BUDGET, false);
const oracle = makePolicy(`oracle:eps=${EPS}`, envs.spec(tasks[0]));
let server: RunningServer;
let client: OpenAI;

/** Two sql seeds whose first observations are equal (the same question of other rows). */
async function twins(): Promise<[Task, Task]> {
  const seen = new Map<string, Task>();
  for (const task of makeTasks(config, 400, 100)) {
    const e = await open(task, () => {});
    const r = await e.call('observe', {});
    await e.finish();
    const text = (r.content[0] as { text: string }).text;
    const other = seen.get(text);
    if (other !== undefined) return [other, task];
    seen.set(text, task);
  }
  throw new Error('no two sql tasks with the same first observation in seeds 100–499');
}
let pair: [Task, Task];

before(async () => {
  pair = await twins();
  const served = await toolServeApp({ policy: oracle, tasks: [...tasks, ...pair], open });
  server = await startServer({ served });
  client = new OpenAI({ baseURL: server.url, apiKey: 'none', maxRetries: 0 });
});
after(() => server?.close());

/** Well-spread request seeds (a seed is the policy's uniform · 2^53). */
const seedsFor = (task: Task) => {
  const rng = Rng.derive(11, task.seed);
  return Array.from({ length: BUDGET }, () => rng.uniform53());
};

type Message = OpenAI.ChatCompletionMessageParam;

/** The agent's loop (examples/sql-agent.ts in miniature): observe, then model call → MCP call. */
async function agent(task: Task, seeds: readonly number[], model = client) {
  const episode = await open(task, () => {});
  const tools: OpenAI.ChatCompletionTool[] = episode.tools
    .filter((t) => t.name !== 'observe')
    .map((t) => ({ type: 'function', function: { name: t.name, parameters: t.inputSchema } }));
  const text = (r: Awaited<ReturnType<typeof episode.call>>) =>
    (r.content as { text: string }[]).map((c) => c.text).join('\n');
  const messages: Message[] = [
    { role: 'system', content: 'Answer with the tools.' },
    { role: 'user', content: text(await episode.call('observe', {})) },
  ];
  const calls: ToolCall[] = [];
  const logps: number[] = [];
  for (let t = 0; !episode.done; t++) {
    const r = await model.chat.completions.create({
      model: 'oracle',
      messages,
      tools,
      seed: seeds[t],
      logprobs: true,
    });
    const message = r.choices[0].message;
    const call = message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function', 'one function call');
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    const action = { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
    calls.push(action);
    logps.push(r.choices[0].logprobs?.content?.[0].logprob as number);
    messages.push(message);
    const result = await episode.call(action.name, action.arguments);
    messages.push({ role: 'tool', tool_call_id: call.id, content: text(result) });
  }
  return { calls, logps, messages, trajectory: episode.result as Trajectory };
}

/** The in-process rollout loop with the same uniforms: turn t acts with Rng.replay(seeds[t]). */
async function inProcess(task: Task, seeds: readonly number[]): Promise<Trajectory> {
  const replayed: Policy<unknown, unknown> = {
    id: oracle.id,
    budgetAware: false,
    act: (ctx) => oracle.act({ ...ctx, rng: Rng.replay(seeds[ctx.turn]) }),
  };
  const env = envs.make(task);
  const { envSeed, rng } = episodeSeeds(task.seed, task.seed, 0);
  const t = await runEpisode(env, replayed, {
    id: 'x',
    task,
    budget: BUDGET,
    revealBudget: false,
    envSeed,
    rng,
  });
  await env.close?.();
  return t as Trajectory;
}

const strip = (t: Trajectory) => t.turns.map((x) => ({ a: x.action, r: x.reward, o: x.observation }));

test('served equals in-process: the same tool calls and log-probs, the same MCP episode', async () => {
  let detours = 0;
  for (const task of tasks) {
    const seeds = seedsFor(task);
    const served = await agent(task, seeds);
    const ref = await inProcess(task, seeds);
    assert.deepEqual(
      served.calls,
      ref.turns.map((x) => x.action),
      `task ${task.seed}: actions`,
    );
    assert.deepEqual(
      served.logps,
      ref.turns.map((x) => x.logp),
      `task ${task.seed}: log-probs`,
    );
    assert.deepEqual(strip(served.trajectory), strip(ref), `task ${task.seed}: the episode`);
    assert.deepEqual(served.trajectory.outcome, ref.outcome);
    detours += ref.turns.filter((x) => x.logp !== Math.log(1 - EPS)).length;
    // Deterministic: the same seeds, the same answers.
    assert.deepEqual((await agent(task, seeds)).calls, served.calls);
  }
  assert.ok(detours > 0, 'eps=0.3 took a detour somewhere (else this compares gold paths only)');
});

test('through injected 429s and 500s the retried requests get the same answers', async () => {
  const statuses: number[] = [];
  const faulty = await startServer({
    served: await toolServeApp({
      policy: oracle,
      tasks,
      open,
      faults: parseFaults('429=0.3,500=0.2,seed=3'),
    }),
  });
  try {
    const retrying = new OpenAI({
      baseURL: faulty.url,
      apiKey: 'none',
      maxRetries: 20,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        statuses.push(res.status);
        return res;
      },
    });
    const task = tasks[0];
    const seeds = seedsFor(task);
    assert.deepEqual(
      (await agent(task, seeds, retrying)).calls,
      (await inProcess(task, seeds)).turns.map((x) => x.action),
    );
    assert.ok(statuses.includes(429) && statuses.includes(500), statuses.join(' '));
  } finally {
    await faulty.close();
  }
});

test('with an API key: 401 without it, the models and the health with it', async () => {
  const keyed = await startServer({
    served: await toolServeApp({ policy: oracle, tasks, open, apiKey: 'k3y' }),
  });
  try {
    assert.equal((await fetch(`${keyed.url}/models`)).status, 401);
    const models = (await (
      await fetch(`${keyed.url}/models`, { headers: { authorization: 'Bearer k3y' } })
    ).json()) as { data: { id: string; turnwise: { tasks: number[] } }[] };
    assert.deepEqual(
      models.data.map((m) => [m.id, m.turnwise.tasks]),
      [
        [`oracle:eps=${EPS}`, [0, 1, 2]],
        ['oracle', [0, 1, 2]],
      ],
    );
    // Every route asks for the key, the health included (issue 21 §1.8).
    const healthUrl = keyed.url.replace(/\/v1$/, '/health');
    assert.equal((await fetch(healthUrl)).status, 401);
    const health = await (await fetch(healthUrl, { headers: { authorization: 'Bearer k3y' } })).json();
    assert.deepEqual(health, { status: 'ok', policy: `oracle:eps=${EPS}`, env: 'sql', tasks: 3 });
  } finally {
    await keyed.close();
  }
});

test('tasks sharing their first observation: the tool results tell them apart', async () => {
  for (const task of pair) {
    const seeds = seedsFor(task);
    const served = await agent(task, seeds);
    assert.deepEqual(
      served.calls,
      (await inProcess(task, seeds)).turns.map((x) => x.action),
    );
  }
  // Both are replayed; a result neither gave is refused with the reason for each.
  const { messages } = await agent(pair[1], seedsFor(pair[1]));
  const copy = structuredClone(messages.slice(0, 4));
  copy[3].content = 'Tables: nothing';
  const r = await post({ model: 'oracle', messages: copy });
  assert.equal(r.status, 400);
  const [a, b] = pair.map((t) => t.seed);
  const why = (seed: number) =>
    `task ${seed}: messages\\[3\\]: line 1 is "Tables: nothing", the env answered "[^"]+"`;
  assert.match(
    r.message,
    new RegExp(`^the conversation is not an episode of sql task ${a} or ${b}: ${why(a)}; ${why(b)}$`),
  );
});

test('n, top_logprobs and streaming answer what the policy would', async () => {
  const task = tasks[1];
  const { messages } = await agent(task, seedsFor(task));
  const prefix = messages.slice(0, 4); // system, observation, the first call and its result
  const base = { model: 'oracle', messages: prefix, seed: 12_345_678_901, logprobs: true, top_logprobs: 5 };
  const r = await client.chat.completions.create({ ...base, n: 2, tools: undefined });
  const ref = async (uniform: number, history: number) => {
    const t = await inProcess(task, [seedsFor(task)[0], uniform, ...seedsFor(task).slice(2)]);
    return t.turns[history];
  };
  for (const [i, choice] of r.choices.entries()) {
    const uniform = i === 0 ? base.seed : Rng.derive(base.seed, i).uniform53();
    const want = await ref(uniform, 1);
    const call = choice.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    assert.deepEqual(
      { name: call.function.name, arguments: JSON.parse(call.function.arguments) },
      want.action,
    );
    assert.equal(choice.logprobs?.content?.[0].logprob, want.logp);
  }
  // The alternatives: the gold call first with log(1 − ε), then detours with log(ε/|W|) each.
  const top = r.choices[0].logprobs?.content?.[0].top_logprobs ?? [];
  assert.equal(top.length, 5);
  assert.equal(top[0].logprob, Math.log(1 - EPS));
  const detour = top[1].logprob;
  assert.ok(detour < Math.log(EPS) && top.slice(1).every((x) => x.logprob === detour));
  const stream = await client.chat.completions.create({ ...base, stream: true });
  let args = '';
  let name = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta.tool_calls?.[0];
    name += d?.function?.name ?? '';
    args += d?.function?.arguments ?? '';
  }
  const call = r.choices[0].message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  assert.equal(name, call.function.name);
  assert.equal(args, call.function.arguments);
  // Offered tools that do not include the policy's call: refused, not answered outside them.
  const other = call.function.name === 'list_tables' ? 'submit' : 'list_tables';
  const refused = await post({ ...base, tools: [{ type: 'function', function: { name: other } }] });
  assert.equal(refused.status, 400);
  assert.equal(
    refused.message,
    `tools: the policy calls ${call.function.name}, which the request does not offer`,
  );
});

test('a revealed budget: the turns left reach the policy, and a server of another budget refuses', async () => {
  const revealed = mcpEpisodeOpener(envs.make, BUDGET, true);
  const short = await startServer({
    served: await toolServeApp({ policy: oracle, tasks, open: mcpEpisodeOpener(envs.make, 2, false) }),
  });
  try {
    const task = tasks[2];
    const episode = await revealed(task, () => {});
    const text = ((await episode.call('observe', {})).content[0] as { text: string }).text;
    await episode.finish();
    assert.ok(text.endsWith(`(${BUDGET} turns left)`), text);
    const seen: (number | undefined)[] = [];
    const served = await toolServeApp({
      policy: oracle,
      tasks,
      open: (t, watch) =>
        revealed(t, (ctx) => {
          watch(ctx);
          seen.push(ctx.turnsLeft);
        }),
    });
    const s = await startServer({ served });
    try {
      const messages = [{ role: 'user', content: text }];
      const r = await fetch(`${s.url}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'oracle', messages, seed: 1 }),
      });
      assert.equal(r.status, 200);
      assert.equal(seen.at(-1), BUDGET);
    } finally {
      await s.close();
    }
    // The unrevealed server indexed other first observations: the conversation names no task of it.
    const r = await post({ model: 'oracle', messages: [{ role: 'user', content: text }] });
    assert.equal(r.status, 400);
    assert.match(r.message, /^messages\[0\]: the first user message is not the first observation/);
    // A server whose episodes end sooner than the agent's says so.
    // Seeds of uniform 1/2 > ε: the gold path, several calls long.
    const { messages } = await agent(task, Array(BUDGET).fill(2 ** 52));
    const long = messages.slice(0, 5); // the second call, before its result
    const res = await fetch(`${short.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'oracle', messages: long }),
    });
    const body = (await res.json()) as { error: { message: string } };
    assert.equal(res.status, 400);
    assert.match(
      body.error.message,
      /the episode is over after messages\[4\]\.tool_calls\[0\]; its turn budget \(2\) is spent: serve with the harness's --budget$/,
    );
  } finally {
    await short.close();
  }
});

/** A raw request: the status and the error message. */
async function post(body: Record<string, unknown>): Promise<{ status: number; message: string }> {
  const res = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { error?: { message: string } };
  return { status: res.status, message: json.error?.message ?? '' };
}

test('a conversation that is not an episode of a served task is a 400 naming the message', async () => {
  const task = tasks[0];
  const { messages } = await agent(task, seedsFor(task));
  const at = (patch: (m: Message[]) => void) => {
    const copy = structuredClone(messages.slice(0, 6));
    patch(copy);
    return post({ model: 'oracle', messages: copy });
  };
  let r = await at((m) => {
    m[1].content = 'Question: how many moons has Mars?';
  });
  assert.equal(r.status, 400);
  assert.match(
    r.message,
    /^messages\[1\]: the first user message is not the first observation of a served sql task/,
  );
  r = await at((m) => {
    m[3].content = `${m[3].content as string}\nand one more line`;
  });
  assert.equal(r.status, 400);
  assert.match(r.message, /messages\[3\]: line \d+ is "and one more line", the env answered nothing/);
  r = await at((m) => {
    const call = (m[2] as OpenAI.ChatCompletionAssistantMessageParam).tool_calls?.[0];
    if (call?.type === 'function') call.function.arguments = '{"table":';
  });
  assert.equal(r.status, 400);
  assert.equal(r.message, 'messages[2].tool_calls[0].function.arguments is not JSON');
  // The whole episode, submit included: nothing is left to act on.
  r = await post({ model: 'oracle', messages });
  assert.equal(r.status, 400);
  assert.match(
    r.message,
    /the episode is over after messages\[\d+\]\.tool_calls\[0\]; there is no action to take/,
  );
  r = await post({ model: 'gpt-4o', messages: messages.slice(0, 2) });
  assert.equal(r.status, 400);
  assert.equal(r.message, 'model "gpt-4o" is not served; models: oracle:eps=0.3, oracle');
});

test('bad serve and mcp flags for tool envs: one line naming the flag, exit 2, before any work', async () => {
  const cases: [string[], RegExp][] = [
    [
      ['serve', '--policy', 'random', '--tasks', '2'],
      /^turnwise: --tasks: got "?2"?; only for tool envs and --random maps; frozenlake is served from its text view of one fixed map\n$/,
    ],
    [
      ['serve', '--env', 'sql', '--policy', 'oracle', '--tasks', '2', '--task-seeds', '1,2'],
      /^turnwise: --task-seeds: got "?1,2"?; give either --task-seeds or --tasks\/--seed\n$/,
    ],
    [
      ['serve', '--env', 'sql', '--policy', 'oracle', '--tasks', '0'],
      /^turnwise: --tasks: got "?0"?; expected an integer from 1 to 100000\n$/,
    ],
    [
      ['mcp', '--env', 'sql', '--task-seed', '0', '--rows', '0'],
      /^turnwise: --rows: got "?0"?; expected an integer from 1 to 1000\n$/,
    ],
  ];
  const ran = await Promise.all(cases.map(([args], i) => firstSpawned(i, args)));
  for (const [i, r] of ran.entries()) {
    assert.equal(r.code, 2, cases[i][0].join(' '));
    assert.match(r.stderr, cases[i][1]);
    assert.equal(r.stdout, '');
  }
});
