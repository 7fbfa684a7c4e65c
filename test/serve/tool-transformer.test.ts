// `turnwise serve --env sql --policy CKPT` of a transformer (serve/tool-serve.ts + serve/text-model.ts):
// each answer is the model's own generation for that turn — a Hermes tool call as `tool_calls`, or the
// text as `content` when it does not parse — with per-token log-probs and ids. A tiny transformer cloned
// on sql level 1 for a few epochs (it writes calls, some the env refuses, and text that is no call) is
// rolled out in process and driven through the real CLI server by an agent loop written against the
// official openai package and the MCP episode `turnwise mcp` serves (a reply that is no tool call is
// played on it as text: the turn the in-process rollout records). Served equals in-process: the same
// actions, observations, rewards and outcomes, and per turn the same token ids and log-probs.
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import type { Task, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { mcpEpisodeOpener } from '../../src/harness/mcp-episode.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { episodeSeeds } from '../../src/rollout/episode.ts';
import { textCallId, writtenText } from '../../src/serve/text-model.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../src/train/transformer-bc.ts';
import { startServe } from '../fixtures/serve-process.ts';

const BUDGET = 6;
const RUN_SEED = 5;
const dir = mkdtempSync(join(tmpdir(), 'tw-serve-tool-tf-'));
const sql = envConfig('sql', { level: 1 });
const tasks = makeTasks(sql, 4, 0);
const spec = envs.spec(tasks[0]);
const open = mcpEpisodeOpener(envs.make, BUDGET, false);
const children: ReturnType<typeof spawn>[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
});

let policy: TransformerPolicy;
let file: string;
before(async () => {
  const corpus = await expertTranscripts({ envs, config: sql, episodes: 4, seed: 0, eps: 0 });
  const tok = join(dir, 'tok.json');
  writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), 600).toJSON()));
  policy = (
    makePolicy(
      `transformer:layers=1,d=16,heads=2,ctx=1024,seed=0,temperature=0.5,tokenizer=${tok}`,
      spec,
    ) as TransformerPolicy
  ).trainedOn(spec);
  const demos = await rollout({
    tasks: makeTasks(sql, 4, 100),
    samples: 1,
    budget: BUDGET,
    runSeed: 1,
    policy: makePolicy('oracle', spec),
    makeEnv: envs.make,
  });
  const data = cloningSequences(policy, demos, envs.make);
  trainCloning(policy, data, { epochs: 30, batchSize: 1, lr: 0.01, weightDecay: 0, seed: 0 });
  file = join(dir, 'sql.safetensors');
  policy.save(file);
});

type Message = OpenAI.ChatCompletionMessageParam;

/** What the agent saw of one turn. */
interface ServedTurn {
  kind: 'call' | 'text';
  finish: string;
  tokens: number[];
  logprobs: number[];
}

/** The agent's loop: observe, then per turn the model's answer played on the MCP episode — a tool call
 * as an MCP call, a reply without one as text (McpEpisode.reply) answered in a user message. */
async function agent(client: OpenAI, task: Task, seeds: readonly number[]) {
  const episode = await open(task, () => {});
  const text = (r: Awaited<ReturnType<typeof episode.call>>) =>
    (r.content as { text: string }[]).map((c) => c.text).join('\n');
  const tools: OpenAI.ChatCompletionTool[] = episode.tools
    .filter((t) => t.name !== 'observe')
    .map((t) => ({ type: 'function', function: { name: t.name, parameters: t.inputSchema } }));
  const messages: Message[] = [
    { role: 'system', content: 'Answer with the tools.' },
    { role: 'user', content: text(await episode.call('observe', {})) },
  ];
  const turns: ServedTurn[] = [];
  for (let t = 0; !episode.done; t++) {
    const r = await client.chat.completions.create({
      model: 'transformer',
      messages,
      tools,
      seed: seeds[t],
      logprobs: true,
      // vLLM's token ids (turnwise serve answers them as vLLM does).
      ...({ return_token_ids: true } as object),
    });
    const choice = r.choices[0] as OpenAI.ChatCompletion.Choice & { token_ids: number[] };
    const content = choice.logprobs?.content ?? [];
    assert.deepEqual(
      choice.token_ids,
      content.map((e) => (e as unknown as { id: number }).id),
    );
    assert.equal(r.usage?.completion_tokens, content.length);
    const message = choice.message;
    messages.push(message);
    const call = message.tool_calls?.[0];
    turns.push({
      kind: call === undefined ? 'text' : 'call',
      finish: choice.finish_reason,
      tokens: choice.token_ids,
      logprobs: content.map((e) => e.logprob),
    });
    if (call !== undefined && call.type === 'function') {
      const result = await episode.call(call.function.name, JSON.parse(call.function.arguments));
      messages.push({ role: 'tool', tool_call_id: call.id, content: text(result) });
    } else {
      assert.equal(typeof message.content, 'string');
      messages.push({ role: 'user', content: text(await episode.reply(message.content as string)) });
    }
  }
  return { turns, trajectory: episode.result as Trajectory };
}

