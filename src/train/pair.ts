// Two agents, one outcome (docs/two-agent.md): on a FrozenLake map a planner picks a waypoint — any cell
// of the map — once, at the start, and an executor walks: it sees the map's features and its target, the
// waypoint until it has stood on it, then the goal. The episode's outcome (reaching G within the budget)
// is shared, and the pair is trained together from it with per-agent credit (credit/agents.ts):
// shared, per-agent group baselines, or the counterfactual, where every episode is replayed with every
// other waypoint under the same random streams (the env's seed and the executor's stream) so that the
// planner is credited with the difference its choice made.
//
// With `sight` R the executor sees only the holes within distance R of its cell (the planner always
// sees the whole map): a division of labour where the waypoint carries what the executor cannot see.
//
// One iteration reads as collect → (replays) → credit → update: G maps × K samples rolled out in
// lockstep (one batched forward per agent per turn), the advantages of each map's group, then PPO-clip
// epochs (train/ppo.ts) for each trained agent on its own turns. Either agent may be fixed: the planner
// as `goal` (the waypoint is the goal: straight to it), the executor as a given network not trained.
//
// The budget counts both agents' turns: turn 0 is the planner's, turns 1 … T−1 the executor's steps.
// A trajectory records both in turnwise's one format: the planner's turn has the start cell as its
// observation and the waypoint as its action, `info.agent = "planner"`, `info.step = false` (it moves
// nothing: readers do not check it against the env's actions) and `forced` when the planner is fixed; each executor turn has the cell and the move, `info.agent = "executor"` and `info.target`.
import { InputError } from '../core/errors.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type {
  Env,
  EnvFactory,
  EnvSpec,
  EnvView,
  FailureKind,
  Outcome,
  StepInfo,
  StepResult,
  Task,
  Trajectory,
  Turn,
  TurnContext,
} from '../core/types.ts';
import { type AgentCredit, type PairEpisode, pairCredit } from '../credit/agents.ts';
import { Adam, clipGradNorm } from '../nn/optim.ts';
import { backward } from '../nn/tensor.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../policies/neural.ts';
import { pgLoss } from './ppo.ts';

/** Keys the pair's streams apart from a single-agent rollout of the same seeds. */
export const PAIR_STREAM = { planner: 0x9a1, executor: 0x9a2, iter: 0x9a3, update: 0x9a4 } as const;
/** Held-out maps start here (training draws its maps below). */
export const HELD_OUT_SEED = 50_000_000;
export const TRAIN_SEEDS = 1_000_000;

export interface PairConfig {
  /** Side of the random maps, probability that a cell is frozen, slippery ice. */
  size: number;
  p: number;
  slippery: boolean;
  /** T: the planner's turn and T − 1 executor steps. */
  budget: number;
  /** The executor sees the holes within Chebyshev distance `sight` of its cell; 0: the whole map. */
  sight: number;
  /** How each agent's turns are credited from the shared outcome. */
  credit: AgentCredit;
  iters: number;
  /** Maps per iteration, and episodes per map (the group). */
  groups: number;
  groupSize: number;
  /** Hidden widths of both networks. */
  hidden: number[];
  lr: number;
  epochs: number;
  minibatches: number;
  clipLow: number;
  clipHigh: number;
  /** Entropy bonus, decayed linearly to 0 over the run. */
  entCoef: number;
  seed: number;
}

export const PAIR_DEFAULTS: Omit<PairConfig, 'credit'> = {
  size: 4,
  p: 0.8,
  slippery: false,
  budget: 10,
  sight: 0,
  iters: 40,
  groups: 32,
  groupSize: 8,
  hidden: [64],
  lr: 3e-3,
  epochs: 4,
  minibatches: 4,
  clipLow: 0.2,
  clipHigh: 0.28,
  entCoef: 0.05,
  seed: 0,
};

/** The two agents: the planner a network or fixed to the goal (null); each trained or not. */
export interface PairAgents {
  planner: NeuralPolicy | null;
  executor: NeuralPolicy;
  trainPlanner: boolean;
  trainExecutor: boolean;
}

/** The env params of the pair's maps. */
export function pairTask(config: Pick<PairConfig, 'size' | 'p' | 'slippery'>, seed: number): Task {
  return {
    env: 'frozenlake',
    params: { random: true, size: config.size, p: config.p, slippery: config.slippery },
    seed,
  };
}

