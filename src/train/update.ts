// Stages 4–5 of a policy-gradient iteration (train/loop.ts): per-turn advantages from any credit method
// (GAE reads the critic), then the clipped policy-gradient epochs over minibatches of the policy's own
// units (algo rtpo: backward stages by turn index, its credit recomputed between them, train/rtpo.ts)
// and the critic's regression on λ-returns. One optimizer step is train/pg-step.ts. Each update is a
// generator that pauses after every optimizer step: drained at once it is the plain synchronous update
// (`update`, `policyUpdate`); drained with a turn of the event loop between steps (`updateYielding`) it
// lets rollouts in flight — awaited HTTP answers, timers — make progress while it trains (the
// asynchronous pipeline, train/pipeline.ts; algo rtpo's stages run without pausing: config.ts refuses
// the two together).
import { stateKeyOf } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { Trajectory } from '../core/types.ts';
import { creditBatch, type MethodName, type MethodOptions, type RtpoOptions } from '../credit/index.ts';
import { CREDIT_PARAM_NAMES } from '../credit/params.ts';
import type { TrainConfig } from './config.ts';
import type { ViewOf } from './learner.ts';
import { emptyStats, meanStats, type PgStats, pgStep, pgUnits } from './pg-step.ts';
import { rtpoUpdate } from './rtpo.ts';

export type { PgStats } from './pg-step.ts';

import { type Run, type Setup, TRAIN_STREAM } from './setup.ts';

function creditOptions(
  config: TrainConfig,
  method: MethodName,
  viewOf: ViewOf,
  values?: (t: Trajectory, i: number) => number,
): MethodOptions[MethodName] {
  const c = config.credit;
  const o: Record<string, unknown> = {};
  for (const k of CREDIT_PARAM_NAMES) if (c[k] !== undefined) o[k] = c[k];
  if (method === 'gae') o.values = values;
  // GiGPO's anchor states are the env's state keys, never whole observations (a chat history).
  if (method === 'gigpo') {
    o.key = (turn: Trajectory['turns'][number], traj: Trajectory) =>
      String(stateKeyOf(viewOf(traj.task), turn.observation));
  }
  return o as MethodOptions[MethodName];
}

/** The steps of an update, paused after each optimizer step; returns its result. */
export type Steps<T> = Generator<void, T, void>;

/** Runs every step at once. */
export function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

/** Runs the steps with a turn of the event loop between them (setImmediate: after the I/O callbacks and
 * expired timers queued meanwhile), so that awaited work elsewhere in the process progresses. */
export async function drainYielding<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** PPO epochs over minibatches of the batch's own units (forced turns and observation tokens are
 * masked out); each unit carries its turn's advantage. */
export function policyUpdate(...args: Parameters<typeof policySteps>): PgStats | null {
  return drain(policySteps(...args));
}

/** policyUpdate as its steps. The ratio of every unit is π_θ / π_old with π_old its recorded behaviour
 * log-prob (Unit.logpOld: the turn's logp as sampled), never a recomputation under the current weights:
 * with the pipeline the batch was sampled one update earlier, and the ratio and its clip correct for it. */
export function* policySteps(
  s: Setup,
  config: TrainConfig,
  batch: readonly Trajectory[],
  adv: number[][],
  viewOf: ViewOf,
  rng: Rng,
  entCoef: number,
): Steps<PgStats | null> {
  const u = pgUnits(s, config, batch, viewOf, entCoef);
  if (u === null) return null;
  const N = u.units.length;
  const advantages = Float64Array.from(u.units, (x) => adv[x.traj][x.t]);
  const p = config.ppo;
  const order = Array.from({ length: N }, (_, i) => i);
  const size = Math.ceil(N / p.minibatches);
  const stats = emptyStats(N);
  let steps = 0;
  for (let epoch = 0; epoch < p.epochs; epoch++) {
    rng.shuffle(order);
    for (let start = 0; start < N; start += size) {
      pgStep(s, config, u, order.slice(start, start + size), advantages, stats);
      steps++;
      yield;
    }
  }
  return meanStats(stats, steps);
}

/** Stage 4: per-turn advantages; GAE reads the critic, whose V(s_T, h = 0) = 0 is the bootstrap at
 * truncation. Also returns the critic's values (the regression baseline of stage 5). */
export function advantages(
  r: Run,
  batch: readonly Trajectory[],
  viewOf: ViewOf,
): { adv: number[][]; values?: Float32Array } {
  const { s, config } = r;
  let values: Float32Array | undefined;
  let valueFn: ((t: Trajectory, i: number) => number) | undefined;
  if (s.critic) {
    const v = s.critic.values(batch, viewOf);
    const offsets = new Map<Trajectory, number>();
    let k = 0;
    for (const t of batch) {
      offsets.set(t, k);
      k += t.turns.length;
    }
    values = v;
    valueFn = (t, i) => (i >= t.turns.length ? 0 : v[offsets.get(t)! + i]);
  }
  const adv = creditBatch(batch, s.method, creditOptions(config, s.method, viewOf, valueFn), {
    taskNorm: config.credit.taskNorm === undefined ? undefined : { by: config.credit.taskNorm },
  });
  return { adv, values };
}

export interface Updated {
  pg: PgStats | null;
  entCoef: number;
  criticLoss: number;
}

/** Stage 5: the policy update (linear decay of the entropy bonus always and of lr with optim.anneal,
 * CleanRL-style), then the critic's regression on λ-returns A + V. Algo rtpo updates backwards by turn
 * index and recomputes its credit from `credited` (the batch the credit read) between stages. */
export function update(...args: Parameters<typeof updateSteps>): Updated {
  return drain(updateSteps(...args));
}

/** update, yielding to the event loop after every optimizer step (the asynchronous pipeline). */
export function updateYielding(...args: Parameters<typeof updateSteps>): Promise<Updated> {
  return drainYielding(updateSteps(...args));
}

/** update as its steps. */
export function* updateSteps(
  r: Run,
  iter: number,
  batch: readonly Trajectory[],
  adv: number[][],
  values: Float32Array | undefined,
  viewOf: ViewOf,
  credited: readonly Trajectory[] = batch,
): Steps<Updated> {
  const { s, config } = r;
  const seed = config.seed;
  const frac = 1 - iter / config.iters;
  if (config.optim.anneal) s.optimizer.lr = config.optim.lr * frac;
  const entCoef = config.ppo.entCoef * frac;
  const pg =
    config.algo === 'rtpo'
      ? rtpoUpdate(
          s,
          config,
          batch,
          credited,
          creditOptions(config, 'rtpo', viewOf) as RtpoOptions,
          viewOf,
          entCoef,
        )
      : yield* policySteps(
          s,
          config,
          batch,
          adv,
          viewOf,
          Rng.derive(seed, TRAIN_STREAM.shuffle, iter),
          entCoef,
        );
  let criticLoss = Number.NaN;
  if (s.critic && values) {
    const targets = new Float32Array(values.length);
    let k = 0;
    batch.forEach((t, i) => {
      for (let j = 0; j < t.turns.length; j++, k++) targets[k] = adv[i][j] + values[k];
    });
    criticLoss = s.critic.fit(batch, targets, viewOf, Rng.derive(seed, TRAIN_STREAM.critic, iter));
  }
  return { pg, entCoef, criticLoss };
}
