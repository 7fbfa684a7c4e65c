// Reverse-turn policy optimisation in full (issue 29 item 5; docs/methods-measured.md): an MLP trained on
// random slippery 4x4 FrozenLake maps for the same iterations and seeds by GRPO (outcome credit),
// turn-level GRPO (credit turn-level: MT-GRPO), reverse-turn credit alone (the backward pass, GRPO's
// update) and algo rtpo (the backward pass corrected for drift, the update staged latest turns first, the
// ratios on the recorded behaviour log-probs). Each trained policy is rolled out on held-out maps: its
// success, and the paired difference (arm − GRPO, and rtpo − turn-level) with its mean and 95%
// t-interval over seeds. Also the last iterations' rtpo/* metrics (the drift the correction saw).
// One JSON object on stdout; progress on stderr.
//   node --import tsx bench/rtpo.ts [--seeds 1,2,3,4,5] [--iters 200] [--groups 16] [--budget 30] [--episodes 2000]
import { cpuUsage } from 'node:process';
import type { Policy } from '../src/core/types.ts';
import { envs } from '../src/envs/index.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { heldOutRollout, heldOutTasks } from './held-out.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/rtpo.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3,4,5' },
    iters: { type: 'string', default: '200' },
    groups: { type: 'string', default: '16' },
    budget: { type: 'string', default: '30' },
    episodes: { type: 'string', default: '2000' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const groups = Number(values.groups);
const budget = Number(values.budget);
const episodes = Number(values.episodes);
const params = { random: true, size: 4, p: 0.8, slippery: true };
const env = { env: 'frozenlake', params };

const ARMS = {
  grpo: { algo: 'grpo', credit: { method: 'grpo' } },
  turnLevel: { algo: 'grpo', credit: { method: 'turn-level' } },
  reverseTurn: { algo: 'grpo', credit: { method: 'reverse-turn' } },
  rtpo: { algo: 'rtpo' },
} as const;
type Arm = keyof typeof ARMS;
const armNames = Object.keys(ARMS) as Arm[];

const heldOut = heldOutTasks(params, episodes);

async function success(policy: Policy<unknown, unknown>): Promise<number> {
  const ts = await heldOutRollout(heldOut, policy, budget);
  return ts.filter((t) => t.outcome.success).length / ts.length;
}

const results: Record<
  Arm,
  { success: number; train: number; seconds: number; rtpo?: Record<string, number> }[]
> = { grpo: [], turnLevel: [], reverseTurn: [], rtpo: [] };
const t0 = performance.now();
const cpu0 = cpuUsage();
for (const seed of seeds) {
  for (const arm of armNames) {
    const config = parseTrainConfig({
      env,
      policy: { kind: 'mlp', hidden: [64] },
      iters,
      groups,
      budget: { kind: 'fixed', budget },
      eval: { episodes: 1 },
      seed,
      ...ARMS[arm],
    });
    const r = await trainPolicyGradient({ config, envs });
    const last = r.metrics.slice(-10);
    const avg = (k: string) => last.reduce((a, m) => a + (m.values[k] ?? 0), 0) / Math.max(1, last.length);
    results[arm].push({
      success: await success(r.policy),
      train: avg('rollout/success'),
      seconds: r.seconds,
      ...(arm === 'rtpo'
        ? {
            rtpo: {
              contextMismatch: r4(avg('rtpo/context_mismatch')),
              ratioMean: r4(avg('rtpo/ratio_mean')),
              truncated: r4(avg('rtpo/truncated')),
            },
          }
        : {}),
    });
    process.stderr.write(`seed ${seed} ${arm}: held-out success ${r4(results[arm].at(-1)!.success)}\n`);
  }
}
const diff = (a: Arm, b: Arm) => paired(seeds.map((_, i) => results[a][i].success - results[b][i].success));
const mean = (arm: Arm, k: 'success' | 'train' | 'seconds') =>
  r4(results[arm].reduce((a, x) => a + x[k], 0) / results[arm].length);
const cpu = cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      env: 'frozenlake random 4x4 maps (p 0.8), slippery',
      policy: 'mlp:hidden=64',
      iters,
      groups,
      groupSize: 8,
      budget,
      seeds,
      heldOutEpisodes: heldOut.length * 4,
    },
    arms: Object.fromEntries(
      armNames.map((a) => [
        a,
        { success: mean(a, 'success'), trainSuccessLast10: mean(a, 'train'), seconds: mean(a, 'seconds') },
      ]),
    ),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      ...Object.fromEntries(armNames.map((a) => [a, r4(results[a][i].success)])),
    })),
    rtpoMetrics: results.rtpo.map((x) => x.rtpo),
    difference: {
      rtpoMinusGrpo: diff('rtpo', 'grpo'),
      turnLevelMinusGrpo: diff('turnLevel', 'grpo'),
      reverseTurnMinusGrpo: diff('reverseTurn', 'grpo'),
      rtpoMinusTurnLevel: diff('rtpo', 'turnLevel'),
      rtpoMinusReverseTurn: diff('rtpo', 'reverseTurn'),
    },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
  }),
);
