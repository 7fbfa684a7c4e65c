// `turnwise serve --policy gguf:PATH`: a GGUF model run by llama.cpp served as the transformer is
// (serve/text-model.ts over policies/text-model.ts). A tiny transformer cloned on one expert transcript
// (tools mode, a few seconds) is exported as an F32 GGUF (export/gguf.ts) and served by the real CLI.
//   (a) an agent loop written against the official `openai` package (a client from the public spec)
//       plays the episodes through the server: per turn the served token ids and log-probs are the
//       in-process gguf: policy's bit for bit (and so the transformer's tokens, its log-probs within
//       llama.cpp's numerical distance from turnwise's engine), the top alternatives and the end-of-generation token listed as llama.cpp's
//       vocabulary writes them, the actions, rewards and outcomes the in-process rollout's;
//   (b) the scoring endpoint's echo of a closed reply (`<|im_end|>` scored as the model's end token)
//       sums to logProb in process, and the openai: policy's logProb through it is that logProb;
//   (c) eval through `--policy openai:URL#gguf` equals eval of the gguf: policy in process;
//   (d) a file llama.cpp refuses is one line, exit 2, before the server listens.
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import type { Action, Env, Policy } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { transformerGguf } from '../../src/export/gguf.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { buildMessages, chatTool, renderChatML, toolCallText } from '../../src/policies/chat.ts';
import type { GgufPolicy } from '../../src/policies/gguf.ts';
import { makeOpenAIPolicy, makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { parseGeneration, renderAction } from '../../src/policies/transformer-prompt.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../src/train/transformer-bc.ts';
import { turnwise } from '../cli/run.ts';
import { startServe } from '../fixtures/serve-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'tw-serve-gguf-'));
const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const tasks = makeTasks(lake, 2, 0);
const spec = envs.spec(tasks[0]);
const view = (task: (typeof tasks)[number]) => envs.make(task) as Env<unknown, unknown>;
const SERVED = ['--random', '--size', '4', '--tasks', '2', '--seed', '0'];
const children: ReturnType<typeof spawn>[] = [];
let gguf: GgufPolicy;
after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await gguf?.close();
  rmSync(dir, { recursive: true, force: true });
});

let transformer: TransformerPolicy;
let file: string;
let url: string;
let stop: () => Promise<number | null>;
before(async () => {
  const corpus = await expertTranscripts({ envs, config: lake, episodes: 4, seed: 0, eps: 0 });
  const tok = join(dir, 'tok.json');
  writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), 400).toJSON()));
  transformer = (
    makePolicy(
      `transformer:layers=1,d=32,heads=2,ctx=1024,seed=0,tokenizer=${tok},temperature=0.5`,
      spec,
    ) as TransformerPolicy
  ).trainedOn(spec);
  const demos = await rollout({
    tasks: tasks.slice(0, 1),
    samples: 1,
    budget: 6,
    runSeed: 1,
    policy: makePolicy('oracle', spec),
    makeEnv: envs.make,
  });
  trainCloning(transformer, cloningSequences(transformer, demos, view), {
    epochs: 60,
    batchSize: 1,
    lr: 0.01,
    weightDecay: 0,
    seed: 0,
  });
  file = join(dir, 'lake.gguf');
  writeFileSync(
    file,
    transformerGguf(transformer.model, transformer.tokenizer, {
      name: 'lake',
      type: 'f32',
      turnwise: { policy: JSON.stringify(transformer.format) },
    }),
  );
  gguf = makePolicy(`gguf:${file}`, spec) as GgufPolicy;
  await gguf.connect();
  const s = startServe(['--policy', `gguf:${file}`, ...SERVED]);
  children.push(s.child);
  url = await s.ready;
  stop = s.stop;
});

const roll = async (p: Policy<unknown, unknown>) =>
  rollout({ tasks, samples: 3, budget: 6, runSeed: 7, policy: p, makeEnv: envs.make });

type Entry = OpenAI.Chat.ChatCompletionTokenLogprob & { id: number };

/** The agent: each turn's conversation (the chat encoding) sent through the openai package with the
 * episode's uniform as the seed; the served reply read back as the action and its tokens. */
