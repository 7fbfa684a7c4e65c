// SSE streaming of `turnwise serve` (stream: true) in the OpenAI/vLLM chunk shape, read by the official
// openai SDK, and equal to the non-streamed answer: the same tool call or text, the same log-probs, the
// same finish reason; the raw stream ends with `data: [DONE]`.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import { chat, envConfig, envs, OraclePolicy, type RunningServer, startServer } from '../../src/index.ts';

const env = envs.make({ ...envConfig('frozenlake', { map: '4x4', slippery: true }), seed: 0 });
const chatSpec = env.spec.chat!;
let server: RunningServer;
after(async () => server?.close());

const prompt = (mode: chat.ChatMode, observation: number) =>
  chat.buildMessages({
    chat: chatSpec,
    mode,
    text: (o) => env.text!(o),
    observation,
    history: [],
    turn: 0,
    turnsLeft: 9,
  }) as OpenAI.Chat.ChatCompletionMessageParam[];

test('the openai SDK streams chat completions with tools and log-probs, equal to the non-streamed answer', async () => {
  server = await startServer({ policy: new OraclePolicy({ eps: 0.5 }, 'oracle:eps=0.5'), env });
  const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });
  const directions = new Set<string>();
  // Seeds spread over [0, 2^53): the served policy draws its uniform as seed / 2^53 (Rng.replay).
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8].map((i) => i * 2 ** 49 + 12345)) {
    const request = {
      model: 'oracle',
      messages: prompt('tools', 6),
      tools: [chat.chatTool(chatSpec)],
      seed,
      logprobs: true,
      top_logprobs: 4,
    };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    let args = '';
    let name = '';
    let id = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    const logprobs: OpenAI.Chat.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (c === undefined) continue;
      for (const call of c.delta.tool_calls ?? []) {
        if (call.id) id = call.id;
        name += call.function?.name ?? '';
        args += call.function?.arguments ?? '';
      }
      logprobs.push(...(c.logprobs?.content ?? []));
      if (c.finish_reason) finish = c.finish_reason;
    }
    const call = whole.choices[0].message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(name, 'move');
    assert.equal(args, call.function.arguments);
    assert.match(id, /^call_/);
    assert.equal(finish, 'tool_calls');
    assert.deepEqual(logprobs, whole.choices[0].logprobs?.content);
    assert.equal(logprobs[0].top_logprobs.length, 4);
    assert.deepEqual(usage, whole.usage);
    directions.add(JSON.parse(args).direction);
  }
  assert.ok(directions.size > 1, 'eps=0.5 over 8 seeds varies');
});

test('text mode streams the content; the raw SSE is data: events ending with data: [DONE]', async () => {
  server ??= await startServer({ policy: new OraclePolicy({ eps: 0.5 }, 'oracle:eps=0.5'), env });
  const client = new OpenAI({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });
  const request = { model: 'oracle', messages: prompt('text', 1), seed: 42, logprobs: true };
  const whole = await client.chat.completions.create(request);
  let content = '';
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
    content += chunk.choices[0]?.delta.content ?? '';
  }
  assert.equal(content, whole.choices[0].message.content);
  assert.match(content, /^<answer>(Left|Down|Right|Up)<\/answer>$/);
  const raw = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...request, stream: true }),
  });
  assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events = (await raw.text()).split('\n\n').filter((e) => e !== '');
  assert.equal(events[events.length - 1], 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => {
    assert.match(e, /^data: \{/);
    return JSON.parse(e.slice('data: '.length));
  });
  assert.deepEqual(
    chunks.map((c) => [c.object, c.choices[0].delta, c.choices[0].finish_reason]),
    [
      ['chat.completion.chunk', { role: 'assistant', content: '' }, null],
      ['chat.completion.chunk', { content }, null],
      ['chat.completion.chunk', {}, 'stop'],
    ],
  );
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
});