/** The planner's and the executor's specs on maps of nS cells: the planner chooses among the cells from
 * the map's features (3·nS), the executor among the 4 moves from the features and its target (4·nS). */
export function pairSpecs(nS: number): { planner: EnvSpec; executor: EnvSpec } {
  const base = { oracle: false, snapshots: false } as const;
  return {
    planner: { ...base, id: 'frozenlake-planner', actions: nS, features: 3 * nS },
    executor: { ...base, id: 'frozenlake-executor', actions: 4, features: 4 * nS },
  };
}

/** Fresh networks for both agents (the executor's seed one above the planner's). */
export function freshAgents(nS: number, hidden: readonly number[], seed: number) {
  const specs = pairSpecs(nS);
  return {
    planner: new NeuralPolicy(mlpPolicyConfig(specs.planner, { hidden, seed }), `planner:mlp:seed=${seed}`),
    executor: new NeuralPolicy(
      mlpPolicyConfig(specs.executor, { hidden, seed: seed + 1 }),
      `executor:mlp:seed=${seed + 1}`,
    ),
  };
}

/** What the executor sees: its cell and its target. */
export interface ExecutorObservation {
  cell: number;
  target: number;
}

/** One map's env and the views both agents act through. */
interface MapViews {
  task: Task;
  nS: number;
  goal: number;
  planner: EnvView<number>;
  executor: EnvView<ExecutorObservation>;
  env: Env<unknown, unknown>;
}

/** Says the scope: FrozenLake without fog, whose feature view is [holes | goal | position]. */
function mapViews(envs: EnvFactory, task: Task, env: Env<unknown, unknown>, sight: number): MapViews {
  const spec = envs.spec(task);
  const nS = spec.observations;
  if (spec.id !== 'frozenlake' || nS === undefined || spec.features !== 3 * nS || env.features === undefined)
    throw new InputError('--env', spec.id, 'the two-agent setting is FrozenLake without fog');
  const features = (cell: number) => env.features!(cell);
  const goal = features(0)
    .subarray(nS, 2 * nS)
    .indexOf(1);
  const specs = pairSpecs(nS);
  const cache = new Map<number, Float32Array>();
  return {
    task,
    nS,
    goal,
    env,
    planner: { spec: specs.planner, features },
    executor: {
      spec: specs.executor,
      features: (o) => {
        const key = o.cell * nS + o.target;
        let f = cache.get(key);
        if (f === undefined) {
          f = new Float32Array(4 * nS);
          f.set(features(o.cell));
          if (sight > 0) {
            // Holes beyond sight are hidden: the executor cannot plan around what it cannot see.
            const side = Math.round(Math.sqrt(nS));
            const [r, c] = [Math.floor(o.cell / side), o.cell % side];
            for (let i = 0; i < nS; i++)
              if (Math.max(Math.abs(Math.floor(i / side) - r), Math.abs((i % side) - c)) > sight) f[i] = 0;
          }
          f[3 * nS + o.target] = 1;
          cache.set(key, f);
        }
        return f;
      },
    },
  };
}

/** FrozenLake's factory makes its envs at once; the lockstep loops below do not await. */
function makeEnv(envs: EnvFactory, task: Task): Env<unknown, unknown> {
  const env = envs.make(task);
  if (env instanceof Promise) throw new Error('the two-agent setting needs envs made synchronously');
  return env;
}

/** One executor run to do: a map, its env seed and executor stream, and the waypoint to follow. */
interface Job {
  map: MapViews;
  env: Env<unknown, unknown>;
  envSeed: number;
  rng: Rng;
  waypoint: number;
  /** Record the turns (a real episode) or only the outcome (a replay). */
  record: boolean;
}

interface ExecutorRun {
  success: boolean;
  return: number;
  steps: number;
  end: 'terminated' | 'truncated';
  failure: FailureKind | null;
  turns: Turn[];
  contexts: TurnContext<ExecutorObservation>[];
}

const NO_HISTORY: readonly never[] = [];

