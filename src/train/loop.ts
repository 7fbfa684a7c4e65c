// The policy-gradient training loop (GRPO and PPO; docs/methods.md §4). One iteration reads top to bottom,
// CleanRL-style, as named stages:
//   collect          tasks → K rollouts per task (budget fixed or from a schedule; guidance prefixes;
//                    cross-policy sampling)
//   replayDeadGroups BREAD: groups that came back all-failure are replayed with an expert prefix
//   refill           DAPO dynamic sampling: groups without outcome contrast are dropped and refilled
//   advantages       credit (any method of credit/; GAE reads the critic)
//   update           clipped policy-gradient epochs over minibatches of the policy's own units
//                    (+ critic regression for GAE)
//   record           metrics → store → checkpoint
// All randomness of iteration i is derived from (seed, i), so a run resumed from the checkpoint of
// iteration c reproduces, byte for byte, what the uninterrupted run did after c. Envs and policies may
// be asynchronous; envs come from the caller's factory (TrainOptions.envs) and are closed every
// iteration.
import { InputError } from '../core/errors.ts';
import { stateKeyOf } from '../core/policy.ts';
import { Rng } from '../core/rng.ts';
import type { EnvFactory, Policy, Task, Trajectory } from '../core/types.ts';
import {
  creditBatch,
  type DeadGroupReport as DeadGroups,
  deadGroups,
  type MethodName,
  type MethodOptions,
} from '../credit/index.ts';
import { CREDIT_PARAM_NAMES } from '../credit/params.ts';
import { stepRegret, stepReward } from '../eval/step-reward.ts';
import { clipGradNorm } from '../nn/optim.ts';
import { backward } from '../nn/tensor.ts';
import { rollout } from '../rollout/batch.ts';
import { EnvCache } from '../rollout/env-cache.ts';
import type { Prefix } from '../rollout/episode.ts';
import type { TrainConfig } from './config.ts';
import { CrossPolicy } from './cross-policy.ts';
import { type FinalEval, finalEval } from './final.ts';
import { PrefixGuide } from './guidance.ts';
import type { Learner, ViewOf } from './learner.ts';
import { aggregationWeights, pgLoss } from './ppo.ts';
import { openRun, type Resumed, type RunDir, runSeconds } from './run-dir.ts';
import { budgetAt } from './schedule.ts';
import { drawTasks, guideKey, type Setup, setup, TRAIN_STREAM } from './setup.ts';
import type { TrainParts, RunState as TrainState } from './state.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface TrainOptions {
  config: TrainConfig;
  /** Where the run's envs come from: the env registry (passed in by cli/ and studies/) or a user's factory. */
  envs: EnvFactory;
  /** Run directory; undefined keeps everything in memory (tests, studies). */
  out?: string;
  /** Continue the run in `out` from its last checkpoint. */
  resume?: boolean;
  /** Start from (a copy of) this policy instead of config.policy. */
  init?: AnyPolicy;
  /** Train this learner (and its policy) in place instead of one built from config.policy — how a
   * policy turnwise does not know (a text policy over tokens) is trained. */
  learner?: Learner;
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
  /** Wall-clock seconds of the whole run: with `resumed`, its earlier parts' included. */
  seconds: number;
  /** Set when this call resumed a run: where it took up. */
  resumed?: Resumed;
  /** ES: fitness evaluations (policy rollouts of a whole task set) made in this call. */
  evaluations?: number;
}

const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);

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
  return o as unknown as MethodOptions[MethodName];
}

interface PgStats {
  loss: number;
  clipfrac: number;
  approxKl: number;
  entropy: number;
  kl: number;
  gradNorm: number;
  /** Units (turns, tokens) in the loss. */
  turns: number;
}

/** PPO epochs over minibatches of the batch's own units (forced turns and observation tokens are
 * masked out); each unit carries its turn's advantage. */
