// `turnwise serve --env sql --policy CKPT` of a transformer (serve/tool-serve.ts + serve/text-model.ts):
// each answer is the model's own generation for that turn — a Hermes tool call as `tool_calls`, or the
// text as `content` when it does not parse — with per-token log-probs and ids. A tiny transformer cloned
// on sql level 1 for a few epochs (it writes calls, some the env refuses, and text that is no call) is
// rolled out in process and driven through the real CLI server by an agent loop written against the
// official openai package and the MCP episode `turnwise mcp` serves (test/fixtures/tool-agent.ts; a
// reply that is no tool call is played on it as text: the turn the in-process rollout records). Served
// equals in-process: the same actions, observations, rewards and outcomes, and per turn the same token
// ids and log-probs.
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { mcpEpisodeOpener } from '../../src/harness/mcp-episode.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { textCallId, writtenText } from '../../src/serve/text-model.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../src/train/transformer-bc.ts';
import { startServe } from '../fixtures/serve-process.ts';
import { servedEqualsLocal } from '../fixtures/tool-agent.ts';

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
  const kinds = await servedEqualsLocal(client, {
    model: 'transformer',
    open,
    local,
    runSeed: RUN_SEED,
    samples: 2,
    budget: BUDGET,
  });
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
