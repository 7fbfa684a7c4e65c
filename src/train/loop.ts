// The policy-gradient training loop (GRPO and PPO; docs/methods.md §4). One iteration reads top to bottom,
// CleanRL-style, as named stages:
//   collect          tasks → K rollouts per task (budget fixed or from a schedule; guidance prefixes;
//                    cross-policy sampling)                                          train/collect.ts
//   replayDeadGroups BREAD: groups that came back all-failure are replayed with an expert prefix
//   refill           DAPO dynamic sampling: groups without outcome contrast are dropped and refilled
//   reward           with a rubric (config.reward), the learner's copy of the batch on its scores,
//                    each trajectory's judgement stored beside it                    train/reward.ts
//   shape            with config.shaping, the learner's copy of the batch on r + F   train/shaping.ts
//                    (with config.infoGain, on r + W·g                             train/info-gain.ts)
//   rehearse         with config.rehearsal, the real steps counted into a learned model of each map and
//                    R imagined episodes per real one rolled out in it             train/rehearsal.ts
//                    (on search and sql, the tools' answers filed per question train/rehearsal-tools.ts)
//   advantages       credit (any method of credit/; GAE reads the critic)            train/update.ts
//   update           clipped policy-gradient epochs over minibatches of the policy's own units
//                    (+ critic regression for GAE; algo rtpo: backward stages, train/rtpo.ts)
//   record           metrics → store → checkpoint                                    here
// With config.asyncPipeline, stages 1–3 of iteration k+1 run, by a snapshot of the weights, while
// stages 4–6 of iteration k run (train/pipeline.ts): one iteration off-policy.
// All randomness of iteration i is derived from (seed, i), so a run resumed from the checkpoint of
// iteration c reproduces, byte for byte, what the uninterrupted run did after c. Envs and policies may
// be asynchronous; envs come from the caller's factory (TrainOptions.envs) and are closed every
// iteration.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { EnvFactory, Policy, Trajectory } from '../core/types.ts';
import { invalidRate } from '../eval/invalid.ts';
import { ownMean as ownProxyMean } from '../eval/step-proxy.ts';
import { stepRegret, stepReward } from '../eval/step-reward.ts';
import { EnvCache } from '../rollout/env-cache.ts';
import type { RolloutQueue } from '../rollout/queue.ts';
import { type Gathered, gather } from './collect.ts';
import type { TrainConfig } from './config.ts';
import { type FinalEval, finalEval } from './final.ts';
import { PrefixGuide } from './guidance.ts';
import { hackMetrics } from './hack-metrics.ts';
import { InfoGain } from './info-gain.ts';
import type { Learner, ViewOf } from './learner.ts';
import { Pipeline, staleness } from './pipeline.ts';
import { rehearse, WorldModel } from './rehearsal.ts';
import { rehearseTools, ToolModel } from './rehearsal-tools.ts';
import { type RewardSource, rewardBatch } from './reward.ts';
import { checkpointDue, openRun, type Resumed, type RunDir, runSeconds } from './run-dir.ts';
import { type Run, type Setup, setup, TRAIN_STREAM } from './setup.ts';
import { BatchShaper, shapingMetrics } from './shaping.ts';
import type { TrainParts, RunState as TrainState } from './state.ts';
import { advantages, type Updated, update, updateYielding } from './update.ts';

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
  /** Where each iteration's rollouts run (rollout/queue.ts): absent, in this process. A queue's workers
   * act with the iteration's weights, which travel as a checkpoint; the acting policy must then be the
   * learner's alone (no cross-policy sampling, no guidance prefixes). The final evaluation runs here. */
  queue?: RolloutQueue;
  /** With config.reward: its rubric, the judges connected (the composition layer opens it). */
  reward?: RewardSource;
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

/** The trainable parts of a run, for checkpoints. */
function parts(s: Setup, stale: Learner | undefined, pipeline: Pipeline | undefined): TrainParts {
  return {
    policy: s.learner.params,
    optimizer: s.optimizer,
    critic: s.critic ? { params: s.critic.namedParameters(), optimizer: s.critic.optimizer } : undefined,
    stale: stale?.params,
    behaviour: pipeline?.behaviour.params,
    reference: s.reference?.params,
  };
}