function agent(client: OpenAI): Policy<unknown, unknown> & { entries: Map<object, Entry[]> } {
  const entries = new Map<object, Entry[]>();
  return {
    id: 'agent',
    budgetAware: false,
    entries,
    async act(ctx): Promise<Action<unknown>> {
      const messages = buildMessages({
        chat: spec.chat!,
        mode: 'tools',
        text: (o) => ctx.env.text!(o),
        observation: ctx.observation,
        history: ctx.history,
        turn: ctx.turn,
        turnsLeft: undefined,
      }) as OpenAI.Chat.ChatCompletionMessageParam[];
      const r = await client.chat.completions.create({
        model: 'gguf',
        messages,
        tools: [chatTool(spec.chat!)] as OpenAI.Chat.ChatCompletionTool[],
        seed: ctx.rng.uniform53(),
        logprobs: true,
        top_logprobs: 2,
        ...({ return_token_ids: true } as object),
      });
      const choice = r.choices[0] as OpenAI.Chat.ChatCompletion.Choice & { token_ids: number[] };
      const content = (choice.logprobs?.content ?? []) as Entry[];
      const call = choice.message.tool_calls?.[0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      const text =
        call === undefined
          ? (choice.message.content ?? '')
          : toolCallText(call.function.name, call.function.arguments);
      const parsed = parseGeneration(spec, 'tools', text);
      const logprobs = content.map((e) => e.logprob);
      const trace = {
        text,
        tokens: choice.token_ids,
        logprobs,
        usage: { prompt: r.usage?.prompt_tokens ?? 0, completion: r.usage?.completion_tokens ?? 0 },
        ...(parsed.invalid === undefined ? {} : { invalid: parsed.invalid }),
      };
      entries.set(trace, content);
      return { action: parsed.action, logp: logprobs.reduce((s, x) => s + x, 0), trace };
    },
  };
}

const end = () => transformer.tokenizer.special['<|end|>'];

test('(a) an agent loop through the openai package: per turn the in-process gguf: tokens and log-probs bit for bit (the transformer’s tokens), the same episodes', async () => {
  const client = new OpenAI({ baseURL: url, apiKey: 'none', maxRetries: 0 });
  const a = agent(client);
  const served = await roll(a);
  const local = await roll(gguf);
  const tf = await roll(transformer);
  let turns = 0;
  for (const [i, t] of served.entries()) {
    const l = local[i];
    assert.deepEqual(
      t.turns.map((u) => [u.observation, u.action, u.reward, u.info]),
      l.turns.map((u) => [u.observation, u.action, u.reward, u.info]),
    );
    assert.deepEqual(t.outcome, l.outcome);
    for (const [j, u] of t.turns.entries()) {
      const lt = l.turns[j].trace;
      const tt = tf[i].turns[j].trace;
      assert.deepEqual(u.trace?.tokens, lt?.tokens, `episode ${i} turn ${j}: token ids`);
      assert.deepEqual(u.trace?.logprobs, lt?.logprobs, `episode ${i} turn ${j}: log-probs`);
      assert.equal(u.logp, l.turns[j].logp);
      assert.deepEqual(u.trace?.usage, lt?.usage, 'usage in model tokens');
      assert.deepEqual(lt?.tokens, tt?.tokens, `episode ${i} turn ${j}: the transformer's tokens`);
      // llama.cpp (F32 weights, run by gguf: with an F32 KV cache and no flash attention) against
      // turnwise's engine at τ = 0.5.
      const sum = (xs: readonly number[] | undefined) => (xs ?? []).reduce((a, x) => a + x, 0);
      assert.ok(
        Math.abs(sum(lt?.logprobs) - sum(tt?.logprobs)) <= 1e-4,
        `${sum(lt?.logprobs)} vs ${sum(tt?.logprobs)}`,
      );
      // Each entry: its bytes spell its token; the alternatives are the most probable, first the best;
      // a reply that stopped ends on the exported model's end token, <|end|>.
      const entries = a.entries.get(u.trace as object);
      assert.ok(entries !== undefined);
      for (const e of entries) {
        assert.deepEqual(Buffer.from(e.bytes ?? []).toString(), e.token);
        assert.equal(e.top_logprobs.length, 2);
        assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
        assert.ok(e.top_logprobs[0].logprob >= e.logprob);
      }
      if (lt?.finishReason === 'stop') {
        assert.equal(entries.at(-1)?.token, '<|end|>');
        assert.equal(entries.at(-1)?.id, end());
      }
      turns++;
    }
  }
  assert.ok(turns >= 6, `${turns} turns`);
});

test('(b) the echo of a closed reply sums to logProb in process; the openai: policy scores through it as logProb', async () => {
  const local = await roll(gguf);
  const remote = makeOpenAIPolicy(`openai:${url}#gguf`, spec);
  await remote.connect();
  let valid = 0;
  for (const l of local) {
    for (const [k, u] of l.turns.entries()) {
      if (u.info.valid === false) continue;
      valid++;
      const env = view(l.task);
      const ctx = contextAt(l, k, env);
      const logProb = await gguf.logProb(ctx, u.action);
      const canonical = (await gguf.replyTokens(ctx, u.action)) as number[];
      // A reply generated as the action's canonical tokens: logProb scores them in one batch, the
      // generation drew them one token at a time — the same numbers to float rounding.
      if (canonical.join() === u.trace?.tokens?.join())
        assert.ok(Math.abs(logProb - u.logp) <= 1e-4, `${logProb} vs ${u.logp}`);
      const head = renderChatML(
        buildMessages({
          chat: spec.chat!,
          mode: 'tools',
          text: (o) => env.text!(o),
          observation: ctx.observation,
          history: ctx.history,
          turn: ctx.turn,
          turnsLeft: undefined,
        }),
      );
      const reply = `${renderAction(spec, 'tools', u.action)}<|im_end|>`;
      const r = await fetch(`${url}/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'gguf', prompt: head + reply, echo: true, logprobs: 1, max_tokens: 0 }),
      });
      assert.equal(r.status, 200);
      const echo = ((await r.json()) as { choices: { logprobs: Record<string, unknown[]> }[] }).choices[0]
        .logprobs;
      assert.equal((echo.tokens as string[]).slice(1).join(''), reply);
      assert.equal(echo.tokens.length - 1, canonical.length, 'one entry per token, the end token last');
      const echoed = (echo.token_logprobs.slice(1) as number[]).reduce((s, x) => s + x, 0);
      assert.ok(Math.abs(echoed - logProb) <= 1e-9, `${echoed} vs ${logProb}`);
      const scored = await remote.logProb?.(ctx, u.action as number);
      assert.ok(Math.abs((scored as number) - logProb) <= 1e-9, `${scored} vs ${logProb}`);
    }
  }
  assert.ok(valid >= 3, `the cloned model acts validly (${valid} valid turns)`);
});

test('(c) eval through turnwise serve + openai: equals eval of the gguf: policy in process', async () => {
  const evalArgs = (p: string) => [
    'eval',
    ...SERVED,
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
  const local = await turnwise(evalArgs(`gguf:${file}`));
  const served = await turnwise(evalArgs(`openai:${url}#gguf`));
  assert.equal(local.code, 0, local.stderr);
  assert.equal(served.code, 0, served.stderr);
  const figures = (stdout: string) => {
    const { policy: _, requests: __, ...rest } = JSON.parse(stdout) as Record<string, unknown>;
    return rest;
  };
  assert.deepEqual(figures(served.stdout), figures(local.stdout));
  assert.equal(await stop(), 0, 'the server stops on SIGTERM, the model closed');
});

test('(d) a file llama.cpp refuses: one line, exit 2, before the server listens', async () => {
  // The header is GGUF and names an architecture llama.cpp knows (qwen2), but none of its
  // hyperparameters: llama.cpp refuses it at load.
  const bytes = readFileSync(file);
  const key = bytes.indexOf('general.architecture');
  const at = key + 'general.architecture'.length + 4 + 8;
  assert.equal(bytes.subarray(at, at + 5).toString(), 'llama');
  bytes.write('qwen2', at);
  const bad = join(dir, 'refused.gguf');
  writeFileSync(bad, bytes);
  const s = startServe(['--policy', `gguf:${bad}`, ...SERVED]);
  children.push(s.child);
  await assert.rejects(s.ready);
  assert.equal(await s.exited, 2);
  const lines = s.stderr().trim().split('\n');
  assert.equal(lines.length, 1, s.stderr());
  assert.match(lines[0], /^turnwise: --policy: got ".*refused\.gguf"; llama\.cpp refused the model/);
});
