// Two agents, one outcome, on the search env (docs/two-agent.md "On search"): a planner reads the
// question and decomposes it — it writes how many lookups (hops) the answer takes, n ∈ {1, 2, 3} — and
// an executor makes the calls, one of the choice variant's offered calls a turn (envs/search/choice.ts),
// until it answers. The plan is the executor's sub-goal count: its progress feature (feature 9 of every
// slot, documents opened / (2·hops)) is computed with the planner's n instead of the hops the question
// states, so a plan too short makes it answer with an intermediate entity and a plan too long makes it
// keep searching past the answer. The outcome (the right answer within the budget) is shared, and the
// pair is trained from it with the credits of credit/agents.ts, as on FrozenLake (train/pair.ts):
// shared, per-agent group baselines, or the counterfactual, every episode replayed with each of the
// three plans under its own streams (the env's seed — which draws the offers — and the executor's).
//
// What the planner reads: the question as a bag of words hashed into QUESTION_BUCKETS counts (/3) —
// never the level or the hops, which it has to infer from the phrasing ("the birthplace of the author
// of …"). Either agent may be fixed: the planner to the question's stated hops (`level`: the single-
// agent choice env's own feature), to a constant plan, or to a network of an earlier run.
//
// The budget counts both agents' turns: turn 0 is the planner's, turns 1 … T−1 the executor's calls.
// A trajectory records both: the planner's turn has the question as its observation and the plan's
// index (n − 1) as its action, `info.agent = "planner"`, `info.step = false`, `info.plan = n`; each
// executor turn has the env's text view (the question, the last result, the calls offered by number)
// and the slot chosen, `info.agent = "executor"` and `info.plan`, beside the env's own info (tool,
// clues, …).
import { Rng, STREAM } from '../core/rng.ts';
import type {
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
import type { AgentCredit } from '../credit/agents.ts';

import { mlpPolicyConfig, NeuralPolicy } from '../policies/neural.ts';
import { HELD_OUT_SEED, type LoopMetrics, PAIR_STREAM, type PairTurns, pairLoop } from './pair.ts';

/** The plans: the planner's action a means n = a + 1 hops. */
export const PLANS = 3;
/** The planner's input: the question's words hashed into this many counts. */
export const QUESTION_BUCKETS = 64;
/** An observation of the search env's choice variant, as read here. */
export interface ChoiceObservation {
  /** Features of the offered calls, slot by slot. */
  features: number[];
}

/** One episode's env: the search env's choice variant (envs/search/choice.ts), as read here. */
export interface ChoiceEnv {
  /** Calls offered a turn. */
  readonly k: number;
  /** Documents the episode has opened. */
  readonly opened: number;
  reset(seed: number): ChoiceObservation;
  step(action: number): StepResult<ChoiceObservation>;
  text(o: ChoiceObservation): string;
  close(): void;
}

/** What the setting needs of the search env, handed in by the composition layer as FrozenLake's pair
 * gets its EnvFactory (train/ does not reach envs/): envs/search's `searchPairEnvs`. */
export interface SearchPairEnvs {
  /** A task's env, its choice variant. */
  make(task: Task): ChoiceEnv;
  question(task: Task): string;
  /** The question's hops. */
  level(task: Task): number;
  /** The words of a text, as the env's search reads them. */
  tokens(text: string): string[];
  /** Calls offered a turn, features per call, and the index of the progress feature (documents opened /
   * (2·hops)) among a call's features. */
  slots: number;
  slotFeatures: number;
  progress: number;
}

export type SearchLevelParam = 1 | 2 | 3 | 'mixed';

export interface SearchPairConfig {
  /** The questions' hops (mixed: drawn per task). */
  level: SearchLevelParam;
  /** T: the planner's turn and T − 1 executor calls. */
  budget: number;
  credit: AgentCredit;
  iters: number;
  /** Questions per iteration, and episodes per question (the group). */
  groups: number;
  groupSize: number;
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

export const SEARCH_PAIR_DEFAULTS: Omit<SearchPairConfig, 'credit'> = {
  level: 'mixed',
  budget: 12,
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

/** A fixed planner: the question's stated hops, or a constant plan n. */
export type FixedPlan = 'level' | 1 | 2 | 3;

/** The two agents: the planner a network or fixed; each trained or not. */
export interface SearchPairAgents {
  planner: NeuralPolicy | FixedPlan;
  executor: NeuralPolicy;
  trainPlanner: boolean;
  trainExecutor: boolean;
}

export function searchPairTask(level: SearchLevelParam, seed: number): Task {
  return { env: 'search', params: { level, mode: 'choose' }, seed };
}

/** The planner chooses among the plans from the question's hashed words; the executor among the offered
 * calls from their features (the progress feature counted against the plan). */
export function searchPairSpecs(envs: SearchPairEnvs): { planner: EnvSpec; executor: EnvSpec } {
  const base = { oracle: false, snapshots: false } as const;
  return {
    planner: { ...base, id: 'search-planner', actions: PLANS, features: QUESTION_BUCKETS },
    executor: {
      ...base,
      id: 'search-executor',
      actions: envs.slots,
      features: envs.slots * envs.slotFeatures,
    },
  };
}

/** Fresh networks for both agents (the executor's seed one above the planner's). */
export function freshSearchAgents(envs: SearchPairEnvs, hidden: readonly number[], seed: number) {
  const specs = searchPairSpecs(envs);
  return {
    planner: new NeuralPolicy(mlpPolicyConfig(specs.planner, { hidden, seed }), `planner:mlp:seed=${seed}`),
    executor: new NeuralPolicy(
      mlpPolicyConfig(specs.executor, { hidden, seed: seed + 1 }),
      `executor:mlp:seed=${seed + 1}`,
    ),
  };
}

/** FNV-1a of a word, into QUESTION_BUCKETS. */
function bucket(word: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    h ^= word.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % QUESTION_BUCKETS;
}

/** What the planner reads: the question's words, hashed, each bucket's count / 3. */
export function questionFeatures(envs: SearchPairEnvs, question: string): Float32Array {
  const f = new Float32Array(QUESTION_BUCKETS);
  for (const w of envs.tokens(question)) f[bucket(w)] += 1 / 3;
  return f;
}

/** The executor's input at an observation under plan n: the env's slot features with the progress
 * feature (documents opened / (2·hops)) counted against n instead of the question's hops. */
export function executorFeatures(
  envs: SearchPairEnvs,
  env: ChoiceEnv,
  o: ChoiceObservation,
  n: number,
): Float32Array {
  const f = Float32Array.from(o.features);
  for (let s = 0; s < env.k; s++) f[s * envs.slotFeatures + envs.progress] = env.opened / (2 * n);
  return f;
}

/** The planner's view (the question) and the executor's (its observation carries its own input, computed
 * when it was seen). */
function views(envs: SearchPairEnvs) {
  const specs = searchPairSpecs(envs);
  const planner: EnvView<string> = { spec: specs.planner, features: (q) => questionFeatures(envs, q) };
  const executor: EnvView<{ x: Float32Array }> = { spec: specs.executor, features: (o) => o.x };
  return { planner, executor };
}

const NO_HISTORY: readonly never[] = [];

/** The streams of episode (runSeed, task, sample): the env's seed, the planner's and the executor's. */
function streams(runSeed: number, task: Task, sample: number) {
  return {
    envSeed: Rng.derive(runSeed, task.seed, sample, STREAM.env).uint32(),
    planner: Rng.derive(runSeed, task.seed, sample, STREAM.policy, PAIR_STREAM.planner),
    executor: () => Rng.derive(runSeed, task.seed, sample, STREAM.policy, PAIR_STREAM.executor),
  };
}

/** One executor run to do: a task, its env seed and executor stream, and the plan to follow. */
interface Job {
  task: Task;
  envSeed: number;
  rng: Rng;
  plan: number;
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
  contexts: TurnContext<{ x: Float32Array }>[];
}

/** Runs the executor in lockstep over the jobs (one env each), each for at most `steps` calls. */
function runExecutor(
  factory: SearchPairEnvs,
  executor: NeuralPolicy,
  jobs: readonly Job[],
  steps: number,
): ExecutorRun[] {
  const view = views(factory).executor;
  const envs = jobs.map((j) => factory.make(j.task));
  const obs = jobs.map((j, i) => envs[i].reset(j.envSeed));
  const runs: ExecutorRun[] = jobs.map(() => ({
    success: false,
    return: 0,
    steps: 0,
    end: 'truncated',
    failure: null,
    turns: [],
    contexts: [],
  }));
  let live = jobs.map((_, i) => i);
  for (let t = 0; t < steps && live.length > 0; t++) {
    const ctxs: TurnContext<{ x: Float32Array }>[] = live.map((i) => ({
      observation: { x: executorFeatures(factory, envs[i], obs[i], jobs[i].plan) },
      history: NO_HISTORY,
      turn: t + 1,
      rng: jobs[i].rng,
      env: view,
    }));
    const actions = executor.actBatch(ctxs as TurnContext<unknown>[]);
    const next: number[] = [];
    live.forEach((i, k) => {
      const { action, logp } = actions[k];
      const before = jobs[i].record ? envs[i].text(obs[i]) : '';
      const r = envs[i].step(action);
      const run = runs[i];
      run.steps++;
      run.return += r.reward;
      if (jobs[i].record) {
        run.contexts.push(ctxs[k]);
        const info: StepInfo = { ...r.info, agent: 'executor', plan: jobs[i].plan };
        run.turns.push({ t: t + 1, observation: before, action, reward: r.reward, logp, info });
      }
      if (r.terminated) {
        run.end = 'terminated';
        run.success = r.info.success === true;
        run.failure = run.success ? null : (r.info.failure ?? 'wrong-answer');
        return;
      }
      obs[i] = r.observation;
      next.push(i);
    });
    live = next;
  }
  for (const run of runs) if (run.end === 'truncated') run.failure = 'budget';
  for (const env of envs) env.close();
  return runs;
}

/** One episode: what credit and the update read (PairTurns: the plan's index n − 1 is the choice), and
 * what a replay needs. */
export interface SearchPairRecord extends PairTurns {
  /** The question's hops. */
  level: number;
  task: Task;
  envSeed: number;
  sample: number;
}

const plannerName = (p: NeuralPolicy | FixedPlan) =>
  p instanceof NeuralPolicy ? p.id : p === 'level' ? 'level' : `plan=${p}`;

/** K episodes of the pair on each task: the planner's turn, then the executor's calls in lockstep. */
export function rolloutSearchPair(
  envs: SearchPairEnvs,
  agents: Pick<SearchPairAgents, 'planner' | 'executor'>,
  tasks: readonly Task[],
  samples: number,
  budget: number,
  runSeed: number,
): SearchPairRecord[] {
  const planned: { ctx: TurnContext<string>; task: Task; level: number; sample: number; envSeed: number }[] =
    [];
  const plannerView = views(envs).planner;
  for (const task of tasks) {
    const question = envs.question(task);
    for (let k = 0; k < samples; k++) {
      const s = streams(runSeed, task, k);
      planned.push({
        ctx: { observation: question, history: NO_HISTORY, turn: 0, rng: s.planner, env: plannerView },
        task,
        level: envs.level(task),
        sample: k,
        envSeed: s.envSeed,
      });
    }
  }
  const { planner } = agents;
  const ctxs = planned.map((p) => p.ctx as TurnContext<unknown>);
  const choices =
    planner instanceof NeuralPolicy
      ? planner.actBatch(ctxs)
      : planned.map((p) => ({ action: (planner === 'level' ? p.level : planner) - 1, logp: 0 }));
  const probs = planner instanceof NeuralPolicy ? planner.probsBatch(ctxs) : undefined;
  const jobs: Job[] = planned.map((p, i) => ({
    task: p.task,
    envSeed: p.envSeed,
    rng: streams(runSeed, p.task, p.sample).executor(),
    plan: choices[i].action + 1,
    record: true,
  }));
  const runs = runExecutor(envs, agents.executor, jobs, budget - 1);
  const policy = `pair(planner=${plannerName(planner)}; executor=${agents.executor.id})`;
  return planned.map((p, i) => {
    const run = runs[i];
    const choice = choices[i].action;
    const plannerTurn: Turn = {
      t: 0,
      observation: p.ctx.observation,
      action: choice,
      reward: 0,
      logp: choices[i].logp,
      info: { agent: 'planner', step: false, plan: choice + 1 },
      ...(planner instanceof NeuralPolicy ? {} : { forced: true }),
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
        id: `pair${runSeed}-${p.task.seed}-${p.sample}`,
        task: p.task,
        policy,
        budget,
        revealBudget: false,
        turns,
        outcome,
      },
      choice,
      level: p.level,
      probs: probs?.[i],
      plannerCtx: p.ctx as TurnContext<unknown>,
      executorContexts: run.contexts as TurnContext<unknown>[],
      task: p.task,
      envSeed: p.envSeed,
      sample: p.sample,
    };
  });
}

/** R_i(n) for every plan n of every episode: the executor replayed under the episode's own streams. */
export function replayPlans(
  envs: SearchPairEnvs,
  executor: NeuralPolicy,
  episodes: readonly SearchPairRecord[],
  budget: number,
  runSeed: number,
): { replays: Float64Array[]; steps: number } {
  const replays = episodes.map(() => new Float64Array(PLANS));
  let steps = 0;
  for (let a = 0; a < PLANS; a++) {
    const jobs = episodes.map((e) => ({
      task: e.task,
      envSeed: e.envSeed,
      rng: streams(runSeed, e.task, e.sample).executor(),
      plan: a + 1,
      record: false,
    }));
    runExecutor(envs, executor, jobs, budget - 1).forEach((run, i) => {
      replays[i][a] = run.return;
      steps += run.steps;
    });
  }
  return { replays, steps };
}

/** The planner's plans against the questions' hops: exact, too short, too long (shares). */
function planStats(records: readonly SearchPairRecord[]) {
  let exact = 0;
  let short = 0;
  for (const r of records) {
    if (r.choice + 1 === r.level) exact++;
    else if (r.choice + 1 < r.level) short++;
  }
  const n = records.length;
  return { exact: exact / n, short: short / n, long: (n - exact - short) / n };
}

/** The namespaced metrics of one iteration: the shares of plans equal to, below and above the
 * question's hops stand where FrozenLake's waypoint statistics do. */
export type SearchPairMetrics = LoopMetrics<{
  'planner/exact': number;
  'planner/short': number;
  'planner/long': number;
}>;

export interface SearchPairRunResult {
  agents: SearchPairAgents;
  metrics: SearchPairMetrics[];
  envSteps: number;
  replaySteps: number;
  last: Trajectory[];
}

/** Trains the pair for config.iters iterations; `onIter` sees each iteration's metrics (progress). */
export function trainSearchPair(
  envs: SearchPairEnvs,
  config: SearchPairConfig,
  agents: SearchPairAgents,
  onIter?: (m: SearchPairMetrics) => void,
): SearchPairRunResult {
  const net = agents.planner instanceof NeuralPolicy ? agents.planner : null;
  const run = pairLoop(
    {
      task: (seed) => searchPairTask(config.level, seed),
      rollout: (tasks, runSeed) =>
        rolloutSearchPair(envs, agents, tasks, config.groupSize, config.budget, runSeed),
      replay: (records, runSeed) => replayPlans(envs, agents.executor, records, config.budget, runSeed),
      choiceStats: (records) => {
        const ps = planStats(records);
        return { 'planner/exact': ps.exact, 'planner/short': ps.short, 'planner/long': ps.long };
      },
    },
    config,
    { ...agents, planner: net },
    onIter,
  );
  return { agents, ...run };
}

export interface SearchPairEvaluation {
  episodes: number;
  success: number;
  turns: number;
  /** Shares of plans equal to, below and above the question's hops. */
  exact: number;
  short: number;
  long: number;
  /** The bound: the share of held-out questions whose gold path (2·hops + 1 calls, the useful call is
   * always offered) fits in the T − 1 executor turns. */
  bound: number;
  trajectories: Trajectory[];
}

/** The pair on held-out questions (task seeds from HELD_OUT_SEED), both agents sampling. */
export function evaluateSearchPair(
  envs: SearchPairEnvs,
  config: Pick<SearchPairConfig, 'level' | 'budget'>,
  agents: Pick<SearchPairAgents, 'planner' | 'executor'>,
  questions: number,
  samples: number,
  runSeed: number,
): SearchPairEvaluation {
  const tasks = Array.from({ length: questions }, (_, i) => searchPairTask(config.level, HELD_OUT_SEED + i));
  const records = rolloutSearchPair(envs, agents, tasks, samples, config.budget, runSeed);
  const ts = records.map((r) => r.trajectory);
  const fits = tasks.filter((t) => 2 * envs.level(t) + 1 <= config.budget - 1).length;
  const ps = planStats(records);
  return {
    episodes: ts.length,
    success: ts.filter((t) => t.outcome.success).length / ts.length,
    turns: ts.reduce((a, t) => a + t.outcome.turns, 0) / ts.length,
    ...ps,
    bound: fits / questions,
    trajectories: ts,
  };
}
