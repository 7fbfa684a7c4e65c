// The policy-gradient training loop (GRPO and PPO; METHODS.md §4), one iteration:
//   tasks → K rollouts per task (budget fixed or from a schedule; guidance prefixes; cross-policy
//   sampling) → optional dynamic sampling → credit (any method of credit/) → clipped policy-gradient
//   epochs over minibatches (+ critic regression for GAE) → metrics → store → checkpoint.
// All randomness of iteration i is derived from (seed, i), so a run resumed from the checkpoint of
// iteration c reproduces, byte for byte, what the uninterrupted run did after c.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Policy, Task, Trajectory, TurnContext } from '../core/types.ts';
import { creditBatch, deadGroups, type MethodName, type MethodOptions } from '../credit/index.ts';
import { stepReward } from '../eval/step-reward.ts';
import { clipGradNorm } from '../nn/optim.ts';
import { backward } from '../nn/tensor.ts';
import { rollout } from '../rollout/batch.ts';
import type { Prefix } from '../rollout/episode.ts';
import type { TrainConfig } from './config.ts';
import { CrossPolicy } from './cross-policy.ts';
import { type FinalEval, finalEval } from './final.ts';
import { PrefixGuide } from './guidance.ts';
import { type Learner, turnContexts } from './learner.ts';
import { aggregationWeights, pgLoss } from './ppo.ts';
import { openRun } from './run-dir.ts';
import { budgetAt } from './schedule.ts';
import { drawTasks, guideKey, type Setup, setup, TRAIN_STREAM } from './setup.ts';
import type { TrainParts } from './state.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface TrainOptions {
  config: TrainConfig;
  /** Run directory; undefined keeps everything in memory (tests, studies). */
  out?: string;
  /** Continue the run in `out` from its last checkpoint. */
  resume?: boolean;
  /** Start from (a copy of) this policy instead of config.policy. */
  init?: AnyPolicy;
  /** Progress after every iteration. */
  onIter?: (iter: number, iters: number, metrics: Record<string, number>) => void;
  /** Stop after this iteration (tests of resume; the run is left as if killed). */
  stopAfter?: number;
}

export interface IterationMetrics {
  iter: number;
  values: Record<string, number>;
}

export interface TrainResult {
  config: TrainConfig;
  policy: AnyPolicy;
  learner: Learner;
  /** Metrics of the iterations run in this call. */
  metrics: IterationMetrics[];
  final: FinalEval | null;
  seconds: number;
  /** ES: fitness evaluations (policy rollouts of a whole task set) made in this call. */
  evaluations?: number;
}

const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);

function creditOptions(
  config: TrainConfig,
  method: MethodName,
  values?: (t: Trajectory, i: number) => number,
): MethodOptions[MethodName] {
  const c = config.credit;
  const o: Record<string, unknown> = {};
  for (const k of ['gamma', 'lambda', 'omega', 'std', 'eps', 'crest'] as const)
    if (c[k] !== undefined) o[k] = c[k];
  if (method === 'gae') o.values = values;
  return o as unknown as MethodOptions[MethodName];
}

interface PgStats {
  loss: number;
  clipfrac: number;
  approxKl: number;
  entropy: number;
  kl: number;
  gradNorm: number;
  turns: number;
}

