// `turnwise serve` of the transformer policy: its replies are its own generations, token by token.
//   (a) eval of a transformer checkpoint in process equals eval through `turnwise serve --policy FILE`
//       and `--policy openai:URL#transformer` (random slippery 4x4 maps, the real CLI in child processes);
//   (b) each served turn's log-probs and token ids are the in-process trace's, bit for bit, their sum the
//       turn's logp and logProb(ctx, action) in process; the echo of a closed reply on /v1/completions
//       scores each token as logProb does, and the openai: policy's logProb through it is logProb;
//   (c) the official `openai` package (a client written from the public spec) reads the tool call and the
//       log-probs, streamed and not;
//   (d) `probe` reports the served transformer as it reports a vLLM server.
// The model of (b)–(d) is a tiny transformer cloned on one expert transcript (tools mode, a few seconds),
// so that it writes tool calls and valid actions; (a) uses a fresh one saved as a checkpoint.
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import type { Env } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { buildMessages, chatTool, renderChatML } from '../../src/policies/chat.ts';
import { makeOpenAIPolicy, makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { type RunningServer, startServer } from '../../src/serve/openai.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../src/train/transformer-bc.ts';
import { turnwise } from '../cli/run.ts';
import { EVERY_CAPABILITY } from '../fixtures/capabilities.ts';
import { startServe } from '../fixtures/serve-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'tw-serve-tf-'));
const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const tasks = makeTasks(lake, 2, 0);
const spec = envs.spec(tasks[0]);
const view = (task: (typeof tasks)[number]) => envs.make(task) as Env<unknown, unknown>;
const servers: RunningServer[] = [];
const children: ReturnType<typeof spawn>[] = [];
after(async () => {
  for (const s of servers) await s.close();
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
});

let policy: TransformerPolicy;
let url: string;
before(async () => {
  const corpus = await expertTranscripts({ envs, config: lake, episodes: 4, seed: 0, eps: 0 });
  const tok = join(dir, 'tok.json');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), 400).toJSON()));
  policy = (
    makePolicy(
      `transformer:layers=1,d=32,heads=2,ctx=1024,seed=0,tokenizer=${tok},temperature=0.5`,
      spec,
    ) as TransformerPolicy
  ).trainedOn(spec);
  const expert = makePolicy('oracle', spec);
  const demos = await rollout({
    tasks: tasks.slice(0, 1),
    samples: 1,
    budget: 6,
    runSeed: 1,
    policy: expert,
    makeEnv: envs.make,
  });
  const data = cloningSequences(policy, demos, view);
  trainCloning(policy, data, { epochs: 60, batchSize: 1, lr: 0.01, weightDecay: 0, seed: 0 });
  const server = await startServer({ policy, env: tasks.map(view) });
  servers.push(server);
  url = server.url;
});

const roll = async (p: Parameters<typeof rollout>[0]['policy']) =>
  rollout({ tasks, samples: 3, budget: 6, runSeed: 7, policy: p, makeEnv: envs.make });

test('(b) each served turn: the in-process tokens and log-probs bit for bit, their sum the logp and logProb in process; echo scores each token as logProb does', async () => {
  const local = await roll(policy);
  const remote = makeOpenAIPolicy(`openai:${url}#transformer,token_ids=1`, spec);
  await remote.connect();
  const served = await roll(remote);
  let valid = 0;
  for (const [i, t] of served.entries()) {
    const l = local[i];
    assert.deepEqual(
      t.turns.map((u) => [u.observation, u.action, u.reward, u.logp, u.info]),
      l.turns.map((u) => [u.observation, u.action, u.reward, u.logp, u.info]),
    );
    assert.deepEqual(t.outcome, l.outcome);
    for (const [k, u] of t.turns.entries()) {
      const lt = l.turns[k].trace;
      assert.deepEqual(u.trace?.tokens, lt?.tokens, `episode ${i} turn ${k}: token ids`);
      assert.deepEqual(u.trace?.logprobs, lt?.logprobs, `episode ${i} turn ${k}: log-probs`);
      if (u.info.valid === false) assert.equal(u.trace?.text, lt?.text, 'the text of an invalid reply');
      assert.deepEqual(u.trace?.usage, lt?.usage, 'usage in model tokens');
      // A reply read as a tool call finishes as OpenAI says it: tool_calls.
      const call = u.trace?.text?.startsWith('move(') === true;
      assert.equal(u.trace?.finishReason, call ? 'tool_calls' : lt?.finishReason);
      const sum = (u.trace?.logprobs ?? []).reduce((s, x) => s + x, 0);
      assert.equal(sum, u.logp);
      if (u.info.valid === false) continue;
      valid++;
      const ctx = contextAt(l, k, view(l.task));
      const logProb = policy.logProb(ctx, u.action);
      assert.ok(Math.abs(logProb - u.logp) <= 1e-9, `${logProb} vs ${u.logp}`);
      // The echo of the reply closed by <|im_end|>: per token the turn's log-probs; the sum logProb.
      const messages = buildMessages({
        chat: spec.chat!,
        mode: 'tools',
        text: (o) => view(l.task).text!(o),
        observation: ctx.observation,
        history: ctx.history,
        turn: ctx.turn,
        turnsLeft: undefined,
      });
      const head = renderChatML(messages);
      const reply = `${lt?.text}<|im_end|>`;
      const r = await fetch(`${url}/completions`, {
        method: 'POST',
        body: JSON.stringify({
          model: 'transformer',
          prompt: head + reply,
          echo: true,
          logprobs: 2,
          max_tokens: 1,
        }),
      });
      const echo = ((await r.json()) as { choices: { logprobs: Record<string, unknown[]> }[] }).choices[0]
        .logprobs;
      assert.deepEqual(echo.token_logprobs.slice(1), u.trace?.logprobs);
      assert.equal((echo.tokens as string[]).slice(1).join(''), reply);
      assert.deepEqual(echo.text_offset[1], head.length);
      const echoed = (echo.token_logprobs.slice(1) as number[]).reduce((s, x) => s + x, 0);
      assert.ok(Math.abs(echoed - logProb) <= 1e-9);
      // The openai: policy's score sends the reply closed by <|im_end|> (the reply is exactly that
      // text): it is logProb in process, the end token's log-prob included.
      const scored = await remote.logProb?.(contextAt(t, k, view(t.task)), u.action as number);
      assert.ok(Math.abs((scored as number) - logProb) <= 1e-9, `${scored} vs ${logProb}`);
    }
  }
  assert.ok(valid >= 3, `the cloned model acts validly (${valid} valid turns)`);
});

