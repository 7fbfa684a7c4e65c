// Credit between two agents on search (issue 29 item 7's tool-env part; docs/methods-measured.md "Credit
// between two agents", docs/two-agent.md "On search"): a planner reads the question and writes how many
// hops it takes, an executor picks one of the six calls offered a turn until it answers; trained
// together from the shared outcome with each credit — shared, per-agent group baselines, counterfactual
// (every episode replayed with each of the three plans) — against training one agent with the other
// fixed: the executor alone behind a planner fixed to the hops the question states (`level`: what the
// single-agent choice env tells its policy) or to the longest plan (3), and the planner alone (shared or
// counterfactual) over the executor trained behind `level`. Each pair then plays held-out questions;
// the paired differences over seeds (mean, 95% t) come from bench/paired.ts.
// Each seed runs in a child process (its arms in order: the planner-alone arms need that seed's
// executor), --jobs of them at a time; the numbers do not depend on --jobs. One JSON object on stdout,
// progress on stderr.
// --executor clue: the same question with an executor that can already search — a single-agent MLP
// trained with clue credit on the choice variant (--clue-iters iterations of 16 × 8, budget T − 1; its
// input is the executor's, the progress feature counted against the question's hops) — fixed: it plays
// behind `level` and behind 3 untrained (executorOnly, executorPlan3), and the planner alone learns over
// it (shared, counterfactual); planValue is this executor's.
//   node --import tsx bench/two-agent-search.ts [--seeds 1,2,3] [--iters 60] [--groups 16] [--questions 500] [--budget 12] [--jobs 2]
//     [--executor scratch|clue] [--clue-iters 100]
import { envConfig, envs } from '../src/envs/index.ts';
import { searchPairEnvs } from '../src/envs/search/index.ts';
import { NeuralPolicy } from '../src/policies/neural.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { HELD_OUT_SEED } from '../src/train/pair.ts';
import {
  evaluateSearchPair,
  freshSearchAgents,
  PLANS,
  replayPlans,
  rolloutSearchPair,
  SEARCH_PAIR_DEFAULTS,
  type SearchPairAgents,
  type SearchPairConfig,
  searchPairTask,
  trainSearchPair,
} from '../src/train/pair-search.ts';
import { benchArgs } from './args.ts';
import { finishJob, runJobs } from './jobs.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/two-agent-search.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '60' },
    groups: { type: 'string', default: '16' },
    questions: { type: 'string', default: '500' },
    budget: { type: 'string', default: '12' },
    jobs: { type: 'string', default: '2' },
    executor: { type: 'string', default: 'scratch' },
    'clue-iters': { type: 'string', default: '100' },
    job: { type: 'string' },
  },
});
const fail = (msg: string): never => {
  process.stderr.write(`bench/two-agent-search.ts: ${msg}\n`);
  process.exit(2);
};
const int = (name: string, raw: string, min: number): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) fail(`--${name}: got "${raw}"; expected an integer ≥ ${min}`);
  return n;
};
const seeds = values.seeds.split(',').map((s) => int('seeds', s, 0));
const iters = int('iters', values.iters, 1);
const groups = int('groups', values.groups, 1);
const questions = int('questions', values.questions, 1);
const budget = int('budget', values.budget, 2);
const jobs = int('jobs', values.jobs, 1);
const executorKind = values.executor;
if (executorKind !== 'scratch' && executorKind !== 'clue')
  fail(`--executor: got "${executorKind}"; expected scratch or clue`);
const clueIters = int('clue-iters', values['clue-iters'], 1);

const ALL_ARMS = [
  'shared',
  'perAgent',
  'counterfactual',
  'executorOnly',
  'executorPlan3',
  'plannerOnlyShared',
  'plannerOnlyCounterfactual',
] as const;
type Arm = (typeof ALL_ARMS)[number];
/** With a clue-trained executor only it is fixed: the pairs trained from scratch are not run. */
const ARMS: readonly Arm[] = executorKind === 'clue' ? ALL_ARMS.slice(3) : ALL_ARMS;
interface Result {
  success: number;
  turns: number;
  /** Plans equal to, below, above the question's hops (held-out). */
  exact: number;
  short: number;
  long: number;
  envSteps: number;
  replaySteps: number;
  /** Mean over the iterations of the share of executor turns whose advantage is 0. */
  zeroAdv: number;
  /** Over the last 10 iterations: the share of episodes where the plan changed the outcome. */
  pivotal: number;
  seconds: number;
}

