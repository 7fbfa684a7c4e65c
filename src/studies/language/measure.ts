// The measurements of one language run (a world and a seed): every quantity the budget study measures,
// by sampling (a text policy's action distribution is not a table: Pass@(K,T) is sampled with intervals
// over tasks, step quality from drawn actions), on the same held-out tasks and with the same episode
// seeds for every policy (common random numbers):
//   pass         Pass@(K,T) of base, RL, BudgetMix and the base at its best τ; the paired differences
//                with bootstrap intervals over tasks and one-sided p-values (lead-reverses)
//   stepQuality  win rate of RL over the base at normal states, error states and their pre-error states:
//                exact Q* where the env has an oracle (FrozenLake), else the env's per-turn proxy
//   recovery     continuation success from error states and from their pre-error states, both policies
//   likelihood   NLL of RL's actions under the base and LLR of successful trajectories (per action with
//                intervals over tasks; per token and per trajectory, the paper's units, as points)
//   curves       RL's training curves: trajectory reward and the per-turn quality signal, first vs last
// Every interval resamples tasks (or states) with streams of its own; the library never prints.
import { isBatched } from '../../core/policy.ts';
import { Rng, STREAM } from '../../core/rng.ts';
import type { EnvFactory, EnvSpec, Policy, Task, Trajectory, TurnContext } from '../../core/types.ts';
import { bootstrapMeans, type Interval, percentileInterval } from '../../eval/bootstrap.ts';
import { runPassCounts } from '../../eval/evaluate.ts';
import { type Failures, failures } from '../../eval/failures.ts';
import { likelihood } from '../../eval/likelihood.ts';
import type { PassCounts } from '../../eval/passkt.ts';
import {
  canInjectDetours,
  canInjectErrors,
  collectStates,
  makeErrorStates,
  type Recorded,
  type State,
} from '../../eval/states.ts';
import { stepProxy, stepProxyAt } from '../../eval/step-proxy.ts';
import { stepQuality } from '../../eval/step-quality.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { closeEnv, runLockstep } from '../../rollout/lockstep.ts';
import { holm } from '../budget/stats.ts';
import type { Sizes } from './design.ts';

type AnyPolicy = Policy<unknown, unknown>;

export interface Est {
  value: number | null;
  ci95: [number | null, number | null];
}

export const POLICY_ROLES = ['base', 'rl', 'budgetmix', 'baseTau'] as const;
export type Role = (typeof POLICY_ROLES)[number];

export interface PassMeasure {
  K: number[];
  T: number[];
  /** Pass@(K,T) of each policy: value[k][j]. */
  of: Record<Role, number[][]>;
  /** Paired differences with their intervals and the one-sided p-value of "difference ≥ 0". */
  diff: Record<'rlBase' | 'mixBase' | 'mixRl' | 'rlBaseTau', (Est & { pNonNeg: number | null })[][]>;
  /** At the paper's K (8, else the largest): [RL − base at the tightest T] − [RL − base at T_max], paired
   * per task, with its interval over tasks (lead-shrinks). */
  shrink: Est;
  /** Invalid outputs per turn at T_max, per policy. */
  invalid: Record<Role, number>;
  failures: Record<'base' | 'rl', Failures>;
}

export interface StepMeasure {
  /** 'exact': Q* from the env's oracle; 'proxy': the env's info.quality. */
  signal: 'exact' | 'proxy';
  /** RL's win rate over the base, P(better) + ½P(tie), mean over states with an interval over states. */
  normal: Est & { states: number; ties: number | null };
  error: Est & { states: number };
  preError: Est & { states: number };
  /** win(error) − win(pre-error), paired per error state. */
  contrast: Est & { pairs: number };
  /** How the error states were made. */
  errors: { attempts: number; made: number; noBadAction: number; terminal: number; belowThreshold: number };
}

export interface RecoveryMeasure {
  states: number;
  continuations: number;
  /** Continuation success from the error states and from their pre-error states. */
  rl: { error: Est; preError: Est };
  base: { error: Est; preError: Est };
  /** (RL − base at error states) − (RL − base at pre-error states), paired per state. */
  did: Est;
}

