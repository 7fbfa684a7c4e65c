// The reward stage of training with a rubric (`train --reward rubric:FILE`, docs/rewards.md "In
// training"; issue 27 part 1). After the iteration's batch is collected (and refilled), every trajectory
// is scored with the rubric (rewards/score.ts: checks, the preference criterion, judges in any mode —
// a group judge ranks the K samples of a task together), and the learner's batch is the scored
// trajectories with their score as their reward (the last turn's reward, outcome.return), so that the
// group baselines and every credit method read it as any reward. The stored trajectories, the rollout/
// metrics and the final evaluation stay on the env's own reward; what the rubric gave each trajectory —
// its score, every criterion's, every judge call with its prompt and answer — is stored beside it in the
// run (the store's `judgements` table), in the iteration's transaction.
//
// The missing-score rule. A trajectory whose score is missing (a judge error, a criterion the env cannot
// score) is left out of the update: it neither learns nor enters its group's baseline — a 0 would be a
// reward the rubric never gave, and the env's reward beside rubric scores would mix two scales in one
// group. With a group-baseline method (GRPO, Dr. GRPO, RLOO, GiGPO…), a group left with fewer than two
// scored trajectories is left out too (no baseline to compare with). The metrics count both.
import type { EnvSpec, Task, Trajectory } from '../core/types.ts';
import { GROUP_BASELINE_METHODS } from '../credit/index.ts';
import { chatSpec } from '../policies/chat.ts';
import type { SideEffectsOf } from '../rewards/checks.ts';
import type { JudgeClient } from '../rewards/judge.ts';
import type { Rubric } from '../rewards/rubric.ts';
import { groupsOf, judgeCallCount, type RubricResult, rewarded, scoreRubric } from '../rewards/score.ts';
import { type TaskView, Transcripts } from '../rewards/transcript.ts';
import type { TrainConfig } from './config.ts';
import { creditMethod } from './config-sections.ts';

/** A rubric with its judges connected, as the composition layer opens it (cli/rubric.ts). */
export interface RewardSource {
  rubric: Rubric;
  judges: ReadonlyMap<string, JudgeClient>;
  /** Side effects counted from the env's state, for the criteria that read them (the tools env). */
  sideEffects?: SideEffectsOf;
}

/** What the run stores beside a trajectory's row. */
export interface Judgement {
  /** The rubric's score; null when missing (then the trajectory was left out of the update). */
  score: number | null;
  /** Whether the update used it (false: a missing score, or its group had fewer than two scores). */
  used: boolean;
  envReturn: number;
  criteria: RubricResult['criteria'];
  gates: string[];
  judgeErrors: number;
  calls: RubricResult['calls'];
}

export interface RewardedBatch {
  /** The learner's batch: the trajectories used, their score as their reward. */
  learnt: Trajectory[];
  /** Per trajectory of the batch, in its order. */
  judgements: Judgement[];
  /** reward/* metrics of the iteration. */
  values: Record<string, number>;
}

const mean = (xs: readonly number[]) =>
  xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length;

/**
 * Scores the batch with the rubric and returns the learner's batch under the missing-score rule (see
 * the head of this file). `env(task)` is the task's env (its text view); `spec(task)` its spec (its
 * chat encoding) — what the transcripts a judge reads are rendered from.
 */
export async function rewardBatch(
  source: RewardSource,
  config: TrainConfig,
  batch: readonly Trajectory[],
  env: (task: Task) => { text?(observation: unknown): string },
  spec: (task: Task) => EnvSpec,
): Promise<RewardedBatch> {
  const views = (task: Task): TaskView => {
    const e = env(task);
    return { text: e.text?.bind(e), chat: chatSpec(spec(task)) };
  };
  const groups = groupsOf(batch);
  const run = await scoreRubric(source.rubric, batch, {
    transcripts: new Transcripts(views),
    judges: source.judges,
    sideEffects: source.sideEffects,
  });
  const minScored = GROUP_BASELINE_METHODS.includes(creditMethod(config)) ? 2 : 1;
  const used = batch.map(() => false);
  let droppedGroups = 0;
  for (const g of groups) {
    const scored = g.filter((i) => run.results[i].score !== null);
    if (scored.length < minScored) {
      if (scored.length > 0) droppedGroups++;
      continue;
    }
    for (const i of scored) used[i] = true;
  }
  const learnt = batch.flatMap((t, i) => (used[i] ? [rewarded(t, run.results[i].score)] : []));
  const judgements = batch.map((t, i): Judgement => {
    const r = run.results[i];
    return {
      score: r.score,
      used: used[i],
      envReturn: t.outcome.return,
      criteria: r.criteria,
      gates: r.gates,
      judgeErrors: r.judgeErrors,
      calls: r.calls,
    };
  });
  const scores = run.results.map((r) => r.score).filter((s): s is number => s !== null);
  const values: Record<string, number> = {
    'reward/mean': mean(scores),
    'reward/scored': scores.length,
    'reward/missing': batch.length - scores.length,
    'reward/judge_errors': run.results.filter((r) => r.judgeErrors > 0).length,
    'reward/gated': run.results.filter((r) => r.gates.length > 0).length,
    'reward/used': learnt.length,
    'reward/dropped_groups': droppedGroups,
    'reward/judge_calls': judgeCallCount(source.rubric, groups),
  };
  return { learnt, judgements, values };
}
