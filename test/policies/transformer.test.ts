// The transformer as a text policy: its prompt is the openai: policy's chat (and the expert
// transcripts'), the context rule and ContextOverflow, unparseable generations as invalid actions,
// traces that carry tokens and log-probs, lockstep = one at a time, same seed same bytes, save/load.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ContextOverflow, InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Env, EnvSpec, Task, ToolCall, Trajectory, TurnContext } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { transformerCheckpointBytes } from '../../src/nn/transformer-checkpoint.ts';
import { INVALID_ACTION } from '../../src/policies/chat.ts';
import { POLICY_FILE } from '../../src/policies/checkpoint-file.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { TransformerPolicy } from '../../src/policies/transformer.ts';
import { type PromptView, parseGeneration, promptMessages } from '../../src/policies/transformer-prompt.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
const sql = envConfig('sql', { level: 1 });
const lakeTasks = makeTasks(lake, 3, 40);
const lakeSpec = envs.spec(lakeTasks[0]);
const dir = mkdtempSync(join(tmpdir(), 'tw-transformer-'));
const oneLine = (re: RegExp) => (e: unknown) =>
  e instanceof InputError && re.test(e.message) && !e.message.includes('\n');

/** A BPE tokenizer learned on a few lake transcripts (short prompts keep the tests fast). */
const tokFile = join(dir, 'tok.json');
const transcripts = await expertTranscripts({ envs, config: lake, episodes: 8, seed: 1, eps: 0.1 });
writeFileSync(tokFile, JSON.stringify(trainBpe(transcriptTexts(transcripts), 420).toJSON()));

const tiny = (extra = '', ctx = 512) =>
  `transformer:layers=1,d=16,heads=2,ctx=${ctx},seed=3,tokenizer=${tokFile}${extra}`;
/** The context act() saw at turn k of t, drawing from its own stream. */
const drawing = (
  t: Trajectory,
  k: number,
  env: Env<unknown, unknown>,
  seed: number,
): TurnContext<unknown> => {
  const c = contextAt(t, k, env);
  return {
    observation: c.observation,
    history: c.history,
    turn: c.turn,
    turnsLeft: c.turnsLeft,
    env,
    rng: Rng.derive(seed),
  };
};

async function expert(config: typeof lake, n: number, seed: number): Promise<Trajectory[]> {
  const tasks = makeTasks(config, n, seed);
  const policy = makePolicy('oracle:eps=0.2', envs.spec(tasks[0]));
  return rollout({ tasks, samples: 1, budget: 30, runSeed: seed, policy, makeEnv: envs.make });
}

function viewOf(
  t: Trajectory,
  k: number,
  spec: EnvSpec,
  env: Env<unknown, unknown>,
  mode: 'tools' | 'text',
): PromptView {
  const ctx = contextAt(t, k, env);
  return {
    spec,
    mode,
    text: (o) => (env.text as (o: unknown) => string)(o),
    observation: ctx.observation,
    history: ctx.history,
    turn: ctx.turn,
    turnsLeft: ctx.turnsLeft,
  };
}

test("the prompt of every turn is the expert transcript's (FrozenLake: the openai: policy's chat; sql: the MCP text view)", async () => {
  for (const config of [lake, sql]) {
    const trajectories = await expert(config, 2, 9);
    const spec = envs.spec(trajectories[0].task);
    const p = makePolicy(tiny(',budgetAware=1', 65536), spec) as TransformerPolicy;
    for (const t of trajectories) {
      const env = (await envs.make(t.task)) as Env<unknown, unknown>;
      const { episodeTranscript } = await import('../../src/train/transcripts.ts');
      const tr = episodeTranscript(t, spec, (o) => (env.text as (o: unknown) => string)(o));
      assert.ok(t.turns.length > 1);
      for (let k = 0; k < t.turns.length; k++) {
        const got = p.prompt(contextAt(t, k, env));
        assert.equal(got.kept, k);
        assert.deepEqual(
          got.tokens,
          p.tokenizer.encodeChat(tr.messages.slice(0, tr.actions[k]), 'assistant'),
        );
        // The action the expert took, as the policy would write it, is the transcript's assistant text.
        const action = p.actionTokens(spec, t.turns[k].action);
        assert.deepEqual(action, [
          ...p.tokenizer.encode(tr.messages[tr.actions[k]].text),
          p.tokenizer.special['<|end|>'],
        ]);
      }
      await env.close?.();
    }
  }
});

