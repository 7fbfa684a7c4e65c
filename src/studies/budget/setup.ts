// The budget study's first stages: what it measures. The maps (training and held-out), the base
// behaviour-cloned from an expert, and the RL variants the injected trainer fine-tunes from it. The
// measurements (measure/) receive what these return; nothing here looks at the held-out maps.
import { InputError } from '../../core/errors.ts';
import type { EnvConfig, EnvSpec, Policy, Task } from '../../core/types.ts';
import { envConfig, makeTasks, envs as registry } from '../../envs/index.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../policies/neural.ts';
import { collectDemonstrations, trainBc } from '../../train/bc.ts';
import type { BudgetSchedule } from '../../train/schedule.ts';
import type { StudyConfig } from './config.ts';
import { finiteOrNull } from './figures.ts';
import { MemoPolicy } from './memo.ts';
import type { Summary } from './summary.ts';
import type { RlRequest, RlResult, RlTrainer } from './trainer.ts';
import { type MakeEnv, WORLD_SETTINGS, worldEnvs } from './world.ts';

export type AnyPolicy = Policy<unknown, unknown>;
export type Variant = 'rl' | 'budgetmix' | 'gigpo';
export type PolicyName = 'base' | Variant;
export type StudyStage = 'base' | Variant | 'evaluation' | 'diagnostics';

/** Every policy the study measures, in the order the summary lists them. */
export const POLICY_NAMES: readonly PolicyName[] = ['base', 'rl', 'budgetmix', 'gigpo'];

/** One X per variant: RL and BudgetMix always, GiGPO when config.rl.gigpo. */
export type PerVariant<X> = Record<'rl' | 'budgetmix', X> & { gigpo?: X };
/** One X per policy: the base and the variants. */
export type PerPolicy<X> = PerVariant<X> & { base: X };

/** The names present in a per-policy (or per-variant) record, in POLICY_NAMES order. */
export function namesOf<X>(r: Partial<Record<PolicyName, X>>): PolicyName[] {
  return POLICY_NAMES.filter((n) => r[n] !== undefined);
}

/** What a stage may tell the caller: the library never prints. */
export interface StageHooks {
  /** A stage begins (for a log line). */
  stage(s: StudyStage, detail: string): void;
  /** Progress within a stage. */
  progress(s: StudyStage, done: number, total: number): void;
}

/** Wall-clock seconds per stage (the only figures of a summary that differ between reruns). */
export class Stopwatch {
  readonly timings: Record<string, number> = {};
  private readonly t0 = now();
  private last = this.t0;
  /** Starts timing the next stage. */
  start(): void {
    this.last = now();
  }
  /** Records the seconds since start() (or the last lap) as `name`. */
  lap(name: string): void {
    const t = now();
    this.timings[name] = t - this.last;
    this.last = t;
  }
  /** Seconds since the stopwatch was made. */
  total(): number {
    return now() - this.t0;
  }
}

const now = () => performance.now() / 1000;

export interface StudyTasks {
  env: EnvConfig;
  /** Training maps (config.seeds.train), and the disjoint held-out maps everything is measured on. */
  train: Task[];
  test: Task[];
  spec: EnvSpec;
}

/** Slippery FrozenLake random maps: the training maps and the held-out maps (config.seeds). */
export function makeStudyTasks(config: StudyConfig, envs: MakeEnv = registry): StudyTasks {
  const env = envConfig('frozenlake', {
    random: true,
    size: config.env.size,
    p: config.env.p,
    slippery: config.env.slippery,
    ...(config.env.successRate !== undefined ? { successRate: config.env.successRate } : {}),
  });
  const train = makeTasks(env, config.seeds.train.count, config.seeds.train.start);
  const test = makeTasks(env, config.seeds.test.count, config.seeds.test.start);
  return { env, train, test, spec: envs.spec(train[0]) };
}

/** The env factory of a run's world (the registry's FrozenLake, or the memory version). */
export function studyEnvs(config: StudyConfig): MakeEnv {
  return worldEnvs(WORLD_SETTINGS[config.world].memory);
}

export interface BaseRun {
  policy: NeuralPolicy;
  /** The summary's `base` section. */
  summary: Summary['base'];
}

/**
 * The base: an MLP behaviour-cloned on the expert's own rollouts on the training maps, with soft
 * targets (the expert's whole action distribution, not only the action it took).
 */
export async function trainBase(
  envs: MakeEnv,
  config: StudyConfig,
  tasks: StudyTasks,
  expert: AnyPolicy,
  onEpoch: (epoch: number, epochs: number) => void,
): Promise<BaseRun> {
  const { seed } = config;
  const policy = new NeuralPolicy(
    mlpPolicyConfig(tasks.spec, { hidden: config.base.hidden, seed, budgetAware: false }, 'config.base'),
    'base',
  );
  // The `intended` world clones the base on the expert's intended path: ice that never slips.
  const intended = WORLD_SETTINGS[config.world].demos === 'intended';
  const demos = await collectDemonstrations({
    envs: intended ? worldEnvs(true, true) : envs,
    tasks: tasks.train,
    expert,
    student: policy,
    budget: config.base.budget,
    episodesPerTask: config.base.episodesPerTask,
    runSeed: seed,
    targets: 'probs',
  });
  if (demos.n === 0)
    throw InputError.raw('config.base.expert', 'the expert took no turns on the training maps');
  const bc = trainBc(policy, demos, {
    epochs: config.base.epochs,
    batchSize: config.base.batchSize,
    lr: config.base.lr,
    weightDecay: 0,
    seed,
    onEpoch: (e) => onEpoch(e, config.base.epochs),
  });
  return {
    policy,
    summary: {
      parameters: policy.parameterCount(),
      examples: demos.n,
      expertTurns: demos.turns,
      expertEpisodeSuccess: finiteOrNull(demos.expertSuccess),
      bcLoss: bc.losses.map(finiteOrNull),
    },
  };
}

