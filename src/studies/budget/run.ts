// One run of the budget study: one (world, seed) pair through the pipeline (pipeline.ts), in whichever
// thread calls it — the main thread (one run after another) or a worker thread (run-worker.ts). The
// study (study.ts) hands out the runs and takes the findings across them.
import type { StudyConfig } from './config.ts';
import { runBudgetStudy, type StudyProgress, type StudyStage } from './pipeline.ts';
import type { Summary } from './summary.ts';
import { frozenTrainer, grpoTrainer, type RlTrainer } from './trainer.ts';
import type { WorldId } from './world.ts';

/** Trainers a worker thread can rebuild by name (a function cannot cross a thread boundary). */
export const TRAINERS = { grpo: grpoTrainer, frozen: frozenTrainer } as const;
export type TrainerName = keyof typeof TRAINERS;

export interface RunKey {
  world: WorldId;
  seed: number;
}

export interface RunEvent extends RunKey {
  /** A stage began (detail for a log line), or progress within one. */
  stage: StudyStage;
  detail?: string;
  progress?: Omit<StudyProgress, 'stage'>;
}

export interface RunJob extends RunKey {
  config: StudyConfig;
}

export interface RunOutput {
  summary: Summary;
  files: Record<string, Uint8Array>;
}

/** One run in this thread. Progress is passed on when its whole percent changes (a thread posts it). */
export async function runOne(
  job: RunJob,
  trainer: RlTrainer,
  onEvent: (e: RunEvent) => void,
): Promise<RunOutput> {
  const key = { world: job.world, seed: job.seed };
  let last = '';
  const r = await runBudgetStudy(job.config, {
    trainer,
    onStage: (stage, detail) => onEvent({ ...key, stage, detail }),
    onProgress: ({ stage, done, total }) => {
      const at = `${stage}/${Math.floor((100 * done) / total)}`;
      if (at === last) return;
      last = at;
      onEvent({ ...key, stage, progress: { done, total } });
    },
  });
  const files = Object.fromEntries(
    Object.entries(r.policies).map(([role, p]) => [
      role,
      p.checkpoint(undefined, { study: 'budget', role, world: job.world, seed: String(job.seed) }),
    ]),
  );
  return { summary: r.summary, files };
}
