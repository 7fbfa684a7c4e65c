// The training and outcome sections of a run's part of report.html: the trainer's curves with their
// trends, and how the sampled episodes at T_max failed.
import { FAILURE_KINDS } from '../../../core/types.ts';
import { grid, lineChart, paragraph, stackedBarChart, table } from '../../../report/index.ts';
import { num, withInterval } from '../format.ts';
import { int, LABEL, type RunPage } from './run-page.ts';

/** The training curves of each trained policy and their trends. */
export function trainingSection({ s, trained: trainedNames, section, fig }: RunPage): string {
  const curves = s.curves;
  const curveChart = (p: string) =>
    lineChart({
      title: `${LABEL[p]}: trajectory vs step reward`,
      showTitle: true,
      xLabel: 'training iteration',
      yLabel: 'trajectory reward (success rate)',
      y2Label: 'step reward (Q*/V*)',
      series: [
        {
          name: 'trajectory reward',
          points: (curves.trajectoryReward[p as 'rl'] ?? []).map((q) => ({ x: q.iter, y: q.value })),
        },
        {
          name: 'step reward',
          axis: 'right',
          points: (curves.stepReward[p as 'rl'] ?? []).map((q) => ({ x: q.iter, y: q.value })),
        },
      ],
    });
  return section('Training curves', [
    paragraph(
      `From the trainer, one point per iteration: the success rate of that iteration’s training rollouts (trajectory reward) and the mean exact step quality Q*_h(s,a)/V*_h(s) of the actions taken (step reward; 1 = always an optimal action). They can move in opposite directions. The step reward sits near its ceiling of 1 when most actions are nearly as good as the best, so the training-curves verdict reads the mean regret V*_h(s) − Q*_h(s,a) of the actions taken, which is not pinned to a bound. Trend: mean of the last ${curves.window} iterations minus the first ${curves.window}, with an interval from resampling iterations within each window.`,
    ),
    fig(
      'Trajectory reward (left axis, solid) and step reward (right axis, dashed) over training, for each trained policy. The paper saw trajectory reward rise while step reward fell.',
      grid(trainedNames.map(curveChart)),
    ),
    table(
      [
        'policy',
        'trajectory reward: first → last',
        'change',
        'step reward: first → last',
        'change',
        'regret of actions taken: first → last',
        'change',
      ],
      trainedNames.map((p) => {
        const tr = curves.trend[p];
        return tr === undefined
          ? [LABEL[p], null, null, null, null, null, null]
          : [
              LABEL[p],
              `${num(tr.trajectoryReward.first)} → ${num(tr.trajectoryReward.last)}`,
              withInterval(tr.trajectoryReward.value, tr.trajectoryReward.ci95, 3, true),
              `${num(tr.stepReward.first)} → ${num(tr.stepReward.last)}`,
              withInterval(tr.stepReward.value, tr.stepReward.ci95, 3, true),
              `${num(tr.stepRegret.first, 4)} → ${num(tr.stepRegret.last, 4)}`,
              withInterval(tr.stepRegret.value, tr.stepRegret.ci95, 4, true),
            ];
      }),
      { caption: 'Trends over training (last quarter − first quarter, 95% intervals)' },
    ),
  ]);
}

/** Failure kinds of the sampled episodes at T_max, per policy. */
export function failuresSection({ s, names, Tmax, section, fig }: RunPage): string {
  const fail = s.failures;
  const kinds = FAILURE_KINDS.filter((k) => names.some((p) => (fail[p as 'base'].byKind[k] ?? 0) > 0));
  return section('Failure kinds', [
    paragraph(
      `How the sampled episodes at T=${Tmax} that did not succeed ended: in a hole (irreversible), out of turns (budget), or otherwise. A policy whose failures move from holes to the budget has learnt caution, not skill.`,
    ),
    fig(
      `Failure kinds per policy at T=${Tmax}, as shares of each policy’s failures (the count of failed episodes at the end of each bar).`,
      stackedBarChart({
        title: 'Failure kinds',
        categories: names.map((p) => LABEL[p]),
        segments: (kinds.length > 0 ? kinds : ['irreversible' as const]).map((k) => ({
          name: k,
          values: names.map((p) => fail[p as 'base'].byKind[k] ?? 0),
        })),
        xLabel: 'share of failed episodes',
      }),
    ),
    table(
      ['policy', 'episodes', 'successes', ...FAILURE_KINDS, 'turns (success)', 'turns (failure)'],
      names.map((p) => {
        const x = fail[p as 'base'];
        return [
          LABEL[p],
          int(x.episodes),
          int(x.successes),
          ...FAILURE_KINDS.map((k) => int(x.byKind[k] ?? 0)),
          { value: x.meanTurnsSuccess, digits: 1 },
          { value: x.meanTurnsFailure, digits: 1 },
        ];
      }),
      { caption: `Episodes at T=${Tmax} by outcome` },
    ),
  ]);
}
