// The language study's run, stage by stage, on small sizes: each profile's budgets per world; a tool
// world's max_tokens tied to its expert (⌈replyCap × the longest reply of the base's demonstrations⌉),
// kept by every policy made from the base and honoured by its generations; the likelihood's remembered
// scores equal the policy's own, each turn scored once; and the study on two worker threads gives the
// records it gives in one thread, byte for byte.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Rng } from '../../../src/core/rng.ts';
import { makeTasks } from '../../../src/core/tasks.ts';
import type { Policy, Task, Trajectory } from '../../../src/core/types.ts';
import { envs } from '../../../src/envs/index.ts';
import { likelihood } from '../../../src/eval/likelihood.ts';
import { readTokenizerFile } from '../../../src/nn/tokenizer.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../../src/policies/transformer.ts';
import { renderAction } from '../../../src/policies/transformer-prompt.ts';
import { rollout } from '../../../src/rollout/batch.ts';
import { contextAt, decisionContext } from '../../../src/rollout/context.ts';
import { withEnvs } from '../../../src/rollout/env-cache.ts';
import {
  LANGUAGE_PROFILE,
  LANGUAGE_WORLD_IDS,
  LANGUAGE_WORLDS,
  type LanguageProfile,
  PAPER_PREDICTION,
  predictTiming,
  predictWall,
  type Sizes,
  TEST_SEED,
  UNIT_COSTS,
  type UnitCosts,
  worldIn,
} from '../../../src/studies/language/design.ts';
import { measureLikelihood, rememberingScores } from '../../../src/studies/language/measure.ts';
import {
  expertDemos,
  longestDemoReply,
  prepareWorld,
  worldTasks,
} from '../../../src/studies/language/run.ts';
import { runLanguageStudy } from '../../../src/studies/language/study.ts';
import { learnTokenizer } from '../../../src/train/transcripts.ts';

type AnyPolicy = Policy<unknown, unknown>;

