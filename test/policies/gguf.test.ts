// The `gguf:` policy (policies/gguf.ts) on a turnwise agent exported as GGUF, run by llama.cpp:
//   - at temperature 0 it takes the transformer's actions on FrozenLake text-mode episodes and on sql
//     episodes (tool calls), token for token; sampled at τ 1 with the same seeds, the same episodes too;
//   - its log-probs are those of the tokens it drew: logProb(ctx, action) of a generated action is the
//     sum of the sampling log-probs in its trace, and the transformer's logProb (within 1e-3);
//   - the same bytes at concurrency 1 and 8 (decodes never share a batch: llama/runtime.ts);
//   - top_logprobs=k records k alternatives per token, the drawn token's log-prob among them;
//   - bad input (a missing file, a file that is not GGUF, an architecture that does not generate text or
//     that llama.cpp does not know, a file without a chat template, a model too large for the memory,
//     bad parameters): one line naming it, exit 2, before any work — through the real CLI.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Env, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { encodeGguf, gguf } from '../../src/nn/gguf.ts';
import type { GgufPolicy } from '../../src/policies/gguf.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { turnwise } from '../cli/run.ts';
import { type ClonedAgent, clonedAgent } from '../fixtures/gguf-agent.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
const sql = envConfig('sql', { level: 1 });
const dir = mkdtempSync(join(tmpdir(), 'tw-gguf-policy-'));
let text: ClonedAgent;
let tools: ClonedAgent;
const opened: GgufPolicy[] = [];

before(async () => {
  text = await clonedAgent(lake, {
    shape: 'layers=2,d=32,heads=4,ctx=512,seed=0,mode=text',
    vocab: 400,
    demos: 3,
    epochs: 20,
    budget: 8,
  });
  tools = await clonedAgent(sql, {
    shape: 'layers=1,d=32,heads=2,ctx=1024,seed=0',
    vocab: 600,
    demos: 3,
    epochs: 20,
    budget: 6,
  });
});
after(async () => {
  for (const p of opened) await p.close();
});

function gguf_(spec: string, env: ReturnType<typeof envs.spec>): GgufPolicy {
  const p = makePolicy(spec, env) as GgufPolicy;
  opened.push(p);
  return p;
}

/** What must match between two runs of the same episodes: every turn's action, reward, text and ids. */
const turns = (ts: readonly Trajectory[]) =>
  ts.map((t) => ({
    outcome: t.outcome,
    turns: t.turns.map((u) => ({
      action: u.action,
      reward: u.reward,
      text: u.trace?.text,
      tokens: u.trace?.tokens,
    })),
  }));

function maxLogpGap(a: readonly Trajectory[], b: readonly Trajectory[]): number {
  let worst = 0;
  for (const [i, t] of a.entries())
    for (const [k, u] of t.turns.entries()) worst = Math.max(worst, Math.abs(u.logp - b[i].turns[k].logp));
  return worst;
}

test('temperature 0: the transformer’s actions on FrozenLake text-mode episodes and on sql episodes, token for token', async () => {
  for (const [agent, config, budget] of [
    [text, lake, 12],
    [tools, sql, 6],
  ] as const) {
    const tasks = makeTasks(config, 4, 700);
    const spec = envs.spec(tasks[0]);
    const run = (spec_: string) =>
      rollout({ tasks, samples: 2, budget, runSeed: 9, policy: makePolicy(spec_, spec), makeEnv: envs.make });
    const ours = await run(`transformer:from=${agent.checkpoint},temperature=0`);
    const theirs = await rollout({
      tasks,
      samples: 2,
      budget,
      runSeed: 9,
      policy: gguf_(`gguf:${agent.gguf},temperature=0`, spec),
      makeEnv: envs.make,
    });
    assert.deepEqual(turns(theirs), turns(ours), config.env);
    const n = ours.reduce((s, t) => s + t.turns.length, 0);
    assert.ok(n >= 8, `${config.env}: ${n} turns compared`);
  }
});

test('sampled at τ 1 with the same seeds: the same episodes, each turn’s log-prob within 1e-4', async () => {
  const tasks = makeTasks(lake, 4, 800);
  const spec = envs.spec(tasks[0]);
  const o = { tasks, samples: 3, budget: 12, runSeed: 4, makeEnv: envs.make };
  const ours = await rollout({ ...o, policy: makePolicy(text.checkpoint, spec) });
  const theirs = await rollout({ ...o, policy: gguf_(`gguf:${text.gguf}`, spec) });
  assert.deepEqual(turns(theirs), turns(ours));
  assert.ok(maxLogpGap(ours, theirs) <= 1e-4, `max |Δ logp| ${maxLogpGap(ours, theirs)}`);
});

test('the same bytes at any concurrency: 1 episode at a time or 8, the same turns and log-probs', async () => {
  const tasks = makeTasks(lake, 4, 850);
  const spec = envs.spec(tasks[0]);
  const policy = gguf_(`gguf:${text.gguf}`, spec);
  const o = { tasks, samples: 2, budget: 10, runSeed: 6, policy, makeEnv: envs.make };
  const one = await rollout({ ...o, concurrency: 1 });
  const eight = await rollout({ ...o, concurrency: 8 });
  assert.equal(JSON.stringify(eight), JSON.stringify(one));
});

