// World-model rehearsal on a tool env (issue 29 item 1; docs/methods-measured.md "World-model
// rehearsal", its tool-env part): GRPO with and without `train --rehearsal ratio=R`, where the model is a
// table of what the tools answered each call, per question (train/rehearsal-tools.ts).
//   --env search (default): the search env's choice variant (params {mode: 'choose'}: 6 calls a turn), an
//     MLP (hidden 32) trained from scratch;
//   --env sql --base RUN: level-1 sql questions, the language agent cloned on them (`turnwise bc --env sql
//     --level 1 …`) trained on from its clone (token-level GRPO with train's transformer defaults).
// Training draws its questions from a pool (trainSeeds [0, P)), so a question comes back and finds what
// earlier iterations filed. The same seeds are paired and the same real episodes run per iteration
// (groups × K) in every arm: the real env steps are what the policies' episode lengths make of them
// (counted and printed). Each policy then plays the pool's questions (seen in training) and held-out
// questions (never seen) under the true tools: success, turns, and the paired difference (rehearsal −
// plain) with its mean and 95% t-interval over seeds; at each --at iteration count a copy of the policy
// is measured on the held-out questions too, beside the real steps spent by then (success against real
// env steps). The model's own record: calls on file, answers that contradicted one on file (0 for tools
// that keep no state), and the share of imagined episodes halted at a call never made, first and last
// iteration. Each (seed, arm) runs in a child process of its own (gemm on one thread), --jobs of them at
// a time: the numbers do not depend on --jobs. One JSON object on stdout, progress on stderr.
//   node --import tsx bench/rehearsal-tools.ts [--seeds 1,2,3] [--iters 150] [--at 50,100,150] [--ratios 1,2]
//     [--pool 64] [--groups 16] [--budget 20] [--episodes 500] [--jobs 2]
//   node --import tsx bench/rehearsal-tools.ts --env sql --base RUN [--iters 4] [--at 4] [--ratios 1]
//     [--pool 16] [--groups 4] [--budget 10] [--episodes 96]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../src/envs/index.ts';
import { gemmThreads } from '../src/nn/gemm.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../src/policies/neural.ts';
import { rollout } from '../src/rollout/batch.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { FILES } from '../src/train/run-dir.ts';
import { trainable } from '../src/train/setup.ts';
import { benchArgs } from './args.ts';
import { finishJob, openBase, runJobs } from './jobs.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/rehearsal-tools.ts', {
  options: {
    env: { type: 'string', default: 'search' },
    base: { type: 'string' },
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string' },
    at: { type: 'string' },
    ratios: { type: 'string' },
    pool: { type: 'string' },
    groups: { type: 'string' },
    budget: { type: 'string' },
    episodes: { type: 'string' },
    jobs: { type: 'string', default: '2' },
    job: { type: 'string' },
  },
});
const fail = (msg: string): never => {
  process.stderr.write(`bench/rehearsal-tools.ts: ${msg}\n`);
  process.exit(2);
};
const world = values.env;
if (world !== 'search' && world !== 'sql') fail(`--env: got "${world}"; expected search or sql`);
const sql = world === 'sql';
const base = sql
  ? (values.base ??
    fail(
      '--base: missing; expected the language agent cloned on sql level 1 (turnwise bc --env sql --level 1 --out RUN)',
    ))
  : undefined;
if (!sql && values.base !== undefined)
  fail(`--base: got "${values.base}"; only with --env sql (search trains an MLP from scratch)`);
const checkpoint =
  base === undefined ? undefined : existsSync(join(base, FILES.policy)) ? join(base, FILES.policy) : base;
if (checkpoint !== undefined && !existsSync(checkpoint))
  fail(`--base: got "${base}"; expected a run directory or checkpoint file`);
const DEFAULTS = sql
  ? { iters: '4', at: '4', ratios: '1', pool: '16', groups: '4', budget: '10', episodes: '96' }
  : {
      iters: '150',
      at: '50,100,150',
      ratios: '1,2',
      pool: '64',
      groups: '16',
      budget: '20',
      episodes: '500',
    };
