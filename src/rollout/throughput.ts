// Whole-trajectory throughput: batches of recorded episodes with a policy in the loop, through the
// same rollout() the CLI and training use. Each batch is kept whole (every turn recorded) until the
// next one starts, like a training batch; the batch size matters because a large batch outlives V8's
// young generation (256 episodes ≈ a GRPO batch of 32 groups × 8).
import type { Env, Policy, Task } from '../core/types.ts';
import { rollout } from './batch.ts';

export interface RolloutThroughput {
  steps: number;
  episodes: number;
  seconds: number;
  stepsPerSecond: number;
  episodesPerSecond: number;
}

export function rolloutThroughput(
  makeEnv: (task: Task) => Env<unknown, unknown>,
  task: Task,
  policy: Policy<unknown, unknown>,
  steps: number,
  budget: number,
  seed = 0,
  perBatch = 256,
): RolloutThroughput {
  let done = 0;
  let episodes = 0;
  let batch = 0;
  const t0 = process.hrtime.bigint();
  while (done < steps) {
    const trajectories = rollout({
      tasks: [task],
      samples: perBatch,
      budget,
      runSeed: seed + batch++,
      policy,
      makeEnv,
    });
    if (trajectories instanceof Promise)
      throw new Error('rolloutThroughput needs a synchronous env and policy');
    for (const t of trajectories) done += t.turns.length;
    episodes += trajectories.length;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return {
    steps: done,
    episodes,
    seconds,
    stepsPerSecond: done / seconds,
    episodesPerSecond: episodes / seconds,
  };
}