test('context rule: the most recent whole turns that fit in ctx − max_tokens; ContextOverflow when the current turn alone does not', async () => {
  const [t] = await expert(lake, 1, 12);
  const env = (await envs.make(t.task)) as Env<unknown, unknown>;
  const p = makePolicy(tiny('', 300), lakeSpec) as TransformerPolicy;
  let truncated = 0;
  for (let k = 0; k < t.turns.length; k++) {
    const v = viewOf(t, k, lakeSpec, env, 'tools');
    v.turnsLeft = undefined; // a budget-blind policy is not shown the turns left
    const len = (keep: number) => p.tokenizer.encodeChat(promptMessages(v, keep), 'assistant').length;
    let best = -1;
    for (let keep = 0; keep <= k; keep++) if (len(keep) <= 300 - p.maxTokens) best = keep;
    const got = p.prompt(contextAt(t, k, env));
    assert.equal(got.kept, best, `turn ${k}`);
    assert.deepEqual(got.tokens, p.tokenizer.encodeChat(promptMessages(v, best), 'assistant'));
    if (best < k) truncated++;
  }
  assert.ok(truncated > 0, 'the window is small enough to drop turns');
  // The system message and the first turn fit exactly; the second turn's message (with feedback) does not.
  const first = p.prompt(contextAt(t, 0, env)).tokens.length;
  const exact = makePolicy(tiny('', first + p.maxTokens), lakeSpec) as TransformerPolicy;
  assert.equal(exact.prompt(contextAt(t, 0, env)).tokens.length, first);
  assert.throws(() => exact.prompt(contextAt(t, 1, env)), ContextOverflow);
  const [a, b] = exact.actBatch([contextAt(t, 1, env), drawing(t, 0, env, 1)]);
  assert.ok(a instanceof ContextOverflow);
  assert.ok(!(b instanceof Error) && b.trace?.tokens !== undefined);
  // In a rollout, lockstep or one at a time, the episode ends as failure kind `context`.
  for (const lockstep of [true, false]) {
    const [r] = await rollout({
      tasks: [t.task],
      samples: 1,
      budget: 5,
      runSeed: 1,
      policy: exact,
      makeEnv: envs.make,
      lockstep,
    });
    assert.equal(r.turns.length, 1);
    assert.equal(r.outcome.failure, 'context');
  }
  await env.close?.();
});

test('a generation that does not parse is an invalid action; the trace carries tokens, log-probs and logp = their sum', async () => {
  const p = makePolicy(tiny(), lakeSpec) as TransformerPolicy;
  const trajectories = await rollout({
    tasks: lakeTasks,
    samples: 2,
    budget: 4,
    runSeed: 2,
    policy: p,
    makeEnv: envs.make,
  });
  let invalid = 0;
  for (const t of trajectories)
    for (const turn of t.turns) {
      const tr = turn.trace!;
      assert.equal(tr.tokens!.length, tr.logprobs!.length);
      assert.ok(tr.tokens!.length <= p.maxTokens);
      assert.equal(
        turn.logp,
        tr.logprobs!.reduce((s, x) => s + x, 0),
      );
      assert.equal(
        tr.text,
        p.tokenizer.decode(tr.finishReason === 'stop' ? tr.tokens!.slice(0, -1) : tr.tokens!),
      );
      if (tr.invalid !== undefined) {
        invalid++;
        assert.equal(turn.action, INVALID_ACTION);
        assert.equal(turn.info.valid, false);
      }
    }
  assert.ok(invalid > 0, 'an untrained model writes text that is not an action');
});

test("generations are read with the openai: policy's parser: a <tool_call> is a tool call, else text mode's <answer>", () => {
  const call = (dir: string) =>
    `<tool_call>\n{"name":"move","arguments":{"direction":"${dir}"}}\n</tool_call>`;
  assert.deepEqual(parseGeneration(lakeSpec, 'tools', call('Up')), { action: 3 });
  assert.deepEqual(parseGeneration(lakeSpec, 'tools', '<answer>Down</answer>'), { action: 1 });
  assert.deepEqual(parseGeneration(lakeSpec, 'text', '<answer>Left</answer>'), { action: 0 });
  assert.deepEqual(parseGeneration(lakeSpec, 'tools', 'go right'), {
    action: INVALID_ACTION,
    invalid: 'no tool call',
  });
  assert.deepEqual(parseGeneration(lakeSpec, 'text', 'go right'), {
    action: INVALID_ACTION,
    invalid: 'no <answer>…</answer> in the message',
  });
  assert.equal(
    parseGeneration(lakeSpec, 'tools', call('North')).invalid,
    'direction must be one of Left, Down, Right, Up',
  );
  const sqlSpec = envs.spec(makeTasks(sql, 1, 0)[0]);
  const q: ToolCall = { name: 'execute_sql', arguments: { query: 'SELECT 1' } };
  assert.deepEqual(parseGeneration(sqlSpec, 'tools', `<tool_call>\n${JSON.stringify(q)}\n</tool_call>`), {
    action: q,
  });
  assert.deepEqual(parseGeneration(sqlSpec, 'tools', 'SELECT 1'), {
    action: 'SELECT 1',
    invalid: 'no tool call',
  });
});