/** Runs the executor in lockstep over the jobs, each for at most `steps` steps. */
function runExecutor(executor: NeuralPolicy, jobs: readonly Job[], steps: number): ExecutorRun[] {
  const runs: ExecutorRun[] = [];
  const obs: ExecutorObservation[] = [];
  const reached: boolean[] = [];
  jobs.forEach((job, i) => {
    const cell = job.env.reset(job.envSeed) as number;
    reached[i] = cell === job.waypoint;
    obs[i] = { cell, target: reached[i] ? job.map.goal : job.waypoint };
    runs.push({
      success: false,
      return: 0,
      steps: 0,
      end: 'truncated',
      failure: null,
      turns: [],
      contexts: [],
    });
  });
  let live = jobs.map((_, i) => i);
  for (let t = 0; t < steps && live.length > 0; t++) {
    const ctxs: TurnContext<ExecutorObservation>[] = live.map((i) => ({
      observation: obs[i],
      history: NO_HISTORY,
      turn: t + 1,
      rng: jobs[i].rng,
      env: jobs[i].map.executor,
    }));
    const actions = executor.actBatch(ctxs as TurnContext<unknown>[]);
    const next: number[] = [];
    live.forEach((i, k) => {
      const job = jobs[i];
      const { action, logp } = actions[k];
      const r = job.env.step(action) as StepResult<number>;
      const run = runs[i];
      run.steps++;
      run.return += r.reward;
      if (job.record) {
        run.contexts.push(ctxs[k]);
        const info: StepInfo = { ...r.info, agent: 'executor', target: obs[i].target };
        run.turns.push({ t: t + 1, observation: obs[i].cell, action, reward: r.reward, logp, info });
      }
      if (r.terminated) {
        run.end = 'terminated';
        run.success = r.info.success === true;
        run.failure = run.success ? null : (r.info.failure ?? 'wrong-answer');
        return;
      }
      const cell = r.observation;
      if (!reached[i] && cell === job.waypoint) reached[i] = true;
      obs[i] = { cell, target: reached[i] ? job.map.goal : job.waypoint };
      next.push(i);
    });
    live = next;
  }
  for (const run of runs) if (run.end === 'truncated') run.failure = 'budget';
  return runs;
}

/** A planner unit or an executor unit of the loss. */
export interface Unit {
  ctx: TurnContext<unknown>;
  action: number;
  logpOld: number;
  advantage: number;
}

export interface PairEpisodeRecord {
  trajectory: Trajectory;
  waypoint: number;
  /** π(·|s) of the planner (absent when it is fixed). */
  probs?: Float64Array;
  plannerCtx: TurnContext<number>;
  executorContexts: TurnContext<ExecutorObservation>[];
  map: MapViews;
  envSeed: number;
  sample: number;
}

/** The streams of episode (runSeed, task, sample): the env's seed, the planner's and the executor's. */
function streams(runSeed: number, task: Task, sample: number) {
  return {
    envSeed: Rng.derive(runSeed, task.seed, sample, STREAM.env).uint32(),
    planner: Rng.derive(runSeed, task.seed, sample, STREAM.policy, PAIR_STREAM.planner),
    executor: () => Rng.derive(runSeed, task.seed, sample, STREAM.policy, PAIR_STREAM.executor),
  };
}

/** K episodes of the pair on each task, in lockstep: the planner's turn, then the executor's steps. */
export function rolloutPair(
  envs: EnvFactory,
  agents: Pick<PairAgents, 'planner' | 'executor'>,
  tasks: readonly Task[],
  samples: number,
  budget: number,
  runSeed: number,
  sight = 0,
): PairEpisodeRecord[] {
  const maps = tasks.map((task) => mapViews(envs, task, makeEnv(envs, task), sight));
  const jobs: Job[] = [];
  const planned: { ctx: TurnContext<number>; map: MapViews; sample: number; envSeed: number }[] = [];
  for (const map of maps) {
    for (let k = 0; k < samples; k++) {
      const s = streams(runSeed, map.task, k);
      const start = map.env.reset(s.envSeed) as number;
      planned.push({
        ctx: { observation: start, history: NO_HISTORY, turn: 0, rng: s.planner, env: map.planner },
        map,
        sample: k,
        envSeed: s.envSeed,
      });
    }
  }
  const planner = agents.planner;
  const choices =
    planner === null
      ? planned.map((p) => ({ action: p.map.goal, logp: 0 }))
      : planner.actBatch(planned.map((p) => p.ctx as TurnContext<unknown>));
  const probs = planner?.probsBatch(planned.map((p) => p.ctx as TurnContext<unknown>));
  planned.forEach((p, i) => {
    // Each episode its own env: replays and episodes of one map never share a state.
    const env = i % samples === 0 ? p.map.env : makeEnv(envs, p.map.task);
    jobs.push({
      map: p.map,
      env,
      envSeed: p.envSeed,
      rng: streams(runSeed, p.map.task, p.sample).executor(),
      waypoint: choices[i].action,
      record: true,
    });
  });
  const runs = runExecutor(agents.executor, jobs, budget - 1);
  return planned.map((p, i) => {
    const run = runs[i];
    const waypoint = choices[i].action;
    const plannerTurn: Turn = {
      t: 0,
      observation: p.ctx.observation,
      action: waypoint,
      reward: 0,
      logp: choices[i].logp,
      info: { agent: 'planner', step: false },
      ...(planner === null ? { forced: true } : {}),
    };
    const turns = [plannerTurn, ...run.turns];
    const outcome: Outcome = {
      success: run.success,
      return: run.return,
      turns: turns.length,
      firstSuccessTurn: run.success ? turns.length : null,
      end: run.end,
      failure: run.failure,
    };
    return {
      trajectory: {
        id: `pair${runSeed}-${p.map.task.seed}-${p.sample}`,
        task: p.map.task,
        policy: `pair(planner=${planner?.id ?? 'goal'}; executor=${agents.executor.id})`,
        budget,
        revealBudget: false,
        turns,
        outcome,
      },
      waypoint,
      probs: probs?.[i],
      plannerCtx: p.ctx,
      executorContexts: run.contexts,
      map: p.map,
      envSeed: p.envSeed,
      sample: p.sample,
    };
  });
}

