// Training variants against plain GRPO on the same seeds (issue 6): BudgetMix, expert-prefix guidance
// (gaussian, BREAD), cross-policy sampling; tabular policies on slippery FrozenLake, where the trained
// policy's success within every evaluation budget T is computed exactly. One JSON object per line.
//   node --import tsx bench/train-variants.ts [--map 4x4|8x8] [--iters N] [--seeds 1,2,3]
import { envConfig, envs, makeEnv, makeTasks } from '../src/envs/index.ts';
import { exactSuccess } from '../src/eval/exact.ts';
import { parseTrainConfig, type TrainConfigInput } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/train-variants.ts', {
  options: {
    map: { type: 'string', default: '4x4' },
    iters: { type: 'string', default: '300' },
    seeds: { type: 'string', default: '1,2,3' },
    budget: { type: 'string', default: '100' },
  },
});
const env = { env: 'frozenlake', params: { map: values.map, slippery: true } };
const budget = Number(values.budget);
const T = [10, 20, 50, 100, 200].filter((t) => t <= Math.max(100, budget));
const VARIANTS: Record<string, Partial<TrainConfigInput>> = {
  grpo: {},
  'budget-mix 10,20,50,100': { budget: { kind: 'mix', budgets: [10, 20, 50, 100] } },
  'guidance gaussian': { guidance: { mode: 'gaussian' } },
  'guidance bread': { guidance: { mode: 'bread' } },
  'cross-policy 0.25': { crossPolicy: { q: 0.25, refreshEvery: 10 } },
};
const task = makeTasks(envConfig('frozenlake', env.params), 1, 0)[0];
const view = makeEnv(task);
for (const [name, extra] of Object.entries(VARIANTS)) {
  const rows: number[][] = [];
  let seconds = 0;
  for (const seed of values.seeds.split(',').map(Number)) {
    const config = parseTrainConfig({
      env,
      iters: Number(values.iters),
      budget: { kind: 'fixed', budget },
      eval: { episodes: 1 },
      ...extra,
      seed,
    });
    const r = await trainPolicyGradient({ config, envs });
    seconds += r.seconds;
    rows.push(T.map((t) => exactSuccess(view, r.policy, t)!));
  }
  const mean = T.map((_, j) => rows.reduce((s, r) => s + r[j], 0) / rows.length);
  console.log(
    JSON.stringify({
      map: values.map,
      variant: name,
      seeds: rows.length,
      iters: Number(values.iters),
      exactSuccess: Object.fromEntries(T.map((t, j) => [t, Number(mean[j].toFixed(4))])),
      optimal: Object.fromEntries(T.map((t) => [t, Number(view.oracle!().v(t, 0).toFixed(4))])),
      secondsPerRun: Number((seconds / rows.length).toFixed(1)),
    }),
  );
}
