// The diagnostics sections of a run's part of report.html, measured at T_max: step quality at the same
// state, recovery from error states, and the likelihood figures.
import { barChart, grid, paragraph, table } from '../../../report/index.ts';
import { interval, num, withInterval } from '../format.ts';
import { band, int, LABEL, type RunPage } from './run-page.ts';

/** Step quality: RL's win rate over the base at normal and error states. */
export function stepQualitySection({ s, cfg, section, fig }: RunPage): string {
  const sq = s.stepQuality;
  // The interesting range is around ½; widen it to whatever the intervals need.
  const ends = (['normal', 'error'] as const).flatMap((k) => [...sq[k].ci95, ...sq[k].sampled.ci95]);
  const lo = Math.min(0.3, ...ends.filter((x): x is number => x !== null).map((x) => x - 0.05));
  const hi = Math.max(0.7, ...ends.filter((x): x is number => x !== null).map((x) => x + 0.05));
  const winDomain: [number, number] = [
    Math.max(0, Math.floor(lo * 10) / 10),
    Math.min(1, Math.ceil(hi * 10) / 10),
  ];
  return section('Step quality at the same state', [
    paragraph(
      `At each state both policies choose an action; an action is scored by its exact Q*_h(s,a) with h the turns left (of T=${sq.budget}). The win rate is P(RL’s action better) + ½P(tie) over pairs of actions: 0.5 means no difference. Normal states are drawn from the base’s and RL’s own trajectories (the first ${cfg.eval.diagnosticSamples} episodes per map of the sampled runs); error states are one turn after a deliberately bad action forced on such a trajectory — one that loses at least ${num(sq.errorStates.minRelRegret * 100, 0)}% of the state’s value, (V* − Q*)/V* ≥ ${sq.errorStates.minRelRegret} (${sq.errorStates.attempts} attempts: ${sq.errorStates.noBadAction} had no bad action, ${sq.errorStates.belowThreshold} only smaller ones, ${sq.errorStates.terminal} ended the episode at once and were dropped; median relative regret of the forced actions ${num(sq.errorStates.regret.median)}, of the dropped ones ${num(sq.errorStates.terminalRegret.median)}). Exact: the expectation over both policies’ action distributions; sampled: ${cfg.eval.actions} actions each. Intervals: bootstrap over states.`,
    ),
    fig(
      'RL-vs-base win rate at normal and error states with 95% intervals over states (exact and sampled); the dashed line is 0.5, no difference. The paper found 43–47% at ordinary states and 66–67% at error states.',
      barChart({
        title: 'Step quality: RL vs base win rate',
        style: 'dot',
        series: ['exact', 'sampled'],
        groups: (['normal', 'error'] as const).map((k) => ({
          label: `${k} states (${sq[k].states})`,
          values: [band(sq[k]), band(sq[k].sampled)],
        })),
        yDomain: winDomain,
        yLabel: 'P(RL better) + ½P(tie)',
        xLabel: 'kind of state',
        referenceLines: [{ y: 0.5 }],
      }),
    ),
    table(
      [
        'states',
        'n',
        'win rate (exact)',
        'P(RL better)',
        'P(tie)',
        'P(base better)',
        'regret RL',
        'regret base',
        'win rate (sampled)',
      ],
      (['normal', 'error'] as const).map((k) => [
        k,
        int(sq[k].states),
        withInterval(sq[k].value, sq[k].ci95),
        sq[k].rlBetter,
        sq[k].ties,
        sq[k].baseBetter,
        sq[k].regretRl,
        sq[k].regretBase,
        withInterval(sq[k].sampled.value, sq[k].sampled.ci95),
      ]),
      { caption: 'Step quality in detail (regret = V*_h(s) − Q*_h(s,a), mean over the policy’s actions)' },
    ),
  ]);
}