/** R_i(w) for every waypoint w of every episode: the executor replayed under the episode's own streams. */
export function replayWaypoints(
  envs: EnvFactory,
  executor: NeuralPolicy,
  episodes: readonly PairEpisodeRecord[],
  budget: number,
  runSeed: number,
): { replays: Float64Array[]; steps: number } {
  const jobs: Job[] = [];
  for (const e of episodes) {
    const env = makeEnv(envs, e.map.task);
    for (let w = 0; w < e.map.nS; w++) {
      jobs.push({
        map: e.map,
        env,
        envSeed: e.envSeed,
        rng: streams(runSeed, e.map.task, e.sample).executor(),
        waypoint: w,
        record: false,
      });
    }
  }
  // Jobs of one episode share an env, so they run one waypoint after another in lockstep batches
  // of one job per episode: each batch resets its envs before it steps them.
  const replays = episodes.map((e) => new Float64Array(e.map.nS));
  let steps = 0;
  const nS = episodes[0]?.map.nS ?? 0;
  for (let w = 0; w < nS; w++) {
    const batch = episodes.map((_, i) => jobs[i * nS + w]);
    runExecutor(executor, batch, budget - 1).forEach((run, i) => {
      replays[i][w] = run.return;
      steps += run.steps;
    });
  }
  return { replays, steps };
}

/** What one iteration's credit and update read of an episode, in either two-agent setting (this file's
 * FrozenLake, pair-search.ts's search): the planner's choice and π, both agents' contexts, the turns. */
export interface PairTurns {
  choice: number;
  probs?: Float64Array;
  plannerCtx: TurnContext<unknown>;
  executorContexts: readonly TurnContext<unknown>[];
  trajectory: Trajectory;
}

/** The FrozenLake record as PairTurns: the choice is the waypoint. */
const asTurns = (r: PairEpisodeRecord): PairTurns => ({
  choice: r.waypoint,
  probs: r.probs,
  plannerCtx: r.plannerCtx as TurnContext<unknown>,
  executorContexts: r.executorContexts as TurnContext<unknown>[],
  trajectory: r.trajectory,
});

/** What credit/agents.ts needs of a group's episodes: the choice, the outcome, the replays, π. */
export function choiceEpisodes(
  group: readonly PairTurns[],
  replays?: readonly Float64Array[],
): PairEpisode[] {
  return group.map((r, k) => ({
    choice: r.choice,
    outcome: r.trajectory.outcome.return,
    replays: replays?.[k],
    probs: r.probs,
  }));
}

/** What credit/agents.ts needs of a group of FrozenLake episodes (the choice is the waypoint). */
export function pairEpisodes(
  group: readonly PairEpisodeRecord[],
  replays?: readonly Float64Array[],
): PairEpisode[] {
  return choiceEpisodes(group.map(asTurns), replays);
}

/** An agent being trained: its network and its optimiser. */
export interface Trainee {
  policy: NeuralPolicy;
  optimizer: Adam;
}