function runArm(arm: Arm, config: SearchPairConfig, agents: SearchPairAgents): Result {
  const t = performance.now();
  const r = trainSearchPair(searchPairEnvs, config, agents);
  const ev = evaluateSearchPair(searchPairEnvs, config, agents, questions, 4, 777);
  const res = {
    success: ev.success,
    turns: ev.turns,
    exact: ev.exact,
    short: ev.short,
    long: ev.long,
    envSteps: r.envSteps,
    replaySteps: r.replaySteps,
    // NaN (null in the JSON) for an arm that trains nothing.
    zeroAdv: r.metrics.reduce((a, m) => a + m['executor/zero_adv'], 0) / r.metrics.length,
    pivotal:
      r.metrics.slice(-10).reduce((a, m) => a + m['planner/pivotal'], 0) / Math.min(10, r.metrics.length),
    seconds: (performance.now() - t) / 1000,
  };
  process.stderr.write(
    `seed ${config.seed} ${arm}: success ${res.success.toFixed(4)}, plan = hops ${res.exact.toFixed(3)} (${res.seconds.toFixed(1)} s)\n`,
  );
  return res;
}

/** What a plan is worth to an executor: its held-out episodes (the plan the question's hops) replayed
 * with each plan under their own streams — the mean outcome per (hops, plan), the share of episodes some
 * plan would change, and R(hops) − mean over plans: what a planner always right adds over a uniform one. */
interface PlanValue {
  byLevel: number[][];
  episodes: number[];
  pivotal: number;
  rightMinusUniform: number;
}
function planValue(executor: NeuralPolicy): PlanValue {
  const tasks = Array.from({ length: questions }, (_, i) => searchPairTask('mixed', HELD_OUT_SEED + i));
  const records = rolloutSearchPair(searchPairEnvs, { planner: 'level', executor }, tasks, 4, budget, 777);
  const { replays } = replayPlans(searchPairEnvs, executor, records, budget, 777);
  const sum = [0, 1, 2].map(() => new Array<number>(PLANS).fill(0));
  const episodes = [0, 0, 0];
  let pivotal = 0;
  let gain = 0;
  records.forEach((r, i) => {
    const R = replays[i];
    episodes[r.level - 1]++;
    for (let n = 0; n < PLANS; n++) sum[r.level - 1][n] += R[n];
    if (Math.min(...R) !== Math.max(...R)) pivotal++;
    gain += R[r.level - 1] - R.reduce((a, x) => a + x, 0) / PLANS;
  });
  return {
    byLevel: sum.map((row, l) => row.map((x) => x / Math.max(1, episodes[l]))),
    episodes,
    pivotal: pivotal / records.length,
    rightMinusUniform: gain / records.length,
  };
}

/** The single-agent MLP trained with clue credit on the choice variant, budget T − 1 (the executor's). */
async function clueExecutor(seed: number): Promise<NeuralPolicy> {
  const config = parseTrainConfig({
    env: envConfig('search', { level: 'mixed', mode: 'choose' }),
    policy: { kind: 'mlp', hidden: SEARCH_PAIR_DEFAULTS.hidden },
    iters: clueIters,
    groups: 16,
    groupSize: SEARCH_PAIR_DEFAULTS.groupSize,
    budget: { kind: 'fixed', budget: budget - 1 },
    eval: { episodes: 1 },
    seed,
    credit: { method: 'clue' },
  });
  const r = await trainPolicyGradient({ config, envs });
  if (!(r.policy instanceof NeuralPolicy)) throw new Error('an mlp policy trains a network');
  return r.policy;
}

