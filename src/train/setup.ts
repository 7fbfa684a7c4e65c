// Everything a run builds from its config before the first iteration: tasks, the learner, the
// optimizer, the critic, the KL reference, the expert for guidance. Shared by the policy-gradient loop
// and ES so that both read a config the same way.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import { makeTasks } from '../core/tasks.ts';
import type { EnvConfig, EnvFactory, EnvSpec, Policy, Task } from '../core/types.ts';
import type { MethodName } from '../credit/index.ts';
import { Adam } from '../nn/optim.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../policies/neural.ts';
import { makePolicy } from '../policies/spec.ts';
import { TabularPolicy } from '../policies/tabular.ts';
import { TransformerPolicy } from '../policies/transformer.ts';
import type { RolloutQueue } from '../rollout/queue.ts';
import { readTrajectories } from '../store/jsonl.ts';
import type { TrainConfig } from './config.ts';
import { creditMethod } from './config-sections.ts';
import { Critic } from './critic.ts';
import type { PrefixGuide } from './guidance.ts';
import { type Learner, learnerFor } from './learner.ts';
import type { WorldModel } from './rehearsal.ts';
import type { ToolModel } from './rehearsal-tools.ts';
import { maxBudget, validateSchedule } from './schedule.ts';
import { type BatchShaper, recordCells } from './shaping.ts';
import { TransformerLearner } from './transformer-learner.ts';

type AnyPolicy = Policy<unknown, unknown>;

/** Stream keys of a training run (all derived from the run seed). */
export const TRAIN_STREAM = {
  tasks: 1,
  rollout: 2,
  shuffle: 3,
  prefix: 4,
  refill: 5,
  bread: 6,
  critic: 7,
  eval: 9,
  rehearsal: 10,
} as const;

export interface Setup {
  /** Where the run's envs come from (given by the caller: the registry, or a user's factory). */
  envs: EnvFactory;
  env: EnvConfig;
  spec: EnvSpec;
  /** Whether each seed is its own task content (random maps) rather than the same env with other dynamics. */
  generated: boolean;
  learner: Learner;
  optimizer: Adam;
  revealBudget: boolean;
  method: MethodName;
  critic?: Critic;
  reference?: Learner;
  expert?: (task: Task) => AnyPolicy;
  maxBudget: number;
}

/** What every stage of a policy-gradient run reads (train/loop.ts): the setup, the config, the guide,
 * the cross-policy stale copy. */
export interface Run {
  s: Setup;
  config: TrainConfig;
  guide?: PrefixGuide;
  stale?: Learner;
  /** Where the iterations' rollouts run: absent, in this process (train/collect.ts). */
  queue?: RolloutQueue;
  /** The reward shaping the learner sees (config.shaping), with its per-map potentials. */
  shaper?: BatchShaper;
  /** The learned model of rehearsal (config.rehearsal): FrozenLake's transitions, or a tool env's answers. */
  model?: WorldModel | ToolModel;
}

function isGenerated(env: EnvConfig): boolean {
  return (env.params as { random?: boolean }).random === true;
}

/** learnerFor, and the transformer's token-level learner (in its own file, which builds on learner.ts). */
export function trainable(policy: AnyPolicy): Learner | undefined {
  return policy instanceof TransformerPolicy ? new TransformerLearner(policy) : learnerFor(policy);
}

/** The learner a config asks for, or a copy of `init` (never trained in place). */
function makeLearner(config: TrainConfig, spec: EnvSpec, init?: AnyPolicy): Learner {
  if (init !== undefined) {
    const l = trainable(init);
    if (l === undefined) throw new InputError('policy', init.id, 'cannot be trained (no parameters)');
    return l.clone();
  }
  const p = config.policy;
  if (p.kind === 'tabular') {
    if (spec.observations === undefined || typeof spec.actions !== 'number') {
      throw new InputError('policy', 'tabular', `env ${spec.id} has no finite observation space`);
    }
    return learnerFor(new TabularPolicy(spec.observations, spec.actions))!;
  }
  if (p.kind === 'mlp') {
    const cfg = mlpPolicyConfig(
      spec,
      { hidden: p.hidden, activation: p.activation, budgetAware: p.budgetAware, seed: config.seed },
      'policy',
    );
    return learnerFor(new NeuralPolicy(cfg))!;
  }
  const loaded = makePolicy(p.path, spec, 'policy.path');
  const l = trainable(loaded);
  if (l === undefined) throw new InputError('policy.path', p.path, 'is not a trainable policy checkpoint');
  return l;
}

