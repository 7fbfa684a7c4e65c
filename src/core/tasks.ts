// Tasks from an env configuration: plain data, no registry needed (the config is already validated).
import type { EnvConfig, Task } from './types.ts';

/** N tasks with seeds seed, seed+1, …, seed+N−1 (for generated envs each seed is its own map). */
export function makeTasks(config: EnvConfig, count: number, firstSeed: number): Task[] {
  const tasks: Task[] = [];
  for (let i = 0; i < count; i++) tasks.push({ env: config.env, params: config.params, seed: firstSeed + i });
  return tasks;
}