const opt = (k: keyof typeof DEFAULTS) => values[k] ?? DEFAULTS[k];
const seeds = values.seeds.split(',').map(Number);
const iters = Number(opt('iters'));
const at = opt('at').split(',').map(Number);
const ratios = opt('ratios').split(',').map(Number);
const pool = Number(opt('pool'));
const groups = Number(opt('groups'));
const budget = Number(opt('budget'));
const episodes = Number(opt('episodes'));
const jobs = Number(values.jobs);
const K = 8;
const PARAMS: Record<string, unknown> = sql ? { level: 1 } : { mode: 'choose' };
const log = (s: string) => process.stderr.write(`${s}\n`);
const t0 = performance.now();
const cpu0 = process.cpuUsage();

const seen = makeTasks(envConfig(world, PARAMS), pool, 0);
const heldOut = makeTasks(envConfig(world, PARAMS), Math.ceil(episodes / 2), 50_000_000);
const spec = envs.spec(seen[0]);

async function play(policy: Policy<unknown, unknown>, tasks: typeof seen, samples: number) {
  const ts = await rollout({ tasks, samples, policy, makeEnv, budget, runSeed: 777 });
  return {
    success: r4(ts.filter((t) => t.outcome.success).length / ts.length),
    turns: r4(ts.reduce((a, t) => a + t.outcome.turns, 0) / ts.length),
  };
}

interface Result {
  /** Held-out success at each --at iteration count, with the real steps spent by then. */
  curve: { iter: number; realSteps: number; success: number }[];
  heldOut: { success: number; turns: number };
  seen: { success: number; turns: number };
  realSteps: number;
  imaginedSteps: number;
  knownCalls?: number;
  conflicts?: number;
  halted?: [number, number];
  imaginedSuccess?: [number, number];
  cpuSeconds: number;
}
const ARMS = ['plain', ...ratios.map((r) => `ratio=${r}`)];
const arms: Record<string, Result[]> = Object.fromEntries(ARMS.map((a) => [a, []]));

/** One (seed, arm): train, then measure. */
async function runJob(seed: number, arm: string): Promise<Result> {
  gemmThreads(1);
  const c0 = process.cpuUsage();
  const ratio = arm === 'plain' ? undefined : Number(arm.slice('ratio='.length));
  const config = parseTrainConfig({
    env: envConfig(world, PARAMS),
    policy:
      checkpoint === undefined ? { kind: 'mlp', hidden: [32] } : { kind: 'checkpoint', path: checkpoint },
    iters,
    groups,
    groupSize: K,
    trainSeeds: [0, pool],
    budget: { kind: 'fixed', budget },
    eval: { episodes: 1 },
    seed,
    ...(ratio === undefined ? {} : { rehearsal: { ratio, alpha: 4, prior: 'pooled' } }),
  });
  const learner = trainable(
    checkpoint === undefined
      ? new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [32], activation: 'relu', seed }, 'policy'))
      : await openBase(checkpoint, spec, fail),
  )!;
  const copies: { iter: number; realSteps: number; policy: Policy<unknown, unknown> }[] = [];
  let spent = 0;
  const r = await trainPolicyGradient({
    config,
    envs,
    learner,
    onIter: (iter, _n, v) => {
      spent += v['rollout/turns'] * v['rollout/episodes'];
      if (at.includes(iter + 1) && iter + 1 < iters)
        copies.push({ iter: iter + 1, realSteps: spent, policy: learner.clone().policy });
    },
  });
  const c = process.cpuUsage(c0);
  const m = r.metrics.map((x) => x.values);
  const first = m[0];
  const last = m.at(-1)!;
  const final = await play(r.policy, heldOut, 2);
  const curve = [];
  for (const k of copies)
    curve.push({
      iter: k.iter,
      realSteps: k.realSteps,
      success: (await play(k.policy, heldOut, 2)).success,
    });
  if (at.includes(iters)) curve.push({ iter: iters, realSteps: spent, success: final.success });
  return {
    curve,
    heldOut: final,
    seen: await play(r.policy, seen, Math.max(1, Math.round(episodes / pool))),
    realSteps: m.reduce((a, v) => a + v['rollout/turns'] * v['rollout/episodes'], 0),
    imaginedSteps: m.reduce((a, v) => a + (v['rehearsal/imagined_steps'] ?? 0), 0),
    ...(ratio === undefined
      ? {}
      : {
          knownCalls: last['rehearsal/known_calls'],
          conflicts: m.reduce((a, v) => a + v['rehearsal/conflicts'], 0),
          halted: [r4(first['rehearsal/halted']), r4(last['rehearsal/halted'])] as [number, number],
          imaginedSuccess: [
            r4(first['rehearsal/imagined_success']),
            r4(last['rehearsal/imagined_success']),
          ] as [number, number],
        }),
    cpuSeconds: r4((c.user + c.system) / 1e6),
  };
}

