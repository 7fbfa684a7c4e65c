// The language study, stage by stage, resumable (issue 23). Everything a stage makes is a file under
// `out`, written atomically when the stage ends; a stage whose file exists is not run again, and the RL
// runs resume from their checkpoints (train/run-dir.ts) — so a study killed with SIGKILL and started
// again with the same command reruns nothing that finished. Per world:
//   <world>/tokenizer.json               BPE merges from the expert's transcripts
//   <world>/base/policy.safetensors      the base: the transformer cloned on the imperfect expert (bc.json:
//                                        its cloning, and max_tokens, tied to the expert in a tool world)
//   <world>/seed-<s>/rl/, budgetmix/     token-level GRPO from the base (train run directories)
//   <world>/seed-<s>/tau.json            the temperature control: the base's best τ on training tasks
//   <world>/seed-<s>/run.json            the measurements and the findings of that seed
// and at the end summary.json (study.ts). The library never prints: `onEvent` receives each stage.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.ts';
import { makeTasks } from '../../core/tasks.ts';
import type { EnvFactory, EnvSpec, Policy, Task, Trajectory } from '../../core/types.ts';
import { readTokenizerFile, type Tokenizer } from '../../nn/tokenizer.ts';
import { makePolicy } from '../../policies/spec.ts';
import { freshTransformerPolicy } from '../../policies/transformer.ts';
import { renderAction } from '../../policies/transformer-prompt.ts';
import { rollout } from '../../rollout/batch.ts';
import { withEnvs } from '../../rollout/env-cache.ts';
import { writeFileAtomic } from '../../store/atomic.ts';
import { parseTrainConfig } from '../../train/config.ts';
import { trainPolicyGradient } from '../../train/loop.ts';
import { FILES } from '../../train/run-dir.ts';
import { learnTokenizer } from '../../train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../train/transformer-bc.ts';
import {
  type LanguageProfile,
  type LanguageWorld,
  type LanguageWorldId,
  type Sizes,
  TEST_SEED,
  worldIn,
} from './design.ts';
import {
  type LanguageMeasurements,
  measureCurves,
  measureLikelihood,
  measurePass,
  measureSteps,
  type Role,
} from './measure.ts';
import { type LanguageFinding, languageFindings } from './verdicts.ts';

type AnyPolicy = Policy<unknown, unknown>;

export type LanguageStage = 'tokenizer' | 'base' | 'rl' | 'budgetmix' | 'temperature' | 'measure';

export interface LanguageEvent {
  world: LanguageWorldId;
  /** null for the world's shared stages (tokenizer, base). */
  seed: number | null;
  stage: LanguageStage;
  /** 'start', 'skip' (its output exists: resumed), 'progress', 'done'. */
  kind: 'start' | 'skip' | 'progress' | 'done';
  done?: number;
  total?: number;
  detail?: string;
}

export interface LanguageRunRecord {
  world: LanguageWorldId;
  seed: number;
  tau: number;
  measurements: LanguageMeasurements;
  findings: LanguageFinding[];
  /** Wall seconds of this seed's stages (RL, BudgetMix, τ, measurements), as run (a resumed stage: 0). */
  seconds: Record<string, number>;
}

