// World-model rehearsal (issue 29 item 1; docs/methods-measured.md): GRPO on random slippery FrozenLake
// maps with and without `train --rehearsal ratio=R`, the same seeds paired and the same real episodes per
// iteration (groups × K), so both arms spend the same real env steps but for what their policies' episode
// lengths make of them (both counted and printed). At a few iteration counts the policy is copied and
// later evaluated exactly on held-out maps (fresh task seeds; its success within the budget by DP): success against the real steps spent so far, and
// the paired difference (rehearsal − plain) with its mean and 95% t-interval over seeds. The model's own
// error: train/model_tv (visited (cell, action)) and rehearsal/model_tv_all (every non-terminal one of
// the batch's maps), first and last iteration. One JSON object on stdout, progress on stderr.
//   node --import tsx bench/rehearsal.ts [--seeds 1,2,3] [--iters 40] [--at 10,20,40] [--ratio 1]
//     [--alpha 4] [--groups 16] [--budget 30] [--maps 500] [--prior pooled]
import { cpus, loadavg } from 'node:os';
import type { Policy } from '../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../src/envs/index.ts';
import { meanExactSuccess, meanOptimalSuccess } from '../src/eval/exact.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../src/policies/neural.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { learnerFor } from '../src/train/learner.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/rehearsal.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '40' },
    at: { type: 'string', default: '10,20,40' },
    ratio: { type: 'string', default: '1' },
    prior: { type: 'string', default: 'pooled' },
    alpha: { type: 'string', default: '4' },
    groups: { type: 'string', default: '16' },
    budget: { type: 'string', default: '30' },
    maps: { type: 'string', default: '500' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const at = values.at.split(',').map(Number);
const ratio = Number(values.ratio);
const prior = values.prior as 'pooled' | 'uniform';
const alpha = Number(values.alpha);
const groups = Number(values.groups);
const budget = Number(values.budget);
const maps = Number(values.maps);
const K = 8;
const params = { random: true, size: 4, p: 0.8, slippery: true };
const env = { env: 'frozenlake', params };
const spec = envs.spec(makeTasks(envConfig('frozenlake', params), 1, 0)[0]);

// Held-out maps: task seeds far from training's (trainSeeds default from 0).
const heldOut = makeTasks(envConfig('frozenlake', params), maps, 50_000_000);

/** The exact success within the budget, averaged over the held-out maps (eval/exact.ts: the policy's own
 * V^π by DP on each map, no sampling noise but the maps'). */
async function evaluate(policy: Policy<unknown, unknown>): Promise<number> {
  return (await meanExactSuccess(envs, heldOut, policy, budget, false))!;
}

interface Point {
  iter: number;
  realSteps: number;
  success: number;
}
interface Arm {
  points: Point[];
  modelTv?: { first: number; last: number; allFirst: number; allLast: number };
  imaginedSteps?: number;
  seconds: number;
}
const arms: Record<'plain' | 'rehearsal', Arm[]> = { plain: [], rehearsal: [] };
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const load0 = loadavg()[0];
for (const seed of seeds) {
  for (const arm of ['plain', 'rehearsal'] as const) {
    const config = parseTrainConfig({
      env,
      policy: { kind: 'mlp', hidden: [64] },
      iters,
      groups,
      groupSize: K,
      budget: { kind: 'fixed', budget },
      eval: { episodes: 1 },
      seed,
      ...(arm === 'rehearsal' ? { rehearsal: { ratio, alpha, prior } } : {}),
    });
    const learner = learnerFor(
      new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [64], activation: 'relu', seed }, 'policy')),
    )!;
    const copies: { iter: number; realSteps: number; policy: Policy<unknown, unknown> }[] = [];
    let realSteps = 0;
    const t1 = performance.now();
    const r = await trainPolicyGradient({
      config,
      envs,
      learner,
      onIter: (iter, _n, m) => {
        realSteps += m['rollout/turns'] * m['rollout/episodes'];
        if (at.includes(iter + 1)) copies.push({ iter: iter + 1, realSteps, policy: learner.clone().policy });
      },
    });
    const seconds = (performance.now() - t1) / 1000;
    const points: Point[] = [];
    for (const c of copies)
      points.push({ iter: c.iter, realSteps: c.realSteps, success: await evaluate(c.policy) });
    const m = r.metrics;
    const result: Arm = { points, seconds };
    if (arm === 'rehearsal') {
      const v = (i: number, k: string) => m[i].values[k];
      result.modelTv = {
        first: v(0, 'train/model_tv'),
        last: v(m.length - 1, 'train/model_tv'),
        allFirst: v(0, 'rehearsal/model_tv_all'),
        allLast: v(m.length - 1, 'rehearsal/model_tv_all'),
      };
      result.imaginedSteps = m.reduce((a, x) => a + x.values['rehearsal/imagined_steps'], 0);
    }
    arms[arm].push(result);
    process.stderr.write(
      `seed ${seed} ${arm}: ${points.map((p) => `${p.iter}:${p.success.toFixed(3)}`).join(' ')} (${seconds.toFixed(1)} s)\n`,
    );
  }
}
const mean = (xs: number[]) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
const curve = at.map((iter, j) => ({
  iter,
  realSteps: {
    plain: mean(arms.plain.map((a) => a.points[j].realSteps)),
    rehearsal: mean(arms.rehearsal.map((a) => a.points[j].realSteps)),
  },
  success: {
    plain: mean(arms.plain.map((a) => a.points[j].success)),
    rehearsal: mean(arms.rehearsal.map((a) => a.points[j].success)),
  },
  difference: paired(
    seeds.map((_, i) => arms.rehearsal[i].points[j].success - arms.plain[i].points[j].success),
  ),
}));
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      size: 4,
      p: 0.8,
      slippery: true,
      budget,
      policy: 'mlp:hidden=64',
      groups,
      groupSize: K,
      iters,
      ratio,
      alpha,
      prior,
      seeds,
      heldOutMaps: heldOut.length,
      optimal: r4((await meanOptimalSuccess(envs, heldOut, budget))!),
    },
    curve,
    modelTv: {
      visitedFirst: mean(arms.rehearsal.map((a) => a.modelTv!.first)),
      visitedLast: mean(arms.rehearsal.map((a) => a.modelTv!.last)),
      allFirst: mean(arms.rehearsal.map((a) => a.modelTv!.allFirst)),
      allLast: mean(arms.rehearsal.map((a) => a.modelTv!.allLast)),
    },
    imaginedSteps: mean(arms.rehearsal.map((a) => a.imaginedSteps!)),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      plain: arms.plain[i].points.map((p) => r4(p.success)),
      rehearsal: arms.rehearsal[i].points.map((p) => r4(p.success)),
    })),
    trainSeconds: {
      plain: mean(arms.plain.map((a) => a.seconds)),
      rehearsal: mean(arms.rehearsal.map((a) => a.seconds)),
    },
    wallSeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
    load: { start: r4(load0), end: r4(loadavg()[0]), cores: cpus().length },
  }),
);
