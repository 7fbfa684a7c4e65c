// The Pass@(K,T) section of a run's part of report.html: sampled and exact grids, RL and BudgetMix
// against the base, and whether the lead shrinks at the tightest budget.
import { grid, niceTicks, paragraph, passKTHeatmap, table } from '../../../report/index.ts';
import type { PassGrid } from '../figures.ts';
import { interval } from '../format.ts';
import { heatGrid, int, LABEL, type RunPage } from './run-page.ts';

/** Pass@(K,T): sampled per policy, RL − base and BudgetMix − base (sampled and exact), the shrink table. */
export function passSection({ s, names, Tmax, section, fig }: RunPage): string {
  const heat = (g: PassGrid, title: string) => passKTHeatmap(heatGrid(g), { title, showTitle: true });
  // Difference grids shown side by side share one colour scale, so equal colours mean equal numbers.
  const diffHeats = (grids: readonly [PassGrid, string, [string, string]][]) => {
    const m = Math.max(
      0,
      ...grids.flatMap(([g]) => g.passKT.flat().map((x) => (x === null ? 0 : Math.abs(x)))),
    );
    const domain: [number, number] = m > 0 ? niceTicks(-m, m, 4).domain : [-1, 1];
    return grid(
      grids.map(([g, title, labels]) =>
        passKTHeatmap(heatGrid(g), {
          title,
          showTitle: true,
          scale: 'diverging',
          divergingLabels: labels,
          domain,
        }),
      ),
    );
  };
  const sampledDiff: PassGrid = {
    K: s.passKT.base.K,
    T: s.passKT.base.T,
    passKT: s.passKT.diff,
    ci95: s.passKT.diffCi95,
  };
  const sampledMixDiff: PassGrid = {
    K: s.passKT.base.K,
    T: s.passKT.base.T,
    passKT: s.passKT.budgetmixDiff,
    ci95: s.passKT.budgetmixDiffCi95,
  };
  const shrink = s.exactPassKT.shrink;
  return section('Pass@(K,T)', [
    paragraph(
      `Pass@(K,T): the chance that at least one of K tries succeeds within T turns, averaged over held-out maps. Sampled: the unbiased estimator on ${s.passKT.samples} episodes per map (${s.passKT.mode} mode: one run at T=${Tmax}, success within each T read off the first-success turn, valid because every policy here is budget-blind). Exact: 1 − (1 − p)^K per map with p the policy’s exact success within T. Intervals: bootstrap over maps; differences are paired (the same resampled maps for both policies).`,
    ),
    fig(
      'Sampled Pass@(K,T) of each policy on the held-out maps; each cell prints the estimate and, where it fits, its 95% interval (always in the tooltip).',
      grid(names.map((p) => heat(s.passKT[p as 'base'], `Pass@(K,T), ${LABEL[p]}`))),
    ),
    fig(
      'RL − base, sampled (left) and exact (right): blue where RL is ahead, red where the base is; paired 95% intervals over maps. The findings read the exact grid.',
      diffHeats([
        [sampledDiff, 'RL − base (sampled)', ['base better', 'RL better']],
        [s.exactPassKT.diff, 'RL − base (exact)', ['base better', 'RL better']],
      ]),
    ),
    fig(
      'BudgetMix against the base (sampled and exact) and against RL (exact): does mixing budgets keep a lead at every T?',
      diffHeats([
        [sampledMixDiff, 'BudgetMix − base (sampled)', ['base better', 'BudgetMix better']],
        [s.exactPassKT.budgetmixDiff, 'BudgetMix − base (exact)', ['base better', 'BudgetMix better']],
        [s.exactPassKT.budgetmixVsRl, 'BudgetMix − RL (exact)', ['RL better', 'BudgetMix better']],
      ]),
    ),
    table(
      [
        'K',
        `RL − base at T=${shrink.Ttight}`,
        `RL − base at T=${shrink.Ttrain}`,
        'change (tight − train)',
        '95% interval',
      ],
      shrink.byK.map((x, k) => {
        const j0 = s.exactPassKT.diff.T.indexOf(shrink.Ttight);
        const j1 = s.exactPassKT.diff.T.indexOf(shrink.Ttrain);
        return [
          int(x.K),
          { value: s.exactPassKT.diff.passKT[k][j0], format: { signed: true } },
          { value: s.exactPassKT.diff.passKT[k][j1], format: { signed: true } },
          { value: x.value, format: { signed: true } },
          interval(x.ci95, 3, true),
        ];
      }),
      {
        caption:
          'Does the lead shrink at the tightest budget? Exact, per K, paired over maps (negative = shrinks).',
      },
    ),
  ]);
}
