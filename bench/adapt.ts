// Test-time adaptation (issue 29 item 2; docs/methods-measured.md): per seed, GRPO trains an MLP on random
// slippery 4x4 FrozenLake maps with p = 0.8 (the source distribution), which then meets denser maps,
// p = 0.6 (the target: the network's input is tied to the map's size, so the new distribution keeps the
// size and moves p). It adapts there from its own rollouts and rewards (src/train/adapt.ts, `turnwise
// adapt`'s code). Held-out success on target maps (exact, by DP per map) before and after each --at
// episodes; the paired difference over seeds (adapted − before, mean and 95% t-interval). Control: the
// same number of episodes spent training on more *source* maps, measured on the same target maps — what
// more training alone buys, so adapted − control is what the target's own episodes add. Also the adapted
// policy's success back on source maps (forgetting). One JSON object on stdout, progress on stderr.
//   node --import tsx bench/adapt.ts [--seeds 1,2,3] [--base-iters 100] [--episodes 5120] [--at 1280,2560,5120]
//     [--lr 0.003] [--p-source 0.8] [--p-target 0.6] [--budget 30] [--maps 300]
import { cpus, loadavg } from 'node:os';
import { envConfig, envs, makeTasks } from '../src/envs/index.ts';
import { meanExactSuccess, meanOptimalSuccess } from '../src/eval/exact.ts';
import { adapt } from '../src/train/adapt.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { type AdaptRow, adaptCurve, paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/adapt.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    'base-iters': { type: 'string', default: '100' },
    episodes: { type: 'string', default: '5120' },
    at: { type: 'string', default: '1280,2560,5120' },
    lr: { type: 'string', default: '0.003' },
    'p-source': { type: 'string', default: '0.8' },
    'p-target': { type: 'string', default: '0.6' },
    budget: { type: 'string', default: '30' },
    maps: { type: 'string', default: '300' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const baseIters = Number(values['base-iters']);
const episodes = Number(values.episodes);
const at = values.at.split(',').map(Number);
const lr = Number(values.lr);
const pSource = Number(values['p-source']);
const pTarget = Number(values['p-target']);
const budget = Number(values.budget);
const maps = Number(values.maps);
const GROUPS = 16;
const K = 8;
const source = { random: true, size: 4, p: pSource, slippery: true };
const target = { random: true, size: 4, p: pTarget, slippery: true };
const HELD_OUT = 50_000_000;
const targetMaps = makeTasks(envConfig('frozenlake', target), maps, HELD_OUT);
const sourceMaps = makeTasks(envConfig('frozenlake', source), maps, HELD_OUT);

const config = (params: object, iters: number, seed: number, l: number) =>
  parseTrainConfig({
    env: { env: 'frozenlake', params },
    policy: { kind: 'mlp', hidden: [64] },
    iters,
    groups: GROUPS,
    groupSize: K,
    budget: { kind: 'fixed', budget },
    optim: { lr: l, anneal: true },
    eval: { episodes: 1 },
    seed,
  });

interface Seed extends AdaptRow {
  sourceBefore: number;
  sourceAfter: number;
}
const rows: Seed[] = [];
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const load0 = loadavg()[0];
for (const seed of seeds) {
  const base = await trainPolicyGradient({ config: config(source, baseIters, seed, 0.003), envs });
  // The adaptation's own seed differs from the base's (other maps, other draws than the base's run).
  const run = (params: object) =>
    adapt({
      config: config(params, episodes / (GROUPS * K), seed + 1000, lr),
      envs,
      policy: base.policy,
      at,
      evalTasks: targetMaps,
      evalBudget: budget,
    });
  const adapted = await run(target);
  const control = await run(source);
  const row: Seed = {
    before: adapted.points[0].success,
    adapted: adapted.points.slice(1).map((p) => p.success),
    control: control.points.slice(1).map((p) => p.success),
    sourceBefore: (await meanExactSuccess(envs, sourceMaps, base.policy, budget, false))!,
    sourceAfter: (await meanExactSuccess(envs, sourceMaps, adapted.policy, budget, false))!,
  };
  rows.push(row);
  process.stderr.write(
    `seed ${seed}: before ${row.before.toFixed(4)} adapted ${row.adapted.map((x) => x.toFixed(4)).join(' ')} control ${row.control.map((x) => x.toFixed(4)).join(' ')}\n`,
  );
}
const mean = (xs: number[]) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
const summary = adaptCurve(at, seeds, rows);
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      size: 4,
      slippery: true,
      budget,
      policy: 'mlp:hidden=64',
      source: { p: pSource, baseIters, episodes: baseIters * GROUPS * K },
      target: { p: pTarget },
      groups: GROUPS,
      groupSize: K,
      lr,
      seeds,
      heldOutMaps: maps,
      optimal: {
        target: r4((await meanOptimalSuccess(envs, targetMaps, budget))!),
        source: r4((await meanOptimalSuccess(envs, sourceMaps, budget))!),
      },
    },
    before: summary.before,
    curve: summary.curve,
    source: {
      before: mean(rows.map((r) => r.sourceBefore)),
      afterAdapting: mean(rows.map((r) => r.sourceAfter)),
      difference: paired(rows.map((r) => r.sourceAfter - r.sourceBefore)),
    },
    perSeed: summary.perSeed,
    wallSeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
    load: { start: r4(load0), end: r4(loadavg()[0]), cores: cpus().length },
  }),
);
