// The budget study (issue 7): what did multi-turn RL really improve? On slippery FrozenLake random
// maps with exact oracles:
//   1. tasks: training maps and disjoint held-out maps (config.seeds);
//   2. base: a neural policy behaviour-cloned from a good but imperfect expert's rollouts (train/bc);
//   3. RL (fixed budget) and BudgetMix (mixed budgets), optionally GiGPO, from the injected trainer;
//   4. on the held-out maps, for every policy: Pass@(K,T) sampled (eval/evaluate, prefix mode) and
//      exact (dynamic programming per map), RL − base paired; step quality at normal and error states;
//      recovery from error states; NLL and LLR; failure kinds; and the trainer's training curves;
//   5. the findings (findings.ts).
// The library never prints: progress goes through callbacks. Every random choice derives from
// config.seed, so the same config gives the same summary (timings excepted).
import { InputError } from '../../core/errors.ts';
import type { Oracle, Policy, Task } from '../../core/types.ts';
import { envConfig, envSpec, makeEnv, makeTasks } from '../../envs/index.ts';
import { bootstrapPassKT } from '../../eval/bootstrap.ts';
import { type PassRun, runPassCounts } from '../../eval/evaluate.ts';
import { exactPolicyValues } from '../../eval/exact.ts';
import { type Failures, failures } from '../../eval/failures.ts';
import { LIKELIHOOD_NOTE, likelihood } from '../../eval/likelihood.ts';
import { passKT } from '../../eval/passkt.ts';
import { recovery } from '../../eval/recovery.ts';
import { collectStates, makeErrorStates, type State, turnsLeft } from '../../eval/states.ts';
import { type PairFigures, stepQuality } from '../../eval/step-quality.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../policies/neural.ts';
import { makePolicy } from '../../policies/spec.ts';
import { collectDemonstrations, trainBc } from '../../train/bc.ts';
import type { BudgetSchedule } from '../../train/schedule.ts';
import { parseStudyConfig, type StudyConfig } from './config.ts';
import { budgetFindings, type Measurements } from './findings.ts';
import { MemoPolicy } from './memo.ts';
import { bootstrapRatios, bootstrapSeries, passFromSuccess, STUDY_KEY, windowTrend } from './stats.ts';
import {
  finiteOrNull,
  intervalOf,
  type PassGrid,
  type RecoveryFigure,
  type StepQualityFigure,
  type Summary,
} from './summary.ts';
import type { RlRequest, RlResult, RlTrainer } from './trainer.ts';

type AnyPolicy = Policy<unknown, unknown>;
export type Variant = 'rl' | 'budgetmix' | 'gigpo';
export type StudyStage = 'base' | Variant | 'evaluation' | 'diagnostics';

export interface StudyProgress {
  stage: StudyStage;
  done: number;
  total: number;
}

export interface StudyOptions {
  trainer: RlTrainer;
  /** Progress within a stage (BC epochs, training iterations, evaluated episodes, diagnostics). */
  onProgress?: (p: StudyProgress) => void;
  /** A stage begins (for a log line). */
  onStage?: (stage: StudyStage, detail: string) => void;
}

export interface StudyResult {
  summary: Summary;
  policies: { base: NeuralPolicy } & Partial<Record<Variant, NeuralPolicy>> &
    Record<'rl' | 'budgetmix', NeuralPolicy>;
}

const now = () => performance.now() / 1000;

/** A copy of every parameter value, to check afterwards that the trainer did not touch the base. */
function fingerprint(p: NeuralPolicy): Float32Array[] {
  return p.net.namedParameters().map(([, t]) => t.data.slice());
}

function unchanged(p: NeuralPolicy, saved: readonly Float32Array[]): boolean {
  const now_ = p.net.namedParameters();
  return now_.every(
    ([, t], i) => t.data.length === saved[i].length && t.data.every((x, j) => Object.is(x, saved[i][j])),
  );
}

function checkResult(r: RlResult, base: NeuralPolicy, name: string, iters: number): void {
  if (!(r?.policy instanceof NeuralPolicy))
    throw new Error(`trainer (${name}): the result holds no NeuralPolicy`);
  const a = r.policy.config;
  const b = base.config;
  if (a.features !== b.features || a.actions !== b.actions) {
    throw new Error(`trainer (${name}): the trained policy does not fit the env (features/actions changed)`);
  }
  if (!Array.isArray(r.curves) || r.curves.length > iters) {
    throw new Error(
      `trainer (${name}): curves must be an array of at most ${iters} points, one per iteration`,
    );
  }
}