/** One iteration's credit, group by group, then the PPO-clip epochs of each trained agent (the
 * planner's first), with the entropy bonus decayed over the run. Returns what the metrics report. */
export function creditAndUpdate(
  episodes: readonly PairTurns[],
  replays: readonly Float64Array[] | undefined,
  o: {
    config: Pick<
      PairConfig,
      | 'groups'
      | 'groupSize'
      | 'iters'
      | 'entCoef'
      | 'seed'
      | 'epochs'
      | 'minibatches'
      | 'clipLow'
      | 'clipHigh'
    >;
    credit: AgentCredit;
    iter: number;
    planner?: Trainee;
    executor?: Trainee;
  },
): { plannerEntropy: number; executorEntropy: number; executorZeroAdvantage: number } {
  const { config, iter } = o;
  const plannerUnits: Unit[] = [];
  const executorUnits: Unit[] = [];
  for (let g = 0; g < config.groups; g++) {
    const from = g * config.groupSize;
    const group = episodes.slice(from, from + config.groupSize);
    const adv = pairCredit(choiceEpisodes(group, replays?.slice(from, from + config.groupSize)), o.credit);
    group.forEach((r, k) => {
      if (o.planner !== undefined)
        plannerUnits.push({
          ctx: r.plannerCtx,
          action: r.choice,
          logpOld: r.trajectory.turns[0].logp,
          advantage: adv.planner[k],
        });
      r.executorContexts.forEach((ctx, j) => {
        const turn = r.trajectory.turns[j + 1];
        executorUnits.push({
          ctx,
          action: turn.action as number,
          logpOld: turn.logp,
          advantage: adv.executor[k],
        });
      });
    });
  }
  const entCoef = config.entCoef * (1 - iter / config.iters);
  const update = (t: Trainee | undefined, units: Unit[], agent: number) =>
    t === undefined
      ? undefined
      : updateAgent(
          t.policy,
          t.optimizer,
          units,
          config,
          entCoef,
          Rng.derive(config.seed, PAIR_STREAM.update, agent, iter),
        );
  const pStats = update(o.planner, plannerUnits, 0);
  const eStats = update(o.executor, executorUnits, 1);
  return {
    plannerEntropy: pStats?.entropy ?? Number.NaN,
    executorEntropy: eStats?.entropy ?? Number.NaN,
    executorZeroAdvantage:
      executorUnits.filter((u) => u.advantage === 0).length / Math.max(1, executorUnits.length),
  };
}

/** The PPO-clip epochs of one agent over its units (turn-mean aggregation), as train/update.ts. */
export function updateAgent(
  policy: NeuralPolicy,
  optimizer: Adam,
  units: readonly Unit[],
  config: Pick<PairConfig, 'epochs' | 'minibatches' | 'clipLow' | 'clipHigh'>,
  entCoef: number,
  rng: Rng,
): { loss: number; entropy: number } {
  const N = units.length;
  if (N === 0) return { loss: 0, entropy: 0 };
  const order = Array.from({ length: N }, (_, i) => i);
  const size = Math.ceil(N / config.minibatches);
  let loss = 0;
  let entropy = 0;
  let steps = 0;
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    rng.shuffle(order);
    for (let start = 0; start < N; start += size) {
      const mb = order.slice(start, start + size).map((i) => units[i]);
      optimizer.zeroGrad();
      const logits = policy.logits(policy.encodeBatch(mb.map((u) => u.ctx)));
      const part = pgLoss(
        {
          n: mb.length,
          nA: policy.actions,
          logits: logits.data,
          actions: mb.map((u) => u.action),
          logpOld: mb.map((u) => u.logpOld),
          advantages: mb.map((u) => u.advantage),
          weights: mb.map(() => 1 / mb.length),
        },
        { clipLow: config.clipLow, clipHigh: config.clipHigh, klCoef: 0, entCoef },
      );
      backward(logits, Float32Array.from(part.dlogits));
      clipGradNorm(
        policy.net.namedParameters().map(([, t]) => t),
        1,
      );
      optimizer.step();
      loss += part.loss;
      entropy += part.entropy;
      steps++;
    }
  }
  return { loss: loss / steps, entropy: entropy / steps };
}

/** The namespaced metrics of one iteration, in either setting: `S`, the setting's statistics of the
 * planner's choices, stands after the rollout's. */