export interface LanguageRunOptions {
  envs: EnvFactory;
  out: string;
  profile: LanguageProfile;
  onEvent?: (e: LanguageEvent) => void;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/** The tasks of a world in a profile: training seeds 0…, held-out seeds from TEST_SEED. */
export function worldTasks(world: LanguageWorld, sizes: Sizes): { train: Task[]; test: Task[] } {
  return { train: makeTasks(world.env, sizes.train, 0), test: makeTasks(world.env, sizes.test, TEST_SEED) };
}

/** Stage: the world's tokenizer (BPE merges from 0.1-greedy expert transcripts, task seeds 0…). */
async function tokenizerStage(o: LanguageRunOptions, world: LanguageWorld, sizes: Sizes, dir: string) {
  const file = join(dir, 'tokenizer.json');
  const ev = (kind: LanguageEvent['kind']) =>
    o.onEvent?.({ world: world.id, seed: null, stage: 'tokenizer', kind });
  if (existsSync(file)) return ev('skip');
  ev('start');
  const transcripts = {
    envs: o.envs,
    config: world.env,
    episodes: sizes.tokenizerEpisodes,
    seed: 0,
    eps: 0.1,
    mode: world.mode,
  };
  const fit = await learnTokenizer(transcripts, world.vocab);
  const tokenizer = fit.tokenizer.withTrainedOn({
    env: world.env.env,
    params: JSON.stringify(world.env.params),
    episodes: sizes.tokenizerEpisodes,
    seed: 0,
    eps: 0.1,
    vocab: world.vocab,
  });
  writeFileAtomic(file, `${JSON.stringify(tokenizer)}\n`);
  ev('done');
}

/** The world's expert (or another policy spec) on `tasks`, one budget-blind episode each at T_train
 * (run seed 0): the base's demonstrations. */
export async function expertDemos(
  envs: EnvFactory,
  world: Pick<LanguageWorld, 'expert' | 'budget'>,
  tasks: readonly Task[],
  expert = world.expert,
): Promise<Trajectory[]> {
  return rollout({
    tasks,
    samples: 1,
    budget: world.budget,
    revealBudget: false,
    runSeed: 0,
    policy: makePolicy(expert, envs.spec(tasks[0]), 'expert'),
    makeEnv: envs.make,
  });
}

/** The longest of the expert's replies in `demos` in tokens as the policy writes them (its rendering
 * and <|end|>, the world's tokenizer): what a world's replyCap is a multiple of. */
export function longestDemoReply(
  demos: readonly Trajectory[],
  spec: EnvSpec,
  world: Pick<LanguageWorld, 'mode'>,
  tokenizer: Tokenizer,
): number {
  let most = 0;
  for (const t of demos)
    for (const turn of t.turns) {
      const text = renderAction(spec, world.mode, turn.action);
      if (text !== undefined) most = Math.max(most, tokenizer.encode(text).length + 1);
    }
  return most;
}

/** Stage: the world's base — a fresh transformer cloned on the imperfect expert's transcripts. */
async function baseStage(o: LanguageRunOptions, world: LanguageWorld, sizes: Sizes, dir: string) {
  const base = join(dir, 'base');
  const file = join(base, FILES.policy);
  const ev = (kind: LanguageEvent['kind'], extra: Partial<LanguageEvent> = {}) =>
    o.onEvent?.({ world: world.id, seed: null, stage: 'base', kind, ...extra });
  if (existsSync(file)) return ev('skip');
  ev('start', { detail: `cloning ${world.expert} on ${sizes.train} tasks, ${sizes.bc.epochs} epochs` });
  const { train } = worldTasks(world, sizes);
  const spec = o.envs.spec(train[0]);
  const model = world.model;
  const tokenizerFile = join(dir, 'tokenizer.json');
  const demos = await expertDemos(o.envs, world, train);
  const longest = longestDemoReply(demos, spec, world, readTokenizerFile(tokenizerFile, 'tokenizer'));
  const maxTokens = world.replyCap === undefined ? undefined : Math.ceil(world.replyCap * longest);
  const student = freshTransformerPolicy(
    {
      layers: model.layers,
      d: model.d,
      heads: model.heads,
      ctx: model.ctx,
      seed: 0,
      tokenizer: tokenizerFile,
      format: {
        mode: world.mode,
        temperature: model.temperature,
        ...(maxTokens === undefined ? {} : { maxTokens }),
      },
    },
    spec,
    `transformer:${world.id}-base`,
  );
  const data = await withEnvs(o.envs.make, async (cache) => {
    await cache.getAll(train);
    return cloningSequences(student, demos, (task) => cache.view(task));
  });
  const result = trainCloning(student, data, {
    ...sizes.bc,
    weightDecay: 0,
    seed: 0,
    onEpoch: (e) => ev('progress', { done: e, total: sizes.bc.epochs }),
  });
  mkdirSync(base, { recursive: true });
  const record = {
    expert: world.expert,
    tasks: train.length,
    expertSuccess: demos.filter((t) => t.outcome.success).length / demos.length,
    longestReply: longest,
    maxTokens: student.maxTokens,
    turns: data.turns,
    skipped: data.skipped,
    tokens: data.tokens,
    targets: data.targets,
    losses: result.losses,
    parameters: student.model.parameterCount(),
  };
  writeFileAtomic(join(base, 'bc.json'), `${JSON.stringify(record, null, 2)}\n`);
  student.save(file, result.optimizer, { bc: JSON.stringify(record) });
  ev('done', { detail: `final loss ${result.losses.at(-1)?.toFixed(4)}, max_tokens ${student.maxTokens}` });
}

/** Stage: one token-level GRPO run from the base (fixed budget, or BudgetMix), resumed if it was cut. */
async function rlStage(
  o: LanguageRunOptions,
  world: LanguageWorld,
  sizes: Sizes,
  dir: string,
  seed: number,
  stage: 'rl' | 'budgetmix',
): Promise<number> {
  const out = join(dir, `seed-${seed}`, stage);
  const ev = (kind: LanguageEvent['kind'], extra: Partial<LanguageEvent> = {}) =>
    o.onEvent?.({ world: world.id, seed, stage, kind, ...extra });
  if (existsSync(join(out, FILES.summary))) {
    ev('skip');
    return 0;
  }
  const t0 = performance.now();
  const resume = existsSync(join(out, FILES.store));
  ev('start', { detail: resume ? 'resuming from its checkpoint' : `${sizes.rl.iters} iterations` });
  const config = parseTrainConfig({
    env: world.env,
    policy: { kind: 'checkpoint', path: join(dir, 'base', FILES.policy) },
    algo: 'grpo',
    iters: sizes.rl.iters,
    groups: sizes.rl.groups,
    groupSize: sizes.rl.groupSize,
    budget: stage === 'rl' ? { kind: 'fixed', budget: world.budget } : { kind: 'mix', budgets: world.mix },
    trainSeeds: [0, sizes.train],
    testSeeds: [TEST_SEED, TEST_SEED + sizes.test],
    eval: { episodes: sizes.test, budget: world.budget },
    seed: seed + (stage === 'rl' ? 0 : 1000),
    checkpointEvery: 1,
  });
  mkdirSync(join(dir, `seed-${seed}`), { recursive: true });
  await trainPolicyGradient({
    config,
    envs: o.envs,
    out,
    resume,
    onIter: (i, n) => ev('progress', { done: i + 1, total: n }),
  });
  ev('done');
  return (performance.now() - t0) / 1000;
}

/** The temperature control: the base's success at T_train on (at most 32) training tasks at each τ of
 * the world's grid, two episodes each; the best τ (the lowest on ties). Training tasks, so that the
 * held-out measurement of the chosen τ is not selected on. */
async function temperatureStage(
  o: LanguageRunOptions,
  world: LanguageWorld,
  sizes: Sizes,
  dir: string,
  seed: number,
): Promise<number> {
  const file = join(dir, `seed-${seed}`, 'tau.json');
  if (existsSync(file)) {
    o.onEvent?.({ world: world.id, seed, stage: 'temperature', kind: 'skip' });
    return readJson<{ tau: number }>(file).tau;
  }
  o.onEvent?.({
    world: world.id,
    seed,
    stage: 'temperature',
    kind: 'start',
    detail: `τ ∈ {${world.temperatures.join(', ')}}`,
  });
  const { train } = worldTasks(world, sizes);
  const tasks = train.slice(0, 32);
  const spec = o.envs.spec(tasks[0]);
  const success: number[] = [];
  for (const tau of world.temperatures) {
    const policy = makePolicy(
      `transformer:from=${join(dir, 'base')},temperature=${tau}`,
      spec,
      'temperature',
    );
    const trs = await rollout({
      tasks,
      samples: 2,
      budget: world.budget,
      runSeed: seed + 2000,
      policy,
      makeEnv: o.envs.make,
    });
    success.push(trs.filter((t) => t.outcome.success).length / trs.length);
  }
  const best = success.reduce((a, x, i) => (x > success[a] ? i : a), 0);
  const tau = world.temperatures[best];
  writeFileAtomic(file, `${JSON.stringify({ temperatures: world.temperatures, success, tau })}\n`);
  o.onEvent?.({ world: world.id, seed, stage: 'temperature', kind: 'done', detail: `τ = ${tau}` });
  return tau;
}

/** Stage: every measurement of one seed, and its findings. */
async function measureStage(
  o: LanguageRunOptions,
  world: LanguageWorld,
  sizes: Sizes,
  dir: string,
  seed: number,
  tau: number,
): Promise<LanguageRunRecord> {
  const file = join(dir, `seed-${seed}`, 'run.json');
  if (existsSync(file)) {
    o.onEvent?.({ world: world.id, seed, stage: 'measure', kind: 'skip' });
    return readJson<LanguageRunRecord>(file);
  }
  const t0 = performance.now();
  const ev = (detail: string, done?: number, total?: number) =>
    o.onEvent?.({ world: world.id, seed, stage: 'measure', kind: 'progress', detail, done, total });
  o.onEvent?.({ world: world.id, seed, stage: 'measure', kind: 'start' });
  const { test } = worldTasks(world, sizes);
  const spec = o.envs.spec(test[0]);
  const seedDir = join(dir, `seed-${seed}`);
  const policies: Record<Role, AnyPolicy> = {
    base: makePolicy(join(dir, 'base'), spec, 'base'),
    rl: makePolicy(join(seedDir, 'rl'), spec, 'rl'),
    budgetmix: makePolicy(join(seedDir, 'budgetmix'), spec, 'budgetmix'),
    baseTau: makePolicy(`transformer:from=${join(dir, 'base')},temperature=${tau}`, spec, 'baseTau'),
  };
  const K = [1, 2, 4, 8].filter((k) => k <= sizes.samples);
  const mSeed = 7000 + seed;
  const { pass, runs } = await measurePass(
    o.envs,
    test,
    policies,
    { K, T: world.T, samples: sizes.samples, seed: mSeed, resamples: sizes.resamples },
    (role, d, n) => ev(`Pass@(K,T) of ${role}`, d, n),
  );
  const pools = { rl: runs.rl.atTmax, base: runs.base.atTmax };
  const duo = { rl: policies.rl, base: policies.base };
  const { step, recovery } = await measureSteps(o.envs, pools, duo, sizes, mSeed, (part) => ev(part));
  ev('likelihood');
  const likelihood = await measureLikelihood(
    o.envs,
    pools,
    duo,
    test.length,
    sizes.samples,
    sizes.resamples,
    mSeed,
  );
  const metrics = readFileSync(join(seedDir, 'rl', FILES.metrics), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, number>);
  const curves = measureCurves(metrics, sizes.resamples, mSeed);
  const measurements: LanguageMeasurements = { pass, stepQuality: step, recovery, likelihood, curves };
  const record: LanguageRunRecord = {
    world: world.id,
    seed,
    tau,
    measurements,
    findings: languageFindings(world.id, measurements),
    seconds: { measure: (performance.now() - t0) / 1000 },
  };
  writeFileAtomic(file, `${JSON.stringify(record)}\n`);
  o.onEvent?.({ world: world.id, seed, stage: 'measure', kind: 'done' });
  return record;
}

/** The world's own stages, shared by its seeds: its tokenizer and its base (each skipped when done). */
export async function prepareWorld(o: LanguageRunOptions, worldId: LanguageWorldId): Promise<void> {
  const world = worldIn(o.profile, worldId);
  const sizes = o.profile.sizes[worldId];
  const dir = join(o.out, worldId);
  mkdirSync(dir, { recursive: true });
  await tokenizerStage(o, world, sizes, dir);
  await baseStage(o, world, sizes, dir);
}

/** Every stage of one world and seed (the world's stages once, before its first seed). */
export async function runLanguageSeed(
  o: LanguageRunOptions,
  worldId: LanguageWorldId,
  seed: number,
): Promise<LanguageRunRecord> {
  const world = worldIn(o.profile, worldId);
  const sizes = o.profile.sizes[worldId];
  const dir = join(o.out, worldId);
  await prepareWorld(o, worldId);
  const rl = await rlStage(o, world, sizes, dir, seed, 'rl');
  const mix = await rlStage(o, world, sizes, dir, seed, 'budgetmix');
  const tau = await temperatureStage(o, world, sizes, dir, seed);
  const record = await measureStage(o, world, sizes, dir, seed, tau);
  return { ...record, seconds: { rl, budgetmix: mix, ...record.seconds } };
}

/** Refuses an `out` that holds a language study of another plan (its plan.json), before any work. */
export function checkPlan(out: string, plan: unknown): void {
  const file = join(out, 'plan.json');
  const text = `${JSON.stringify(plan)}\n`;
  if (existsSync(file) && readFileSync(file, 'utf8') !== text)
    throw new InputError(
      '--out',
      out,
      'holds a language study of another profile, worlds or seeds (its plan.json): give another --out, or --force to start it over',
    );
  mkdirSync(out, { recursive: true });
  writeFileAtomic(file, text);
}