/** A demonstrations file as an expert: replays the recorded actions of the first demonstration of each task. */
function demonstrationExpert(path: string): (task: Task) => AnyPolicy {
  const demos = new Map<string, unknown[]>();
  for (const t of readTrajectories(path, 'guidance.expert')) {
    const key = JSON.stringify(t.task);
    if (!demos.has(key))
      demos.set(
        key,
        t.turns.map((turn) => turn.action),
      );
  }
  return (task) => {
    const actions = demos.get(JSON.stringify(task));
    if (actions === undefined)
      throw new InputError('guidance.expert', path, `holds no demonstration for task seed ${task.seed}`);
    return {
      id: `replay:${path}`,
      budgetAware: false,
      act: (ctx) => ({ action: actions[Math.min(ctx.turn, actions.length - 1)], logp: 0 }),
    };
  };
}

export function setup(config: TrainConfig, given: EnvFactory, init?: AnyPolicy, custom?: Learner): Setup {
  // A shaped run's envs record the cell after each step (train/shaping.ts); an unshaped run's are the caller's.
  // So do an info-gain run's under fog (train/info-gain.ts reads the revealed cells after each step; on
  // search it reads the clues the env records anyway), and a rehearsal's (train/rehearsal.ts counts the
  // cell each step led to, the last one's included).
  const cells =
    config.shaping !== undefined ||
    config.rehearsal !== undefined ||
    (config.infoGain !== undefined && config.env.env !== 'search');
  const envs = cells ? recordCells(given) : given;
  const env = envs.configure?.(config.env) ?? config.env;
  const generated = isGenerated(env);
  const [a, b] = config.trainSeeds;
  const [c, d] = config.testSeeds;
  if (generated && a < d && c < b) {
    throw new InputError(
      'testSeeds',
      config.testSeeds,
      `must not overlap trainSeeds [${a}, ${b}) (held-out maps)`,
    );
  }
  validateSchedule(config.budget, 'budget');
  const spec = envs.spec(makeTasks(env, 1, a)[0]);
  const learner = custom ?? makeLearner(config, spec, init);
  const revealBudget = config.revealBudget ?? learner.policy.budgetAware;
  if (learner.policy.budgetAware && !revealBudget) {
    throw new InputError('revealBudget', false, `policy ${learner.policy.id} acts on the turns left`);
  }
  const optimizer = new Adam(learner.params, { lr: config.optim.lr, weightDecay: config.optim.weightDecay });
  const method: MethodName = creditMethod(config);
  const top = maxBudget(config.budget);
  let critic: Critic | undefined;
  if (method === 'gae' && config.algo !== 'es') {
    if (spec.features === undefined)
      throw new InputError(
        'credit.method',
        'gae',
        `the critic needs a feature view; env ${spec.id} has none`,
      );
    critic = new Critic(
      spec.features,
      { ...config.critic, budgetScale: Math.max(2, top), maxGradNorm: config.optim.maxGradNorm },
      Rng.derive(config.seed, TRAIN_STREAM.critic),
    );
  }
  const reference = config.ppo.klCoef > 0 ? learner.clone('reference') : undefined;
  let expert: ((task: Task) => AnyPolicy) | undefined;
  if (config.guidance.mode !== 'none') {
    const e = config.guidance.expert ?? `oracle:horizon=${top}`;
    if (e.endsWith('.jsonl')) expert = demonstrationExpert(e);
    else {
      const policy = makePolicy(e, spec, 'guidance.expert');
      expert = () => policy;
    }
  }
  return {
    envs,
    env,
    spec,
    generated,
    learner,
    optimizer,
    revealBudget,
    method,
    critic,
    reference,
    expert,
    maxBudget: top,
  };
}

/** The key under which guidance logs a task's successes: the map for generated tasks, else the env. */
export function guideKey(s: Setup, task: Task): string {
  return s.generated ? String(task.seed) : 'env';
}

/** `n` distinct task seeds drawn uniformly from [first, end) (distinct so that no two groups merge). */
export function drawTasks(
  env: EnvConfig,
  range: readonly [number, number],
  n: number,
  rng: Rng,
  avoid?: ReadonlySet<number>,
): Task[] {
  const [first, end] = range;
  const seen = new Set<number>(avoid);
  const tasks: Task[] = [];
  const room = end - first - seen.size;
  while (tasks.length < n) {
    const seed = first + rng.int(end - first);
    if (seen.has(seed) && room >= n) continue;
    seen.add(seed);
    tasks.push({ env: env.env, params: env.params, seed });
  }
  return tasks;
}