const root = mkdtempSync(join(tmpdir(), 'tw-lang-run-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Sizes small enough for a test: every stage runs, nothing is learned. */
const TINY: Sizes = {
  train: 4,
  test: 2,
  tokenizerEpisodes: 8,
  bc: { epochs: 1, batchSize: 8, lr: 3e-3 },
  rl: { iters: 1, groups: 1, groupSize: 2 },
  samples: 2,
  states: 2,
  actions: 2,
  continuations: 1,
  resamples: 20,
};

const tiny = (over: Partial<LanguageProfile> = {}): LanguageProfile => ({
  ...LANGUAGE_PROFILE.quick,
  sizes: { 'frozenlake-text': TINY, sql: TINY, tools: TINY, code: TINY },
  ...over,
});

test('the quick profile cuts FrozenLake’s budgets to 20; the tool worlds keep their own', () => {
  const quick = LANGUAGE_PROFILE.quick;
  assert.deepEqual(worldIn(quick, 'frozenlake-text').T, [5, 10, 20]);
  assert.equal(worldIn(quick, 'frozenlake-text').budget, 20);
  for (const id of ['sql', 'tools', 'code'] as const) {
    const w = worldIn(quick, id);
    assert.deepEqual(w.T, LANGUAGE_WORLDS[id].T, id);
    assert.deepEqual(w.mix, LANGUAGE_WORLDS[id].mix, id);
    assert.equal(w.budget, LANGUAGE_WORLDS[id].budget, id);
    assert.ok(w.budget <= 10, `${id}: T_train ${w.budget}`);
  }
  // The other profiles run every world at its own budgets.
  for (const name of ['default', 'paper'] as const)
    for (const id of LANGUAGE_WORLD_IDS)
      assert.deepEqual(worldIn(LANGUAGE_PROFILE[name], id).T, LANGUAGE_WORLDS[id].T, `${name} ${id}`);
});

test('a tool world’s base writes at most ⌈1.25 × its expert’s longest reply⌉ tokens, and so does every policy made from it', async () => {
  const out = join(root, 'cap');
  const profile = tiny();
  await prepareWorld({ envs, out, profile }, 'sql');
  const bc = JSON.parse(readFileSync(join(out, 'sql', 'base', 'bc.json'), 'utf8'));
  // The longest demonstration, recomputed here: the expert on the training tasks, each action as the
  // policy writes it (its tool-call text and <|end|>) in the world's tokenizer.
  const world = worldIn(profile, 'sql');
  const { train } = worldTasks(world, TINY);
  const spec = envs.spec(train[0]);
  const demos = await expertDemos(envs, world, train);
  const tokenizer = readTokenizerFile(join(out, 'sql', 'tokenizer.json'), 'tokenizer');
  const longest = Math.max(
    ...demos.flatMap((t) =>
      t.turns.map((x) => tokenizer.encode(renderAction(spec, 'tools', x.action) ?? '').length + 1),
    ),
  );
  assert.ok(longest > 10, `a tool call is tens of tokens: ${longest}`);
  assert.equal(bc.longestReply, longest);
  assert.equal(bc.maxTokens, Math.ceil(1.25 * longest));
  assert.ok(bc.maxTokens < 128, 'below the tool envs’ default of 128');
  // The base, and the base at another τ (the control), keep the cap.
  const base = makePolicy(join(out, 'sql', 'base'), spec) as unknown as TransformerPolicy;
  const cooled = makePolicy(
    `transformer:from=${join(out, 'sql', 'base')},temperature=0.3`,
    spec,
  ) as unknown as TransformerPolicy;
  assert.equal(base.maxTokens, bc.maxTokens);
  assert.equal(cooled.maxTokens, bc.maxTokens);
  // An untrained model writes to the cap: every reply at most maxTokens tokens, some exactly that.
  const env = await envs.make(train[0]);
  const first = env.reset(1);
  const ctxs = Array.from({ length: 6 }, (_, i) =>
    decisionContext({ observation: first, history: [], budget: 10 }, env, false, Rng.derive(2, i)),
  );
  const lengths = base.actBatch(ctxs).map((a) => {
    if (a instanceof Error) throw a;
    return (a.trace?.tokens ?? []).length;
  });
  assert.ok(
    lengths.every((n) => n >= 1 && n <= bc.maxTokens),
    `${lengths.join(',')} ≤ ${bc.maxTokens}`,
  );
  assert.ok(lengths.includes(bc.maxTokens), `${lengths.join(',')}: none cut at ${bc.maxTokens}`);
  // FrozenLake as text keeps the policy's own default: its longest action and <|end|>.
  await prepareWorld({ envs, out, profile }, 'frozenlake-text');
  const lake = JSON.parse(readFileSync(join(out, 'frozenlake-text', 'base', 'bc.json'), 'utf8'));
  assert.equal(LANGUAGE_WORLDS['frozenlake-text'].replyCap, undefined);
  assert.ok(lake.maxTokens >= lake.longestReply && lake.maxTokens < 16, JSON.stringify(lake));
});

test('the expert’s replies on held-out tasks fit under the cap its training replies set (quick sizes); code’s long detours may not', async () => {
  const quick = LANGUAGE_PROFILE.quick;
  for (const id of ['sql', 'tools', 'code'] as const) {
    const w = worldIn(quick, id);
    const sizes = quick.sizes[id];
    // The tokenizer and the demonstrations as the world's stages make them.
    const { tokenizer } = await learnTokenizer(
      { envs, config: w.env, episodes: sizes.tokenizerEpisodes, seed: 0, eps: 0.1, mode: w.mode },
      w.vocab,
    );
    const { train } = worldTasks(w, sizes);
    const spec = envs.spec(train[0]);
    const play = (tasks: Task[], policy: string) => expertDemos(envs, w, tasks, policy);
    const cap = Math.ceil(
      (w.replyCap ?? 0) * longestDemoReply(await play(train, w.expert), spec, w, tokenizer),
    );
    const held = makeTasks(w.env, 60, TEST_SEED);
    const lengths = async (policy: string) =>
      (await play(held, policy)).flatMap((t) =>
        t.turns.map((x) => longestDemoReply([{ ...t, turns: [x] }], spec, w, tokenizer)),
      );
    const gold = await lengths('oracle');
    const expert = await lengths(w.expert);
    assert.ok(Math.max(...gold) <= cap, `${id}: the gold path's replies (${Math.max(...gold)}) ≤ ${cap}`);
    const fit = expert.filter((n) => n <= cap).length / expert.length;
    // sql and tools: every reply, detours too; code: a detour may be a long wrong program (a lookup of
    // the visible tests), longer than any of the 20 training tasks' — at most a few in a hundred.
    if (id === 'code') assert.ok(fit >= 0.95, `${id}: ${fit} of the expert's replies fit ${cap}`);
    else assert.equal(fit, 1, `${id}: ${Math.max(...expert)} > ${cap}`);
  }
});

test('the likelihood’s remembered scores are the policy’s, bit for bit, each turn scored once under each policy', async () => {
  const out = join(root, 'memo');
  await prepareWorld({ envs, out, profile: tiny() }, 'sql');
  const tasks = worldTasks(worldIn(tiny(), 'sql'), { ...TINY, test: 3 }).test;
  const spec = envs.spec(tasks[0]);
  const counted = (id: string) => {
    const p = makePolicy(join(out, 'sql', 'base'), spec, id) as AnyPolicy;
    const own = p.logProb!.bind(p);
    const calls = { n: 0 };
    p.logProb = (ctx, action) => {
      calls.n++;
      return own(ctx, action);
    };
    return { p, calls };
  };
  // Pools of two samples per task: the expert's episodes (their actions are valid tool calls, so every
  // score is finite).
  const pool = async (seed: number) =>
    (
      await rollout({
        tasks,
        samples: 2,
        budget: 10,
        runSeed: seed,
        policy: makePolicy('oracle:eps=0.3', spec),
        makeEnv: envs.make,
      })
    ).map((trajectory) => ({ trajectory, envSeed: 0 }));
  const pools = { rl: await pool(1), base: await pool(2) };
  const turns = [...pools.rl, ...pools.base].reduce((n, r) => n + r.trajectory.turns.length, 0);
  const a = counted('a');
  const b = counted('b');
  const m = await measureLikelihood(envs, pools, { rl: a.p, base: b.p }, tasks.length, 2, 50, 0);
  // Each distinct turn — its prompt and action in tokens — scored once under each policy (two samples
  // of a task often open with the same call at the same prompt).
  const base = makePolicy(join(out, 'sql', 'base'), spec) as unknown as TransformerPolicy;
  const distinct = new Set<string>();
  await withEnvs(envs.make, async (views) => {
    for (const r of [...pools.rl, ...pools.base]) {
      const env = await views.get(r.trajectory.task);
      r.trajectory.turns.forEach((x, t) => {
        const ctx = contextAt(r.trajectory, t, env);
        distinct.add(`${base.prompt(ctx).tokens}|${base.actionTokens(spec, x.action)}`);
      });
    }
  });
  assert.ok(distinct.size < turns, `${distinct.size} distinct of ${turns} turns`);
  assert.equal(a.calls.n, distinct.size, 'each distinct turn scored once under RL');
  assert.equal(b.calls.n, distinct.size, 'each distinct turn scored once under the base');
  // The points equal eval/likelihood's on the policies themselves (no memory in between).
  const traj = (rs: { trajectory: Trajectory }[]) => rs.map((r) => r.trajectory);
  const plain = (await likelihood(envs, traj(pools.rl), traj(pools.base), counted('c').p, counted('d').p))!;
  assert.equal(m.nllRlUnderBase, plain.nllAunderB);
  assert.equal(m.nllBaseUnderBase, plain.nllBunderB);
  assert.equal(m.nllRlUnderRl, plain.nllAunderA);
  assert.ok(m.nllRlUnderBase !== null && Number.isFinite(m.nllRlUnderBase));
  // A policy that cannot name its forwards (no prompt) is returned as it is.
  const oracle = makePolicy('oracle', spec) as AnyPolicy;
  assert.equal(rememberingScores(oracle), oracle);
});

test('the study on two worker threads gives the records of one thread, byte for byte', async () => {
  const plan = { profile: tiny(), worlds: ['frozenlake-text' as const], seeds: [0, 1] };
  const one = await runLanguageStudy(plan, { envs, out: join(root, 'one') });
  const events: string[] = [];
  const two = await runLanguageStudy(plan, {
    envs,
    out: join(root, 'two'),
    parallel: 2,
    onEvent: (e) => events.push(`${e.world}/${e.seed}/${e.stage}/${e.kind}`),
  });
  const stable = (s: typeof one) => JSON.stringify(s.runs.map((r) => ({ ...r, seconds: 0 })));
  assert.equal(stable(two), stable(one));
  assert.deepEqual(two.findings, one.findings);
  // Both seeds ran on threads after the world's own stages, each stage's events came through.
  assert.ok(events.indexOf('frozenlake-text/null/base/done') < events.indexOf('frozenlake-text/0/rl/start'));
  for (const seed of [0, 1])
    assert.ok(events.includes(`frozenlake-text/${seed}/measure/done`), events.join(' '));
});

test('the timing model: each stage’s units times their costs; the paper profile fits 90 minutes on 2 cores', () => {
  const unit: UnitCosts = {
    tokenizer: 1,
    demo: 10,
    epoch: 100,
    rlEpisode: 1000,
    episode: 1e4,
    mixEpisode: 1e5,
    tauEpisode: 1e6,
    draw: 1e7,
    continuation: 1e8,
    scored: 1e9,
  };
  // Each unit's count, read off its own power of ten: TINY has 8 tokenizer episodes, 4 tasks × (1 +
  // 1 epoch), 2 RL episodes each for RL and BudgetMix, 2 × 2 final-evaluation and 4 × 2 × 2 Pass
  // episodes, 3 τ × 4 tasks × 2, 3 sets × 2 policies × 2 states × 2 actions, 2 × 2 × 2 × 1
  // continuations, 2 × 2 × 2 scored trajectories.
  const t = predictTiming(TINY, unit);
  assert.equal(t.world, 8 + 4 * 10 + 4 * 100);
  assert.equal(t.seed, 2 * 1000 + (2 * 2 + 16) * 1e4 + 2 * 1e5 + 24 * 1e6 + 24 * 1e7 + 8 * 1e8 + 8 * 1e9);
  // A schedule by hand: world a (own stages 10, seeds 30), world b (5, 20); two seeds each, two threads.
  // t0: a's stages [0,10], b's [0,5]; thread 2 takes b/0 [5,25]; thread 1 a/0 [10,40]; thread 2 a/1
  // [25,55]; thread 1 b/1 [40,60].
  const timing = { sql: { world: 10, seed: 30 }, code: { world: 5, seed: 20 } };
  assert.equal(predictWall(timing, ['sql', 'code'], [0, 1], 2), 60);
  assert.equal(predictWall(timing, ['sql', 'code'], [0, 1], 1), 15 + 100);
  // The paper profile: four worlds, three seeds, ≤ 90 minutes by the model on 2 cores.
  const paper = LANGUAGE_PROFILE.paper;
  assert.deepEqual(paper.worlds, [...LANGUAGE_WORLD_IDS]);
  assert.ok(paper.seeds.length >= 3);
  for (const id of LANGUAGE_WORLD_IDS)
    assert.deepEqual(paper.timing?.[id], predictTiming(paper.sizes[id], UNIT_COSTS[id]), id);
  assert.ok(PAPER_PREDICTION <= 90 * 60, `${PAPER_PREDICTION} s`);
  assert.equal(PAPER_PREDICTION, predictWall(paper.timing ?? {}, paper.worlds, paper.seeds, 2));
});