export interface LikelihoodMeasure {
  /** Base's NLL of RL's actions ÷ base's NLL of its own actions (per action), interval over tasks. */
  nllRatio: Est;
  nllRlUnderBase: number | null;
  nllBaseUnderBase: number | null;
  nllRlUnderRl: number | null;
  /** Mean cumulative LLR log π_RL − log π_base of the base's successes, interval over tasks. */
  llrSuccessBase: Est;
  llrSuccessRl: number | null;
  successes: { base: number; rl: number };
  /** The paper's units, as points over all trajectories (eval/likelihood's perToken, perTrajectory). */
  perToken: Record<
    'nllRlUnderBase' | 'nllRlUnderRl' | 'nllBaseUnderBase' | 'llrSuccessRl' | 'llrSuccessBase',
    number | null
  > | null;
  perTrajectory: Record<'nllRlUnderBase' | 'nllRlUnderRl' | 'nllBaseUnderBase', number | null> | null;
}

export interface CurveMeasure {
  iterations: number;
  window: number;
  /** The quality signal read: rollout/step_quality (exact Q* ÷ V*) or rollout/step_proxy. */
  signal: string | null;
  reward: { first: number | null; last: number | null } & Est;
  step: { first: number | null; last: number | null } & Est;
}

export interface LanguageMeasurements {
  pass: PassMeasure;
  stepQuality: StepMeasure;
  recovery: RecoveryMeasure | null;
  likelihood: LikelihoodMeasure;
  curves: CurveMeasure;
}

/** Streams of this module's bootstrap resamples and draws (beside eval's and the budget study's). */
const KEY = { pass: 301, states: 302, step: 303, recovery: 304, likelihood: 305, curves: 306 } as const;

const finite = (x: number | null | undefined): number | null =>
  x === null || x === undefined || !Number.isFinite(x) ? null : x;
const est = (value: number, ci: Interval): Est => ({
  value: finite(value),
  ci95: [finite(ci[0]), finite(ci[1])],
});

/** Unbiased per-task Pass@K within T[j]: 1 − C(n−c, K) / C(n, K). */
function taskPass(counts: PassCounts, K: number, j: number, task: number): number {
  const n = counts.n[task];
  const c = counts.c[task * counts.T.length + j];
  if (n - c < K) return 1;
  let q = 1;
  for (let i = 0; i < K; i++) q *= (n - c - i) / (n - i);
  return 1 - q;
}

/** Mean of per-task values, its percentile interval, and the one-sided bootstrap p-value of "the mean
 * is < 0" — (1 + #{resampled means ≥ 0}) / (R + 1), the budget study's pNonNeg — resampling tasks. */
function bootTasks(
  values: Float64Array,
  resamples: number,
  seed: number,
  key: number[],
): Est & { pNonNeg: number | null } {
  const m = values.length;
  if (m === 0) return { value: null, ci95: [null, null], pNonNeg: null };
  let sum = 0;
  for (const v of values) sum += v;
  const means = new Float64Array(resamples);
  let nonNeg = 0;
  for (let r = 0; r < resamples; r++) {
    const rng = Rng.derive(seed, STREAM.eval, KEY.pass, ...key, r);
    let s = 0;
    for (let i = 0; i < m; i++) s += values[rng.int(m)];
    means[r] = s / m;
    if (means[r] >= 0) nonNeg++;
  }
  return { ...est(sum / m, percentileInterval(means)), pNonNeg: (1 + nonNeg) / (resamples + 1) };
}

export interface PassRunOf {
  counts: PassCounts;
  atTmax: Recorded[];
  invalid: number;
  failures: Failures;
}

/** Pass@(K,T) of the four policies on the same tasks and episode seeds; RL's and the base's runs keep
 * their trajectories at T_max (the pools every diagnostic draws from). */
