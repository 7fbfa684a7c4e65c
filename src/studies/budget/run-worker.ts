// A worker thread of the budget study (study.ts): one whole run per job (run.ts), with the trainer
// rebuilt by name; stage and progress events go to the main thread as they happen.
import { parentPort } from 'node:worker_threads';
import { type RunJob, runOne, TRAINERS, type TrainerName } from './run.ts';

export async function createHandler(_init: unknown) {
  return (job: RunJob & { trainer: TrainerName }) =>
    runOne(job, TRAINERS[job.trainer], (event) => parentPort?.postMessage({ event }));
}