/** Success within each T of a policy on one map, exactly (V^π_T at the start cells). */
function exactByT(task: Task, policy: AnyPolicy, T: readonly number[]): Float64Array {
  const env = makeEnv(task);
  const oracle = env.oracle?.() as Oracle<unknown> | undefined;
  const Tmax = T[T.length - 1];
  const values = exactPolicyValues(env, policy, Tmax, policy.budgetAware);
  if (oracle === undefined || values === undefined) throw new Error(`no exact values for ${policy.id}`);
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += values.V[t * values.nS + s];
    return v / oracle.starts.length;
  });
}

function optimalByT(task: Task, T: readonly number[]): Float64Array {
  const oracle = makeEnv(task).oracle!() as Oracle<unknown>;
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += oracle.v(t, s);
    return v / oracle.starts.length;
  });
}

const meanOf = (xs: readonly Float64Array[], j: number) => xs.reduce((a, x) => a + x[j], 0) / xs.length;
const nullGrid = (g: readonly (readonly number[])[]) => g.map((row) => row.map(finiteOrNull));
const ciGrid = (g: readonly (readonly (readonly [number, number])[])[]) =>
  g.map((row) => row.map(intervalOf));

export async function runBudgetStudy(input: StudyConfig, o: StudyOptions): Promise<StudyResult> {
  const config = parseStudyConfig(input);
  const t0 = now();
  const timings: Record<string, number> = {};
  const stage = (s: StudyStage, detail: string) => o.onStage?.(s, detail);
  const progress = (s: StudyStage, done: number, total: number) => o.onProgress?.({ stage: s, done, total });
  const { seed } = config;
  const { K, T, samples, diagnosticSamples, resamples } = config.eval;
  const Tmax = T[T.length - 1];
  const boot = { resamples, seed };

  // 1. Tasks.
  const env = envConfig('frozenlake', {
    random: true,
    size: config.env.size,
    p: config.env.p,
    slippery: config.env.slippery,
  });
  const train = makeTasks(env, config.seeds.train.count, config.seeds.train.start);
  const test = makeTasks(env, config.seeds.test.count, config.seeds.test.start);
  const spec = envSpec(train[0]);
  const expert = makePolicy(config.base.expert, spec, 'config.base.expert');

  // 2. Base: behaviour cloning on the expert's own rollouts (soft targets: its whole distribution).
  let t = now();
  stage('base', `behaviour cloning of ${expert.id} on ${train.length} training maps`);
  const base = new NeuralPolicy(
    mlpPolicyConfig(spec, { hidden: config.base.hidden, seed, budgetAware: false }, 'config.base'),
    'base',
  );
  const demos = collectDemonstrations({
    tasks: train,
    expert,
    student: base,
    budget: config.base.budget,
    episodesPerTask: config.base.episodesPerTask,
    runSeed: seed,
    targets: 'probs',
  });
  if (demos.n === 0)
    throw InputError.raw('config.base.expert', 'the expert took no turns on the training maps');
  const bc = trainBc(base, demos, {
    epochs: config.base.epochs,
    batchSize: config.base.batchSize,
    lr: config.base.lr,
    weightDecay: 0,
    seed,
    onEpoch: (e) => progress('base', e, config.base.epochs),
  });
  timings.bc = now() - t;

  // 3. RL, BudgetMix (and GiGPO) from the injected trainer.
  const schedules: [Variant, BudgetSchedule][] = [
    ['rl', { kind: 'fixed', budget: config.rl.budget }],
    ['budgetmix', { kind: 'mix', budgets: [...config.budgetmix.budgets] }],
  ];
  if (config.rl.gigpo) schedules.push(['gigpo', { kind: 'fixed', budget: config.rl.budget }]);
  const trained: Partial<Record<Variant, RlResult>> = {};
  for (const [name, budget] of schedules) {
    t = now();
    stage(
      name,
      `${name}: ${config.rl.iters} iterations of ${config.rl.groupsPerIter} groups × ${config.rl.groupSize}`,
    );
    const saved = fingerprint(base);
    const req: RlRequest = {
      name,
      base,
      trainTasks: train,
      budget,
      revealBudget: false,
      iters: config.rl.iters,
      groupSize: config.rl.groupSize,
      groupsPerIter: config.rl.groupsPerIter,
      seed,
      onProgress: (i, n) => progress(name, i, n),
    };
    const result = await o.trainer(req);
    if (!unchanged(base, saved))
      throw new Error(`trainer (${name}) modified the base policy; it must train a copy`);
    checkResult(result, base, name, config.rl.iters);
    trained[name] = result;
    timings[name] = now() - t;
  }
  const names: ('base' | Variant)[] = ['base', ...schedules.map(([n]) => n)];
  const networks: Record<string, NeuralPolicy> = { base };
  for (const [n] of schedules) networks[n] = trained[n]!.policy;
  // Memoised views: the same actions, log-probs and draws as the networks, one forward per (map, state).
  const memo: Record<string, MemoPolicy> = {};
  for (const n of names) memo[n] = new MemoPolicy(networks[n], n);

  // 4a. Pass@(K,T): sampled (prefix mode, like `turnwise eval`) and exact.
  t = now();
  stage('evaluation', `Pass@(K,T) on ${test.length} held-out maps × ${samples} samples per policy`);
  const runs: Record<string, PassRun> = {};
  const failed: Record<string, Failures> = {};
  const total = names.length * test.length * samples;
  for (const [i, n] of names.entries()) {
    runs[n] = await runPassCounts({
      tasks: test,
      samples,
      T,
      policy: memo[n],
      runSeed: seed,
      keep: true,
      onProgress: (done) => progress('evaluation', i * test.length * samples + done, total),
    });
    failed[n] = failures(runs[n].atTmax.map((r) => r.trajectory));
    // The diagnostics use the first diagnosticSamples episodes per map of the base and RL; the rest
    // would only hold memory (runs are task-major, sample-minor).
    runs[n].atTmax =
      n === 'base' || n === 'rl' ? runs[n].atTmax.filter((_, e) => e % samples < diagnosticSamples) : [];
  }
  const sampledGrid = (ci: [number, number][][], n: string): PassGrid => ({
    K: [...K],
    T: [...T],
    passKT: nullGrid(passKT(runs[n].counts, K)),
    ci95: ciGrid(ci),
  });
  const bootRl = bootstrapPassKT([runs.rl.counts, runs.base.counts], K, boot);
  const bootMix = bootstrapPassKT([runs.budgetmix.counts, runs.base.counts], K, boot);
  const bootGigpo = trained.gigpo ? bootstrapPassKT([runs.gigpo.counts], K, boot) : undefined;
  const diffOf = (a: string, b: string) => {
    const pa = passKT(runs[a].counts, K);
    const pb = passKT(runs[b].counts, K);
    return nullGrid(pa.map((row, k) => row.map((x, j) => x - pb[k][j])));
  };

  // Exact success within each T per map; Pass@(K,T) per map = 1 − (1 − p)^K.
  const exact: Record<string, Float64Array[]> = {};
  for (const n of names) exact[n] = test.map((task) => exactByT(task, memo[n], T));
  const nK = K.length;
  const nT = T.length;
  const width = nK * nT;
  const perMap = (p: Float64Array[]) => {
    const out = new Float64Array(p.length * width);
    p.forEach((row, i) => {
      K.forEach((k, a) => {
        for (let j = 0; j < nT; j++) out[i * width + a * nT + j] = passFromSuccess(row[j], k);
      });
    });
    return out;
  };
  // One bootstrap over maps for every policy, so that the differences between them are paired.
  const coef = (plus: string, minus: string) => names.map((n) => (n === plus ? 1 : n === minus ? -1 : 0));
  const ex = bootstrapSeries(
    names.map((n) => perMap(exact[n])),
    test.length,
    width,
    [coef('rl', 'base'), coef('budgetmix', 'base'), coef('budgetmix', 'rl')],
    { ...boot, key: STUDY_KEY.maps },
  );
  const toGrid = (mean: number[], ci: readonly [number, number][]): PassGrid => ({
    K: [...K],
    T: [...T],
    passKT: K.map((_, a) => T.map((_, j) => finiteOrNull(mean[a * nT + j]))),
    ci95: K.map((_, a) => T.map((_, j) => intervalOf(ci[a * nT + j]))),
  });
  const exactGrid = (n: string) => {
    const s = names.indexOf(n as 'base' | Variant);
    return toGrid(ex.mean[s], ex.ci[s]);
  };
  // The shrink contrast per K: [RL − base](K, T_tight) − [RL − base](K, T_train), per map, same resamples.
  const jTight = 0;
  const jTrain = T.indexOf(config.rl.budget);
  const rlMap = perMap(exact.rl);
  const baseMap = perMap(exact.base);
  const shrinkSeries = new Float64Array(test.length * nK);
  for (let i = 0; i < test.length; i++) {
    for (let a = 0; a < nK; a++) {
      const at = (j: number) => rlMap[i * width + a * nT + j] - baseMap[i * width + a * nT + j];
      shrinkSeries[i * nK + a] = at(jTight) - at(jTrain);
    }
  }
  const shrink = bootstrapSeries([shrinkSeries], test.length, nK, [], { ...boot, key: STUDY_KEY.maps });
  const optimal = test.map((task) => optimalByT(task, T));
  const expertExact = test.map((task) => exactByT(task, expert, T));
  const random = makePolicy('random', spec);
  const randomExact = test.map((task) => exactByT(task, random, T));
  timings.evaluation = now() - t;

  // 4b. Diagnostics at T_max, on states from the base's and RL's own trajectories (as `compare`).
  t = now();
  stage('diagnostics', `step quality, recovery and likelihood at T=${Tmax}`);
  const pools = [runs.base.atTmax, runs.rl.atTmax];
  const { states: nStates, actions, continuations } = config.eval;
  const sq = async (states: readonly State[], key: number): Promise<StepQualityFigure> => {
    const exactScore = new Float64Array(states.length);
    const drawnScore = new Float64Array(states.length);
    const q = await stepQuality(states, memo.rl, memo.base, {
      actions,
      seed,
      key,
      onState: (i, drawn: PairFigures, ex_: PairFigures | null) => {
        drawnScore[i] = drawn.score;
        exactScore[i] = ex_?.score ?? Number.NaN;
      },
    });
    const b = bootstrapSeries([exactScore, drawnScore], states.length, 1, [], {
      ...boot,
      key: STUDY_KEY.states + 10 * key,
    });
    return {
      value: finiteOrNull(q.exact?.score),
      ci95: intervalOf(b.ci[0][0]),
      rlBetter: finiteOrNull(q.exact?.aBetter),
      ties: finiteOrNull(q.exact?.ties),
      baseBetter: finiteOrNull(q.exact?.bBetter),
      regretRl: finiteOrNull(q.exact?.regretA),
      regretBase: finiteOrNull(q.exact?.regretB),
      states: q.states,
      sampled: { value: finiteOrNull(q.score), ci95: intervalOf(b.ci[1][0]) },
    };
  };
  const normalStates = collectStates(pools, nStates, seed);
  const normal = await sq(normalStates, 0);
  progress('diagnostics', 1, 4);
  const errors = await makeErrorStates(pools, nStates, seed);
  const error = await sq(errors.states, 1);
  progress('diagnostics', 2, 4);

  // Recovery: sampled continuations (eval/recovery) and the exact continuation values at the same states.
  const variants = names.filter((n) => n !== 'base');
  const recs: Record<string, Awaited<ReturnType<typeof recovery>>> = {};
  for (const n of variants) {
    recs[n] = await recovery(errors.states, memo[n], memo.base, { continuations, seed, resamples });
  }
  const exactValuesCache = new Map<string, Map<Task, Float64Array>>();
  const exactAt = (n: string, state: State): number => {
    let byTask = exactValuesCache.get(n);
    if (byTask === undefined) {
      byTask = new Map();
      exactValuesCache.set(n, byTask);
    }
    const env = makeEnv(state.task);
    const oracle = env.oracle!() as Oracle<unknown>;
    let V = byTask.get(state.task);
    if (V === undefined) {
      V = exactPolicyValues(env, memo[n], Tmax, memo[n].budgetAware)!.V;
      byTask.set(state.task, V);
    }
    return V[turnsLeft(state) * oracle.nS + oracle.state(state.observation)];
  };
  const recExact = bootstrapSeries(
    names.map((n) => Float64Array.from(errors.states, (st) => exactAt(n, st))),
    errors.states.length,
    1,
    [coef('rl', 'base'), coef('budgetmix', 'base')],
    { ...boot, key: STUDY_KEY.states + 5 },
  );
  const recoverySide = (n: string): RecoveryFigure => {
    const s = names.indexOf(n as 'base' | Variant);
    const c = n === 'base' ? recs.rl.b : recs[n].a;
    return {
      value: finiteOrNull(c.success),
      ci95: intervalOf(c.ci95),
      exact: finiteOrNull(recExact.mean[s][0]),
      exactCi95: intervalOf(recExact.ci[s][0]),
    };
  };
  const recDiff = (n: string, j: number): RecoveryFigure => ({
    value: finiteOrNull(recs[n].diff),
    ci95: intervalOf(recs[n].diffCi95),
    exact: finiteOrNull(recExact.contrasts[j].mean[0]),
    exactCi95: intervalOf(recExact.contrasts[j].ci[0]),
  });
  progress('diagnostics', 3, 4);

  // Likelihood: the global figures from eval/likelihood, intervals by resampling maps (per-map calls).
  const trajectoriesOf = (n: string) => runs[n].atTmax.map((r) => r.trajectory);
  const rlTraj = trajectoriesOf('rl');
  const baseTraj = trajectoriesOf('base');
  const lik = (await likelihood(rlTraj, baseTraj, memo.rl, memo.base))!;
  const m = test.length;
  const sums = {
    nllB: new Float64Array(m),
    nllR: new Float64Array(m),
    llrR: new Float64Array(m),
    llrB: new Float64Array(m),
  };
  const counts = {
    nllB: new Float64Array(m),
    nllR: new Float64Array(m),
    llrR: new Float64Array(m),
    llrB: new Float64Array(m),
  };
  for (let i = 0; i < m; i++) {
    const part = (await likelihood(
      rlTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      baseTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      memo.rl,
      memo.base,
    ))!;
    const put = (key: keyof typeof sums, mean: number | null, finite: number) => {
      counts[key][i] = mean === null ? 0 : finite;
      sums[key][i] = mean === null ? 0 : mean * finite;
    };
    put('nllB', part.nllAunderB, part.actions.a - part.infinite.nllAunderB);
    put('nllR', part.nllAunderA, part.actions.a - part.infinite.nllAunderA);
    put('llrR', part.llrSuccessA, part.successful.a - part.infinite.llrSuccessA);
    put('llrB', part.llrSuccessB, part.successful.b - part.infinite.llrSuccessB);
  }
  const ratio = (key: keyof typeof sums) => ({ sums: sums[key], counts: counts[key] });
  const nllCi = bootstrapRatios([ratio('nllB'), ratio('nllR')], boot);
  const llrCi = bootstrapRatios([ratio('llrR'), ratio('llrB')], boot);
  const figure = (value: number | null, ci95: readonly [number, number], n: number, infinite: number) => ({
    value: finiteOrNull(value),
    ci95: intervalOf(ci95),
    n,
    infinite,
  });
  progress('diagnostics', 4, 4);
  timings.diagnostics = now() - t;

  // Training curves and their trends (last quarter − first quarter).
  const window = Math.max(1, Math.floor(config.rl.iters / 4));
  const curve = (key: 'trajectoryReward' | 'stepReward') =>
    Object.fromEntries(
      variants.map((n) => [
        n,
        trained[n as Variant]!.curves.map((p) => ({ iter: p.iter, value: finiteOrNull(p[key]) })),
      ]),
    ) as Record<'rl' | 'budgetmix', { iter: number; value: number | null }[]> & {
      gigpo?: { iter: number; value: number | null }[];
    };
  const trend = Object.fromEntries(
    variants.map((n, v) => {
      const c = trained[n as Variant]!.curves;
      const tr = (key: 'trajectoryReward' | 'stepReward', k: number) => {
        const w = windowTrend(
          c.map((p) => p[key]),
          window,
          { ...boot, key: 10 * v + k },
        );
        return {
          first: finiteOrNull(w.first),
          last: finiteOrNull(w.last),
          value: finiteOrNull(w.value),
          ci95: intervalOf(w.ci),
        };
      };
      return [n, { trajectoryReward: tr('trajectoryReward', 0), stepReward: tr('stepReward', 1) }];
    }),
  );

  const byPolicy = <X>(f: (n: string) => X) =>
    Object.fromEntries(names.map((n) => [n, f(n)])) as Record<'base' | 'rl' | 'budgetmix', X> & { gigpo?: X };

  const measured: Measurements = {
    study: 'budget',
    version: 1,
    config,
    env: { env: env.env, params: env.params },
    policies: {
      expert: expert.id,
      base: `${base.id}: MLP ${[base.inputs, ...base.config.hidden, base.actions].join('→')} behaviour-cloned from ${expert.id}`,
      rl: trained.rl!.policy.id,
      budgetmix: trained.budgetmix!.policy.id,
      ...(trained.gigpo ? { gigpo: trained.gigpo.policy.id } : {}),
    },
    base: {
      parameters: base.parameterCount(),
      examples: demos.n,
      expertTurns: demos.turns,
      expertEpisodeSuccess: finiteOrNull(demos.expertSuccess),
      bcLoss: bc.losses.map(finiteOrNull),
    },
    reference: {
      T: [...T],
      optimal: T.map((_, j) => finiteOrNull(meanOf(optimal, j))),
      expert: T.map((_, j) => finiteOrNull(meanOf(expertExact, j))),
      random: T.map((_, j) => finiteOrNull(meanOf(randomExact, j))),
    },
    passKT: {
      base: sampledGrid(bootRl.ci[1], 'base'),
      rl: sampledGrid(bootRl.ci[0], 'rl'),
      budgetmix: sampledGrid(bootMix.ci[0], 'budgetmix'),
      ...(bootGigpo ? { gigpo: sampledGrid(bootGigpo.ci[0], 'gigpo') } : {}),
      diff: diffOf('rl', 'base'),
      diffCi95: ciGrid(bootRl.diffCi!),
      budgetmixDiff: diffOf('budgetmix', 'base'),
      budgetmixDiffCi95: ciGrid(bootMix.diffCi!),
      mode: [...new Set(names.map((n) => runs[n].mode))].join(', '),
      samples,
      tasks: test.length,
    },
    exactPassKT: {
      base: exactGrid('base'),
      rl: exactGrid('rl'),
      budgetmix: exactGrid('budgetmix'),
      ...(trained.gigpo ? { gigpo: exactGrid('gigpo') } : {}),
      diff: toGrid(ex.contrasts[0].mean, ex.contrasts[0].ci),
      budgetmixDiff: toGrid(ex.contrasts[1].mean, ex.contrasts[1].ci),
      budgetmixVsRl: toGrid(ex.contrasts[2].mean, ex.contrasts[2].ci),
      shrink: {
        Ttight: T[jTight],
        Ttrain: T[jTrain],
        byK: K.map((k, a) => ({
          K: k,
          value: finiteOrNull(shrink.mean[0][a]),
          ci95: intervalOf(shrink.ci[0][a]),
        })),
      },
    },
    stepQuality: {
      normal,
      error,
      errorStates: { attempts: errors.attempts, noBadAction: errors.noBadAction, terminal: errors.terminal },
      budget: Tmax,
    },
    recovery: {
      base: recoverySide('base'),
      rl: recoverySide('rl'),
      budgetmix: recoverySide('budgetmix'),
      ...(trained.gigpo ? { gigpo: recoverySide('gigpo') } : {}),
      rlMinusBase: recDiff('rl', 0),
      budgetmixMinusBase: recDiff('budgetmix', 1),
      states: errors.states.length,
      continuations,
    },
    likelihood: {
      nllRlUnderBase: figure(
        lik.nllAunderB,
        nllCi.ci[0],
        lik.actions.a - lik.infinite.nllAunderB,
        lik.infinite.nllAunderB,
      ),
      nllRlUnderRl: figure(
        lik.nllAunderA,
        nllCi.ci[1],
        lik.actions.a - lik.infinite.nllAunderA,
        lik.infinite.nllAunderA,
      ),
      llrSuccessRl: figure(
        lik.llrSuccessA,
        llrCi.ci[0],
        lik.successful.a - lik.infinite.llrSuccessA,
        lik.infinite.llrSuccessA,
      ),
      llrSuccessBase: figure(
        lik.llrSuccessB,
        llrCi.ci[1],
        lik.successful.b - lik.infinite.llrSuccessB,
        lik.infinite.llrSuccessB,
      ),
      llrGap: { value: finiteOrNull(llrCi.diff), ci95: intervalOf(llrCi.diffCi) },
      uniformNll: Math.log(typeof spec.actions === 'number' ? spec.actions : 1),
      note: LIKELIHOOD_NOTE,
    },
    curves: {
      trajectoryReward: curve('trajectoryReward'),
      stepReward: curve('stepReward'),
      window,
      trend,
    },
    failures: byPolicy((n) => failed[n]),
  };
  const findings = budgetFindings(measured);
  const seconds = now() - t0;
  timings.study = seconds - schedules.reduce((a, [n]) => a + timings[n], 0);
  const summary: Summary = { ...measured, findings, timings, seconds };
  return {
    summary,
    policies: {
      base,
      rl: networks.rl,
      budgetmix: networks.budgetmix,
      ...(networks.gigpo ? { gigpo: networks.gigpo } : {}),
    },
  };
}