export async function measurePass(
  envs: EnvFactory,
  tasks: readonly Task[],
  policies: Record<Role, AnyPolicy>,
  o: { K: number[]; T: number[]; samples: number; seed: number; resamples: number },
  onProgress: (role: Role, done: number, total: number) => void,
): Promise<{ pass: PassMeasure; runs: Record<Role, PassRunOf> }> {
  const runs = {} as Record<Role, PassRunOf>;
  for (const role of POLICY_ROLES) {
    const run = await runPassCounts({
      envs,
      tasks,
      samples: o.samples,
      T: o.T,
      policy: policies[role],
      mode: 'prefix',
      runSeed: o.seed,
      keep: role === 'base' || role === 'rl',
      onProgress: (d, n) => onProgress(role, d, n),
    });
    runs[role] = {
      counts: run.counts,
      atTmax: run.atTmax,
      invalid: run.invalid.turns > 0 ? run.invalid.invalid / run.invalid.turns : 0,
      failures: run.failures,
    };
  }
  const nTasks = tasks.length;
  const grid = (role: Role) =>
    o.K.map((K) =>
      o.T.map((_, j) => {
        let s = 0;
        for (let i = 0; i < nTasks; i++) s += taskPass(runs[role].counts, K, j, i);
        return s / nTasks;
      }),
    );
  const pairs = {
    rlBase: ['rl', 'base'],
    mixBase: ['budgetmix', 'base'],
    mixRl: ['budgetmix', 'rl'],
    rlBaseTau: ['rl', 'baseTau'],
  } as const;
  const diff = {} as PassMeasure['diff'];
  for (const [name, [a, b]] of Object.entries(pairs) as [keyof typeof pairs, readonly [Role, Role]][]) {
    diff[name] = o.K.map((K, k) =>
      o.T.map((_, j) => {
        const d = new Float64Array(nTasks);
        for (let i = 0; i < nTasks; i++)
          d[i] = taskPass(runs[a].counts, K, j, i) - taskPass(runs[b].counts, K, j, i);
        return bootTasks(d, o.resamples, o.seed, [Object.keys(pairs).indexOf(name), k, j]);
      }),
    );
  }
  const kPaper = o.K.includes(8) ? 8 : o.K[o.K.length - 1];
  const last = o.T.length - 1;
  const shrink = new Float64Array(nTasks);
  for (let i = 0; i < nTasks; i++) {
    const lead = (j: number) =>
      taskPass(runs.rl.counts, kPaper, j, i) - taskPass(runs.base.counts, kPaper, j, i);
    shrink[i] = lead(0) - lead(last);
  }
  const { pNonNeg: _p, ...shrinkEst } = bootTasks(shrink, o.resamples, o.seed, [99]);
  const of = Object.fromEntries(POLICY_ROLES.map((r) => [r, grid(r)])) as Record<Role, number[][]>;
  const invalid = Object.fromEntries(POLICY_ROLES.map((r) => [r, runs[r].invalid])) as Record<Role, number>;
  return {
    pass: {
      K: o.K,
      T: o.T,
      of,
      diff,
      shrink: shrinkEst,
      invalid,
      failures: { base: runs.base.failures, rl: runs.rl.failures },
    },
    runs,
  };
}

/** The pre-error partner of an error state: the same trajectory before its forced turn, with the env
 * as it was there (`preSnapshot`). */
export function preErrorOf(state: State): State {
  const forced = state.history[state.history.length - 1];
  return {
    task: state.task,
    observation: forced.observation,
    history: state.history.slice(0, -1),
    budget: state.budget,
    from: state.from,
    snapshot: state.preSnapshot,
  };
}

function meanEst(values: readonly number[], resamples: number, seed: number, key: number[]): Est {
  if (values.length === 0) return { value: null, ci95: [null, null] };
  const b = bootstrapMeans([Float64Array.from(values)], {
    resamples,
    seed: Rng.derive(seed, STREAM.eval, ...key).uint32(),
  });
  return est(b.mean[0], b.ci[0]);
}

