// Per-task advantage normalisation, a post-step on any method's output: every turn-level advantage of
// a task is re-standardised over that task's turns in the batch.
//   Ã = (A − μ_task)/(σ_task + ε),   μ, σ over all turns of the task's trajectories (population σ)
// Zhang et al. 2025, "AgentRL: Scaling Agentic RL with a Multi-Turn, Multi-Task Framework" (task
// advantage normalisation); docs/methods.md §2. AgentRL's tasks are whole environments, so the default key is
// the env configuration (env + params, seed ignored); `task` keys by identical task (one group).
import type { Trajectory } from '../core/types.ts';
import { type Advantages, allEqual, DEFAULT_EPS, mean, populationStd } from './common.ts';
import { canonicalJson } from './groups.ts';

export type TaskNormBy = 'env' | 'task' | ((trajectory: Trajectory) => string);

export interface TaskNormOptions {
  /** What a "task" is (default 'env'). */
  by?: TaskNormBy;
  eps?: number;
}

export const TASK_NORM_DEFAULTS = { by: 'env', eps: DEFAULT_EPS } as const;

function keyFn(by: TaskNormBy): (t: Trajectory) => string {
  if (typeof by === 'function') return by;
  if (by === 'task') return (t) => canonicalJson(t.task);
  return (t) => canonicalJson({ env: t.task.env, params: t.task.params });
}

/** Returns new rows; `advantages` is laid out like `batch`. A task whose advantages are all equal gets 0. */
export function taskNorm(
  batch: readonly Trajectory[],
  advantages: Advantages,
  options: TaskNormOptions = {},
): Advantages {
  if (advantages.length !== batch.length)
    throw new RangeError(`advantages has ${advantages.length} rows for ${batch.length} trajectories`);
  const key = keyFn(options.by ?? TASK_NORM_DEFAULTS.by);
  const eps = options.eps ?? TASK_NORM_DEFAULTS.eps;
  const byTask = new Map<string, number[]>();
  batch.forEach((t, i) => {
    const k = key(t);
    const rows = byTask.get(k);
    if (rows === undefined) byTask.set(k, [i]);
    else rows.push(i);
  });
  const out: Advantages = advantages.map((row) => row.slice());
  for (const rows of byTask.values()) {
    const flat = rows.flatMap((i) => advantages[i]);
    if (flat.length < 2 || allEqual(flat)) {
      for (const i of rows) out[i].fill(0);
      continue;
    }
    const mu = mean(flat);
    const scale = populationStd(flat, mu) + eps;
    for (const i of rows) out[i] = advantages[i].map((a) => (a - mu) / scale);
  }
  return out;
}
