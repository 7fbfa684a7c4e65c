// The exported transformer in llama.cpp (the real node-llama-cpp 3.21.1, its prebuilt CPU build) against
// turnwise's own engine:
//   - tokenizer parity: llama.cpp tokenizes a fixed set of texts (ASCII, UTF-8 of 2, 3 and 4 bytes, runs of
//     whitespace, digits, contractions, the special tokens) into exactly turnwise's ids, and back;
//   - logit parity: the next-token log-probabilities after every position of a fixed prompt set (chat
//     prompts of real FrozenLake episodes, and free text) agree within 1e-3 for F32 — for the cloned agent,
//     and for models with a separate head and with grouped-query attention (the k rows permuted per kv
//     head). llama.cpp runs an F32 model as a `gguf:` policy does: an F32 KV cache, no flash attention
//     (its defaults, an F16 cache and F16 flash attention on CPU, move log-probs by up to ~0.09 nats on
//     these prompts — measured by the last test, which also states Q8_0's accuracy).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getLlama, type Llama, type LlamaModel } from 'node-llama-cpp';
import { Rng } from '../../src/core/rng.ts';
import type { Env } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { transformerGguf } from '../../src/export/gguf.ts';
import { tokenLogProbs } from '../../src/nn/sampling.ts';
import { noGrad } from '../../src/nn/tensor.ts';
import type { Tokenizer } from '../../src/nn/tokenizer.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { type ClonedAgent, clonedAgent } from '../fixtures/gguf-agent.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
const dir = mkdtempSync(join(tmpdir(), 'tw-llama-parity-'));
let llama: Llama;
let agent: ClonedAgent;
const loaded: LlamaModel[] = [];

before(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never, logger: () => {} });
  agent = await clonedAgent(lake, {
    shape: 'layers=2,d=32,heads=4,ctx=512,seed=0',
    vocab: 400,
    demos: 2,
    epochs: 20,
    budget: 8,
  });
});
after(async () => {
  for (const m of loaded) await m.dispose();
});

async function load(path: string): Promise<LlamaModel> {
  const m = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  loaded.push(m);
  return m;
}

/** Real prompts: each turn of a few episodes of the agent, as it built them. */
async function episodePrompts(n: number): Promise<number[][]> {
  const tasks = makeTasks(lake, n, 500);
  const trajectories = await rollout({
    tasks,
    samples: 1,
    budget: 4,
    runSeed: 3,
    policy: agent.policy,
    makeEnv: envs.make,
  });
  const out: number[][] = [];
  for (const t of trajectories)
    for (let i = 0; i < t.turns.length; i++) {
      const ctx = contextAt(t, i, envs.make(t.task) as Env<unknown, unknown>);
      out.push(agent.policy.prompt(ctx).tokens);
    }
  return out;
}

/** The largest |Δ log p| over every vocabulary entry after every position of each prompt. */
const PRECISE = {
  flashAttention: false,
  experimentalKvCacheKeyType: 'F32',
  experimentalKvCacheValueType: 'F32',
};

/** The largest |Δ log p| over every vocabulary entry after every position of each prompt, and over the
 * entries our model gives p ≥ 0.01; the mean KL(ours ‖ llama.cpp) per position. */
async function logProbDiffs(
  path: string,
  model: Transformer,
  prompts: readonly number[][],
  precise = true,
): Promise<{ worst: number; likely: number; kl: number }> {
  const m = await load(path);
  const context = await m.createContext({
    contextSize: model.config.ctx,
    threads: 1,
    ...(precise ? PRECISE : {}),
  } as never);
  const seq = context.getSequence();
  const V = model.config.vocab;
  let worst = 0;
  let likely = 0;
  let kl = 0;
  let rows = 0;
  try {
    for (const prompt of prompts) {
      await seq.clearHistory();
      const res = await seq.controlledEvaluate(
        prompt.map((t) => [
          t,
          { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } },
        ]) as never,
      );
      const logits = noGrad(() => model.forward(Int32Array.from(prompt), [1, prompt.length])).data;
      for (let i = 0; i < prompt.length; i++) {
        const probs = res[i]?.next.probabilities;
        assert.ok(probs !== undefined && probs.size === V, `a full distribution after position ${i}`);
        const ours = tokenLogProbs(logits, i * V, V);
        rows++;
        for (const [id, p] of probs) {
          const d = Math.abs(Math.log(p) - ours[id]);
          worst = Math.max(worst, d);
          if (ours[id] >= Math.log(0.01)) likely = Math.max(likely, d);
          if (p > 0) kl += Math.exp(ours[id]) * (ours[id] - Math.log(p));
        }
      }
    }
  } finally {
    await context.dispose();
  }
  return { worst, likely, kl: kl / rows };
}