test('(c) the official openai package reads the tool call, the per-token log-probs and the usage, streamed and not', async () => {
  const client = new OpenAI({ baseURL: url, apiKey: 'none', maxRetries: 0 });
  const env = view(tasks[0]);
  const messages = buildMessages({
    chat: spec.chat!,
    mode: 'tools',
    text: (o) => env.text!(o),
    observation: await env.reset(0),
    history: [],
    turn: 0,
    turnsLeft: undefined,
  }) as OpenAI.Chat.ChatCompletionMessageParam[];
  const tools = [chatTool(spec.chat!)] as OpenAI.Chat.ChatCompletionTool[];
  const req = {
    model: 'transformer',
    messages,
    tools,
    seed: 2 ** 52 + 12345,
    logprobs: true,
    top_logprobs: 3,
  };
  const r = await client.chat.completions.create(req);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  const call = c.message.tool_calls?.[0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'move');
  assert.ok(spec.chat!.names.includes(JSON.parse(call.function.arguments).direction));
  const content = c.logprobs?.content ?? [];
  assert.equal(r.usage?.completion_tokens, content.length);
  assert.equal(content.at(-1)?.token, '<|end|>');
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.logprob <= 0 && e.top_logprobs[0].logprob >= e.logprob);
    assert.deepEqual(Buffer.from(e.bytes ?? []).toString(), e.token);
    const probs = e.top_logprobs.reduce((s, a) => s + Math.exp(a.logprob), 0);
    assert.ok(probs <= 1 + 1e-9);
  }
  // The tokens but <|end|> spell the Hermes block the call was read from.
  const block = content
    .slice(0, -1)
    .map((e) => e.token)
    .join('');
  assert.deepEqual(JSON.parse(block.replace(/^<tool_call>\n|\n<\/tool_call>$/g, '')), {
    name: 'move',
    arguments: JSON.parse(call.function.arguments),
  });
  const stream = await client.chat.completions.create({ ...req, stream: true });
  let args = '';
  const streamed: OpenAI.Chat.ChatCompletionTokenLogprob[] = [];
  for await (const chunk of stream) {
    const d = chunk.choices[0];
    args += d?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    streamed.push(...(d?.logprobs?.content ?? []));
  }
  assert.equal(args, call.function.arguments);
  assert.deepEqual(streamed, content);
});

test('(d) probe reports the served transformer as a vLLM server', async () => {
  const remote = makeOpenAIPolicy(`openai:${url}#transformer`, spec, 'probe');
  await remote.connect();
  const env = view(tasks[0]);
  const messages = buildMessages({
    chat: spec.chat!,
    mode: 'text',
    text: (o) => env.text!(o),
    observation: await env.reset(0),
    history: [],
    turn: 0,
    turnsLeft: 100,
  });
  assert.deepEqual({ ...(await remote.probe(messages)) }, EVERY_CAPABILITY);
});

test('(a) eval of a transformer checkpoint: in process equals served through turnwise serve + openai:', async () => {
  const file = join(dir, 'fresh.safetensors');
  const slippery = envConfig('frozenlake', { random: true, size: 4, slippery: true });
  const fresh = makePolicy(
    'transformer:layers=1,d=16,heads=2,ctx=1024,seed=3',
    envs.spec(makeTasks(slippery, 1, 0)[0]),
  );
  (fresh as TransformerPolicy).save(file);
  const flags = ['--random', '--size', '4', '--slippery'];
  const s = startServe(['--policy', file, ...flags, '--tasks', '3', '--seed', '4']);
  children.push(s.child);
  const base = await s.ready;
  const evalArgs = (p: string) => [
    'eval',
    ...flags,
    '--tasks',
    '3',
    '--seed',
    '4',
    '--samples',
    '2',
    '--K',
    '1,2',
    '--T',
    '3,5',
    '--policy',
    p,
    '--json',
  ];
  const local = await turnwise(evalArgs(file));
  const served = await turnwise(evalArgs(`openai:${base}#transformer`));
  assert.equal(local.code, 0, local.stderr);
  assert.equal(served.code, 0, served.stderr);
  const figures = (stdout: string) => {
    const { policy: _, requests: __, ...rest } = JSON.parse(stdout) as Record<string, unknown>;
    return rest;
  };
  assert.deepEqual(figures(served.stdout), figures(local.stdout));
  assert.equal(await s.stop(), 0);
});