/** Stage 6a: the iteration's namespaced scalars. */
function iterationMetrics(
  r: Run,
  { batch, first, refills, guided }: Gathered,
  viewOf: ViewOf,
  u: Updated,
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
    // Own turns whose output did not parse into an action (eval/invalid.ts; 0 for a policy that writes no text).
    'rollout/invalid_rate': invalidRate(batch),
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
  // The tool envs' per-turn quality proxy (info.quality, eval/step-proxy.ts), where their turns carry it:
  // the training curve's step signal where no oracle gives Q*.
  const [proxy] = ownProxyMean(batch);
  if (proxy !== null) values['rollout/step_proxy'] = proxy;
  if (s.critic) values['critic/loss'] = u.criticLoss;
  if (pg?.extra) Object.assign(values, pg.extra);
  Object.assign(values, hackMetrics(batch)); // code env under a visible reward (train/hack-metrics.ts)
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
  pipeline: Pipeline | undefined,
  run: RunDir | undefined,
  iter: number,
  state: TrainState,
  batch: readonly Trajectory[],
  values: Record<string, number>,
  judgements?: readonly unknown[],
): TrainState {
  if (run === undefined) return state;
  const { s, config, guide, stale } = r;
  run.record(iter, state.nextIndex, batch, values, config.storeTrajectories, judgements);
  const next = {
    iter,
    nextIndex: state.nextIndex + batch.length,
    guide: guide?.state(),
    ...(r.model === undefined ? {} : { rehearsal: r.model.state() }),
    staleIter: state.staleIter,
  };
  if (checkpointDue(config, iter)) {
    run.saveCheckpoint(parts(s, stale, pipeline), next, config.seed, s.learner.checkpoint(s.spec));
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
  if (o.queue !== undefined && (config.crossPolicy.q > 0 || config.guidance.mode !== 'none'))
    throw new InputError(
      '--queue',
      o.queue.where,
      `cannot go with ${config.crossPolicy.q > 0 ? 'cross-policy sampling (crossPolicy.q > 0)' : `guidance (${config.guidance.mode})`}: only the learner's own weights travel to the workers`,
    );
  // On search the information gain reads the clues each turn's info records (the env's own accounting),
  // which travel with the trajectories; under fog it reads the cells recordCells adds, which workers do not.
  const fogGain = config.infoGain !== undefined && config.env.env !== 'search';
  if (o.queue !== undefined && (config.shaping !== undefined || fogGain || config.rehearsal !== undefined))
    throw new InputError(
      '--queue',
      o.queue.where,
      `cannot go with ${config.shaping !== undefined ? '--shaping' : fogGain ? '--info-gain' : '--rehearsal'}: the workers' envs do not record the cell after each step that it reads`,
    );
  if ((config.reward === undefined) !== (o.reward === undefined))
    throw new Error(
      config.reward === undefined
        ? 'a reward source was given for a config without reward'
        : `config.reward ${config.reward} needs its opened rubric (TrainOptions.reward)`,
    );
  const s = setup(config, o.envs, o.init, o.learner);
  const info = config.infoGain === undefined ? undefined : new InfoGain(config.infoGain);
  const r: Run = {
    s,
    config,
    stale: config.crossPolicy.q > 0 ? s.learner.clone('stale') : undefined,
    queue: o.queue,
    shaper: config.shaping === undefined ? undefined : new BatchShaper(config.shaping, s.maxBudget),
  };
  // The pipeline's acting weights start as θ0; a resume loads into them the snapshot it checkpointed.
  const pipeline = config.asyncPipeline === true ? new Pipeline(r, s.learner.clone()) : undefined;
  const opened = openRun(
    o.out,
    o.resume,
    config,
    parts(s, r.stale, pipeline),
    { iter: -1, nextIndex: 0, staleIter: r.stale ? 0 : undefined },
    t0,
  );
  const run = opened.run;
  let state: TrainState = opened.state;
  if (config.guidance.mode !== 'none') r.guide = new PrefixGuide(config.guidance, state.guide);
  if (config.rehearsal !== undefined)
    r.model =
      config.env.env === 'frozenlake'
        ? new WorldModel(config.rehearsal, !s.generated, state.rehearsal)
        : new ToolModel(config.rehearsal, state.rehearsal?.tools);
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

  try {
    for (let iter = state.iter + 1; iter < config.iters; iter++) {
      if (r.stale && iter % config.crossPolicy.refreshEvery === 0 && iter !== state.staleIter) {
        r.stale = s.learner.clone('stale');
        state.staleIter = iter;
      }
      state = await iteration(r, o, run, pipeline, info, iter, state, metrics);
      if (o.stopAfter !== undefined && iter >= o.stopAfter) {
        await pipeline?.settle();
        run?.close('interrupted');
        return result(null);
      }
    }
  } finally {
    await pipeline?.settle();
  }

  const final = await finalEval(s, config, s.learner.policy);
  if (run) {
    run.writeSummary({ final, config });
    run.close('done');
  }
  return result(final);
}

/** One iteration, stages 1–6. With the pipeline, batch iter is the one in flight, and the next one is
 * started before the update. */
async function iteration(
  r: Run,
  o: TrainOptions,
  run: RunDir | undefined,
  pipeline: Pipeline | undefined,
  info: InfoGain | undefined,
  iter: number,
  state: TrainState,
  metrics: IterationMetrics[],
): Promise<TrainState> {
  const { s, config } = r;
  const cache = new EnvCache(s.envs.make);
  try {
    const gathered = pipeline === undefined ? await gather(r, iter) : await pipeline.take(iter);
    pipeline?.launch(iter + 1);
    const { batch } = gathered;
    const viewOf = await viewsOf(cache, batch);
    const rubric =
      o.reward === undefined
        ? undefined
        : await rewardBatch(o.reward, config, batch, viewOf, (task) => s.envs.spec(task));
    // The learner's reward: the batch itself, its shaped copy, or its scored trajectories (the batch
    // stays true for the rest). Shaping and a rubric never go together (train/config.ts).
    const gained = info?.apply(batch, viewOf);
    const learnt = rubric?.learnt ?? r.shaper?.shape(batch, viewOf) ?? gained?.learnt ?? batch;
    // Rehearsal: imagined groups get their advantages apart (their own groups), then join the update.
    const rehearsing = r.model && {
      iter,
      seed: config.seed,
      runSeed: Rng.derive(config.seed, TRAIN_STREAM.rehearsal, iter).uint32(),
      groupSize: config.groupSize,
      budget: config.budget,
      policy: s.learner.policy,
      revealBudget: s.revealBudget,
      generated: s.generated,
    };
    const rehearsed =
      rehearsing &&
      (r.model instanceof ToolModel
        ? await rehearseTools(r.model, batch, viewOf, rehearsing)
        : await rehearse(r.model!, batch, viewOf, rehearsing));
    const imagined = rehearsed?.imagined ?? [];
    const real = advantages(r, learnt, viewOf);
    const dreamt = imagined.length > 0 ? advantages(r, imagined, viewOf) : undefined;
    const adv = dreamt === undefined ? real.adv : real.adv.concat(dreamt.adv);
    const values =
      dreamt === undefined || real.values === undefined || dreamt.values === undefined
        ? real.values
        : Float32Array.from([...real.values, ...dreamt.values]);
    const learnFrom = (rubric === undefined ? batch : learnt).concat(imagined);
    const updated =
      pipeline === undefined
        ? update(r, iter, learnFrom, adv, values, viewOf, learnt)
        : await updateYielding(r, iter, learnFrom, adv, values, viewOf, learnt);
    const scalars = iterationMetrics(r, gathered, viewOf, updated);
    if (rubric !== undefined) Object.assign(scalars, rubric.values);
    else if (learnt !== batch) Object.assign(scalars, shapingMetrics(batch, learnt));
    if (gained !== undefined) scalars['train/info_gain'] = gained.bits;
    if (rehearsed !== undefined) Object.assign(scalars, rehearsed.values);
    if (pipeline !== undefined) scalars['pipeline/staleness'] = staleness(iter);
    metrics.push({ iter, values: scalars });
    const next = record(r, pipeline, run, iter, state, batch, scalars, rubric?.judgements);
    o.onIter?.(iter, config.iters, scalars);
    return next;
  } finally {
    await cache.close();
  }
}
