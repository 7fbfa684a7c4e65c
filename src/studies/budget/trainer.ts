import { Rng, STREAM } from '../../core/rng.ts';
import type { Task, Trajectory } from '../../core/types.ts';
import { stepRegret, stepReward } from '../../eval/step-reward.ts';
import type { NeuralPolicy } from '../../policies/neural.ts';
import { rollout } from '../../rollout/batch.ts';
import { parseTrainConfig } from '../../train/config.ts';
import { trainPolicyGradient } from '../../train/loop.ts';
import { type BudgetSchedule, budgetAt, validateSchedule } from '../../train/schedule.ts';
import { MemoPolicy } from './memo.ts';
import type { MakeEnv } from './world.ts';

export interface RlRequest {
  /** rl: a fixed budget; budgetmix: mixed budgets; gigpo: the fixed budget with GiGPO credit. */
  name: 'rl' | 'budgetmix' | 'gigpo';
  /** Start from a copy of it; never mutate it (the study checks, and refuses a trainer that does). */
  base: NeuralPolicy;
  /** Where the training envs come from (the world's factory). */
  envs: MakeEnv;
  trainTasks: readonly Task[];
  /** rl and gigpo: {kind:'fixed', budget}; budgetmix: {kind:'mix', budgets:[…]}. */
  budget: BudgetSchedule;
  /** Whether training episodes tell the policy its turns left (false in every profile: the base is
   * budget-blind). */
  revealBudget: boolean;
  iters: number;
  groupSize: number;
  groupsPerIter: number;
  /** The study's seed; rl and budgetmix get the same one (common random numbers for their task draws). */
  seed: number;
  onProgress?: (iter: number, iters: number) => void;
}

export interface CurvePoint {
  iter: number;
  trajectoryReward: number;
  stepReward: number;
  /** Mean regret V*_h(s) − Q*_h(s,a) of the actions taken (eval/step-reward stepRegret). */
  stepRegret: number;
}

export interface RlResult {
  policy: NeuralPolicy;
  /** One point per iteration: success rate of the training rollouts, and the mean exact step
   *  quality Q*_{h}(s,a)/V*_{h}(s) of the actions taken (METHODS §5 "training curves"). */
  curves: CurvePoint[];
}

export type RlTrainer = (req: RlRequest) => Promise<RlResult>;

/**
 * The real trainer: GRPO (or GiGPO credit for `gigpo`) through train/loop.ts, starting from a copy of
 * the base. Fine-tuning a cloned policy, not learning from scratch: a small constant learning rate,
 * no entropy bonus (the base is already stochastic) and 2 × 2 PPO passes per batch.
 */
export const grpoTrainer: RlTrainer = async (req) => {
  validateSchedule(req.budget);
  const first = req.trainTasks[0].seed;
  const contiguous = req.trainTasks.every((t, i) => t.seed === first + i && t.env === req.trainTasks[0].env);
  if (!contiguous) throw new Error('grpoTrainer: the training tasks must be consecutive seeds of one env');
  const config = parseTrainConfig({
    env: { env: req.trainTasks[0].env, params: req.trainTasks[0].params },
    trainSeeds: [first, first + req.trainTasks.length],
    testSeeds: [first + req.trainTasks.length, first + req.trainTasks.length + 1],
    policy: { kind: 'mlp' },
    algo: 'grpo',
    iters: req.iters,
    groups: req.groupsPerIter,
    groupSize: req.groupSize,
    budget: req.budget,
    revealBudget: req.revealBudget,
    credit: { method: req.name === 'gigpo' ? 'gigpo' : 'grpo' },
    optim: { lr: 3e-4, anneal: false },
    ppo: { epochs: 2, minibatches: 2, entCoef: 0 },
    eval: { episodes: 1 },
    seed: req.seed,
  });
  const result = await trainPolicyGradient({
    config,
    envs: req.envs,
    init: req.base,
    onIter: (iter, iters) => req.onProgress?.(iter + 1, iters),
  });
  return {
    policy: result.policy as NeuralPolicy,
    curves: result.metrics.map((m) => ({
      iter: m.iter,
      trajectoryReward: m.values['rollout/success'],
      stepReward: m.values['rollout/step_quality'],
      stepRegret: m.values['rollout/step_regret'],
    })),
  };
};

export const defaultTrainer: RlTrainer = grpoTrainer;

/** The training tasks of iteration `iter`: groupsPerIter distinct tasks drawn from trainTasks (a
 * repeated task would repeat its episode seeds, hence its trajectories). */
export function iterationTasks(req: RlRequest, iter: number): Task[] {
  const rng = Rng.derive(req.seed, STREAM.train, 0x7a5c, iter);
  const order = rng.shuffle(Array.from(req.trainTasks.keys()));
  return Array.from({ length: req.groupsPerIter }, (_, i) => req.trainTasks[order[i % order.length]]);
}

/** The rollouts of one training iteration of `policy` (K = groupSize per task, budgets from the schedule). */
export function iterationRollouts(
  req: RlRequest,
  iter: number,
  policy: NeuralPolicy | MemoPolicy,
): Trajectory[] {
  const tasks = iterationTasks(req, iter);
  const index = new Map(tasks.map((t, i) => [t, i]));
  const trajectories = rollout({
    tasks,
    samples: req.groupSize,
    budget: (task, sample) => budgetAt(req.budget, req.seed, iter, index.get(task)!, sample),
    revealBudget: req.revealBudget,
    runSeed: Rng.derive(req.seed, STREAM.train, iter).uint32(),
    policy,
    makeEnv: req.envs.make,
    idPrefix: `${req.name}${iter}-`,
  });
  if (trajectories instanceof Promise) throw new Error('training rollouts must be synchronous');
  return trajectories;
}

/**
 * The null control: no update at all. Returns a copy of the base and, for each iteration, the curves
 * measured on real rollouts of that unchanged policy — so every figure the study reports for "RL"
 * is what the pipeline shows when training changes nothing (differences exactly 0, win rates ½).
 * Used by the tests and the benchmark; never the default.
 */
export const frozenTrainer: RlTrainer = async (req) => {
  validateSchedule(req.budget);
  const policy = req.base.clone(`${req.name}:frozen`);
  const acting = new MemoPolicy(policy);
  const curves: CurvePoint[] = [];
  for (let iter = 0; iter < req.iters; iter++) {
    const batch = iterationRollouts(req, iter, acting);
    const success = batch.filter((t) => t.outcome.success).length / batch.length;
    curves.push({
      iter,
      trajectoryReward: success,
      stepReward: stepReward(batch, req.envs.make) ?? Number.NaN,
      stepRegret: stepRegret(batch, req.envs.make) ?? Number.NaN,
    });
    req.onProgress?.(iter + 1, req.iters);
  }
  return { policy, curves };
};
