// The transformer policy's prefix cache (src/nn/prefix-cache.ts) against no cache, in the same run, on
// each world of the language study at its model size (docs/budget-study.md): the prompts are those of
// expert episodes (oracle:eps=0.1, so they are the lengths the study's measurements read), and at every
// turn of every episode both policies (same weights) generate a reply (the draws of step quality) and
// score the expert's action (NLL, LLR). The model is freshly initialised (no weights exist here): its
// replies are noise cut at max_tokens, which is what the study's untrained stages write; the prompts, and
// so the prefill the cache saves, are the expert's. Replies and scores must be the same bits: the bench
// exits 1 if one differs. One JSON object; CPU seconds are the process's (user + system, all threads).
//   node --import tsx bench/prefix-cache.ts [--worlds frozenlake-text,sql,tools,code] [--episodes 16]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../src/core/rng.ts';
import type { Trajectory, TurnContext } from '../src/core/types.ts';
import { envs, makeTasks } from '../src/envs/index.ts';
import { makePolicy } from '../src/policies/spec.ts';
import type { TransformerPolicy } from '../src/policies/transformer.ts';
import { rollout } from '../src/rollout/batch.ts';
import { contextAt } from '../src/rollout/context.ts';
import { LANGUAGE_WORLDS, type LanguageWorldId } from '../src/studies/language/design.ts';
import { learnTokenizer } from '../src/train/transcripts.ts';
import { benchArgs } from './args.ts';
import { r4 } from './paired.ts';

const { values } = benchArgs('bench/prefix-cache.ts', {
  options: {
    worlds: { type: 'string', default: 'frozenlake-text,sql,tools,code' },
    episodes: { type: 'string', default: '16' },
  },
});
const episodes = Number(values.episodes);
const dir = mkdtempSync(join(tmpdir(), 'tw-prefix-bench-'));

function cpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Runs f, returning its result with its wall and CPU seconds. */
function timed<T>(f: () => T): { value: T; wall: number; cpu: number } {
  const c0 = cpu();
  const t0 = performance.now();
  const value = f();
  return { value, wall: (performance.now() - t0) / 1000, cpu: cpu() - c0 };
}

const out: Record<string, unknown> = {};
let identical = true;
for (const id of values.worlds.split(',') as LanguageWorldId[]) {
  const world = LANGUAGE_WORLDS[id];
  if (world === undefined) {
    console.error(
      `bench/prefix-cache.ts: --worlds: got "${id}"; expected ${Object.keys(LANGUAGE_WORLDS).join(', ')}`,
    );
    process.exit(2);
  }
  process.stderr.write(`[${id}] tokenizer, expert episodes\n`);
  const fit = await learnTokenizer(
    { envs, config: world.env, episodes: 40, seed: 0, eps: 0.1, mode: world.mode },
    world.vocab,
  );
  const tokFile = join(dir, `${id}-tok.json`);
  writeFileSync(tokFile, JSON.stringify(fit.tokenizer.toJSON()));
  const tasks = makeTasks(world.env, episodes, 1_000_000);
  const spec = envs.spec(tasks[0]);
  const experts: Trajectory[] = await rollout({
    tasks,
    samples: 1,
    budget: world.budget,
    runSeed: 0,
    policy: makePolicy('oracle:eps=0.1', spec, 'expert'),
    makeEnv: envs.make,
  });
  const m = world.model;
  const policySpec = `transformer:layers=${m.layers},d=${m.d},heads=${m.heads},ctx=${m.ctx},seed=0,tokenizer=${tokFile},mode=${world.mode},max_tokens=32`;
  const plain = makePolicy(policySpec, spec) as TransformerPolicy;
  plain.prefixCache = undefined;
  const cached = makePolicy(policySpec, spec) as TransformerPolicy;
  const opened = await Promise.all(tasks.map((t) => envs.make(t)));
  const turns = Math.max(...experts.map((t) => t.turns.length));
  const sum = {
    generate: { plain: 0, cached: 0, plainCpu: 0, cachedCpu: 0 },
    score: { plain: 0, cached: 0, plainCpu: 0, cachedCpu: 0 },
  };
  let promptTokens = 0;
  let scoredTurns = 0;
  process.stderr.write(`[${id}] ${experts.length} episodes, up to ${turns} turns\n`);
  for (let k = 0; k < turns; k++) {
    const live = experts.map((t, i) => ({ t, i })).filter(({ t }) => t.turns.length > k);
    const ctxs = (seed: number): TurnContext<unknown>[] =>
      live.map(({ t, i }) => {
        const c = contextAt(t, k, opened[i]);
        return {
          observation: c.observation,
          history: c.history,
          turn: c.turn,
          turnsLeft: c.turnsLeft,
          env: opened[i],
          rng: Rng.derive(seed, i, k),
        };
      });
    for (const ctx of ctxs(0)) promptTokens += plain.prompt(ctx).tokens.length;
    // Alternate which goes first, so that neither always runs on a warmer machine.
    const order = k % 2 === 0 ? (['plain', 'cached'] as const) : (['cached', 'plain'] as const);
    const replies: Record<string, string> = {};
    for (const which of order) {
      const policy = which === 'plain' ? plain : cached;
      const r = timed(() => policy.replies(ctxs(1)));
      sum.generate[which] += r.wall;
      sum.generate[which === 'plain' ? 'plainCpu' : 'cachedCpu'] += r.cpu;
      replies[which] = JSON.stringify(r.value);
    }
    if (replies.plain !== replies.cached) identical = false;
    const scores: Record<string, number[]> = {};
    for (const which of order) {
      const policy = which === 'plain' ? plain : cached;
      const r = timed(() => ctxs(2).map((ctx, j) => policy.logProb(ctx, live[j].t.turns[k].action)));
      sum.score[which] += r.wall;
      sum.score[which === 'plain' ? 'plainCpu' : 'cachedCpu'] += r.cpu;
      scores[which] = r.value;
    }
    if (JSON.stringify(scores.plain) !== JSON.stringify(scores.cached)) identical = false;
    scoredTurns += live.length;
  }
  for (const env of opened) await env.close?.();
  const stats = cached.prefixCache?.stats ?? { reused: 0, fed: 0 };
  const g = sum.generate;
  const s = sum.score;
  out[id] = {
    model: m,
    turns: scoredTurns,
    meanPromptTokens: r4(promptTokens / scoredTurns),
    positions: {
      fed: stats.fed,
      reused: stats.reused,
      reusedShare: r4(stats.reused / (stats.reused + stats.fed)),
    },
    generate: {
      plainCpu: r4(g.plainCpu),
      cachedCpu: r4(g.cachedCpu),
      cpuSpeedup: r4(g.plainCpu / g.cachedCpu),
      plainWall: r4(g.plain),
      cachedWall: r4(g.cached),
    },
    score: {
      plainCpu: r4(s.plainCpu),
      cachedCpu: r4(s.cachedCpu),
      cpuSpeedup: r4(s.plainCpu / s.cachedCpu),
      plainWall: r4(s.plain),
      cachedWall: r4(s.cached),
    },
  };
}
console.log(JSON.stringify({ bench: 'prefix-cache', episodes, identical, worlds: out }));
if (!identical) {
  console.error('bench/prefix-cache.ts: a reply or a score differs with the cache');
  process.exit(1);
}
