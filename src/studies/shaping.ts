// The shaping study (`turnwise study shaping`, docs/shaping.md; issue 27 part 2): a tabular policy trained
// on one FrozenLake map without shaping and under each shaping, at the same seeds, iterations and budget —
// each run exactly `turnwise train --map M [--slippery] --policy tabular --algo A --iters N --budget T
// --seed s [--shaping kind:c]`. Every figure is on the TRUE reward: each run's exact success at the end
// (the oracle's evaluation of the trained policy), its paired difference from the unshaped run of the
// same seed, and its difference from the true success of the shaped-optimal policy (the DP of
// `calc shaping`: what training under that reward converges to at best). Means over seeds with Student-t
// 95% intervals across seeds (paired: the difference is taken per seed first).
import type { EnvConfig, EnvFactory } from '../core/types.ts';
import {
  measureShaping,
  POTENTIAL_BASED,
  type SHAPINGS,
  type Shaping,
  type ShapingKind,
  type ShapingWorld,
} from '../theory/shaping.ts';
import { parseTrainConfig, type TrainConfig } from '../train/config.ts';
import { trainPolicyGradient } from '../train/loop.ts';
import type { Estimate } from './budget/figures.ts';
import { meanAcross } from './budget/study.ts';

export type StudyKind = 'none' | (typeof SHAPINGS)[number];

export interface ShapingStudyOptions {
  /** A fixed FrozenLake map (its canonical params). */
  env: EnvConfig;
  envs: EnvFactory;
  /** That map's world, for the DP. */
  world: ShapingWorld;
  kinds: readonly StudyKind[];
  coef: number;
  seeds: readonly number[];
  algo: 'grpo' | 'ppo';
  iters: number;
  budget: number;
  /** After each run (progress). */
  onRun?: (kind: StudyKind, seed: number, exact: number) => void;
}

export interface ShapingStudyRow {
  kind: StudyKind;
  /** null for none. */
  coef: number | null;
  potentialBased: boolean | null;
  /** The exact true success at the end, per seed (in `seeds` order). */
  perSeed: number[];
  success: Estimate;
  /** Paired per seed: this run minus the unshaped run of the same seed (null for none, or without it). */
  vsNone: Estimate | null;
  /** True success of the shaped-optimal policy (DP; none: the optimum); null where the DP is refused. */
  shapedOptimal: number | null;
  /** success − shapedOptimal. */
  vsShapedOptimal: Estimate | null;
  /** rollout/success averaged over all iterations, mean over seeds: how fast the true success came. */
  duringTraining: Estimate;
  /** train/shaping_gap (mean shaped − true return) of the last iteration, mean over seeds (none: null). */
  shapingGap: number | null;
}

export interface ShapingStudy {
  env: EnvConfig;
  algo: 'grpo' | 'ppo';
  iters: number;
  budget: number;
  seeds: number[];
  /** V*_budget(start). */
  optimum: number;
  rows: ShapingStudyRow[];
}

/** The training config of one cell of the table (what `turnwise train` with the same flags runs). */
export function studyRunConfig(o: ShapingStudyOptions, kind: StudyKind, seed: number): TrainConfig {
  return parseTrainConfig({
    env: o.env,
    policy: { kind: 'tabular' },
    algo: o.algo,
    iters: o.iters,
    budget: { kind: 'fixed', budget: o.budget },
    seed,
    ...(kind === 'none' ? {} : { shaping: { kind, coef: o.coef } }),
  });
}

const estimate = (xs: readonly number[]): Estimate => {
  const { value, ci95 } = meanAcross(xs);
  return { value, ci95 };
};

export async function shapingStudy(o: ShapingStudyOptions): Promise<ShapingStudy> {
  const shaped = o.kinds.filter((k): k is ShapingKind => k !== 'none');
  const dp = measureShaping(
    o.world,
    o.budget,
    shaped.map((kind): Shaping => ({ kind, coef: o.coef })),
  );
  const runs = new Map<StudyKind, { exact: number; during: number; gap: number | null }[]>();
  for (const kind of o.kinds) {
    const perSeed = [];
    for (const seed of o.seeds) {
      const r = await trainPolicyGradient({ config: studyRunConfig(o, kind, seed), envs: o.envs });
      const exact = r.final?.exact;
      if (exact === null || exact === undefined)
        throw new Error('shaping study: the final evaluation has no exact success');
      const during = r.metrics.reduce((s, m) => s + m.values['rollout/success'], 0) / r.metrics.length;
      const gap = r.metrics.at(-1)?.values['train/shaping_gap'];
      perSeed.push({ exact, during, gap: gap ?? null });
      o.onRun?.(kind, seed, exact);
    }
    runs.set(kind, perSeed);
  }
  const none = runs.get('none')?.map((r) => r.exact);
  const rows = o.kinds.map((kind): ShapingStudyRow => {
    const rs = runs.get(kind)!;
    const exact = rs.map((r) => r.exact);
    const row = kind === 'none' ? undefined : dp.rows[shaped.indexOf(kind)];
    const target = kind === 'none' ? dp.optimum : row?.skipped === undefined ? row!.success : null;
    const gaps = rs.map((r) => r.gap).filter((g): g is number => g !== null);
    return {
      kind,
      coef: kind === 'none' ? null : o.coef,
      potentialBased: kind === 'none' ? null : POTENTIAL_BASED[kind],
      perSeed: exact,
      success: estimate(exact),
      vsNone: none === undefined || kind === 'none' ? null : estimate(exact.map((x, i) => x - none[i])),
      shapedOptimal: target,
      vsShapedOptimal: target === null ? null : estimate(exact.map((x) => x - target)),
      duringTraining: estimate(rs.map((r) => r.during)),
      shapingGap: gaps.length === 0 ? null : gaps.reduce((a, b) => a + b, 0) / gaps.length,
    };
  });
  return {
    env: o.env,
    algo: o.algo,
    iters: o.iters,
    budget: o.budget,
    seeds: [...o.seeds],
    optimum: dp.optimum,
    rows,
  };
}
