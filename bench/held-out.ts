// The held-out evaluation shared by the issue-29 FrozenLake benches (bench/fog.ts, bench/rtpo.ts): fresh
// maps from task seeds far from training's (trainSeeds start at 0), four samples each, one fixed run seed,
// so every arm and every seed of a bench is scored on the same episodes.
import type { Policy, Trajectory } from '../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../src/envs/index.ts';
import { rollout } from '../src/rollout/batch.ts';

const SAMPLES = 4;

/** ⌈episodes / 4⌉ held-out FrozenLake tasks with these params. */
export function heldOutTasks(params: Record<string, unknown>, episodes: number) {
  return makeTasks(envConfig('frozenlake', params), Math.ceil(episodes / SAMPLES), 50_000_000);
}

/** The policy's episodes on the held-out tasks under the budget. */
export async function heldOutRollout(
  tasks: ReturnType<typeof heldOutTasks>,
  policy: Policy<unknown, unknown>,
  budget: number,
): Promise<Trajectory[]> {
  return await rollout({ tasks, samples: SAMPLES, policy, makeEnv, budget, runSeed: 777 });
}
