// The budget study (issue 7): what did multi-turn RL really improve? On slippery FrozenLake random
// maps with exact oracles, runBudgetStudy reads as its stages:
//   1. tasks: training maps and disjoint held-out maps (config.seeds);
//   2. base: a neural policy behaviour-cloned from a good but imperfect expert's rollouts (train/bc);
//   3. RL (fixed budget) and BudgetMix (mixed budgets), optionally GiGPO, from the injected trainer;
//   4. on the held-out maps, for every policy, one `measure…` per summary section (measure/):
//      Pass@(K,T) sampled (prefix mode) and exact (dynamic programming per map), RL − base paired;
//      step quality at normal and error states; recovery from error states; NLL and LLR; failure
//      kinds; and the trainer's training curves;
//   5. the findings (findings.ts), a pure function of the measurements.
// The library never prints: progress goes through callbacks. Every random choice derives from
// config.seed, so the same config gives the same summary (timings excepted).
import type { NeuralPolicy } from '../../policies/neural.ts';
import { makePolicy } from '../../policies/spec.ts';
import { parseStudyConfig, type StudyConfig } from './config.ts';
import { budgetFindings, type Measurements } from './findings.ts';
import { measureTrainingCurves } from './measure/curves.ts';
import { sampleEpisodes } from './measure/episodes.ts';
import { measureExactPass } from './measure/exact-pass.ts';
import { measureLikelihood } from './measure/likelihood.ts';
import { measurePass } from './measure/pass.ts';
import { measureRecovery } from './measure/recovery.ts';
import { measureReference } from './measure/reference.ts';
import { diagnosticStates } from './measure/states.ts';
import { measureStepQuality } from './measure/step-quality.ts';
import { measureTemperature } from './measure/temperature.ts';
import {
  type AnyPolicy,
  actingViews,
  type BaseRun,
  describePolicies,
  makeStudyTasks,
  type PerVariant,
  type StageHooks,
  Stopwatch,
  type StudyStage,
  type StudyTasks,
  studyEnvs,
  trainBase,
  trainVariants,
  type Variant,
} from './setup.ts';
import type { Summary } from './summary.ts';
import type { RlResult, RlTrainer } from './trainer.ts';
import type { MakeEnv } from './world.ts';

export type { StudyStage, Variant } from './setup.ts';

export interface StudyProgress {
  stage: StudyStage;
  done: number;
  total: number;
}

export interface StudyOptions {
  trainer: RlTrainer;
  /** Where the study's envs come from (default: the registry). */
  envs?: MakeEnv;
  /** Progress within a stage (BC epochs, training iterations, evaluated episodes, diagnostics). */
  onProgress?: (p: StudyProgress) => void;
  /** A stage begins (for a log line). */
  onStage?: (stage: StudyStage, detail: string) => void;
}

export interface StudyResult {
  summary: Summary;
  policies: { base: NeuralPolicy } & Partial<Record<Variant, NeuralPolicy>> &
    Record<'rl' | 'budgetmix', NeuralPolicy>;
}

