// The `gguf:` policy on a model that is not a turnwise export: no turnwise.policy entry, and a ChatML
// chat template (Qwen's layout: `<|im_start|>role\ncontent<|im_end|>\n`, the generation prompt
// `<|im_start|>assistant\n`) whose end of turn, `<|im_end|>`, is a control token llama.cpp counts as
// end of generation. The weights are the cloned agent's with two special tokens renamed — what is under
// test is the policy's handling of a foreign template, not the model's skill:
//   - the prompt is the template's render, tokenized by llama.cpp with the specials parsed;
//   - a generation stops on <|im_end|>, lists it last, and the teacher-forced score of the generated
//     tokens is the sum of their sampling log-probs;
//   - logProb closes an action as the template closes an assistant message (through <|im_end|>), and
//     equals the score of those tokens; actionTokens counts them the same way;
//   - tools mode by default (no turnwise.policy), τ from the spec.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Env } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { ggufMetadata, ggufTensors } from '../../src/export/gguf.ts';
import { encodeGguf, gguf } from '../../src/nn/gguf.ts';
import type { GgufPolicy } from '../../src/policies/gguf.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { clonedAgent } from '../fixtures/gguf-agent.ts';

const CHATML =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
let file: string;
let imStart: number;
let imEnd: number;
let policy: GgufPolicy;

before(async () => {
  const agent = await clonedAgent(lake, {
    shape: 'layers=2,d=32,heads=4,ctx=1024,seed=0',
    vocab: 400,
    demos: 2,
    epochs: 10,
    budget: 6,
  });
  const tok = agent.policy.tokenizer;
  imStart = tok.special['<|tool|>'];
  imEnd = tok.special['<|end|>'];
  const meta = ggufMetadata(agent.policy.model, tok, { name: 'chatml', type: 'f32' });
  const tokens = [...((meta.get('tokenizer.ggml.tokens')?.value ?? []) as string[])];
  tokens[imStart] = '<|im_start|>';
  tokens[imEnd] = '<|im_end|>';
  meta.set('tokenizer.ggml.tokens', gguf.strings(tokens));
  meta.set('tokenizer.chat_template', gguf.str(CHATML));
  file = join(mkdtempSync(join(tmpdir(), 'tw-gguf-chatml-')), 'chatml.gguf');
  writeFileSync(file, encodeGguf(meta, ggufTensors(agent.policy.model, 'f32')));
  policy = makePolicy(
    `gguf:${file},temperature=1.5,max_tokens=24`,
    envs.spec(makeTasks(lake, 1, 0)[0]),
  ) as GgufPolicy;
});
after(() => policy.close());

test('a ChatML model: the prompt is its template, generations stop on <|im_end|>, scores equal sampling log-probs', async () => {
  assert.equal(policy.format, undefined);
  assert.equal(policy.mode, 'tools');
  const tasks = makeTasks(lake, 3, 40);
  const ts = await rollout({ tasks, samples: 2, budget: 4, runSeed: 1, policy, makeEnv: envs.make });
  let stopped = 0;
  let scored = 0;
  for (const t of ts)
    for (const [k, u] of t.turns.entries()) {
      const ctx = contextAt(t, k, envs.make(t.task) as Env<unknown, unknown>);
      const prompt = await policy.prompt(ctx);
      assert.ok(prompt.text.startsWith('<|im_start|>system\nYou'), prompt.text.slice(0, 40));
      assert.ok(prompt.text.endsWith('<|im_end|>\n<|im_start|>assistant\n'));
      assert.equal(prompt.tokens[0], imStart);
      assert.equal(prompt.tokens.filter((x) => x === imEnd).length, 1 + 2 * prompt.kept + 1);
      const tr = u.trace ?? {};
      const tokens = tr.tokens ?? [];
      if (tr.finishReason === 'stop') {
        stopped++;
        assert.equal(tokens.at(-1), imEnd);
        assert.equal(tokens.slice(0, -1).includes(imEnd), false);
      } else assert.equal(tokens.length, 24);
      const s = await policy.scoreReply(ctx, tokens);
      const sum = s.logprobs.reduce((a, x) => a + x, 0);
      assert.ok(Math.abs(sum - u.logp) <= 1e-4, `turn ${k}: scored ${sum}, sampled ${u.logp}`);
      scored++;
    }
  assert.ok(scored >= 6 && stopped >= 1, `${scored} turns scored, ${stopped} stopped`);
});

test('logProb closes an action with <|im_end|> as the template does; actionTokens counts the same tokens', async () => {
  const tasks = makeTasks(lake, 1, 41);
  const [t] = await rollout({ tasks, samples: 1, budget: 2, runSeed: 2, policy, makeEnv: envs.make });
  const ctx = contextAt(t, 0, envs.make(t.task) as Env<unknown, unknown>);
  for (let a = 0; a < 4; a++) {
    const reply = (await policy.replyTokens(ctx, a)) as number[];
    assert.equal(reply.at(-1), imEnd);
    assert.deepEqual(policy.actionTokens(envs.spec(t.task), a), reply);
    const s = await policy.scoreReply(ctx, reply);
    const lp = await policy.logProb(ctx, a);
    assert.ok(Number.isFinite(lp) && lp < 0);
    assert.ok(Math.abs(lp - s.logprobs.reduce((x, y) => x + y, 0)) < 1e-12);
  }
  // The four actions' probabilities sum to at most 1 (other replies are possible).
  let total = 0;
  for (let a = 0; a < 4; a++) total += Math.exp(await policy.logProb(ctx, a));
  assert.ok(total > 0 && total <= 1 + 1e-9, `Σ π(a) = ${total}`);
});