/** The clue-trained executor, fixed: behind `level` and 3 untrained, then the planner alone over it. */
async function runClueSeed(seed: number): Promise<{ results: Record<Arm, Result>; planValue: PlanValue }> {
  const base = { ...SEARCH_PAIR_DEFAULTS, budget, iters, groups, seed };
  const executor = await clueExecutor(seed);
  const out = {} as Record<Arm, Result>;
  const fixed = (planner: 'level' | 3): SearchPairAgents => ({
    planner,
    executor,
    trainPlanner: false,
    trainExecutor: false,
  });
  out.executorOnly = runArm('executorOnly', { ...base, iters: 0, credit: 'shared' }, fixed('level'));
  out.executorPlan3 = runArm('executorPlan3', { ...base, iters: 0, credit: 'shared' }, fixed(3));
  const value = planValue(executor);
  process.stderr.write(
    `seed ${seed}: a plan's worth to the clue executor, always right − uniform ${value.rightMinusUniform.toFixed(4)}, pivotal ${value.pivotal.toFixed(3)}\n`,
  );
  for (const [arm, credit] of [
    ['plannerOnlyShared', 'shared'],
    ['plannerOnlyCounterfactual', 'counterfactual'],
  ] as const)
    out[arm] = runArm(
      arm,
      { ...base, credit },
      {
        planner: freshSearchAgents(searchPairEnvs, base.hidden, seed).planner,
        executor,
        trainPlanner: true,
        trainExecutor: false,
      },
    );
  return { results: out, planValue: value };
}

/** Every arm of one seed, in order. */
function runSeed(seed: number): { results: Record<Arm, Result>; planValue: PlanValue } {
  const base = { ...SEARCH_PAIR_DEFAULTS, budget, iters, groups, seed };
  const out = {} as Record<Arm, Result>;
  for (const [arm, credit] of [
    ['shared', 'shared'],
    ['perAgent', 'per-agent'],
    ['counterfactual', 'counterfactual'],
  ] as const) {
    const a = freshSearchAgents(searchPairEnvs, base.hidden, seed);
    out[arm] = runArm(arm, { ...base, credit }, { ...a, trainPlanner: true, trainExecutor: true });
  }
  // Each executor-alone arm from the same fresh executor.
  const alone = (planner: 'level' | 3): SearchPairAgents => ({
    planner,
    executor: freshSearchAgents(searchPairEnvs, base.hidden, seed).executor,
    trainPlanner: false,
    trainExecutor: true,
  });
  const solo = alone('level');
  out.executorOnly = runArm('executorOnly', { ...base, credit: 'shared' }, solo);
  const value = planValue(solo.executor);
  process.stderr.write(
    `seed ${seed}: a plan's worth to executorOnly's executor, always right − uniform ${value.rightMinusUniform.toFixed(4)}, pivotal ${value.pivotal.toFixed(3)}\n`,
  );
  out.executorPlan3 = runArm('executorPlan3', { ...base, credit: 'shared' }, alone(3));
  // The planner alone over the executor trained behind `level` (fixed), from the same fresh planner.
  for (const [arm, credit] of [
    ['plannerOnlyShared', 'shared'],
    ['plannerOnlyCounterfactual', 'counterfactual'],
  ] as const) {
    out[arm] = runArm(
      arm,
      { ...base, credit },
      {
        planner: freshSearchAgents(searchPairEnvs, base.hidden, seed).planner,
        executor: solo.executor,
        trainPlanner: true,
        trainExecutor: false,
      },
    );
  }
  return { results: out, planValue: value };
}

type SeedOutput = { results: Record<Arm, Result>; planValue: PlanValue };
if (values.job !== undefined) {
  const job = int('job', values.job, 0);
  finishJob<SeedOutput>(executorKind === 'clue' ? await runClueSeed(job) : runSeed(job));
}

// Every seed in a child process, `jobs` at a time.
const { results: outputs, cpuSeconds: childCpu } = await runJobs<SeedOutput>(seeds.map(String), jobs, fail);
const bySeed = new Map(seeds.map((s) => [s, outputs.get(String(s))!.results]));
const planValues = new Map(seeds.map((s) => [s, outputs.get(String(s))!.planValue]));

const t0 = performance.now();
const cpu0 = process.cpuUsage();
const results = (arm: Arm) => seeds.map((s) => bySeed.get(s)![arm]);
/** The mean over seeds; null where an arm has none (NaN in a child comes back as null: an arm that
 * trains nothing has no zero-advantage share). */
