// Information seeking under fog (issue 29 item 3; docs/methods-measured.md): GRPO on random 4x4
// FrozenLake maps under fog radius 1, with and without the information-gain reward (train --info-gain W),
// the same seeds paired. Each trained policy is rolled out on held-out maps (fresh task seeds) under the
// true reward: success and turns, and the paired difference (info-gain − plain) with its mean and 95%
// t-interval over seeds. The exact references: the belief MDP's Bayes-optimal success under this fog and
// the fully observed oracle (theory/fog.ts, `turnwise calc fog`). One JSON object.
//   node --import tsx bench/fog.ts [--seeds 1,2,3] [--iters 60] [--weight 0.05] [--budget 8] [--episodes 2000]
import type { Policy } from '../src/core/types.ts';
import { envs } from '../src/envs/index.ts';
import { fogReport } from '../src/theory/fog.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { heldOutRollout, heldOutTasks } from './held-out.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/fog.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '60' },
    weight: { type: 'string', default: '0.05' },
    budget: { type: 'string', default: '8' },
    episodes: { type: 'string', default: '2000' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const weight = Number(values.weight);
const budget = Number(values.budget);
const episodes = Number(values.episodes);
const SIZE = 4;
const FOG = 1;
const P = 0.8;
const params = { random: true, size: SIZE, p: P, fog: FOG };
const env = { env: 'frozenlake', params };

const heldOut = heldOutTasks(params, episodes);

async function evaluate(policy: Policy<unknown, unknown>) {
  const ts = await heldOutRollout(heldOut, policy, budget);
  const wins = ts.filter((t) => t.outcome.success);
  return {
    success: wins.length / ts.length,
    turns: ts.reduce((a, t) => a + t.outcome.turns, 0) / ts.length,
    turnsOnSuccess: wins.reduce((a, t) => a + t.outcome.turns, 0) / Math.max(1, wins.length),
  };
}

const arms: Record<
  string,
  { success: number; turns: number; turnsOnSuccess: number; infoBits: number; seconds: number }[]
> = {
  plain: [],
  infoGain: [],
};
const t0 = performance.now();
for (const seed of seeds) {
  for (const arm of ['plain', 'infoGain'] as const) {
    const config = parseTrainConfig({
      env,
      policy: { kind: 'mlp', hidden: [64] },
      iters,
      budget: { kind: 'fixed', budget },
      eval: { episodes: 1 },
      seed,
      ...(arm === 'infoGain' ? { infoGain: weight } : {}),
    });
    const r = await trainPolicyGradient({ config, envs });
    const last = r.metrics.slice(-10);
    const bits = last.reduce((a, m) => a + (m.values['train/info_gain'] ?? 0), 0) / Math.max(1, last.length);
    arms[arm].push({ ...(await evaluate(r.policy)), infoBits: bits, seconds: r.seconds });
  }
}
const diff = (k: 'success' | 'turns' | 'turnsOnSuccess') =>
  paired(seeds.map((_, i) => arms.infoGain[i][k] - arms.plain[i][k]));
const mean = (arm: string, k: 'success' | 'turns' | 'turnsOnSuccess' | 'infoBits') =>
  r4(arms[arm].reduce((a, x) => a + x[k], 0) / arms[arm].length);
const exact = fogReport(SIZE, FOG, P, budget, false);
console.log(
  JSON.stringify({
    setting: {
      size: SIZE,
      fog: FOG,
      p: P,
      budget,
      slippery: false,
      policy: 'mlp:hidden=64',
      iters,
      weight,
      seeds,
      heldOutEpisodes: heldOut.length * 4,
    },
    exact: { underFog: r4(exact.fog), fullyObserved: r4(exact.oracle) },
    plain: {
      success: mean('plain', 'success'),
      turns: mean('plain', 'turns'),
      turnsOnSuccess: mean('plain', 'turnsOnSuccess'),
    },
    infoGain: {
      success: mean('infoGain', 'success'),
      turns: mean('infoGain', 'turns'),
      turnsOnSuccess: mean('infoGain', 'turnsOnSuccess'),
      bitsPerEpisode: mean('infoGain', 'infoBits'),
    },
    perSeed: seeds.map((s, i) => ({
      seed: s,
      plain: { success: r4(arms.plain[i].success), turns: r4(arms.plain[i].turns) },
      infoGain: { success: r4(arms.infoGain[i].success), turns: r4(arms.infoGain[i].turns) },
    })),
    difference: { success: diff('success'), turns: diff('turns'), turnsOnSuccess: diff('turnsOnSuccess') },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
  }),
);
