// A worker thread of the language study (study.ts): one job at a time — a world's own stages (its
// tokenizer and base) or one seed's — with the registry's envs; its stage events go to the main thread
// as they happen. Products stay on this thread (gemmThreads 1): the study's runs already share the cores.
import { parentPort } from 'node:worker_threads';
import { envs } from '../../envs/index.ts';
import { gemmThreads } from '../../nn/gemm.ts';
import type { LanguageProfile, LanguageWorldId } from './design.ts';
import { type LanguageEvent, prepareWorld, runLanguageSeed } from './run.ts';

export interface LanguageJob {
  out: string;
  profile: LanguageProfile;
  world: LanguageWorldId;
  /** null: the world's own stages. */
  seed: number | null;
}

export async function createHandler(_init: unknown) {
  gemmThreads(1);
  return async (job: LanguageJob) => {
    const o = {
      envs,
      out: job.out,
      profile: job.profile,
      onEvent: (event: LanguageEvent) => parentPort?.postMessage({ event }),
    };
    if (job.seed === null) return prepareWorld(o, job.world);
    return runLanguageSeed(o, job.world, job.seed);
  };
}
