// The summary's `likelihood`: how far RL moved from the base, as NLL of RL's actions and LLR of
// successful trajectories (eval/likelihood), with intervals that resample maps.
import type { EnvSpec, Trajectory } from '../../../core/types.ts';
import { LIKELIHOOD_NOTE, likelihood, scorer } from '../../../eval/likelihood.ts';
import { contextAt } from '../../../rollout/context.ts';
import { withEnvs } from '../../../rollout/env-cache.ts';
import type { StudyConfig } from '../config.ts';
import { finiteOrNull, intervalOf } from '../figures.ts';
import type { MemoPolicy } from '../memo.ts';
import type { PerPolicy } from '../setup.ts';
import { bootSettings, bootstrapRatios } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { MakeEnv } from '../world.ts';
import type { Episodes } from './episodes.ts';

/**
 * The summary's `likelihood`: NLL of RL's actions under the base and under RL, and the cumulative
 * LLR log π_RL − log π_base over RL's and the base's successful trajectories (eval/likelihood, on the
 * diagnostic pools); intervals by resampling maps (one eval/likelihood call per map).
 */
export async function measureLikelihood(
  envs: MakeEnv,
  pools: Episodes['pools'],
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  maps: number,
  spec: EnvSpec,
  config: StudyConfig,
): Promise<Summary['likelihood']> {
  const { diagnosticSamples } = config.eval;
  const boot = bootSettings(config);
  const rlTraj: Trajectory[] = pools.rl.map((r) => r.trajectory);
  const baseTraj: Trajectory[] = pools.base.map((r) => r.trajectory);
  const lik = (await likelihood(envs, rlTraj, baseTraj, policies.rl, policies.base))!;
  const series = () => ({
    nllB: new Float64Array(maps),
    nllR: new Float64Array(maps),
    llrR: new Float64Array(maps),
    llrB: new Float64Array(maps),
    nllBB: new Float64Array(maps),
  });
  const sums = series();
  const counts = series();
  for (let i = 0; i < maps; i++) {
    const part = (await likelihood(
      envs,
      rlTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      baseTraj.slice(i * diagnosticSamples, (i + 1) * diagnosticSamples),
      policies.rl,
      policies.base,
    ))!;
    const put = (key: keyof typeof sums, mean: number | null, finite: number) => {
      counts[key][i] = mean === null ? 0 : finite;
      sums[key][i] = mean === null ? 0 : mean * finite;
    };
    put('nllB', part.nllAunderB, part.actions.a - part.infinite.nllAunderB);
    put('nllR', part.nllAunderA, part.actions.a - part.infinite.nllAunderA);
    put('llrR', part.llrSuccessA, part.successful.a - part.infinite.llrSuccessA);
    put('llrB', part.llrSuccessB, part.successful.b - part.infinite.llrSuccessB);
    put('nllBB', part.nllBunderB, part.actions.b - part.infinite.nllBunderB);
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
  const estimate = (value: number | undefined, ci95: readonly [number, number] | undefined) => ({
    value: finiteOrNull(value),
    ci95: intervalOf(ci95),
  });
  // One of eval/likelihood's means over all maps: its finite terms of `terms`, and the infinite ones
  // it left out.
  const mean = (key: keyof typeof lik.infinite, terms: number, ci95: readonly [number, number]) =>
    figure(lik[key], ci95, terms - lik.infinite[key], lik.infinite[key]);
  // The base's own NLL, and RL's NLL under the base relative to it (paired over maps).
  const own = bootstrapRatios([ratio('nllB'), ratio('nllBB')], boot);
  const nllBaseUnderBase = mean('nllBunderB', lik.actions.b, own.ci[1]);
  // LLR per trajectory, split by outcome, per map: the sign of the base successes' LLR, its per-turn
  // rate, and successes against failures within each policy.
  const llr = {
    base: await trajectoryLlrs(envs, baseTraj, policies.rl, policies.base),
    rl: await trajectoryLlrs(envs, rlTraj, policies.rl, policies.base),
  };
  const byMap = (xs: readonly TrajectoryLlr[], success: boolean, per: 'trajectory' | 'turn') => {
    const out = { sums: new Float64Array(maps), counts: new Float64Array(maps), n: 0, infinite: 0 };
    xs.forEach((x, e) => {
      if (x.success !== success) return;
      if (!Number.isFinite(x.llr)) {
        out.infinite++;
        return;
      }
      const i = Math.floor(e / diagnosticSamples);
      out.sums[i] += x.llr;
      out.counts[i] += per === 'turn' ? x.turns : 1;
      out.n++;
    });
    return out;
  };
  const perTurn = bootstrapRatios([byMap(llr.base, true, 'turn')], boot);
  const vsFailure = (xs: readonly TrajectoryLlr[]) => {
    const [ok, failed] = [byMap(xs, true, 'trajectory'), byMap(xs, false, 'trajectory')];
    const b = bootstrapRatios([ok, failed], boot);
    return {
      failure: figure(b.value[1], b.ci[1], failed.n, failed.infinite),
      gap: estimate(b.diff, b.diffCi),
    };
  };
  const [vsBase, vsRl] = [vsFailure(llr.base), vsFailure(llr.rl)];
  return {
    nllRlUnderBase: mean('nllAunderB', lik.actions.a, nllCi.ci[0]),
    nllRlUnderRl: mean('nllAunderA', lik.actions.a, nllCi.ci[1]),
    llrSuccessRl: mean('llrSuccessA', lik.successful.a, llrCi.ci[0]),
    llrSuccessBase: mean('llrSuccessB', lik.successful.b, llrCi.ci[1]),
    llrGap: { value: finiteOrNull(llrCi.diff), ci95: intervalOf(llrCi.diffCi) },
    nllBaseUnderBase,
    nllRatio: estimate(own.ratio, own.ratioCi),
    llrPerTurnSuccessBase: estimate(perTurn.value[0], perTurn.ci[0]),
    llrFailureBase: vsBase.failure,
    llrFailureRl: vsRl.failure,
    llrSuccessMinusFailureBase: vsBase.gap,
    llrSuccessMinusFailureRl: vsRl.gap,
    uniformNll: Math.log(typeof spec.actions === 'number' ? spec.actions : 1),
    note: LIKELIHOOD_NOTE,
  };
}

interface TrajectoryLlr {
  /** Σ_t [log π_A − log π_B] over the trajectory's own (unforced) turns, as eval/likelihood sums it. */
  llr: number;
  turns: number;
  success: boolean;
}

/** Each trajectory's cumulative LLR of a against b (eval/likelihood's contexts and order of additions). */
async function trajectoryLlrs(
  envs: MakeEnv,
  trajectories: readonly Trajectory[],
  a: MemoPolicy,
  b: MemoPolicy,
): Promise<TrajectoryLlr[]> {
  const scoreA = scorer(a)!;
  const scoreB = scorer(b)!;
  const revealBudget = a.budgetAware || b.budgetAware;
  return withEnvs(envs.make, async (views) => {
    const out: TrajectoryLlr[] = [];
    for (const tr of trajectories) {
      const env = await views.get(tr.task);
      let llr = 0;
      let turns = 0;
      for (let t = 0; t < tr.turns.length; t++) {
        if (tr.turns[t].forced === true) continue;
        const ctx = contextAt(tr, t, env, { revealBudget: tr.revealBudget || revealBudget });
        llr += (scoreA(ctx, tr.turns[t].action) as number) - (scoreB(ctx, tr.turns[t].action) as number);
        turns++;
      }
      out.push({ llr, turns, success: tr.outcome.success });
    }
    return out;
  });
}