/** Paired difference of two per-state series over the states where both are defined (NaN left out). */
function pairedEst(
  x: readonly number[],
  y: readonly number[],
  resamples: number,
  seed: number,
  key: number[],
): Est & { pairs: number } {
  const keep = x.map((_, i) => i).filter((i) => Number.isFinite(x[i]) && Number.isFinite(y[i]));
  if (keep.length === 0) return { value: null, ci95: [null, null], pairs: 0 };
  const b = bootstrapMeans([Float64Array.from(keep, (i) => x[i]), Float64Array.from(keep, (i) => y[i])], {
    resamples,
    seed: Rng.derive(seed, STREAM.eval, ...key).uint32(),
  });
  return { ...est(b.diff ?? Number.NaN, b.diffCi ?? [Number.NaN, Number.NaN]), pairs: keep.length };
}

/** Step quality and the error states, and recovery from them (see the file header). */
export async function measureSteps(
  envs: EnvFactory,
  pools: { rl: Recorded[]; base: Recorded[] },
  policies: { rl: AnyPolicy; base: AnyPolicy },
  sizes: Sizes,
  seed: number,
  onPart: (part: string) => void,
): Promise<{ step: StepMeasure; recovery: RecoveryMeasure | null }> {
  const both = [pools.rl, pools.base];
  const probe = await envs.make(pools.rl[0]?.trajectory.task ?? pools.base[0].trajectory.task);
  const exact = canInjectErrors(probe);
  const detours = !exact && canInjectDetours(probe);
  await closeEnv(probe);
  const R = sizes.resamples;
  const M = sizes.actions;
  onPart('step quality at normal states');
  // Per state: RL's win rate over the base (NaN where no pair was scored).
  const normalWin: number[] = [];
  const normalTies: number[] = [];
  if (exact) {
    const states = collectStates(both, sizes.states, seed);
    await stepQuality(envs, states, policies.rl, policies.base, {
      actions: M,
      seed,
      key: 0,
      relTie: 0.01,
      onState: (_, f) => {
        normalWin.push(f.score);
        normalTies.push(f.ties);
      },
    });
  } else {
    await stepProxy(
      envs,
      { a: pools.rl, b: pools.base },
      both,
      { a: policies.rl, b: policies.base },
      {
        states: sizes.states,
        actions: M,
        seed,
        onState: (_, f) => {
          normalWin.push(f.score);
          normalTies.push(f.ties);
        },
      },
    );
  }
  onPart('error states');
  const made =
    exact || detours
      ? await makeErrorStates(envs, both, sizes.states, seed, exact ? { minRelRegret: 0.1 } : {})
      : null;
  const errors = made?.states ?? [];
  const winAt = async (states: readonly State[], pre: boolean, key: number): Promise<number[]> => {
    const win = new Array<number>(states.length).fill(Number.NaN);
    if (exact) {
      await stepQuality(envs, pre ? states.map(preErrorOf) : states, policies.rl, policies.base, {
        actions: M,
        seed,
        key,
        relTie: 0.01,
        onState: (i, f) => {
          win[i] = f.score;
        },
      });
    } else {
      await stepProxyAt(
        envs,
        states,
        { a: policies.rl, b: policies.base },
        {
          actions: M,
          seed,
          key,
          pre,
          onState: (i, f) => {
            win[i] = f.score;
          },
        },
      );
    }
    return win;
  };
  const winError = await winAt(errors, false, 3);
  const winPre = await winAt(errors, true, 4);
  const defined = (xs: number[]) => xs.filter(Number.isFinite);
  const step: StepMeasure = {
    signal: exact ? 'exact' : 'proxy',
    normal: {
      ...meanEst(defined(normalWin), R, seed, [KEY.step, 0]),
      states: defined(normalWin).length,
      ties: normalTies.length > 0 ? normalTies.reduce((a, b) => a + b, 0) / normalTies.length : null,
    },
    error: { ...meanEst(defined(winError), R, seed, [KEY.step, 1]), states: defined(winError).length },
    preError: { ...meanEst(defined(winPre), R, seed, [KEY.step, 2]), states: defined(winPre).length },
    contrast: pairedEst(winError, winPre, R, seed, [KEY.step, 3]),
    errors: {
      attempts: made?.attempts ?? 0,
      made: errors.length,
      noBadAction: made?.noBadAction ?? 0,
      terminal: made?.terminal ?? 0,
      belowThreshold: made?.belowThreshold ?? 0,
    },
  };
  if (errors.length === 0) return { step, recovery: null };
  onPart('recovery');
  const rates = {
    rl: {
      error: await continuations(envs, errors, policies.rl, sizes.continuations, seed, 0),
      preError: await continuations(envs, errors.map(preErrorOf), policies.rl, sizes.continuations, seed, 1),
    },
    base: {
      error: await continuations(envs, errors, policies.base, sizes.continuations, seed, 0),
      preError: await continuations(
        envs,
        errors.map(preErrorOf),
        policies.base,
        sizes.continuations,
        seed,
        1,
      ),
    },
  };
  const gainError = rates.rl.error.map((x, i) => x - rates.base.error[i]);
  const gainPre = rates.rl.preError.map((x, i) => x - rates.base.preError[i]);
  const recovery: RecoveryMeasure = {
    states: errors.length,
    continuations: sizes.continuations,
    rl: {
      error: meanEst(rates.rl.error, R, seed, [KEY.recovery, 0]),
      preError: meanEst(rates.rl.preError, R, seed, [KEY.recovery, 1]),
    },
    base: {
      error: meanEst(rates.base.error, R, seed, [KEY.recovery, 2]),
      preError: meanEst(rates.base.preError, R, seed, [KEY.recovery, 3]),
    },
    did: pairedEst(gainError, gainPre, R, seed, [KEY.recovery, 4]),
  };
  return { step, recovery };
}

