// The end-of-run evaluation: fresh episodes on held-out tasks (never seen in training), the exact
// success of the trained policy where the env has an oracle, and the optimum V*_T — so every run says
// how far from the best possible it ended. For generated tasks (random maps) the same exact figures
// on training maps show the generalisation gap.
import { Rng } from '../core/rng.ts';
import { makeTasks } from '../core/tasks.ts';
import type { Policy } from '../core/types.ts';
import { meanExactSuccess, meanOptimalSuccess } from '../eval/exact.ts';
import { rollout } from '../rollout/batch.ts';
import type { TrainConfig } from './config.ts';
import { type Setup, TRAIN_STREAM } from './setup.ts';

export interface FinalEval {
  /** Success rate measured on `episodes` fresh episodes over the held-out tasks. */
  success: number;
  /** Exact success probability of the trained policy on those tasks (null without an oracle). */
  exact: number | null;
  /** V*_budget averaged over those tasks: the best any policy can do (null without an oracle). */
  optimal: number | null;
  /** exact / optimal (success / optimal without an exact figure). */
  ratio: number | null;
  episodes: number;
  tasks: number;
  budget: number;
  /** Generated tasks only: exact and optimal success on (up to 200 of) the training tasks. */
  train?: { exact: number | null; optimal: number | null; tasks: number };
}

/** Distinct maps evaluated exactly; more would make the final evaluation slower than training. */
const MAX_EXACT_MAPS = 2000;
const TRAIN_SAMPLE = 200;

export async function finalEval(
  s: Setup,
  config: TrainConfig,
  policy: Policy<unknown, unknown>,
): Promise<FinalEval> {
  const budget = config.eval.budget ?? s.maxBudget;
  const episodes = config.eval.episodes;
  const [first, end] = config.testSeeds;
  const nTasks = Math.min(episodes, end - first);
  const samples = Math.ceil(episodes / nTasks);
  const tasks = makeTasks(s.env, nTasks, first);
  const r = await rollout({
    tasks,
    samples,
    budget,
    revealBudget: s.revealBudget,
    runSeed: Rng.derive(config.seed, TRAIN_STREAM.eval).uint32(),
    policy,
    makeEnv: s.envs.make,
    idPrefix: 'eval-',
  });
  const success = r.filter((t) => t.outcome.success).length / r.length;
  const distinct = s.generated ? tasks : tasks.slice(0, 1);
  const exact = await meanExactSuccess(s.envs, distinct, policy, budget, s.revealBudget, MAX_EXACT_MAPS);
  const optimal = await meanOptimalSuccess(s.envs, distinct, budget);
  const out: FinalEval = {
    success,
    exact,
    optimal,
    // Exact over optimal where both are exact (a sampled success over an exact optimum can exceed 100%).
    ratio: optimal ? (exact ?? success) / optimal : null,
    episodes: r.length,
    tasks: nTasks,
    budget,
  };
  if (s.generated) {
    const [a, b] = config.trainSeeds;
    const train = makeTasks(s.env, Math.min(TRAIN_SAMPLE, b - a), a);
    out.train = {
      exact: await meanExactSuccess(s.envs, train, policy, budget, s.revealBudget, MAX_EXACT_MAPS),
      optimal: await meanOptimalSuccess(s.envs, train, budget),
      tasks: train.length,
    };
  }
  return out;
}