test('lockstep equals one at a time; the same seed gives the same bytes and the same episodes', async () => {
  const a = makePolicy(tiny(), lakeSpec) as TransformerPolicy;
  const b = makePolicy(tiny(), lakeSpec) as TransformerPolicy;
  assert.deepEqual(a.checkpoint(), b.checkpoint());
  assert.notDeepEqual(
    a.checkpoint(),
    (makePolicy(tiny().replace('seed=3', 'seed=4'), lakeSpec) as TransformerPolicy).checkpoint(),
  );
  const run = (policy: TransformerPolicy, lockstep: boolean) =>
    rollout({ tasks: lakeTasks, samples: 2, budget: 3, runSeed: 5, policy, makeEnv: envs.make, lockstep });
  const together = JSON.stringify(await run(a, true));
  assert.equal(JSON.stringify(await run(b, false)), together);
  assert.equal(JSON.stringify(await run(a, true)), together);
});

test('the prefix cache changes no byte of a rollout (sql: prompts that extend each turn; FrozenLake), and is used', async () => {
  const sqlTasks = makeTasks(sql, 2, 7);
  const sqlSpec = envs.spec(sqlTasks[0]);
  for (const [tasks, spec, budget] of [
    [sqlTasks, sqlSpec, 3],
    [lakeTasks, lakeSpec, 4],
  ] as const) {
    const run = (policy: TransformerPolicy) =>
      rollout({ tasks, samples: 2, budget, runSeed: 5, policy, makeEnv: envs.make });
    const plain = makePolicy(tiny('', 1024), spec) as TransformerPolicy;
    plain.prefixCache = undefined;
    const cached = makePolicy(tiny('', 1024), spec) as TransformerPolicy;
    assert.equal(JSON.stringify(await run(cached)), JSON.stringify(await run(plain)), spec.id);
    const stats = cached.prefixCache?.stats;
    assert.ok(stats !== undefined && stats.reused > 0, `${spec.id}: ${JSON.stringify(stats)}`);
    // Scoring the recorded actions (NLL, LLR) through the cache: the same numbers.
    const env = await envs.make(tasks[0]);
    const [t] = await run(plain);
    for (let k = 0; k < t.turns.length; k++) {
      const ctx = drawing(t, k, env, 1);
      assert.equal(cached.logProb(ctx, t.turns[k].action), plain.logProb(ctx, t.turns[k].action));
    }
    await env.close?.();
  }
});

test('save/load: a checkpoint file or run directory acts as the policy it was (model, tokenizer and format together)', async () => {
  const p = makePolicy(tiny(',temperature=0.7,top_p=0.9,mode=text'), lakeSpec) as TransformerPolicy;
  const file = join(dir, 'p.safetensors');
  p.save(file);
  const run = join(dir, 'run');
  mkdirSync(run);
  writeFileSync(join(run, POLICY_FILE), readFileSync(file));
  const roll = async (policy: unknown) =>
    (
      await rollout({
        tasks: lakeTasks,
        samples: 1,
        budget: 3,
        runSeed: 8,
        policy: policy as TransformerPolicy,
        makeEnv: envs.make,
      })
    ).map((t) => JSON.stringify(t.turns));
  const before = await roll(p);
  for (const spec of [file, run]) {
    const q = makePolicy(spec, lakeSpec) as TransformerPolicy;
    assert.ok(q instanceof TransformerPolicy);
    assert.deepEqual(q.format, p.format);
    assert.deepEqual(q.tokenizer.merges, p.tokenizer.merges);
    assert.deepEqual(q.checkpoint(), p.checkpoint());
    assert.deepEqual(await roll(q), before);
  }
});