/** Continuation success from each state (its env restored from `snapshot`), `R` continuations each;
 * continuation k of state e has the same env stream for every policy (common random numbers). A batched
 * policy (the transformer) plays them all in lockstep, one actBatch per turn — the same episodes, byte
 * for byte, as one at a time (rollout/lockstep.ts), without a forward per episode and turn. */
async function continuations(
  envs: EnvFactory,
  states: readonly State[],
  policy: AnyPolicy,
  R: number,
  seed: number,
  key: number,
): Promise<number[]> {
  const options = (i: number) => {
    const e = Math.floor(i / R);
    const k = i % R;
    const st = states[e];
    return {
      id: `recovery-${key}-${e}-${k}`,
      task: st.task,
      budget: st.budget,
      revealBudget: policy.budgetAware,
      envSeed: Rng.derive(seed, STREAM.eval, KEY.recovery, key, e, k, 0).uint32(),
      rng: Rng.derive(seed, STREAM.eval, KEY.recovery, key, e, k, 1),
      from: { snapshot: st.snapshot, observation: st.observation, history: st.history },
    };
  };
  const wins = new Array<number>(states.length).fill(0);
  if (isBatched(policy)) {
    const run = runLockstep({
      total: states.length * R,
      width: 256,
      policy,
      makeEnv: (i) => envs.make(states[Math.floor(i / R)].task),
      episodeOptions: options,
      emit: (i, tr) => {
        if (tr.outcome.success) wins[Math.floor(i / R)]++;
      },
    });
    if (run instanceof Promise) await run;
    return wins.map((w) => w / R);
  }
  for (let i = 0; i < states.length * R; i++) {
    const env = await envs.make(states[Math.floor(i / R)].task);
    try {
      const run = runEpisode(env, policy, options(i));
      const tr = run instanceof Promise ? await run : run;
      if (tr.outcome.success) wins[Math.floor(i / R)]++;
    } finally {
      await closeEnv(env);
    }
  }
  return wins.map((w) => w / R);
}

/** What the likelihood reads of a text policy to name the forward it scores: its prompt and an
 * action's tokens (the transformer policy's). */
