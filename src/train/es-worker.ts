// A worker of ES training: rebuilds the run's policy from its config once, then evaluates perturbed
// parameter vectors θ ± σε_n (ε_n regenerated from (seed, iter, n), never sent) by rolling them out
// on the iteration's tasks. Loaded by rollout/pool.ts.
import { Rng } from '../core/rng.ts';
import type { EnvFactory } from '../core/types.ts';
import { stepReward } from '../eval/step-reward.ts';
import { rollout } from '../rollout/batch.ts';
import { withEnvs } from '../rollout/env-cache.ts';
import type { TrainConfig } from './config.ts';
import { perturb } from './es.ts';
import { type EsJob, type EsResult, esTasks, readParams, writeParams } from './es-job.ts';
import { budgetAt } from './schedule.ts';
import { setup, TRAIN_STREAM } from './setup.ts';

/** `envModule`: the URL of a module exporting the run's env factory as `envs` (EnvFactory.module). */
export async function createHandler(init: { config: TrainConfig; envModule: string }) {
  const config = init.config;
  const envs = (await import(init.envModule)).envs as EnvFactory;
  const s = setup(config, envs);
  const dim = readParams(s.learner).length;
  const noise = new Float32Array(dim);
  const scratch = new Float32Array(dim);
  const fitness = async (theta: Float32Array, iter: number) => {
    writeParams(s.learner, theta);
    const tasks = esTasks(s, config, iter);
    const r = await rollout({
      tasks,
      samples: config.groupSize,
      budget: (task, sample) => budgetAt(config.budget, config.seed, iter, task.seed, sample),
      revealBudget: s.revealBudget,
      // Common random numbers: every perturbation of an iteration meets the same episodes' dynamics.
      runSeed: Rng.derive(config.seed, TRAIN_STREAM.rollout, iter).uint32(),
      policy: s.learner.policy,
      makeEnv: envs.make,
    });
    return withEnvs(envs.make, async (views) => {
      await views.getAll(r.map((t) => t.task));
      return {
        success: r.filter((t) => t.outcome.success).length / r.length,
        stepQuality: stepReward(r, (task) => views.view(task)) ?? Number.NaN,
      };
    });
  };
  return async (job: EsJob): Promise<EsResult> => {
    if (job.n < 0) {
      const f = await fitness(job.theta, job.iter);
      return { plus: f.success, minus: f.success, stepQuality: f.stepQuality };
    }
    const { sigma } = config.es;
    perturb(job.theta, sigma, 1, config.seed, job.iter, job.n, noise, scratch);
    const plus = (await fitness(scratch, job.iter)).success;
    perturb(job.theta, sigma, -1, config.seed, job.iter, job.n, noise, scratch);
    const minus = (await fitness(scratch, job.iter)).success;
    return { plus, minus, stepQuality: Number.NaN };
  };
}
