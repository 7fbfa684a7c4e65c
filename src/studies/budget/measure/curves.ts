// The summary's `curves`: the trainer's own training curves and their trends.
import type { StudyConfig } from '../config.ts';
import { finiteOrNull, intervalOf } from '../figures.ts';
import { namesOf, type PerVariant, type Variant } from '../setup.ts';
import { bootSettings, windowTrend } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { RlResult } from '../trainer.ts';

type CurveName = 'trajectoryReward' | 'stepReward' | 'stepRegret';

/** windowTrend's key of each (variant, curve): its stream under STUDY_KEY.trend. */
export const TREND_KEY: Record<Variant, Record<CurveName, number>> = {
  rl: { trajectoryReward: 0, stepReward: 1, stepRegret: 2 },
  budgetmix: { trajectoryReward: 10, stepReward: 11, stepRegret: 12 },
  gigpo: { trajectoryReward: 20, stepReward: 21, stepRegret: 22 },
};

type Curve = { iter: number; value: number | null }[];

/**
 * The summary's `curves`: each variant's trajectory and step reward per iteration (from the trainer),
 * and their trends: mean of the last quarter of iterations − mean of the first quarter, with a
 * bootstrap interval over iterations (windowTrend, each curve on its own stream: TREND_KEY).
 */
export function measureTrainingCurves(
  trained: PerVariant<Pick<RlResult, 'curves'>>,
  config: StudyConfig,
): Summary['curves'] {
  const boot = bootSettings(config);
  const variants = namesOf(trained) as Variant[];
  const window = Math.max(1, Math.floor(config.rl.iters / 4));
  const curve = (key: CurveName) =>
    Object.fromEntries(
      variants.map((n) => [
        n,
        trained[n]!.curves.map((p) => ({ iter: p.iter, value: finiteOrNull(p[key]) })),
      ]),
    ) as PerVariant<Curve>;
  const trend = Object.fromEntries(
    variants.map((n) => {
      const c = trained[n]!.curves;
      const tr = (key: CurveName) => {
        const w = windowTrend(
          c.map((p) => p[key]),
          window,
          { ...boot, key: TREND_KEY[n][key] },
        );
        return {
          first: finiteOrNull(w.first),
          last: finiteOrNull(w.last),
          value: finiteOrNull(w.value),
          ci95: intervalOf(w.ci),
        };
      };
      return [
        n,
        {
          trajectoryReward: tr('trajectoryReward'),
          stepReward: tr('stepReward'),
          stepRegret: tr('stepRegret'),
        },
      ];
    }),
  );
  return {
    trajectoryReward: curve('trajectoryReward'),
    stepReward: curve('stepReward'),
    stepRegret: curve('stepRegret'),
    window,
    trend,
  };
}
