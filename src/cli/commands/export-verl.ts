// The composition `turnwise export --format verl|verl-sft` needs and export/ may not reach (it imports no
// env): each task's data_source, ability and ground truth — what the task's reward checks, from the
// env's own gold (`turnwise env describe --gold`).
import type { Task } from '../../core/types.ts';
import { describeEnv, ENV_IDS } from '../../envs/index.ts';
import type { VerlTaskInfo } from '../../export/index.ts';

/** verl's `ability` per env (gsm8k's is "math"); "agent" for an env turnwise does not know. */
const ABILITY: Record<string, string> = {
  frozenlake: 'navigation',
  sql: 'sql',
  search: 'search',
  code: 'code',
  tools: 'tool-use',
};

/**
 * What the task's reward checks, as text (verl's ground_truth is one type per file, a string in its
 * own examples):
 *   frozenlake  the map, one row per line (S start, F frozen, H hole, G goal): reaching G scores 1
 *   sql         the gold SQL query: a submitted query's result is scored against its result
 *   search      the answer's name
 *   code        the hidden tests, JSON [{call, expected}]: the submission must pass them
 *   tools       the gold, JSON {calls, results, goal}: the state and response checkers compare to it
 * null for an env turnwise does not know (a proxy-recorded agent's).
 */
export function groundTruth(task: Task): string | null {
  if (!ENV_IDS.includes(task.env)) return null;
  const d = describeEnv(task, { gold: true });
  const gold = d.gold as Record<string, unknown> | undefined;
  switch (task.env) {
    case 'frozenlake':
      return (d.desc as string[]).join('\n');
    case 'sql':
      return gold?.query as string;
    case 'search':
      return gold?.answer as string;
    case 'code':
      return JSON.stringify(gold?.hidden);
    default:
      return JSON.stringify(gold ?? null);
  }
}

export const verlTaskInfo = (task: Task): VerlTaskInfo => ({
  dataSource: `turnwise/${task.env}`,
  ability: ABILITY[task.env] ?? 'agent',
  groundTruth: groundTruth(task),
});