/** PPO epochs over minibatches of the batch's non-forced turns. */
export function policyUpdate(
  s: Setup,
  config: TrainConfig,
  batch: readonly Trajectory[],
  adv: number[][],
  rng: Rng,
  entCoef: number,
): PgStats | null {
  const ctxs: TurnContext<unknown>[] = [];
  const actions: number[] = [];
  const logpOld: number[] = [];
  const advantages: number[] = [];
  const lengths: number[] = [];
  batch.forEach((traj, i) => {
    const all = turnContexts(traj);
    let n = 0;
    traj.turns.forEach((turn, t) => {
      if (turn.forced) return;
      ctxs.push(all[t]);
      actions.push(turn.action as number);
      logpOld.push(turn.logp);
      advantages.push(adv[i][t]);
      n++;
    });
    lengths.push(n);
  });
  const N = ctxs.length;
  if (N === 0) return null;
  const p = config.ppo;
  const constant = p.aggregationConstant ?? config.groups * config.groupSize * s.maxBudget;
  const weights = aggregationWeights(lengths, p.aggregation, constant);
  let logpRef: Float64Array | undefined;
  if (s.reference !== undefined) {
    const lp = s.reference.logProbs(ctxs);
    logpRef = Float64Array.from(actions, (a, i) => lp[i * s.learner.actions + a]);
  }
  const coef = {
    clipLow: p.clipLow,
    clipHigh: p.clipHigh,
    klCoef: p.klCoef,
    entCoef,
    dualClip: p.dualClip > 1 ? p.dualClip : undefined,
  };
  const order = Array.from({ length: N }, (_, i) => i);
  const size = Math.ceil(N / p.minibatches);
  const stats: PgStats = { loss: 0, clipfrac: 0, approxKl: 0, entropy: 0, kl: 0, gradNorm: 0, turns: N };
  let steps = 0;
  for (let epoch = 0; epoch < p.epochs; epoch++) {
    rng.shuffle(order);
    for (let start = 0; start < N; start += size) {
      const idx = order.slice(start, start + size);
      // Each minibatch estimates the whole batch's loss: its weights are scaled by N / |minibatch|.
      const scale = N / idx.length;
      const logits = s.learner.logits(idx.map((i) => ctxs[i]));
      const r = pgLoss(
        {
          n: idx.length,
          nA: s.learner.actions,
          logits: logits.data,
          actions: idx.map((i) => actions[i]),
          logpOld: idx.map((i) => logpOld[i]),
          advantages: idx.map((i) => advantages[i]),
          weights: idx.map((i) => weights[i] * scale),
          logpRef: logpRef === undefined ? undefined : idx.map((i) => logpRef![i]),
        },
        coef,
      );
      s.optimizer.zeroGrad();
      backward(logits, Float32Array.from(r.dlogits));
      stats.gradNorm += clipGradNorm(
        s.learner.params.map(([, t]) => t),
        config.optim.maxGradNorm,
      );
      s.optimizer.step();
      stats.loss += r.loss;
      stats.clipfrac += r.clipfrac;
      stats.approxKl += r.approxKl;
      stats.entropy += r.entropy;
      stats.kl += r.kl;
      steps++;
    }
  }
  for (const k of ['loss', 'clipfrac', 'approxKl', 'entropy', 'kl', 'gradNorm'] as const) stats[k] /= steps;
  return stats;
}

/** The trainable parts of a run, for checkpoints. */
function parts(s: Setup, stale: Setup['learner'] | undefined): TrainParts {
  return {
    policy: s.learner.params,
    optimizer: s.optimizer,
    critic: s.critic ? { params: s.critic.namedParameters(), optimizer: s.critic.optimizer } : undefined,
    stale: stale?.params,
    reference: s.reference?.params,
  };
}