/** The budget schedule of each variant: RL at the fixed budget, BudgetMix mixed, GiGPO as RL. */
export function variantSchedules(config: StudyConfig): [Variant, BudgetSchedule][] {
  const schedules: [Variant, BudgetSchedule][] = [
    ['rl', { kind: 'fixed', budget: config.rl.budget }],
    ['budgetmix', { kind: 'mix', budgets: [...config.budgetmix.budgets] }],
  ];
  if (config.rl.gigpo) schedules.push(['gigpo', { kind: 'fixed', budget: config.rl.budget }]);
  return schedules;
}

/**
 * RL, BudgetMix (and GiGPO) from the injected trainer, one after the other, each from the same base
 * and seed. A trainer that modifies the base, or returns something that is not a policy of this env
 * with at most one curve point per iteration, is refused. Each variant's seconds go to `clock`.
 */
export async function trainVariants(
  envs: MakeEnv,
  config: StudyConfig,
  base: NeuralPolicy,
  train: readonly Task[],
  trainer: RlTrainer,
  hooks: StageHooks,
  clock: Stopwatch,
): Promise<PerVariant<RlResult>> {
  const trained: Partial<Record<Variant, RlResult>> = {};
  for (const [name, budget] of variantSchedules(config)) {
    clock.start();
    hooks.stage(
      name,
      `${name}: ${config.rl.iters} iterations of ${config.rl.groupsPerIter} groups × ${config.rl.groupSize}`,
    );
    const saved = fingerprint(base);
    const req: RlRequest = {
      name,
      base,
      envs,
      trainTasks: train,
      budget,
      revealBudget: false,
      iters: config.rl.iters,
      groupSize: config.rl.groupSize,
      groupsPerIter: config.rl.groupsPerIter,
      seed: config.seed,
      onProgress: (i, n) => hooks.progress(name, i, n),
    };
    const result = await trainer(req);
    if (!unchanged(base, saved))
      throw new Error(`trainer (${name}) modified the base policy; it must train a copy`);
    checkResult(result, base, name, config.rl.iters);
    trained[name] = result;
    clock.lap(name);
  }
  return trained as PerVariant<RlResult>;
}

/**
 * The policies as the measurements see them: memoised views of the networks, with the same actions,
 * log-probs and draws, one forward per (map, state) (memo.ts).
 */
export function actingViews(base: NeuralPolicy, trained: PerVariant<RlResult>): PerPolicy<MemoPolicy> {
  const views: Partial<Record<PolicyName, MemoPolicy>> = { base: new MemoPolicy(base, 'base') };
  for (const n of namesOf(trained)) views[n] = new MemoPolicy(trained[n as Variant]!.policy, n);
  return views as PerPolicy<MemoPolicy>;
}

/** The summary's `policies` section: what each policy is. */
export function describePolicies(
  expert: AnyPolicy,
  base: NeuralPolicy,
  trained: PerVariant<RlResult>,
): Summary['policies'] {
  return {
    expert: expert.id,
    base: `${base.id}: MLP ${[base.inputs, ...base.config.hidden, base.actions].join('→')} behaviour-cloned from ${expert.id}`,
    rl: trained.rl.policy.id,
    budgetmix: trained.budgetmix.policy.id,
    ...(trained.gigpo ? { gigpo: trained.gigpo.policy.id } : {}),
  };
}

/** A copy of every parameter value, to check afterwards that the trainer did not touch the base. */
function fingerprint(p: NeuralPolicy): Float32Array[] {
  return p.net.namedParameters().map(([, t]) => t.data.slice());
}

function unchanged(p: NeuralPolicy, saved: readonly Float32Array[]): boolean {
  const now_ = p.net.namedParameters();
  return now_.every(
    ([, t], i) => t.data.length === saved[i].length && t.data.every((x, j) => Object.is(x, saved[i][j])),
  );
}

function checkResult(r: RlResult, base: NeuralPolicy, name: string, iters: number): void {
  if (!(r?.policy instanceof NeuralPolicy))
    throw new Error(`trainer (${name}): the result holds no NeuralPolicy`);
  const a = r.policy.config;
  const b = base.config;
  if (a.features !== b.features || a.actions !== b.actions) {
    throw new Error(`trainer (${name}): the trained policy does not fit the env (features/actions changed)`);
  }
  if (!Array.isArray(r.curves) || r.curves.length > iters) {
    throw new Error(
      `trainer (${name}): curves must be an array of at most ${iters} points, one per iteration`,
    );
  }
}
