// Credit between two agents (issue 29 item 7; docs/methods-measured.md, docs/two-agent.md): a planner
// that picks a waypoint and an executor that walks, on random 4x4 FrozenLake maps, trained together
// from the shared outcome with each credit — shared, per-agent group baselines, counterfactual — against
// training one agent with the other fixed: the executor alone behind a planner fixed to the goal, and the
// planner alone (shared or counterfactual credit) over that executor once trained. Each trained pair is
// rolled out on held-out maps; the paired differences over seeds (mean, 95% t) come from bench/paired.ts.
// One JSON object on stdout, progress on stderr.
// --sight R hides from the executor the holes beyond distance R of its cell (the planner sees them all).
//   node --import tsx bench/two-agent.ts [--seeds 1,2,3] [--iters 40] [--maps 500] [--size 4] [--sight 0] [--budget 10]
import { envs } from '../src/envs/index.ts';
import {
  evaluatePair,
  freshAgents,
  PAIR_DEFAULTS,
  type PairAgents,
  type PairConfig,
  trainPair,
} from '../src/train/pair.ts';
import { benchArgs } from './args.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/two-agent.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '40' },
    maps: { type: 'string', default: '500' },
    size: { type: 'string', default: '4' },
    sight: { type: 'string', default: '0' },
    budget: { type: 'string', default: '10' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const maps = Number(values.maps);
const SIZE = Number(values.size);
const sight = Number(values.sight);
const budget = Number(values.budget);
const nS = SIZE * SIZE;

const ARMS = [
  'shared',
  'perAgent',
  'counterfactual',
  'executorOnly',
  'plannerOnlyShared',
  'plannerOnlyCounterfactual',
] as const;
type Arm = (typeof ARMS)[number];
interface Result {
  success: number;
  turns: number;
  hole: number;
  direct: number;
  envSteps: number;
  replaySteps: number;
  /** Mean over the iterations of the share of executor turns whose advantage is 0. */
  zeroAdv: number;
  /** Over the last 10 iterations: the share of episodes where the waypoint changed the outcome. */
  pivotal: number;
  seconds: number;
}
const results: Record<Arm, Result[]> = Object.fromEntries(ARMS.map((a) => [a, []])) as unknown as Record<
  Arm,
  Result[]
>;
let optimal = 0;

function run(arm: Arm, config: PairConfig, agents: PairAgents): void {
  const t = performance.now();
  const r = trainPair(envs, config, agents);
  const ev = evaluatePair(envs, config, agents, maps, 4, 777);
  optimal = ev.optimal;
  const res = {
    success: ev.success,
    turns: ev.turns,
    hole: ev.hole,
    direct: ev.direct,
    envSteps: r.envSteps,
    replaySteps: r.replaySteps,
    zeroAdv: r.metrics.reduce((a, m) => a + m['executor/zero_adv'], 0) / r.metrics.length,
    pivotal:
      r.metrics.slice(-10).reduce((a, m) => a + m['planner/pivotal'], 0) / Math.min(10, r.metrics.length),
    seconds: (performance.now() - t) / 1000,
  };
  results[arm].push(res);
  process.stderr.write(
    `seed ${config.seed} ${arm}: success ${res.success.toFixed(4)} (${res.seconds.toFixed(1)} s)\n`,
  );
}

const t0 = performance.now();
const cpu0 = process.cpuUsage();
for (const seed of seeds) {
  const base = { ...PAIR_DEFAULTS, size: SIZE, sight, budget, iters, seed };
  for (const [arm, credit] of [
    ['shared', 'shared'],
    ['perAgent', 'per-agent'],
    ['counterfactual', 'counterfactual'],
  ] as const) {
    const a = freshAgents(nS, base.hidden, seed);
    run(arm, { ...base, credit }, { ...a, trainPlanner: true, trainExecutor: true });
  }
  const solo = freshAgents(nS, base.hidden, seed);
  run(
    'executorOnly',
    { ...base, credit: 'shared' },
    {
      planner: null,
      executor: solo.executor,
      trainPlanner: false,
      trainExecutor: true,
    },
  );
  // The planner alone over the executor just trained (fixed), from the same fresh planner each time.
  for (const [arm, credit] of [
    ['plannerOnlyShared', 'shared'],
    ['plannerOnlyCounterfactual', 'counterfactual'],
  ] as const) {
    run(
      arm,
      { ...base, credit },
      {
        planner: freshAgents(nS, base.hidden, seed).planner,
        executor: solo.executor,
        trainPlanner: true,
        trainExecutor: false,
      },
    );
  }
}
const keys = ['success', 'turns', 'hole', 'direct'] as const;
const mean = (arm: Arm, k: keyof Result) =>
  r4(results[arm].reduce((a, x) => a + x[k], 0) / results[arm].length);
const summary = (arm: Arm) => ({
  ...Object.fromEntries(keys.map((k) => [k, mean(arm, k)])),
  envSteps: mean(arm, 'envSteps'),
  replaySteps: mean(arm, 'replaySteps'),
  executorZeroAdvantage: mean(arm, 'zeroAdv'),
  ...(arm.includes('ounterfactual') ? { pivotal: mean(arm, 'pivotal') } : {}),
  seconds: mean(arm, 'seconds'),
});
const diff = (a: Arm, b: Arm) =>
  Object.fromEntries(
    (['success', 'hole'] as const).map((k) => [
      k,
      paired(seeds.map((_, i) => results[a][i][k] - results[b][i][k])),
    ]),
  );
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      size: SIZE,
      p: PAIR_DEFAULTS.p,
      slippery: false,
      budget,
      sight,
      policy: `mlp:hidden=${PAIR_DEFAULTS.hidden.join('x')} (both agents)`,
      iters,
      groups: PAIR_DEFAULTS.groups,
      groupSize: PAIR_DEFAULTS.groupSize,
      seeds,
      heldOutEpisodes: maps * 4,
    },
    exact: { optimal: r4(optimal) },
    arms: Object.fromEntries(ARMS.map((a) => [a, summary(a)])),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      ...Object.fromEntries(ARMS.map((a) => [a, r4(results[a][i].success)])),
    })),
    difference: {
      counterfactualVsShared: diff('counterfactual', 'shared'),
      perAgentVsShared: diff('perAgent', 'shared'),
      sharedVsExecutorOnly: diff('shared', 'executorOnly'),
      counterfactualVsExecutorOnly: diff('counterfactual', 'executorOnly'),
      plannerOnlyCounterfactualVsShared: diff('plannerOnlyCounterfactual', 'plannerOnlyShared'),
    },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
  }),
);