export type LoopMetrics<S> = { iter: number; 'rollout/success': number; 'rollout/turns': number } & S & {
    'planner/entropy': number;
    'executor/entropy': number;
    /** Env steps of the episodes, and of the counterfactual replays. */
    'env/steps': number;
    'env/replay_steps': number;
    /** Share of the executor's turns whose advantage is exactly 0 (no learning signal). */
    'executor/zero_adv': number;
    /** Share of episodes whose replays differ across choices: where the planner's choice changed the
     * outcome (counterfactual credit only; NaN otherwise). */
    'planner/pivotal': number;
  };

/** FrozenLake's: the share of waypoints on a hole, and on the start or the goal (no detour). */
export type PairMetrics = LoopMetrics<{ 'planner/hole': number; 'planner/direct': number }>;

/** What the loop below needs of a setting: its training tasks, its rollout and replays, its statistics. */
export interface PairSetting<R extends PairTurns, S> {
  task: (seed: number) => Task;
  rollout: (tasks: readonly Task[], runSeed: number) => R[];
  /** R_i(c) for every choice c of every episode, under the episode's own streams. */
  replay: (records: readonly R[], runSeed: number) => { replays: Float64Array[]; steps: number };
  choiceStats: (records: readonly R[]) => S;
}

/** The config fields the loop reads. */
export type LoopConfig = Pick<
  PairConfig,
  | 'credit'
  | 'iters'
  | 'groups'
  | 'groupSize'
  | 'lr'
  | 'epochs'
  | 'minibatches'
  | 'clipLow'
  | 'clipHigh'
  | 'entCoef'
  | 'seed'
>;

/** Trains a pair for config.iters iterations: collect → (replays) → credit → update, each iteration's
 * tasks and streams drawn from the run's seed. The planner is trained when it is a network and
 * `trainPlanner`; `onIter` sees each iteration's metrics (progress). */
export function pairLoop<R extends PairTurns, S>(
  setting: PairSetting<R, S>,
  config: LoopConfig,
  agents: {
    planner: NeuralPolicy | null;
    executor: NeuralPolicy;
    trainPlanner: boolean;
    trainExecutor: boolean;
  },
  onIter?: (m: LoopMetrics<S>) => void,
): { metrics: LoopMetrics<S>[]; envSteps: number; replaySteps: number; last: Trajectory[] } {
  const { planner, executor } = agents;
  const trainPlanner = agents.trainPlanner && planner !== null;
  const optP = trainPlanner ? new Adam(planner!.net.namedParameters(), { lr: config.lr }) : undefined;
  const optE = agents.trainExecutor ? new Adam(executor.net.namedParameters(), { lr: config.lr }) : undefined;
  // A fixed planner is not credited; its executor's per-agent group is then the whole group (one choice).
  const credit = !trainPlanner && config.credit === 'counterfactual' ? 'per-agent' : config.credit;
  const metrics: LoopMetrics<S>[] = [];
  let envSteps = 0;
  let replaySteps = 0;
  let last: Trajectory[] = [];
  for (let iter = 0; iter < config.iters; iter++) {
    // collect: G fresh tasks, K episodes each
    const pick = Rng.derive(config.seed, STREAM.task, PAIR_STREAM.iter, iter);
    const tasks = Array.from({ length: config.groups }, () => setting.task(pick.int(TRAIN_SEEDS)));
    const runSeed = Rng.derive(config.seed, PAIR_STREAM.iter, iter).uint32();
    const records = setting.rollout(tasks, runSeed);
    const steps = records.reduce((a, r) => a + r.trajectory.outcome.turns - 1, 0);
    envSteps += steps;
    // replays (counterfactual credit of a trained planner)
    let replays: Float64Array[] | undefined;
    let iterReplaySteps = 0;
    if (trainPlanner && config.credit === 'counterfactual') {
      const r = setting.replay(records, runSeed);
      replays = r.replays;
      iterReplaySteps = r.steps;
      replaySteps += r.steps;
    }
    // credit and update
    const stats = creditAndUpdate(records, replays, {
      config,
      credit,
      iter,
      planner: optP === undefined ? undefined : { policy: planner!, optimizer: optP },
      executor: optE === undefined ? undefined : { policy: executor, optimizer: optE },
    });
    const m = {
      iter,
      'rollout/success': records.filter((r) => r.trajectory.outcome.success).length / records.length,
      'rollout/turns': records.reduce((a, r) => a + r.trajectory.outcome.turns, 0) / records.length,
      ...setting.choiceStats(records),
      'planner/entropy': stats.plannerEntropy,
      'executor/entropy': stats.executorEntropy,
      'env/steps': steps,
      'env/replay_steps': iterReplaySteps,
      'executor/zero_adv': stats.executorZeroAdvantage,
      'planner/pivotal':
        replays === undefined
          ? Number.NaN
          : replays.filter((r) => Math.min(...r) !== Math.max(...r)).length / replays.length,
    } as LoopMetrics<S>;
    metrics.push(m);
    onIter?.(m);
    if (iter === config.iters - 1) last = records.map((r) => r.trajectory);
  }
  return { metrics, envSteps, replaySteps, last };
}