export async function runBudgetStudy(input: StudyConfig, o: StudyOptions): Promise<StudyResult> {
  const config = parseStudyConfig(input);
  const envs: MakeEnv = o.envs ?? studyEnvs(config); // every env a stage makes comes from here
  const clock = new Stopwatch();
  const hooks: StageHooks = {
    stage: (stage, detail) => o.onStage?.(stage, detail),
    progress: (stage, done, total) => o.onProgress?.({ stage, done, total }),
  };
  const { T, samples } = config.eval;

  // 1–3. What is measured: the maps, the base, the variants.
  const { tasks, expert, base, trained } = await trainStages(envs, config, o.trainer, hooks, clock);
  const policies = actingViews(base.policy, trained);

  // 4a. Pass@(K,T) on the held-out maps: sampled, exact, and the reference policies.
  clock.start();
  hooks.stage(
    'evaluation',
    `Pass@(K,T) on ${tasks.test.length} held-out maps × ${samples} samples per policy`,
  );
  const episodes = await sampleEpisodes(envs, policies, tasks.test, config, (d, n) =>
    hooks.progress('evaluation', d, n),
  );
  const passKT = measurePass(episodes, tasks.test.length, config);
  const exactPassKT = measureExactPass(policies, tasks.test, config, envs);
  const reference = measureReference(tasks.test, expert, tasks.spec, config, envs);
  const temperature = measureTemperature(policies, tasks.test, config, envs);
  clock.lap('evaluation');

  // 4b. Diagnostics at T_max, on states and trajectories from the base's and RL's own episodes.
  hooks.stage('diagnostics', `step quality, recovery and likelihood at T=${T[T.length - 1]}`);
  let part = 0;
  const tick = () => hooks.progress('diagnostics', ++part, 4);
  const states = await diagnosticStates(envs, episodes.pools, config);
  const stepQuality = await measureStepQuality(envs, states, policies, config, tick); // parts 1 and 2
  const recovery = await measureRecovery(states.errors.states, policies, config, envs);
  tick();
  const likelihood = await measureLikelihood(
    envs,
    episodes.pools,
    policies,
    tasks.test.length,
    tasks.spec,
    config,
  );
  tick();
  clock.lap('diagnostics');

  // 4c. The trainer's own curves; the failure kinds were tallied while sampling.
  const curves = measureTrainingCurves(trained, config);
  const failures = episodes.failures;

  // 5. The findings, and the summary.
  const measured: Measurements = {
    study: 'budget',
    version: 2,
    world: config.world,
    config,
    env: { env: tasks.env.env, params: tasks.env.params },
    policies: describePolicies(expert, base.policy, trained),
    base: base.summary,
    reference,
    passKT,
    exactPassKT,
    temperature,
    stepQuality,
    recovery,
    likelihood,
    curves,
    failures,
  };
  return { summary: summarize(measured, clock, trained), policies: trainedPolicies(base, trained) };
}

/**
 * The maps, the base and the variants. The training maps are made and dropped here: once trained,
 * nothing reads them, and their worlds (transition tables, oracle tables, feature views) go with them
 * instead of staying through the measurements.
 */
async function trainStages(
  envs: MakeEnv,
  config: StudyConfig,
  trainer: RlTrainer,
  hooks: StageHooks,
  clock: Stopwatch,
): Promise<{
  tasks: Omit<StudyTasks, 'train'>;
  expert: AnyPolicy;
  base: BaseRun;
  trained: PerVariant<RlResult>;
}> {
  const { train, ...tasks } = makeStudyTasks(config, envs);
  const expert = makePolicy(config.base.expert, tasks.spec, 'config.base.expert');
  clock.start();
  hooks.stage('base', `behaviour cloning of ${expert.id} on ${train.length} training maps`);
  const base = await trainBase(envs, config, { ...tasks, train }, expert, (e, n) =>
    hooks.progress('base', e, n),
  );
  clock.lap('bc');
  const trained = await trainVariants(envs, config, base.policy, train, trainer, hooks, clock);
  return { tasks, expert, base, trained };
}

/** The summary: the measurements, their findings, and the seconds (the study's own without training). */
function summarize(measured: Measurements, clock: Stopwatch, trained: PerVariant<RlResult>): Summary {
  const findings = budgetFindings(measured);
  const seconds = clock.total();
  const { timings } = clock;
  const training = (Object.keys(trained) as Variant[]).reduce((a, n) => a + timings[n], 0);
  timings.study = seconds - training;
  return { ...measured, findings, timings, seconds };
}

/** The networks, for saving: the base and every trained variant. */
function trainedPolicies(base: BaseRun, trained: PerVariant<RlResult>): StudyResult['policies'] {
  return {
    base: base.policy,
    rl: trained.rl.policy,
    budgetmix: trained.budgetmix.policy,
    ...(trained.gigpo ? { gigpo: trained.gigpo.policy } : {}),
  };
}