test('transformer:from=RUN,temperature=0: the saved model, sampled otherwise (greedy: every token the argmax)', async () => {
  const p = makePolicy(tiny(',mode=text'), lakeSpec) as TransformerPolicy;
  const file = join(dir, 'from.safetensors');
  p.save(file);
  const greedy = makePolicy(
    `transformer:from=${file},temperature=0,max_tokens=5`,
    lakeSpec,
  ) as TransformerPolicy;
  assert.deepEqual(greedy.format, { ...p.format, temperature: 0, maxTokens: 5 });
  assert.deepEqual(
    greedy.checkpoint(),
    new TransformerPolicy(p.model, p.tokenizer, greedy.format, lakeSpec, 'x').checkpoint(),
  );
  const [t] = await rollout({
    tasks: lakeTasks,
    samples: 1,
    budget: 2,
    runSeed: 3,
    policy: greedy,
    makeEnv: envs.make,
  });
  for (const turn of t.turns) {
    const ctx = contextAt(t, turn.t, envs.make(t.task));
    const prompt = greedy.prompt(ctx).tokens;
    const tokens = turn.trace?.tokens ?? [];
    assert.ok(tokens.length > 0 && tokens.length <= 5);
    tokens.forEach((tok, k) => {
      const logits = greedy.model.forward(Int32Array.from([...prompt, ...tokens.slice(0, k)]), [
        1,
        prompt.length + k,
      ]);
      const row = logits.data.subarray(
        (prompt.length + k - 1) * p.model.config.vocab,
        (prompt.length + k) * p.model.config.vocab,
      );
      assert.equal(tok, row.indexOf(Math.max(...row)), `turn ${turn.t} token ${k}`);
    });
    assert.deepEqual(
      turn.trace?.logprobs,
      tokens.map(() => 0),
    );
  }
  assert.throws(
    () => makePolicy(`transformer:from=${file},ctx=64`, lakeSpec),
    oneLine(/transformer\.ctx: got 64; is fixed by the saved model given as from=/),
  );
  assert.throws(
    () => makePolicy(`transformer:from=${join(dir, 'none')}`, lakeSpec),
    oneLine(/cannot read checkpoint/),
  );
});

test('bad specs and files are refused in one line', () => {
  assert.throws(
    () => makePolicy(tiny(',vocab=300'), lakeSpec),
    oneLine(/transformer\.vocab: got 300; the tokenizer .* has 420 tokens/),
  );
  assert.throws(() => makePolicy('transformer:vocab=300', lakeSpec), oneLine(/has 262 tokens/));
  assert.ok(makePolicy('transformer:vocab=262,layers=1,d=8,heads=2', lakeSpec) instanceof TransformerPolicy);
  assert.throws(() => makePolicy('transformer:d=12,heads=4', lakeSpec), oneLine(/transformer\.d: got 12/));
  assert.throws(() => makePolicy('transformer:top_p=0', lakeSpec), oneLine(/top_p: got "0"/));
  assert.throws(
    () => makePolicy('transformer:tokenizer=/nonexistent.json', lakeSpec),
    oneLine(/cannot read it/),
  );
  const sqlSpec = envs.spec(makeTasks(sql, 1, 0)[0]);
  assert.throws(
    () => makePolicy('transformer:mode=text,d=8,heads=2,layers=1', sqlSpec),
    oneLine(/mode=text needs a discrete env/),
  );
  const tabular = envs.spec({ env: 'frozenlake', params: {}, seed: 0 } as Task);
  assert.ok(makePolicy('transformer:d=8,heads=2,layers=1', tabular) instanceof TransformerPolicy);
  // A damaged file (one byte of the weights flipped): the checksum refuses it.
  const p = makePolicy(tiny(), lakeSpec) as TransformerPolicy;
  const bytes = p.checkpoint();
  bytes[bytes.length - 3] ^= 0xff;
  const damaged = join(dir, 'damaged.safetensors');
  writeFileSync(damaged, bytes);
  assert.throws(() => makePolicy(damaged, lakeSpec), oneLine(/checksum mismatch/));
  // A bare transformer checkpoint (no tokenizer, no prompt format) is not a policy.
  const bare = join(dir, 'bare.safetensors');
  writeFileSync(bare, transformerCheckpointBytes(p.model));
  assert.throws(
    () => makePolicy(bare, lakeSpec),
    oneLine(/without __metadata__\.policy: not a turnwise transformer policy/),
  );
  // Trained on another env.
  const other = join(dir, 'other.safetensors');
  const fmt = { ...p.format, env: 'sql' };
  writeFileSync(other, new TransformerPolicy(p.model, p.tokenizer, fmt, lakeSpec, 'x').checkpoint());
  assert.throws(() => makePolicy(other, lakeSpec), oneLine(/trained on env sql; this env is frozenlake/));
});

test('act() on one context equals its row of actBatch (each from its own stream)', async () => {
  const [t] = await expert(lake, 1, 3);
  const env = (await envs.make(t.task)) as Env<unknown, unknown>;
  const p = makePolicy(tiny(), lakeSpec) as TransformerPolicy;
  const ctx = (k: number, seed: number) => drawing(t, k, env, seed);
  const batch = p.actBatch([ctx(0, 1), ctx(1, 2), ctx(2, 3)]);
  assert.deepEqual([p.act(ctx(0, 1)), p.act(ctx(1, 2)), p.act(ctx(2, 3))], batch);
  await env.close?.();
});