const TEXTS = [
  'plain ASCII: the agent moves Left, then Down.',
  "don't we'll they're I'm you've she'd it's",
  '  leading spaces, trailing spaces   \n\n\ttabs\r\nand CRLF  ',
  'numbers 0 12 345 6789 3.14159 1e-5 -42',
  'Grüße, naïve café — “quotes” – ½ · ü',
  '日本語のテキスト、中文文本，한국어 텍스트',
  'emoji 🎉🧊🕳️🏁 and a flag 🇫🇷, a family 👩‍👩‍👧',
  '<|system|>Act.<|end|><|user|>Turn 1. S F F\nF H F<|end|><|assistant|><tool_call>\n{"name":"move","arguments":{"direction":"Left"}}\n</tool_call><|end|>',
  'a literal <|end without closing, and <|end|> twice <|end|><|endoftext|>',
];

test('tokenizer parity: llama.cpp tokenizes ASCII, multi-byte UTF-8, whitespace, digits and the special tokens into exactly our ids', async () => {
  const m = await load(agent.gguf);
  const tok: Tokenizer = agent.policy.tokenizer;
  for (const text of TEXTS) {
    const ours = tok.encodeWithSpecials(text);
    assert.deepEqual([...m.tokenize(text, true)], ours, JSON.stringify(text));
    assert.equal(m.detokenize(ours as never, true), text, JSON.stringify(text));
    // Without special parsing, a special token's text is ordinary bytes on both sides.
    assert.deepEqual([...m.tokenize(text, false)], tok.encode(text), JSON.stringify(text));
  }
  assert.equal(m.tokens.eos, tok.special['<|endoftext|>']);
  assert.equal(m.isEogToken(tok.special['<|end|>'] as never), true);
});

test('logit parity (F32): every next-token log-prob after every position of real episode prompts and free text within 1e-3', async () => {
  const prompts = [
    ...(await episodePrompts(3)),
    ...TEXTS.map((t) => agent.policy.tokenizer.encodeWithSpecials(t)),
  ];
  const { worst } = await logProbDiffs(agent.gguf, agent.policy.model, prompts);
  assert.ok(worst <= 1e-3, `max |Δ log p| = ${worst}`);
});

test('logit parity holds for a separate head and for grouped-query attention (sharp random weights)', async () => {
  const tok = agent.policy.tokenizer;
  for (const shape of [{ tiedHead: false }, { kvHeads: 2 }]) {
    const config = transformerConfig({
      layers: 2,
      d: 32,
      heads: 4,
      ctx: 128,
      vocab: tok.vocabSize,
      ...shape,
    });
    const model = new Transformer(config, Rng.derive(11));
    // Sharpen: larger embeddings and head give logits spread over tens of nats (a harder comparison).
    for (const [n, t] of model.namedParameters())
      if (n.includes('embed') || n.includes('lm_head'))
        for (let i = 0; i < t.data.length; i++) t.data[i] *= 25;
    const file = join(dir, `random-${JSON.stringify(shape).replace(/\W/g, '')}.gguf`);
    writeFileSync(file, transformerGguf(model, tok, { name: 'random', type: 'f32' }));
    const { worst } = await logProbDiffs(
      file,
      model,
      TEXTS.map((t) => tok.encodeWithSpecials(t)),
    );
    assert.ok(worst <= 1e-3, `${JSON.stringify(shape)}: max |Δ log p| = ${worst}`);
  }
});

test('accuracy of what else llama.cpp runs: its default F16 cache with flash attention, and a Q8_0 file (width 64)', async (t) => {
  const prompts = await episodePrompts(2);
  const f16 = await logProbDiffs(agent.gguf, agent.policy.model, prompts, false);
  // Q8_0 stores rows in blocks of 32 values: a model of width 64 (two blocks per row).
  const wide = await clonedAgent(lake, {
    shape: 'layers=2,d=64,heads=4,ctx=512,seed=0',
    vocab: 400,
    demos: 2,
    epochs: 20,
    budget: 8,
  });
  const file = join(dir, 'wide-q8.gguf');
  writeFileSync(
    file,
    transformerGguf(wide.policy.model, wide.policy.tokenizer, { name: 'wide', type: 'q8_0' }),
  );
  const q8 = await logProbDiffs(file, wide.policy.model, prompts, false);
  t.diagnostic(
    `F16 cache + flash attention: max |Δ log p| ${f16.worst.toExponential(2)}, over p ≥ 0.01 ${f16.likely.toExponential(2)}, mean KL ${f16.kl.toExponential(2)}`,
  );
  t.diagnostic(
    `Q8_0: max |Δ log p| ${q8.worst.toExponential(2)}, over p ≥ 0.01 ${q8.likely.toExponential(2)}, mean KL ${q8.kl.toExponential(2)}`,
  );
  // Not exact (these are lossy), and small where it matters: the likely tokens and the KL.
  assert.ok(f16.worst > 1e-4 && f16.likely <= 0.1 && f16.kl <= 1e-3, JSON.stringify(f16));
  assert.ok(q8.worst > 1e-3 && q8.likely <= 1.5 && q8.kl <= 0.01, JSON.stringify(q8));
});