if (values.job !== undefined) {
  const [s, arm] = values.job.split(':');
  finishJob(await runJob(Number(s), arm));
}
if (checkpoint !== undefined) await openBase(checkpoint, spec, fail);

// Every (seed, arm) in a child process of its own, --jobs at a time (the numbers do not depend on it).
const { results: done, cpuSeconds: childCpu } = await runJobs<Result>(
  seeds.flatMap((seed) => ARMS.map((arm) => `${seed}:${arm}`)),
  jobs,
  fail,
  (key, r) => log(`seed ${key}: ${JSON.stringify(r)}`),
);
for (const seed of seeds) for (const arm of ARMS) arms[arm].push(done.get(`${seed}:${arm}`)!);

const mean = (xs: number[]) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
const summary = Object.fromEntries(
  ARMS.map((a) => [
    a,
    {
      heldOut: mean(arms[a].map((x) => x.heldOut.success)),
      heldOutTurns: mean(arms[a].map((x) => x.heldOut.turns)),
      seen: mean(arms[a].map((x) => x.seen.success)),
      seenTurns: mean(arms[a].map((x) => x.seen.turns)),
      realSteps: Math.round(mean(arms[a].map((x) => x.realSteps))),
      imaginedSteps: Math.round(mean(arms[a].map((x) => x.imaginedSteps))),
      cpuSeconds: mean(arms[a].map((x) => x.cpuSeconds)),
    },
  ]),
);
const curve = at
  .filter((x) => x <= iters)
  .map((iter, j) => ({
    iter,
    realSteps: Object.fromEntries(
      ARMS.map((a) => [a, Math.round(mean(arms[a].map((x) => x.curve[j].realSteps)))]),
    ),
    success: Object.fromEntries(ARMS.map((a) => [a, mean(arms[a].map((x) => x.curve[j].success))])),
    difference: Object.fromEntries(
      ARMS.slice(1).map((a) => [
        `${a} − plain`,
        paired(arms[a].map((x, i) => x.curve[j].success - arms.plain[i].curve[j].success)),
      ]),
    ),
  }));
const difference = Object.fromEntries(
  ARMS.slice(1).map((a) => [
    `${a} − plain`,
    {
      heldOut: paired(arms[a].map((x, i) => x.heldOut.success - arms.plain[i].heldOut.success)),
      seen: paired(arms[a].map((x, i) => x.seen.success - arms.plain[i].seen.success)),
      realSteps: paired(arms[a].map((x, i) => x.realSteps - arms.plain[i].realSteps)),
    },
  ]),
);
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${JSON.stringify({
    setting: {
      env: world,
      params: PARAMS,
      policy: checkpoint === undefined ? 'mlp:hidden=32' : `transformer cloned on sql level 1 (${base})`,
      iters,
      groups,
      groupSize: K,
      budget,
      pool,
      ratios,
      seeds,
      heldOutQuestions: heldOut.length,
    },
    curve,
    summary,
    difference,
    perSeed: seeds.map((s, i) => ({ seed: s, ...Object.fromEntries(ARMS.map((a) => [a, arms[a][i]])) })),
    jobs,
    seconds: r4((performance.now() - t0) / 1000),
    cpuSeconds: r4((cpu.user + cpu.system) / 1e6 + childCpu),
  })}\n`,
);