test('logProb of a generated action is the sum of its sampling log-probs, and the transformer’s logProb; top_logprobs lists alternatives', async () => {
  const tasks = makeTasks(lake, 2, 900);
  const spec = envs.spec(tasks[0]);
  const policy = gguf_(`gguf:${text.gguf},top_logprobs=3`, spec);
  const transformer = makePolicy(text.checkpoint, spec);
  const ts = await rollout({ tasks, samples: 2, budget: 6, runSeed: 2, policy, makeEnv: envs.make });
  let checked = 0;
  for (const t of ts)
    for (const [k, u] of t.turns.entries()) {
      const tr = u.trace ?? {};
      assert.equal(tr.topLogprobs?.length, tr.tokens?.length);
      tr.topLogprobs?.forEach((alts, j) => {
        assert.equal(alts.length, 3);
        assert.ok(alts[0].logprob >= alts[1].logprob && alts[1].logprob >= alts[2].logprob);
        const own = alts.find((a) => a.id === tr.tokens?.[j]);
        if (own !== undefined) assert.ok(Math.abs(own.logprob - (tr.logprobs?.[j] ?? Number.NaN)) < 1e-12);
        else assert.ok((tr.logprobs?.[j] ?? 0) <= alts[2].logprob);
      });
      if (u.info.valid === false) continue;
      const ctx = contextAt(t, k, envs.make(t.task) as Env<unknown, unknown>);
      const scored = await policy.logProb(ctx, u.action);
      assert.ok(Math.abs(scored - u.logp) <= 1e-4, `turn ${k}: logProb ${scored}, sampled ${u.logp}`);
      const inProcess = (await transformer.logProb?.(ctx, u.action)) as number;
      assert.ok(Math.abs(scored - inProcess) <= 1e-3, `turn ${k}: ${scored} vs transformer ${inProcess}`);
      checked++;
    }
  assert.ok(checked >= 4, `${checked} actions scored`);
  assert.equal(
    await policy.logProb(contextAt(ts[0], 0, envs.make(ts[0].task) as Env<unknown, unknown>), 7),
    Number.NEGATIVE_INFINITY,
  );
});

/** A GGUF file of only a header: what the checks read before llama.cpp would load anything. */
function headerOnly(name: string, entries: [string, ReturnType<typeof gguf.str>][]): string {
  const file = join(dir, name);
  writeFileSync(file, encodeGguf(new Map(entries), []));
  return file;
}

test('bad input: one line naming the policy and what is wrong, exit 2, before any work', async () => {
  const notGguf = join(dir, 'notes.gguf');
  writeFileSync(notGguf, 'these are notes, not a model\n'.repeat(4));
  const bert = headerOnly('bert.gguf', [['general.architecture', gguf.str('bert')]]);
  const unknown = headerOnly('nosuch.gguf', [['general.architecture', gguf.str('nosucharch')]]);
  const noTemplate = headerOnly('notemplate.gguf', [['general.architecture', gguf.str('llama')]]);
  const huge = headerOnly('huge.gguf', [
    ['general.architecture', gguf.str('llama')],
    ['llama.block_count', gguf.u32(4096)],
    ['llama.context_length', gguf.u32(4096)],
    ['llama.embedding_length', gguf.u32(65536)],
    ['llama.attention.head_count', gguf.u32(64)],
  ]);
  const empty = headerOnly('empty.gguf', [
    ['general.architecture', gguf.str('llama')],
    ['tokenizer.chat_template', gguf.str('{{ messages[0].content }}')],
  ]);
  const cases: [string, RegExp][] = [
    [`gguf:${empty}`, /empty\.gguf.*llama\.cpp refused the model: /],
    [`gguf:${join(dir, 'missing.gguf')}`, /missing\.gguf.*no such file/],
    [`gguf:${notGguf}`, /notes\.gguf.*not a GGUF file: it does not begin with the magic "GGUF"/],
    [`gguf:${bert}`, /architecture bert does not generate text/],
    [`gguf:${unknown}`, /architecture "nosucharch" is not one the bundled llama\.cpp runs/],
    [`gguf:${noTemplate}`, /no tokenizer\.chat_template/],
    [`gguf:${huge}`, /needs about \d+ MiB .*KV cache \d+ MiB at ctx 4096.*available/],
    [`gguf:${text.gguf},temperature=-1`, /gguf\.temperature: got "-1"; expected a number from 0 to 10/],
    [`gguf:${text.gguf},threads=two`, /gguf\.threads: got "two"/],
    [
      `gguf:${text.gguf},top_k=4`,
      /gguf takes temperature, top_p, max_tokens, ctx, threads, top_logprobs, mode/,
    ],
    [`gguf:${text.gguf},ctx=64,ctx=96`, /parameter ctx is given twice/],
    [`gguf:${text.gguf},ctx=8`, /gguf\.ctx: got "8"; expected an integer from 16/],
    ['gguf:', /the path is missing/],
  ];
  for (const [spec, why] of cases) {
    const r = await turnwise([
      'eval',
      '--env',
      'frozenlake',
      '--random',
      '--size',
      '4',
      '--policy',
      spec,
      '--tasks',
      '2',
    ]);
    assert.equal(r.code, 2, `${spec}: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stdout, '', spec);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `${spec}: ${r.stderr}`);
    assert.match(lines[0], /^turnwise: --policy/, spec);
    assert.match(lines[0], why, spec);
  }
  // The model trained on FrozenLake's text mode, asked to act on sql: refused by its own format.
  const r = await turnwise([
    'eval',
    '--env',
    'sql',
    '--level',
    '1',
    '--policy',
    `gguf:${text.gguf}`,
    '--tasks',
    '2',
  ]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr.trim(), /trained on env frozenlake; this env is sql/);
});