interface TokenScored {
  prompt(ctx: TurnContext<unknown>): { tokens: number[] };
  actionTokens(spec: EnvSpec, action: unknown): number[] | undefined;
}

/**
 * The same policy whose logProb remembers each score by the tokens it scores — the turn's prompt and
 * the action as the policy writes it, which determine the forward and so the score, bit for bit — so
 * that the per-task likelihood calls reuse the teacher-forced forwards of the call over all
 * trajectories (the same turns) instead of running each again. Other policies are returned as they are.
 */
export function rememberingScores(policy: AnyPolicy): AnyPolicy {
  const logProb = policy.logProb?.bind(policy);
  const t = policy as Partial<TokenScored>;
  if (logProb === undefined || typeof t.prompt !== 'function' || typeof t.actionTokens !== 'function')
    return policy;
  const { prompt, actionTokens } = t as TokenScored;
  const memo = new Map<string, number | Promise<number>>();
  const wrapped = Object.create(policy) as AnyPolicy;
  wrapped.logProb = (ctx, action) => {
    const act = actionTokens.call(policy, ctx.env.spec, action);
    if (act === undefined) return logProb(ctx, action);
    const key = `${prompt.call(policy, ctx).tokens.join(',')}|${act.join(',')}`;
    let score = memo.get(key);
    if (score === undefined) {
      score = logProb(ctx, action);
      memo.set(key, score);
    }
    return score;
  };
  return wrapped;
}

/** NLL and LLR (see LikelihoodMeasure): one eval/likelihood call over all trajectories for the points,
 * one per task for the ratio estimators' intervals (resampling tasks) — the same turns, each scored
 * once (rememberingScores). */
export async function measureLikelihood(
  envs: EnvFactory,
  pools: { rl: Recorded[]; base: Recorded[] },
  policies: { rl: AnyPolicy; base: AnyPolicy },
  tasks: number,
  samples: number,
  resamples: number,
  seed: number,
): Promise<LikelihoodMeasure> {
  const traj = (rs: Recorded[]) => rs.map((r) => r.trajectory);
  const rl = rememberingScores(policies.rl);
  const base = rememberingScores(policies.base);
  const all = (await likelihood(envs, traj(pools.rl), traj(pools.base), rl, base))!;
  // Per task: Σ and count of the finite terms of each figure (a ratio estimator over tasks).
  const series = () => ({ sums: new Float64Array(tasks), counts: new Float64Array(tasks) });
  const nllRB = series();
  const nllBB = series();
  const llrB = series();
  for (let i = 0; i < tasks; i++) {
    const part = (await likelihood(
      envs,
      traj(pools.rl.slice(i * samples, (i + 1) * samples)),
      traj(pools.base.slice(i * samples, (i + 1) * samples)),
      rl,
      base,
    ))!;
    const put = (s: ReturnType<typeof series>, mean: number | null, n: number) => {
      s.counts[i] = mean === null ? 0 : n;
      s.sums[i] = mean === null ? 0 : mean * n;
    };
    put(nllRB, part.nllAunderB, part.actions.a - part.infinite.nllAunderB);
    put(nllBB, part.nllBunderB, part.actions.b - part.infinite.nllBunderB);
    put(llrB, part.llrSuccessB, part.successful.b - part.infinite.llrSuccessB);
  }
  // The ratio (Σ nllRB / Σ nRB) / (Σ nllBB / Σ nBB) and the mean Σ llrB / Σ nB, resampling tasks.
  const ratioAt = (idx: (i: number) => number) => {
    let a = 0;
    let na = 0;
    let b = 0;
    let nb = 0;
    let l = 0;
    let nl = 0;
    for (let i = 0; i < tasks; i++) {
      const t = idx(i);
      a += nllRB.sums[t];
      na += nllRB.counts[t];
      b += nllBB.sums[t];
      nb += nllBB.counts[t];
      l += llrB.sums[t];
      nl += llrB.counts[t];
    }
    return {
      ratio: na > 0 && nb > 0 && b !== 0 ? a / na / (b / nb) : Number.NaN,
      llr: nl > 0 ? l / nl : Number.NaN,
    };
  };
  const point = ratioAt((i) => i);
  const ratios = new Float64Array(resamples);
  const llrs = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    const rng = Rng.derive(seed, STREAM.eval, KEY.likelihood, r);
    const idx = Array.from({ length: tasks }, () => rng.int(tasks));
    const x = ratioAt((i) => idx[i]);
    ratios[r] = x.ratio;
    llrs[r] = x.llr;
  }
  const interval = (xs: Float64Array): Interval => {
    const ok = xs.filter(Number.isFinite);
    return ok.length > 0 ? percentileInterval(ok) : [Number.NaN, Number.NaN];
  };
  const pt = all.perToken;
  const pj = all.perTrajectory;
  return {
    nllRatio: est(point.ratio, interval(ratios)),
    nllRlUnderBase: all.nllAunderB,
    nllBaseUnderBase: all.nllBunderB,
    nllRlUnderRl: all.nllAunderA,
    llrSuccessBase: est(point.llr, interval(llrs)),
    llrSuccessRl: all.llrSuccessA,
    successes: { base: all.successful.b, rl: all.successful.a },
    perToken:
      pt === undefined
        ? null
        : {
            nllRlUnderBase: pt.nllAunderB,
            nllRlUnderRl: pt.nllAunderA,
            nllBaseUnderBase: pt.nllBunderB,
            llrSuccessRl: pt.llrSuccessA,
            llrSuccessBase: pt.llrSuccessB,
          },
    perTrajectory:
      pj === undefined
        ? null
        : { nllRlUnderBase: pj.nllAunderB, nllRlUnderRl: pj.nllAunderA, nllBaseUnderBase: pj.nllBunderB },
  };
}