/** Recovery from error states, per policy, exact and sampled. */
export function recoverySection({ s, names, section, fig }: RunPage): string {
  const rec = s.recovery;
  return section('Recovery from error states', [
    paragraph(
      `From each of the ${rec.states} error states every policy continues under the remaining budget. Exact: the policy’s continuation value V^π_h(s); sampled: ${rec.continuations} continuations per state and policy with common random numbers. Intervals: bootstrap over states; differences paired.`,
    ),
    fig(
      'Continuation success after a forced bad action, per policy, with 95% intervals over error states. The paper reports 51.3% (RL) vs 38.6% (base) on FrozenLake.',
      barChart({
        title: 'Recovery from error states',
        series: ['exact', 'sampled'],
        groups: names.map((p) => {
          const r = rec[p as 'base'];
          return {
            label: LABEL[p],
            values: [{ value: r.exact, lo: r.exactCi95[0], hi: r.exactCi95[1] }, band(r)],
          };
        }),
        yDomain: [0, 1],
        yLabel: 'success after the error',
        xLabel: 'policy',
      }),
    ),
    table(
      ['', 'exact', 'sampled'],
      [
        ...names.map((p) => {
          const r = rec[p as 'base'];
          return [LABEL[p], withInterval(r.exact, r.exactCi95), withInterval(r.value, r.ci95)];
        }),
        [
          'RL − base',
          withInterval(rec.rlMinusBase.exact, rec.rlMinusBase.exactCi95, 3, true),
          withInterval(rec.rlMinusBase.value, rec.rlMinusBase.ci95, 3, true),
        ],
        [
          'BudgetMix − base',
          withInterval(rec.budgetmixMinusBase.exact, rec.budgetmixMinusBase.exactCi95, 3, true),
          withInterval(rec.budgetmixMinusBase.value, rec.budgetmixMinusBase.ci95, 3, true),
        ],
      ],
      { caption: 'Recovery rates with 95% intervals' },
    ),
  ]);
}

/** Likelihood: NLL of RL's actions and LLR of successful trajectories. */
export function likelihoodSection({ s, cfg, Tmax, section, fig }: RunPage): string {
  const l = s.likelihood;
  return section('Likelihood: how far RL moved from the base', [
    paragraph(
      `NLL: mean −log π(a|s) per action over RL’s own actions (the first ${cfg.eval.diagnosticSamples} of its episodes per map at T=${Tmax}), under the base and under RL. LLR: Σ_t [log π_RL(a_t) − log π_base(a_t)] over a whole successful trajectory, for RL’s successes and the base’s. Intervals: bootstrap over maps (ratio estimators, so a map’s actions stay together). −∞ (an action the scorer gives probability 0) is handled as eval/likelihood does: such terms are left out of the means and counted, and a figure is n/a when no term is finite. Both networks are softmax outputs and give every action positive probability, so no term is infinite here (the counts below say so).`,
    ),
    fig(
      `Left: NLL of RL’s actions under each policy (dashed: ln 4 = ${num(l.uniformNll)}, the uniform policy’s). Right: cumulative LLR of successful trajectories (0 = the base would have played them as readily as RL). Paper: NLL 12.20 (base) vs 10.25 (RL); LLR ≈ 228 (RL’s successes) vs 26 (base’s).`,
      grid([
        barChart({
          title: 'NLL of RL’s actions',
          showTitle: true,
          width: 380,
          height: 300,
          series: ['NLL'],
          groups: [
            { label: 'under base', values: [band(l.nllRlUnderBase)] },
            { label: 'under RL', values: [band(l.nllRlUnderRl)] },
          ],
          yLabel: 'nats per action',
          xLabel: 'scored under',
          referenceLines: [{ y: l.uniformNll, label: 'uniform' }],
        }),
        barChart({
          title: 'LLR of successful trajectories',
          showTitle: true,
          width: 380,
          height: 300,
          series: ['LLR'],
          groups: [
            { label: 'RL', values: [band(l.llrSuccessRl)] },
            { label: 'base', values: [band(l.llrSuccessBase)] },
          ],
          yLabel: 'LLR (nats)',
          xLabel: 'successful trajectories of',
          referenceLines: [{ y: 0 }],
        }),
      ]),
    ),
    table(
      ['figure', 'value', '95% interval', 'terms', 'infinite (left out)'],
      [
        ...(
          [
            ['NLL of RL’s actions under base', l.nllRlUnderBase],
            ['NLL of RL’s actions under RL', l.nllRlUnderRl],
            ['LLR, RL’s successful trajectories', l.llrSuccessRl],
            ['LLR, base’s successful trajectories', l.llrSuccessBase],
          ] as const
        ).map(([label, x]) => [label, x.value, interval(x.ci95), int(x.n), int(x.infinite)]),
        ['LLR gap (RL’s − base’s)', l.llrGap.value, interval(l.llrGap.ci95), null, null],
      ],
      { caption: 'Likelihood figures (terms: actions for NLL, successful trajectories for LLR)' },
    ),
  ]);
}