/** What the planner's choices on some episodes were. */
function waypointStats(records: readonly PairEpisodeRecord[]) {
  let hole = 0;
  let direct = 0;
  for (const r of records) {
    const f = r.map.planner.features!(0);
    if (f[r.waypoint] === 1) hole++;
    if (r.waypoint === r.map.goal || r.waypoint === r.plannerCtx.observation) direct++;
  }
  return { hole: hole / records.length, direct: direct / records.length };
}

export interface PairRunResult {
  agents: PairAgents;
  metrics: PairMetrics[];
  /** Env steps over the run: the episodes', and the replays' (counterfactual only). */
  envSteps: number;
  replaySteps: number;
  /** The last iteration's episodes (both agents' turns). */
  last: Trajectory[];
}

/** Trains the pair for config.iters iterations; `onIter` sees each iteration's metrics (progress). */
export function trainPair(
  envs: EnvFactory,
  config: PairConfig,
  agents: PairAgents,
  onIter?: (m: PairMetrics) => void,
): PairRunResult {
  type Turns = PairTurns & { record: PairEpisodeRecord };
  const records = (rs: readonly Turns[]) => rs.map((r) => r.record);
  const setting: PairSetting<Turns, { 'planner/hole': number; 'planner/direct': number }> = {
    task: (seed) => pairTask(config, seed),
    rollout: (tasks, runSeed) =>
      rolloutPair(envs, agents, tasks, config.groupSize, config.budget, runSeed, config.sight).map((r) => ({
        ...asTurns(r),
        record: r,
      })),
    replay: (rs, runSeed) => replayWaypoints(envs, agents.executor, records(rs), config.budget, runSeed),
    choiceStats: (rs) => {
      const ws = waypointStats(records(rs));
      return { 'planner/hole': ws.hole, 'planner/direct': ws.direct };
    },
  };
  return { agents, ...pairLoop(setting, config, agents, onIter) };
}

export interface PairEvaluation {
  episodes: number;
  success: number;
  turns: number;
  /** Share of waypoints on a hole; on the start or the goal. */
  hole: number;
  direct: number;
  /** The exact bound: the mean over the held-out maps of V*_{T−1}(start), the best any executor (and so
   * any pair) can do in T − 1 steps. */
  optimal: number;
  trajectories: Trajectory[];
}

/** The pair on held-out maps (task seeds from HELD_OUT_SEED), both agents sampling. */
export function evaluatePair(
  envs: EnvFactory,
  config: Pick<PairConfig, 'size' | 'p' | 'slippery' | 'budget' | 'sight'>,
  agents: Pick<PairAgents, 'planner' | 'executor'>,
  maps: number,
  samples: number,
  runSeed: number,
): PairEvaluation {
  const tasks = Array.from({ length: maps }, (_, i) => pairTask(config, HELD_OUT_SEED + i));
  const records = rolloutPair(envs, agents, tasks, samples, config.budget, runSeed, config.sight);
  const ts = records.map((r) => r.trajectory);
  let optimal = 0;
  for (let g = 0; g < maps; g++) {
    const r = records[g * samples];
    const oracle = r.map.env.oracle?.();
    if (oracle === undefined) throw new Error('frozenlake has an oracle');
    optimal += oracle.v(config.budget - 1, oracle.state(r.plannerCtx.observation));
  }
  const ws = waypointStats(records);
  return {
    episodes: ts.length,
    success: ts.filter((t) => t.outcome.success).length / ts.length,
    turns: ts.reduce((a, t) => a + t.outcome.turns, 0) / ts.length,
    hole: ws.hole,
    direct: ws.direct,
    optimal: optimal / maps,
    trajectories: ts,
  };
}
