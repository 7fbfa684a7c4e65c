// Per-task advantage normalisation, a post-step on any method's output: every turn-level advantage of
// a task is re-standardised over that task's turns in the batch.
//   Ã = (A − μ_task)/(σ_task + ε),   μ, σ over all turns of the task's trajectories (population σ)
// Zhang et al. 2025, "AgentRL: Scaling Agentic RL with a Multi-Turn, Multi-Task Framework" (task
// advantage normalisation); docs/methods.md §2. AgentRL's tasks are whole environments, so the default key is
// the env configuration (env + params, seed ignored); `task` keys by identical task (one group).
import type { Trajectory } from '../core/types.ts';
import { type Advantages, DEFAULT_EPS } from './common.ts';
import { canonicalJson } from './groups.ts';

export type TaskNormBy = 'env' | 'task' | ((trajectory: Trajectory) => string);

export interface TaskNormOptions {
  /** What a "task" is (default 'env'). */
  by?: TaskNormBy;
  eps?: number;
}

export const TASK_NORM_DEFAULTS = { by: 'env', eps: DEFAULT_EPS } as const;

/** The key a trajectory is normalised under: its env configuration, its task, or the caller's. */
export function taskNormKey(by: TaskNormBy): (t: Trajectory) => string {
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
  const key = taskNormKey(options.by ?? TASK_NORM_DEFAULTS.by);
  const ids = new Map<string, number>();
  const keyOf = batch.map((t) => {
    const k = key(t);
    let j = ids.get(k);
    if (j === undefined) {
      j = ids.size;
      ids.set(k, j);
    }
    return j;
  });
  return [
    ...taskNormRows(
      () => advantages,
      (i) => keyOf[i],
      ids.size,
      options.eps,
    ),
  ];
}

/**
 * The one implementation of the normalisation, for a batch in memory (taskNorm) and for a file read in
 * bounded memory (file.ts): `rows()` gives the rows in batch order — three times: once for the means,
 * once for the population stds, once for the output — and `keyOf(i)` row i's key (0 … keys−1). Sums run
 * in batch order, turn by turn, whatever holds the rows, so both give the same bits.
 */
export function* taskNormRows(
  rows: () => Iterable<readonly number[]>,
  keyOf: (row: number) => number,
  keys: number,
  eps: number = TASK_NORM_DEFAULTS.eps,
): Generator<number[]> {
  const sum = new Float64Array(keys);
  const count = new Float64Array(keys);
  const firstValue = new Float64Array(keys);
  const equal = new Array<boolean>(keys).fill(true);
  let i = 0;
  for (const row of rows()) {
    const j = keyOf(i++);
    for (const a of row) {
      if (count[j] === 0) firstValue[j] = a;
      else if (a !== firstValue[j]) equal[j] = false;
      count[j]++;
      sum[j] += a;
    }
  }
  const mu = Array.from(sum, (s, j) => (count[j] > 0 ? s / count[j] : 0));
  const squares = new Float64Array(keys);
  i = 0;
  for (const row of rows()) {
    const j = keyOf(i++);
    for (const a of row) squares[j] += (a - mu[j]) * (a - mu[j]);
  }
  // Population σ (credit/common.ts), ε after the root; a key with fewer than two advantages, or all
  // equal, has no contrast: 0.
  const scale = Array.from(squares, (s, j) => (count[j] > 0 ? Math.sqrt(s / count[j]) : 0) + eps);
  i = 0;
  for (const row of rows()) {
    const j = keyOf(i++);
    if (count[j] < 2 || equal[j]) yield new Array<number>(row.length).fill(0);
    else yield row.map((a) => (a - mu[j]) / scale[j]);
  }
}