test('a cloned transformer on sql: served through turnwise serve equals in process, tool calls, refused calls and text replies alike', async () => {
  const local = await rollout({
    tasks,
    samples: 2,
    budget: BUDGET,
    runSeed: RUN_SEED,
    policy: makePolicy(file, spec),
    makeEnv: envs.make,
  });
  const s = startServe([
    '--env',
    'sql',
    '--level',
    '1',
    '--policy',
    file,
    '--tasks',
    String(tasks.length),
    '--seed',
    '0',
    '--budget',
    String(BUDGET),
  ]);
  children.push(s.child);
  const client = new OpenAI({ baseURL: await s.ready, apiKey: 'none', maxRetries: 0 });
  const kinds = { call: 0, refused: 0, text: 0 };
  for (const [i, l] of local.entries()) {
    // The seeds the in-process policy drew: one uniform53 of its episode stream per turn.
    const sample = i % 2;
    const { rng } = episodeSeeds(RUN_SEED, l.task.seed, sample);
    const seeds = Array.from({ length: BUDGET }, () => rng.uniform53());
    const served = await agent(client, l.task, seeds);
    const where = `task ${l.task.seed} sample ${sample}`;
    const view = (t: Trajectory) =>
      t.turns.map((u) => ({ a: u.action, o: u.observation, r: u.reward, valid: u.info.valid }));
    assert.deepEqual(view(served.trajectory), view(l), `${where}: the episode`);
    assert.deepEqual(served.trajectory.outcome, l.outcome, `${where}: the outcome`);
    assert.equal(served.turns.length, l.turns.length);
    for (const [k, u] of l.turns.entries()) {
      const got = served.turns[k];
      assert.deepEqual(got.tokens, u.trace?.tokens, `${where} turn ${k}: token ids`);
      assert.deepEqual(got.logprobs, u.trace?.logprobs, `${where} turn ${k}: log-probs`);
      // A call the model wrote is a tool call (finish tool_calls); anything else its text (stop/length).
      const isCall = typeof u.action === 'object' && u.action !== null;
      assert.equal(got.kind, isCall ? 'call' : 'text', `${where} turn ${k}: ${u.trace?.text}`);
      assert.equal(got.finish, isCall ? 'tool_calls' : u.trace?.finishReason);
      if (!isCall) kinds.text++;
      else if (u.info.valid === false) kinds.refused++;
      else kinds.call++;
    }
  }
  // The comparison covers every path: valid calls, calls the env refuses, and text that is no call.
  assert.ok(kinds.call > 0 && kinds.refused > 0 && kinds.text > 0, JSON.stringify(kinds));
  assert.equal(await s.stop(), 0);
});

test('a call the model wrote in other spacing: its id carries the text, which the replay takes as written; a forged one is refused', async () => {
  const written = '<tool_call>\n{"name": "execute_sql", "arguments": {"query": "SELEC 1"}}\n</tool_call>';
  const canonical = '<tool_call>\n{"name":"execute_sql","arguments":{"query":"SELEC 1"}}\n</tool_call>';
  assert.equal(textCallId(2, 0, canonical, spec), 'call_2_0');
  const id = textCallId(2, 0, written, spec);
  assert.equal(id, `call_2_0_${Buffer.from(written).toString('base64url')}`);
  const step = { name: 'execute_sql', args: { query: 'SELEC 1' }, where: 'messages[4].tool_calls[0]' };
  assert.equal(writtenText(spec, id, step), written);
  assert.equal(writtenText(spec, 'call_2_0', step), undefined);
  assert.throws(
    () => writtenText(spec, id, { ...step, args: { query: 'SELECT 2' } }),
    /^Error: messages\[4\]\.tool_calls\[0\]\.id carries a reply that is not this call$/,
  );
  // Played as written, the refused call keeps its text: the next prompt shows it as the model wrote it.
  const [task] = tasks;
  const episode = await open(task, () => {});
  await episode.call('observe', {});
  const r = await episode.reply(written);
  assert.equal((r.structuredContent as { info: { valid: boolean } }).info.valid, false);
  const t = await episode.finish();
  assert.deepEqual(t.turns[0].action, { name: 'execute_sql', arguments: { query: 'SELEC 1' } });
  assert.equal(t.turns[0].trace?.text, written);
});