export async function trainPolicyGradient(o: TrainOptions): Promise<TrainResult> {
  const t0 = performance.now();
  const config = o.config;
  if (config.algo === 'es') throw new InputError('algo', 'es', 'evolution strategies run through trainEs');
  const s = setup(config, o.init);
  const { learner } = s;
  const seed = config.seed;
  const q = config.crossPolicy.q;
  let stale = q > 0 ? learner.clone('stale') : undefined;
  const opened = openRun(o.out, o.resume, config, parts(s, stale), {
    iter: -1,
    nextIndex: 0,
    staleIter: stale ? 0 : undefined,
  });
  const run = opened.run;
  let state = opened.state;
  const guide = config.guidance.mode === 'none' ? undefined : new PrefixGuide(config.guidance, state.guide);

  const rolloutGroups = (
    iter: number,
    tasks: Task[],
    runSeed: number,
    prefixes?: Map<number, number>,
  ): Trajectory[] => {
    const r = rollout({
      tasks,
      samples: config.groupSize,
      budget: (task, sample) => budgetAt(config.budget, seed, iter, task.seed, sample),
      revealBudget: s.revealBudget,
      runSeed,
      policy: stale ? new CrossPolicy(learner.policy, stale.policy, q) : learner.policy,
      idPrefix: `i${iter}-`,
      prefix:
        prefixes === undefined
          ? undefined
          : (task): Prefix<unknown> | undefined => {
              const L = prefixes.get(task.seed) ?? 0;
              return L > 0 ? { policy: s.expert!(task), turns: L } : undefined;
            },
    });
    if (r instanceof Promise) throw new Error('training needs a synchronous env and policy');
    return r;
  };
  const prefixFor = (iter: number, task: Task) =>
    guide!.samplePrefix(guideKey(s, task), Rng.derive(seed, TRAIN_STREAM.prefix, iter, task.seed));

  const metrics: IterationMetrics[] = [];
  let nextIndex = state.nextIndex;
  for (let iter = state.iter + 1; iter < config.iters; iter++) {
    if (stale && iter % config.crossPolicy.refreshEvery === 0 && iter !== state.staleIter) {
      stale = learner.clone('stale');
      state.staleIter = iter;
    }
    const tasks = drawTasks(
      s.env,
      config.trainSeeds,
      config.groups,
      Rng.derive(seed, TRAIN_STREAM.tasks, iter),
    );
    // Gaussian guidance: every task gets a prefix length drawn around its logged difficulty.
    const prefixes =
      guide && config.guidance.mode === 'gaussian'
        ? new Map(tasks.map((t) => [t.seed, prefixFor(iter, t)]))
        : undefined;
    let batch = rolloutGroups(iter, tasks, Rng.derive(seed, TRAIN_STREAM.rollout, iter).uint32(), prefixes);
    const first = deadGroups(batch);
    if (guide) {
      for (const g of first.groups) {
        const group = g.indices.map((i) => batch[i]);
        guide.record(guideKey(s, group[0].task), group.filter((t) => t.outcome.success).length, group.length);
      }
    }
    // BREAD: only groups that came back all-failure are replayed, with an expert prefix of ≥ 1 turn.
    let guided = 0;
    if (guide && config.guidance.mode === 'bread') {
      const failed = first.groups.filter(
        (g, k) => first.dead[k] && g.indices.every((i) => !batch[i].outcome.success),
      );
      if (failed.length > 0) {
        const again = rolloutGroups(
          iter,
          failed.map((g) => batch[g.indices[0]].task),
          Rng.derive(seed, TRAIN_STREAM.bread, iter).uint32(),
          new Map(
            failed.map((g) => [
              batch[g.indices[0]].task.seed,
              Math.max(1, prefixFor(iter, batch[g.indices[0]].task)),
            ]),
          ),
        );
        const replayed = [...batch];
        failed.forEach((g, k) => {
          g.indices.forEach((i, j) => {
            replayed[i] = again[k * config.groupSize + j];
          });
        });
        batch = replayed;
        guided = failed.length;
      }
    }
    // Dynamic sampling (DAPO): drop groups without outcome contrast, refill with fresh tasks.
    let refills = 0;
    if (config.dynamicSampling.enabled) {
      const live = (b: Trajectory[]) => {
        const r = deadGroups(b);
        return r.groups.filter((_, k) => !r.dead[k]).flatMap((g) => g.indices.map((i) => b[i]));
      };
      let kept = live(batch);
      const used = new Set(tasks.map((t) => t.seed));
      for (let round = 0; round < config.dynamicSampling.maxRounds && kept.length < batch.length; round++) {
        const need = config.groups - kept.length / config.groupSize;
        const rng = Rng.derive(seed, TRAIN_STREAM.refill, iter, round);
        const more = drawTasks(s.env, config.trainSeeds, need, rng, used);
        for (const t of more) used.add(t.seed);
        refills += need;
        const mp = prefixes && new Map(more.map((t) => [t.seed, prefixFor(iter, t)]));
        kept = kept.concat(live(rolloutGroups(iter, more, rng.uint32(), mp)));
      }
      if (kept.length > 0) batch = kept;
    }

    // Credit; GAE reads the critic, whose V(s_T, h = 0) = 0 is the bootstrap at truncation.
    let flatValues: Float32Array | undefined;
    let valueFn: ((t: Trajectory, i: number) => number) | undefined;
    if (s.critic) {
      const v = s.critic.values(batch);
      const offsets = new Map<Trajectory, number>();
      let k = 0;
      for (const t of batch) {
        offsets.set(t, k);
        k += t.turns.length;
      }
      flatValues = v;
      valueFn = (t, i) => (i >= t.turns.length ? 0 : v[offsets.get(t)! + i]);
    }
    const adv = creditBatch(batch, s.method, creditOptions(config, s.method, valueFn), {
      taskNorm: config.credit.taskNorm === undefined ? undefined : { by: config.credit.taskNorm },
    });

    // Linear decay of the entropy bonus (always) and of lr (with optim.anneal), CleanRL-style.
    const frac = 1 - iter / config.iters;
    if (config.optim.anneal) s.optimizer.lr = config.optim.lr * frac;
    const entCoef = config.ppo.entCoef * frac;
    const pg = policyUpdate(s, config, batch, adv, Rng.derive(seed, TRAIN_STREAM.shuffle, iter), entCoef);
    let criticLoss = Number.NaN;
    if (s.critic && flatValues) {
      // λ-returns as regression targets: A + V.
      const targets = new Float32Array(flatValues.length);
      let k = 0;
      batch.forEach((t, i) => {
        for (let j = 0; j < t.turns.length; j++, k++) targets[k] = adv[i][j] + flatValues![k];
      });
      criticLoss = s.critic.fit(batch, targets, Rng.derive(seed, TRAIN_STREAM.critic, iter));
    }

    const values: Record<string, number> = {
      'rollout/success': mean(batch.map((t) => (t.outcome.success ? 1 : 0))),
      'rollout/turns': mean(batch.map((t) => t.outcome.turns)),
      'rollout/budget': mean(batch.map((t) => t.budget)),
      'rollout/episodes': batch.length,
      'rollout/step_quality': stepReward(batch) ?? Number.NaN,
      'credit/groups': first.counts.groups,
      'credit/dead_groups': first.counts.dead,
      'credit/all_fail_groups': first.counts.allFail,
      'credit/refills': refills,
      'train/loss': pg?.loss ?? Number.NaN,
      'train/clipfrac': pg?.clipfrac ?? Number.NaN,
      'train/approx_kl': pg?.approxKl ?? Number.NaN,
      'train/entropy': pg?.entropy ?? Number.NaN,
      'train/kl': pg?.kl ?? Number.NaN,
      'train/grad_norm': pg?.gradNorm ?? Number.NaN,
      'train/turns': pg?.turns ?? 0,
      'train/lr': s.optimizer.lr,
      'train/ent_coef': entCoef,
    };
    if (s.critic) values['critic/loss'] = criticLoss;
    if (guide) {
      values['guidance/guided_groups'] = config.guidance.mode === 'bread' ? guided : config.groups;
      values['guidance/forced_turns'] = batch.reduce((n, t) => n + t.turns.filter((x) => x.forced).length, 0);
    }
    metrics.push({ iter, values });
    if (run) {
      run.record(iter, nextIndex, batch, values, config.storeTrajectories);
      nextIndex += batch.length;
      state = { iter, nextIndex, guide: guide?.state(), staleIter: state.staleIter };
      if ((iter + 1) % config.checkpointEvery === 0 || iter === config.iters - 1) {
        run.saveCheckpoint(parts(s, stale), state, config.seed, learner.checkpoint(s.spec));
      }
    }
    o.onIter?.(iter, config.iters, values);
    if (o.stopAfter !== undefined && iter >= o.stopAfter) {
      run?.close('interrupted');
      return {
        config,
        policy: learner.policy,
        learner,
        metrics,
        final: null,
        seconds: (performance.now() - t0) / 1000,
      };
    }
  }

  const final = finalEval(s, config, learner.policy);
  if (run) {
    run.writeSummary({ final, config });
    run.close('done');
  }
  return {
    config,
    policy: learner.policy,
    learner,
    metrics,
    final,
    seconds: (performance.now() - t0) / 1000,
  };
}