const mean = (arm: Arm, k: keyof Result): number | null =>
  results(arm).some((x) => x[k] === null)
    ? null
    : r4(results(arm).reduce((a, x) => a + x[k], 0) / seeds.length);
const summary = (arm: Arm) => ({
  success: mean(arm, 'success'),
  turns: mean(arm, 'turns'),
  planExact: mean(arm, 'exact'),
  planShort: mean(arm, 'short'),
  planLong: mean(arm, 'long'),
  envSteps: mean(arm, 'envSteps'),
  replaySteps: mean(arm, 'replaySteps'),
  executorZeroAdvantage: mean(arm, 'zeroAdv'),
  ...(arm.includes('ounterfactual') ? { pivotal: mean(arm, 'pivotal') } : {}),
  seconds: mean(arm, 'seconds'),
});
const diff = (a: Arm, b: Arm) =>
  Object.fromEntries(
    (['success', 'exact'] as const).map((k) => [
      k === 'exact' ? 'planExact' : k,
      paired(seeds.map((_, i) => results(a)[i][k] - results(b)[i][k])),
    ]),
  );
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      env: 'search',
      params: { level: SEARCH_PAIR_DEFAULTS.level, mode: 'choose' },
      budget,
      policy: `mlp:hidden=${SEARCH_PAIR_DEFAULTS.hidden.join('x')} (both agents)`,
      ...(executorKind === 'clue'
        ? { executor: `clue-trained single agent, ${clueIters} iterations of 16 × 8, fixed` }
        : {}),
      iters,
      groups,
      groupSize: SEARCH_PAIR_DEFAULTS.groupSize,
      seeds,
      heldOutEpisodes: questions * 4,
    },
    arms: Object.fromEntries(ARMS.map((a) => [a, summary(a)])),
    // executorOnly's executor with every plan replayed, per seed; rightMinusUniform paired over seeds.
    planValue: {
      byLevel: [0, 1, 2].map((l) =>
        [0, 1, 2].map((n) =>
          r4(seeds.reduce((a, s) => a + planValues.get(s)!.byLevel[l][n], 0) / seeds.length),
        ),
      ),
      pivotal: r4(seeds.reduce((a, s) => a + planValues.get(s)!.pivotal, 0) / seeds.length),
      rightMinusUniform: paired(seeds.map((s) => planValues.get(s)!.rightMinusUniform)),
      perSeed: seeds.map((s) => ({
        seed: s,
        byLevel: planValues.get(s)!.byLevel.map((row) => row.map(r4)),
        episodes: planValues.get(s)!.episodes,
      })),
    },
    perSeed: seeds.map((s, i) => ({
      seed: s,
      ...Object.fromEntries(ARMS.map((a) => [a, r4(results(a)[i].success)])),
    })),
    difference:
      executorKind === 'clue'
        ? {
            executorPlan3VsExecutorOnly: diff('executorPlan3', 'executorOnly'),
            plannerOnlySharedVsExecutorOnly: diff('plannerOnlyShared', 'executorOnly'),
            plannerOnlyCounterfactualVsExecutorOnly: diff('plannerOnlyCounterfactual', 'executorOnly'),
            plannerOnlyCounterfactualVsShared: diff('plannerOnlyCounterfactual', 'plannerOnlyShared'),
          }
        : {
            counterfactualVsShared: diff('counterfactual', 'shared'),
            perAgentVsShared: diff('perAgent', 'shared'),
            sharedVsExecutorOnly: diff('shared', 'executorOnly'),
            counterfactualVsExecutorOnly: diff('counterfactual', 'executorOnly'),
            executorPlan3VsExecutorOnly: diff('executorPlan3', 'executorOnly'),
            plannerOnlyCounterfactualVsShared: diff('plannerOnlyCounterfactual', 'plannerOnlyShared'),
          },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    // This process and its children, as each counted its own.
    cpuSeconds: Number((childCpu + (cpu.user + cpu.system) / 1e6).toFixed(1)),
    jobs,
  }),
);
