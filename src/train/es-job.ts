// What ES training and its workers share (train/es-train.ts hands jobs to train/es-worker.ts through a
// worker pool): the job and its result, θ as one vector over a learner's parameters, and the tasks an
// iteration plays — derived the same way on both sides, so a worker rebuilds them from (config, iter).
import { Rng } from '../core/rng.ts';
import type { Task } from '../core/types.ts';
import type { TrainConfig } from './config.ts';
import type { Learner } from './learner.ts';
import { drawTasks, type Setup, TRAIN_STREAM } from './setup.ts';

export interface EsJob {
  theta: Float32Array;
  iter: number;
  /** Perturbation index; −1 evaluates θ itself (the training curve). */
  n: number;
}

export interface EsResult {
  /** Fitness of θ + σε_n and θ − σε_n (n ≥ 0), or of θ twice (n = −1). */
  plus: number;
  minus: number;
  stepQuality: number;
}

/** θ: every parameter of the learner, concatenated in name order. */
export function readParams(learner: Learner): Float32Array {
  const n = learner.params.reduce((s, [, t]) => s + t.size, 0);
  const theta = new Float32Array(n);
  let k = 0;
  for (const [, t] of learner.params) {
    theta.set(t.data, k);
    k += t.size;
  }
  return theta;
}

export function writeParams(learner: Learner, theta: Float32Array): void {
  let k = 0;
  for (const [, t] of learner.params) {
    t.data.set(theta.subarray(k, k + t.size));
    k += t.size;
  }
}

/** The tasks every fitness evaluation of iteration `iter` plays. */
export function esTasks(s: Setup, config: TrainConfig, iter: number): Task[] {
  const episodes = config.es.episodes ?? config.groups * config.groupSize;
  const groups = Math.max(1, Math.round(episodes / config.groupSize));
  return drawTasks(s.env, config.trainSeeds, groups, Rng.derive(config.seed, TRAIN_STREAM.tasks, iter));
}