/** RL's training curves from its per-iteration metrics: mean of the last quarter minus the first
 * quarter, with an interval resampling the iterations within each window. */
export function measureCurves(
  metrics: readonly Record<string, number>[],
  resamples: number,
  seed: number,
): CurveMeasure {
  const window = Math.max(1, Math.floor(metrics.length / 4));
  const signal = ['rollout/step_quality', 'rollout/step_proxy'].find((k) =>
    metrics.some((m) => Number.isFinite(m[k])),
  );
  const trend = (key: string | undefined, stream: number) => {
    const values = key === undefined ? [] : metrics.map((m) => m[key] ?? Number.NaN);
    const head = values.slice(0, window).filter(Number.isFinite);
    const tail = values.slice(Math.max(0, values.length - window)).filter(Number.isFinite);
    const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
    if (head.length === 0 || tail.length === 0 || metrics.length < 2)
      return {
        first: finite(mean(head)),
        last: finite(mean(tail)),
        value: null,
        ci95: [null, null] as Est['ci95'],
      };
    const d = new Float64Array(resamples);
    for (let r = 0; r < resamples; r++) {
      const rng = Rng.derive(seed, STREAM.eval, KEY.curves, stream, r);
      let a = 0;
      for (let i = 0; i < head.length; i++) a += head[rng.int(head.length)];
      let b = 0;
      for (let i = 0; i < tail.length; i++) b += tail[rng.int(tail.length)];
      d[r] = b / tail.length - a / head.length;
    }
    return {
      first: finite(mean(head)),
      last: finite(mean(tail)),
      ...est(mean(tail) - mean(head), percentileInterval(d)),
    };
  };
  return {
    iterations: metrics.length,
    window,
    signal: signal ?? null,
    reward: trend('rollout/success', 0),
    step: trend(signal, 1),
  };
}

/** Holm-adjusted one-sided p-values of "RL − base ≥ 0" at the budgets below T_train, at the largest K. */
export function reversalP(pass: PassMeasure): number[] {
  const k = pass.K.length - 1;
  const j = pass.T.length - 1;
  return holm(pass.diff.rlBase[k].slice(0, j).map((c) => c.pNonNeg ?? Number.NaN));
}

export type { Trajectory };
export { failures };