export function policyUpdate(
  s: Setup,
  config: TrainConfig,
  batch: readonly Trajectory[],
  adv: number[][],
  viewOf: ViewOf,
  rng: Rng,
  entCoef: number,
): PgStats | null {
  const units = s.learner.units(batch, viewOf).filter((u) => u.own);
  const N = units.length;
  if (N === 0) return null;
  const lengths = new Array<number>(batch.length).fill(0);
  const advantages = new Float64Array(N);
  const targets = new Int32Array(N);
  const logpOld = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const u = units[i];
    lengths[u.traj]++;
    advantages[i] = adv[u.traj][u.t];
    targets[i] = u.target;
    logpOld[i] = u.logpOld;
  }
  const p = config.ppo;
  const constant = p.aggregationConstant ?? config.groups * config.groupSize * s.maxBudget;
  const weights = aggregationWeights(lengths, p.aggregation, constant);
  const logpRef = s.reference?.logProbs(units);
  const coef = {
    clipLow: p.clipLow,
    clipHigh: p.clipHigh,
    klCoef: p.klCoef,
    entCoef,
    dualClip: p.dualClip > 1 ? p.dualClip : undefined,
  };
  const V = s.learner.actions;
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
      const logits = s.learner.logits(idx.map((i) => units[i]));
      const r = pgLoss(
        {
          n: idx.length,
          nA: V,
          logits: logits.data,
          actions: idx.map((i) => targets[i]),
          logpOld: idx.map((i) => logpOld[i]),
          advantages: idx.map((i) => advantages[i]),
          weights: idx.map((i) => weights[i] * scale),
          logpRef: logpRef === undefined ? undefined : idx.map((i) => logpRef[i]),
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
function parts(s: Setup, stale: Learner | undefined): TrainParts {
  return {
    policy: s.learner.params,
    optimizer: s.optimizer,
    critic: s.critic ? { params: s.critic.namedParameters(), optimizer: s.critic.optimizer } : undefined,
    stale: stale?.params,
    reference: s.reference?.params,
  };
}

/** What every stage of a run reads: the setup, the config, the guide, the cross-policy stale copy. */
interface Run {
  s: Setup;
  config: TrainConfig;
  guide?: PrefixGuide;
  stale?: Learner;
}

/** K rollouts of each task, with the iteration's budgets, prefixes and acting policy. */
async function rolloutGroups(
  r: Run,
  iter: number,
  tasks: Task[],
  runSeed: number,
  prefixes?: Map<number, number>,
): Promise<Trajectory[]> {
  const { s, config, stale } = r;
  return rollout({
    tasks,
    samples: config.groupSize,
    budget: (task, sample) => budgetAt(config.budget, config.seed, iter, task.seed, sample),
    revealBudget: s.revealBudget,
    runSeed,
    policy: stale ? new CrossPolicy(s.learner.policy, stale.policy, config.crossPolicy.q) : s.learner.policy,
    makeEnv: s.envs.make,
    idPrefix: `i${iter}-`,
    prefix:
      prefixes === undefined
        ? undefined
        : (task): Prefix<unknown> | undefined => {
            const L = prefixes.get(task.seed) ?? 0;
            return L > 0 ? { policy: s.expert!(task), turns: L } : undefined;
          },
  });
}

/** Guidance: a prefix length for a task, drawn around its logged difficulty. */
function prefixFor(r: Run, iter: number, task: Task): number {
  return r.guide!.samplePrefix(
    guideKey(r.s, task),
    Rng.derive(r.config.seed, TRAIN_STREAM.prefix, iter, task.seed),
  );
}

/** Stage 1: the iteration's tasks and their groups. Gaussian guidance gives every task a prefix. */
async function collect(
  r: Run,
  iter: number,
): Promise<{ tasks: Task[]; batch: Trajectory[]; prefixes?: Map<number, number> }> {
  const { s, config } = r;
  const tasks = drawTasks(
    s.env,
    config.trainSeeds,
    config.groups,
    Rng.derive(config.seed, TRAIN_STREAM.tasks, iter),
  );
  const prefixes =
    r.guide && config.guidance.mode === 'gaussian'
      ? new Map(tasks.map((t) => [t.seed, prefixFor(r, iter, t)]))
      : undefined;
  const batch = await rolloutGroups(
    r,
    iter,
    tasks,
    Rng.derive(config.seed, TRAIN_STREAM.rollout, iter).uint32(),
    prefixes,
  );
  return { tasks, batch, prefixes };
}

/** Stage 2 (BREAD): groups that came back all-failure are replayed with an expert prefix of ≥ 1 turn;
 * the guide logs every group's successes first. Returns the batch and the number of replayed groups. */
async function replayDeadGroups(
  r: Run,
  iter: number,
  batch: Trajectory[],
  first: DeadGroups,
): Promise<{ batch: Trajectory[]; guided: number }> {
  const { s, config, guide } = r;
  if (guide === undefined) return { batch, guided: 0 };
  for (const g of first.groups) {
    const group = g.indices.map((i) => batch[i]);
    guide.record(guideKey(s, group[0].task), group.filter((t) => t.outcome.success).length, group.length);
  }
  if (config.guidance.mode !== 'bread') return { batch, guided: 0 };
  const failed = first.groups.filter(
    (g, k) => first.dead[k] && g.indices.every((i) => !batch[i].outcome.success),
  );
  if (failed.length === 0) return { batch, guided: 0 };
  const again = await rolloutGroups(
    r,
    iter,
    failed.map((g) => batch[g.indices[0]].task),
    Rng.derive(config.seed, TRAIN_STREAM.bread, iter).uint32(),
    new Map(
      failed.map((g) => [
        batch[g.indices[0]].task.seed,
        Math.max(1, prefixFor(r, iter, batch[g.indices[0]].task)),
      ]),
    ),
  );
  const replayed = [...batch];
  failed.forEach((g, k) => {
    g.indices.forEach((i, j) => {
      replayed[i] = again[k * config.groupSize + j];
    });
  });
  return { batch: replayed, guided: failed.length };
}

/** Stage 3 (DAPO dynamic sampling): drop groups without outcome contrast, refill with fresh tasks. */
async function refill(
  r: Run,
  iter: number,
  tasks: Task[],
  batch: Trajectory[],
  prefixes?: Map<number, number>,
): Promise<{ batch: Trajectory[]; refills: number }> {
  const { s, config } = r;
  if (!config.dynamicSampling.enabled) return { batch, refills: 0 };
  const live = (b: Trajectory[]) => {
    const d = deadGroups(b);
    return d.groups.filter((_, k) => !d.dead[k]).flatMap((g) => g.indices.map((i) => b[i]));
  };
  let kept = live(batch);
  let refills = 0;
  const used = new Set(tasks.map((t) => t.seed));
  for (let round = 0; round < config.dynamicSampling.maxRounds && kept.length < batch.length; round++) {
    const need = config.groups - kept.length / config.groupSize;
    const rng = Rng.derive(config.seed, TRAIN_STREAM.refill, iter, round);
    const more = drawTasks(s.env, config.trainSeeds, need, rng, used);
    for (const t of more) used.add(t.seed);
    refills += need;
    const mp = prefixes && new Map(more.map((t) => [t.seed, prefixFor(r, iter, t)]));
    kept = kept.concat(live(await rolloutGroups(r, iter, more, rng.uint32(), mp)));
  }
  return { batch: kept.length > 0 ? kept : batch, refills };
}

/** Stage 4: per-turn advantages; GAE reads the critic, whose V(s_T, h = 0) = 0 is the bootstrap at
 * truncation. Also returns the critic's values (the regression baseline of stage 5). */
function advantages(
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

/** Stage 5: the policy update (linear decay of the entropy bonus always and of lr with optim.anneal,
 * CleanRL-style), then the critic's regression on λ-returns A + V. */
function update(
  r: Run,
  iter: number,
  batch: readonly Trajectory[],
  adv: number[][],
  values: Float32Array | undefined,
  viewOf: ViewOf,
): { pg: PgStats | null; entCoef: number; criticLoss: number } {
  const { s, config } = r;
  const seed = config.seed;
  const frac = 1 - iter / config.iters;
  if (config.optim.anneal) s.optimizer.lr = config.optim.lr * frac;
  const entCoef = config.ppo.entCoef * frac;
  const pg = policyUpdate(
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

/** Stage 6a: the iteration's namespaced scalars. */
function iterationMetrics(
  r: Run,
  batch: readonly Trajectory[],
  first: DeadGroups,
  refills: number,
  guided: number,
  viewOf: ViewOf,
  u: { pg: PgStats | null; entCoef: number; criticLoss: number },
): Record<string, number> {
  const { s, config, guide } = r;
  const { pg } = u;
  const values: Record<string, number> = {
    'rollout/success': mean(batch.map((t) => (t.outcome.success ? 1 : 0))),
    'rollout/turns': mean(batch.map((t) => t.outcome.turns)),
    'rollout/budget': mean(batch.map((t) => t.budget)),
    'rollout/episodes': batch.length,
    'rollout/step_quality': stepReward(batch, viewOf) ?? Number.NaN,
    'rollout/step_regret': stepRegret(batch, viewOf) ?? Number.NaN,
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
    'train/ent_coef': u.entCoef,
  };
  if (s.critic) values['critic/loss'] = u.criticLoss;
  if (guide) {
    values['guidance/guided_groups'] = config.guidance.mode === 'bread' ? guided : config.groups;
    values['guidance/forced_turns'] = batch.reduce((n, t) => n + t.turns.filter((x) => x.forced).length, 0);
  }
  return values;
}

/** Stage 6b: the iteration into the store (one transaction) and, every checkpointEvery iterations
 * and at the end, a checkpoint. Returns the state a resume continues from. */
function record(
  r: Run,
  run: RunDir | undefined,
  iter: number,
  state: TrainState,
  batch: readonly Trajectory[],
  values: Record<string, number>,
): TrainState {
  if (run === undefined) return state;
  const { s, config, guide, stale } = r;
  run.record(iter, state.nextIndex, batch, values, config.storeTrajectories);
  const next = {
    iter,
    nextIndex: state.nextIndex + batch.length,
    guide: guide?.state(),
    staleIter: state.staleIter,
  };
  if ((iter + 1) % config.checkpointEvery === 0 || iter === config.iters - 1) {
    run.saveCheckpoint(parts(s, stale), next, config.seed, s.learner.checkpoint(s.spec));
  }
  return next;
}

/** The envs of a batch's tasks as views (made once per distinct task, closed with the cache). */
async function viewsOf(cache: EnvCache, batch: readonly Trajectory[]): Promise<ViewOf> {
  await cache.getAll(batch.map((t) => t.task));
  return (task) => cache.view(task);
}

export async function trainPolicyGradient(o: TrainOptions): Promise<TrainResult> {
  const t0 = performance.now();
  const config = o.config;
  if (config.algo === 'es') throw new InputError('algo', 'es', 'evolution strategies run through trainEs');
  const s = setup(config, o.envs, o.init, o.learner);
  const r: Run = { s, config, stale: config.crossPolicy.q > 0 ? s.learner.clone('stale') : undefined };
  const opened = openRun(
    o.out,
    o.resume,
    config,
    parts(s, r.stale),
    { iter: -1, nextIndex: 0, staleIter: r.stale ? 0 : undefined },
    t0,
  );
  const run = opened.run;
  let state: TrainState = opened.state;
  if (config.guidance.mode !== 'none') r.guide = new PrefixGuide(config.guidance, state.guide);
  const metrics: IterationMetrics[] = [];
  const result = (final: FinalEval | null): TrainResult => ({
    config,
    policy: s.learner.policy,
    learner: s.learner,
    metrics,
    final,
    seconds: runSeconds(t0, opened.resumed),
    ...(opened.resumed === undefined ? {} : { resumed: opened.resumed }),
  });

  for (let iter = state.iter + 1; iter < config.iters; iter++) {
    if (r.stale && iter % config.crossPolicy.refreshEvery === 0 && iter !== state.staleIter) {
      r.stale = s.learner.clone('stale');
      state.staleIter = iter;
    }
    const cache = new EnvCache(s.envs.make);
    try {
      const collected = await collect(r, iter);
      const first = deadGroups(collected.batch);
      const replayed = await replayDeadGroups(r, iter, collected.batch, first);
      const { batch, refills } = await refill(r, iter, collected.tasks, replayed.batch, collected.prefixes);
      const viewOf = await viewsOf(cache, batch);
      const { adv, values } = advantages(r, batch, viewOf);
      const updated = update(r, iter, batch, adv, values, viewOf);
      const scalars = iterationMetrics(r, batch, first, refills, replayed.guided, viewOf, updated);
      metrics.push({ iter, values: scalars });
      state = record(r, run, iter, state, batch, scalars);
      o.onIter?.(iter, config.iters, scalars);
    } finally {
      await cache.close();
    }
    if (o.stopAfter !== undefined && iter >= o.stopAfter) {
      run?.close('interrupted');
      return result(null);
    }
  }

  const final = await finalEval(s, config, s.learner.policy);
  if (run) {
    run.writeSummary({ final, config });
    run.close('done');
  }
  return result(final);
}
