// Evolution-strategies training (docs/methods.md §4): per iteration, N antithetic pairs θ ± σε_n are
// evaluated — fitness = success rate on the iteration's tasks, the same episodes for every
// perturbation — in worker threads over both cores, then θ moves along the shaped-fitness-weighted
// noise (train/es.ts). No gradients, no optimizer state: the checkpoint is θ and the iteration.
import { availableParallelism } from 'node:os';
import { InputError } from '../core/errors.ts';
import { WorkerPool } from '../rollout/pool.ts';
import { esStep } from './es.ts';
import { type EsJob, type EsResult, readParams, writeParams } from './es-job.ts';
import { finalEval } from './final.ts';
import type { IterationMetrics, TrainOptions, TrainResult } from './loop.ts';
import { checkpointDue, openRun, runSeconds } from './run-dir.ts';
import { setup } from './setup.ts';

export async function trainEs(o: TrainOptions): Promise<TrainResult> {
  const t0 = performance.now();
  const config = o.config;
  if (o.init !== undefined)
    throw new InputError('init', o.init.id, 'ES starts from config.policy (workers rebuild it)');
  if (o.learner !== undefined)
    throw new InputError('learner', o.learner.kind, 'ES rebuilds config.policy in its workers');
  if (o.envs.module === undefined) {
    throw new InputError(
      'envs',
      'a factory without a module',
      'ES workers rebuild the env factory from EnvFactory.module',
    );
  }
  const s = setup(config, o.envs);
  const opened = openRun(
    o.out,
    o.resume,
    config,
    { policy: s.learner.params },
    { iter: -1, nextIndex: 0 },
    t0,
  );
  const resumed = opened.resumed === undefined ? {} : { resumed: opened.resumed };
  const run = opened.run;
  let state = opened.state;

  const theta = readParams(s.learner);
  const noise = new Float32Array(theta.length);
  const pool = new WorkerPool<EsJob, EsResult>(
    new URL('./es-worker.ts', import.meta.url),
    { config, envModule: o.envs.module },
    config.es.workers ?? availableParallelism(),
  );
  const metrics: IterationMetrics[] = [];
  const { pairs } = config.es;
  let evaluations = 0;
  try {
    for (let iter = state.iter + 1; iter < config.iters; iter++) {
      const jobs: EsJob[] = [{ theta, iter, n: -1 }];
      for (let n = 0; n < pairs; n++) jobs.push({ theta, iter, n });
      const [center, ...results] = await pool.map(jobs);
      const plus = results.map((r) => r.plus);
      const minus = results.map((r) => r.minus);
      esStep(theta, plus, minus, { ...config.es, seed: config.seed, iter }, noise);
      writeParams(s.learner, theta);
      evaluations += 2 * pairs + 1;
      const all = [...plus, ...minus];
      const values: Record<string, number> = {
        'rollout/success': center.plus,
        'rollout/step_quality': center.stepQuality,
        'es/fitness_mean': all.reduce((a, b) => a + b, 0) / all.length,
        'es/fitness_max': Math.max(...all),
        'es/fitness_min': Math.min(...all),
        'es/evaluations': 2 * pairs + 1,
        'es/theta_norm': Math.hypot(...theta),
      };
      metrics.push({ iter, values });
      if (run) {
        run.record(iter, 0, [], values, false);
        state = { iter, nextIndex: 0 };
        if (checkpointDue(config, iter)) {
          run.saveCheckpoint({ policy: s.learner.params }, state, config.seed, s.learner.checkpoint(s.spec));
        }
      }
      o.onIter?.(iter, config.iters, values);
      if (o.stopAfter !== undefined && iter >= o.stopAfter) {
        run?.close('interrupted');
        return {
          config,
          policy: s.learner.policy,
          learner: s.learner,
          metrics,
          final: null,
          seconds: runSeconds(t0, opened.resumed),
          ...resumed,
        };
      }
    }
  } finally {
    await pool.close();
  }
  const final = await finalEval(s, config, s.learner.policy);
  if (run) {
    run.writeSummary({ final, config, evaluations });
    run.close('done');
  }
  return {
    config,
    policy: s.learner.policy,
    learner: s.learner,
    metrics,
    final,
    seconds: runSeconds(t0, opened.resumed),
    ...resumed,
    evaluations,
  };
}
