// `turnwise serve --env sql --policy gguf:FILE` (serve/tool-serve.ts + serve/text-model.ts over a GGUF
// model run by llama.cpp, policies/gguf.ts): a tiny transformer cloned on sql level 1 (it writes calls,
// some the env refuses, and text that is no call), exported as an F32 GGUF (test/fixtures/gguf-agent.ts),
// is served by the real CLI and driven by an agent loop written against the official openai package and
// the MCP episode `turnwise mcp` serves (test/fixtures/tool-agent.ts; a reply that is no tool call is
// played as text). Served equals the in-process gguf: policy rolled out with the same run seed: the same
// actions, observations, rewards and outcomes, and per turn the same token ids and log-probs, bit for
// bit; and turnwise's own engine scores those tokens as llama.cpp did (within F32 parity).
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { Rng } from '../../src/core/rng.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { mcpEpisodeOpener } from '../../src/harness/mcp-episode.ts';
import type { GgufPolicy } from '../../src/policies/gguf.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { type ClonedAgent, clonedAgent } from '../fixtures/gguf-agent.ts';
import { startServe } from '../fixtures/serve-process.ts';
import { servedEqualsLocal } from '../fixtures/tool-agent.ts';

const BUDGET = 6;
const RUN_SEED = 5;
const SAMPLES = 2;
const sql = envConfig('sql', { level: 1 });
// Six tasks: on the first four this clone writes no call the env takes (its valid calls come on 4 and 5).
const tasks = makeTasks(sql, 6, 0);
const spec = envs.spec(tasks[0]);
const children: ReturnType<typeof spawn>[] = [];
const opened: GgufPolicy[] = [];
let agent: ClonedAgent;
after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  for (const p of opened) await p.close();
  if (agent !== undefined) rmSync(agent.dir, { recursive: true, force: true });
});

before(async () => {
  agent = await clonedAgent(sql, {
    shape: 'layers=1,d=32,heads=2,ctx=1024,seed=0,temperature=0.5',
    vocab: 600,
    demos: 4,
    epochs: 30,
    budget: BUDGET,
  });
});

const roll = (policy: Parameters<typeof rollout>[0]['policy']) =>
  rollout({ tasks, samples: SAMPLES, budget: BUDGET, runSeed: RUN_SEED, policy, makeEnv: envs.make });

test('a GGUF model on sql: served through turnwise serve equals the gguf: policy in process (the transformer’s tokens), tool calls, refused calls and text replies alike', async () => {
  const gguf = makePolicy(`gguf:${agent.gguf}`, spec) as GgufPolicy;
  opened.push(gguf);
  const local = await roll(gguf);
  // Cross-check against turnwise's own engine: the checkpoint scores every token llama.cpp drew with the
  // log-prob llama.cpp recorded, within the F32 parity of test/llama/parity.test.ts (1e-3). (Not the same
  // draws: where two tokens' cumulative weights nearly tie, a rounding difference picks the other one.)
  const tf = makePolicy(agent.checkpoint, spec) as TransformerPolicy;
  let scored = 0;
  let worst = 0;
  for (const t of local) {
    const env = await envs.make(t.task);
    for (let k = 0; k < t.turns.length; k++) {
      const trace = t.turns[k].trace;
      if (trace?.tokens === undefined || trace.logprobs === undefined) continue;
      const c = contextAt(t, k, env);
      const { observation, history, turn, turnsLeft } = c;
      const ctx = { observation, history, turn, turnsLeft, env, rng: Rng.derive(0) };
      const ours = tf.scoreReply(ctx, trace.tokens).logprobs;
      ours.forEach((x, j) => {
        worst = Math.max(worst, Math.abs(x - (trace.logprobs as number[])[j]));
      });
      scored += ours.length;
    }
    await env.close?.();
  }
  assert.ok(scored > 100 && worst <= 1e-3, `${scored} tokens, max |Δ log p| = ${worst}`);
  const served = `--env sql --level 1 --tasks ${tasks.length} --seed 0 --budget ${BUDGET}`;
  const s = startServe([...served.split(' '), '--policy', `gguf:${agent.gguf}`]);
  children.push(s.child);
  const client = new OpenAI({ baseURL: await s.ready, apiKey: 'none', maxRetries: 0 });
  const kinds = await servedEqualsLocal(client, {
    model: 'gguf',
    open: mcpEpisodeOpener(envs.make, BUDGET, false),
    local,
    runSeed: RUN_SEED,
    samples: SAMPLES,
    budget: BUDGET,
  });
  // The comparison covers every path: valid calls, calls the env refuses, and text that is no call.
  assert.ok(kinds.call > 0 && kinds.refused > 0 && kinds.text > 0, JSON.stringify(kinds));
  assert.equal(await s.stop(), 0, 'the server stops on SIGTERM, the model closed');
});
