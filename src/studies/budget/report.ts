// report.html of a budget-study run: a pure function of its summary (so `turnwise report RUN` can
// re-render it), self-contained (inline SVG and CSS, nothing fetched), every chart with axes, labels
// and a numbered caption. Every number shown here is in summary.json.
import { FAILURE_KINDS } from '../../core/types.ts';
import {
  barChart,
  escapeText,
  figure,
  findingsTable,
  grid,
  section as htmlSection,
  jsonDetails,
  keyValues,
  lineChart,
  list,
  niceTicks,
  type PassKTGrid,
  page,
  paragraph,
  passKTHeatmap,
  slug,
  stackedBarChart,
  table,
} from '../../report/index.ts';
import type { PassGrid } from './figures.ts';
import { oursText } from './findings.ts';
import { interval, num, withInterval } from './format.ts';
import { FINDING_IDS, type StudySummary, type Summary } from './summary.ts';

const LABEL: Record<string, string> = { base: 'base', rl: 'RL', budgetmix: 'BudgetMix', gigpo: 'GiGPO' };
const PAPER = 'Zhu et al. 2026, “What Does Multi-Turn Reinforcement Learning Really Improve in LLM Agents?”';

const int = (x: number | null) => ({ value: x, digits: 0 });

function policiesOf(s: Summary): string[] {
  return ['base', 'rl', 'budgetmix', ...(s.passKT.gigpo ? ['gigpo'] : [])];
}

/** The heatmap's grid: an interval with a missing end is no interval. */
function heatGrid(g: PassGrid): PassKTGrid {
  return {
    ...g,
    ci95: g.ci95.map((row) =>
      row.map((c) => (c[0] === null || c[1] === null ? null : ([c[0], c[1]] as const))),
    ),
  };
}

/** Row K of a grid as line-chart points over T, with the interval as a band. */
function rowPoints(g: PassGrid, k = 0) {
  return g.T.map((t, j) => ({ x: t, y: g.passKT[k][j], lo: g.ci95[k][j][0], hi: g.ci95[k][j][1] }));
}

/** The sections of one run (one world, one seed), headings prefixed with its world; `fig` numbers
 * the figures across the whole page. */
export function runSections(s: Summary, fig: (caption: string, content: string) => string): string[] {
  const cfg = s.config;
  const env = `FrozenLake ${cfg.env.size}×${cfg.env.size} random maps (p ${cfg.env.p}), world ${s.world}`;
  const names = policiesOf(s);
  const Tmax = cfg.eval.T.at(-1)!;
  const W = `${s.world}, seed ${cfg.seed}`;
  const section = (heading: string, body: string | readonly string[]) =>
    htmlSection(`${heading} (${W})`, body, { id: slug(`${s.world}-${cfg.seed}-${heading}`) });

  // ── Findings ──────────────────────────────────────────────────────────────────────────────────
  const held = s.findings.filter((x) => x.held === true).length;
  const identical =
    s.exactPassKT.diff.passKT.every((row) => row.every((x) => x === 0)) && s.likelihood.llrGap.value === 0;
  const findings = section('Findings', [
    paragraph(
      `This study measures, on our own policies, the quantities of ${PAPER}, and says number by number which of its findings hold here. ` +
        `Base: a neural policy behaviour-cloned from a good but imperfect expert. RL: trained from it at one fixed turn budget (T=${cfg.rl.budget}); BudgetMix: the same with budgets drawn from {${cfg.budgetmix.budgets.join(', ')}}. ` +
        `Everything is measured on ${s.passKT.tasks} held-out maps the policies never trained on.`,
    ),
    paragraph(
      'Each verdict is decided by a direction and a 95% confidence interval, never by a magnitude: the paper’s agents are LLMs whose actions are many tokens long (its NLLs are per response, its LLRs sum over tokens and turns), ours choose one of four moves, so only signs and orderings can carry over. A finding is “not held” whenever our intervals do not show it.',
    ),
    ...(identical
      ? [
          paragraph(
            'Note: the RL policy is identical to the base on every held-out map (all differences are exactly 0). The trainer changed nothing — a stand-in or null-control trainer was used, so none of the RL findings can hold in this run.',
          ),
        ]
      : []),
    findingsTable(
      s.findings.map((x) => ({
        claim: `${x.claim} (${x.id})`,
        paper: x.paper,
        ours: oursText(x.ours),
        held: x.held,
        note: x.note,
      })),
      {
        caption: `Findings: ${held} of ${s.findings.length} held here (the paper’s number, ours, and the verdict)`,
      },
    ),
    '<h3>How each verdict is decided</h3>',
    paragraph(
      `Each verdict is a pure function of quantities stored in summary.json (world: ${s.world}); \`turnwise study verdicts --in summary.json\` recomputes them. The test of each, in one sentence:`,
    ),
    `<ol>\n${s.findings.map((x) => `<li><b>${escapeText(x.id)}</b> — ${escapeText(x.claim)}. ${escapeText(x.test)}</li>`).join('\n')}\n</ol>`,
  ]);

  // ── Setup ─────────────────────────────────────────────────────────────────────────────────────
  const ref = s.reference;
  const refLine = (name: string, ys: (number | null)[], opacity: number) => ({
    name,
    dashed: true,
    color: 'currentColor',
    opacity,
    points: ref.T.map((t, j) => ({ x: t, y: ys[j] })),
  });
  const setup = section('Setup', [
    keyValues([
      ['tasks', env],
      [
        'maps',
        `${cfg.seeds.train.count} for training (seeds ${cfg.seeds.train.start}…), ${cfg.seeds.test.count} held out (seeds ${cfg.seeds.test.start}…)`,
      ],
      ['expert', `${s.policies.expert} (softmax over Q*, budget-blind)`],
      ['base', s.policies.base],
      ['base parameters', String(s.base.parameters)],
      [
        'demonstrations',
        `${s.base.examples} distinct examples from ${s.base.expertTurns} expert turns (expert episode success ${num(s.base.expertEpisodeSuccess)})`,
      ],
      [
        'BC loss (first → last epoch)',
        `${num(s.base.bcLoss[0])} → ${num(s.base.bcLoss.at(-1))} over ${s.base.bcLoss.length} epochs`,
      ],
      [
        'trainer request',
        `${cfg.rl.iters} iterations × ${cfg.rl.groupsPerIter} groups × ${cfg.rl.groupSize} episodes; RL at T=${cfg.rl.budget}, BudgetMix over {${cfg.budgetmix.budgets.join(', ')}}, budget hidden from the policy`,
      ],
      [
        'trained policies',
        names
          .slice(1)
          .map((p) => `${LABEL[p]}: ${s.policies[p as 'rl']}`)
          .join('; '),
      ],
      [
        'evaluation',
        `K ∈ {${cfg.eval.K.join(', ')}}, T ∈ {${cfg.eval.T.join(', ')}}; ${cfg.eval.samples} sampled episodes per map and policy; ${cfg.eval.states} normal and error states, ${cfg.eval.actions} actions each, ${cfg.eval.continuations} continuations; ${cfg.eval.resamples} bootstrap resamples`,
      ],
      ['seed', String(cfg.seed)],
    ]),
    fig(
      `Exact success within T on the held-out maps (dynamic programming over each map, no sampling noise), with 95% intervals over maps for base, RL and BudgetMix. Dashed: the optimum V*_T (which knows T), the expert the base imitates, and the uniform random policy. The x-axis is logarithmic.`,
      lineChart({
        title: 'Exact success within T',
        xScale: 'log',
        xTicks: ref.T,
        yDomain: [0, 1],
        xLabel: 'T (turn budget)',
        yLabel: 'P(success within T)',
        series: [
          ...names.map((p) => ({ name: LABEL[p], points: rowPoints(s.exactPassKT[p as 'base']) })),
          refLine('optimal V*_T', ref.optimal, 1),
          refLine('expert', ref.expert, 0.75),
          refLine('random', ref.random, 0.55),
        ],
      }),
    ),
  ]);

  // ── Pass@(K,T) ────────────────────────────────────────────────────────────────────────────────
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
  const pass = section('Pass@(K,T)', [
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

  // ── Step quality ──────────────────────────────────────────────────────────────────────────────
  const sq = s.stepQuality;
  // The interesting range is around ½; widen it to whatever the intervals need.
  const ends = (['normal', 'error'] as const).flatMap((k) => [...sq[k].ci95, ...sq[k].sampled.ci95]);
  const lo = Math.min(0.3, ...ends.filter((x): x is number => x !== null).map((x) => x - 0.05));
  const hi = Math.max(0.7, ...ends.filter((x): x is number => x !== null).map((x) => x + 0.05));
  const winDomain: [number, number] = [
    Math.max(0, Math.floor(lo * 10) / 10),
    Math.min(1, Math.ceil(hi * 10) / 10),
  ];
  const stepQ = section('Step quality at the same state', [
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
          values: [
            { value: sq[k].value, lo: sq[k].ci95[0], hi: sq[k].ci95[1] },
            { value: sq[k].sampled.value, lo: sq[k].sampled.ci95[0], hi: sq[k].sampled.ci95[1] },
          ],
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

  // ── Recovery ──────────────────────────────────────────────────────────────────────────────────
  const rec = s.recovery;
  const recovery = section('Recovery from error states', [
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
            values: [
              { value: r.exact, lo: r.exactCi95[0], hi: r.exactCi95[1] },
              { value: r.value, lo: r.ci95[0], hi: r.ci95[1] },
            ],
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

  // ── Likelihood ────────────────────────────────────────────────────────────────────────────────
  const l = s.likelihood;
  const likelihood = section('Likelihood: how far RL moved from the base', [
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
            {
              label: 'under base',
              values: [
                { value: l.nllRlUnderBase.value, lo: l.nllRlUnderBase.ci95[0], hi: l.nllRlUnderBase.ci95[1] },
              ],
            },
            {
              label: 'under RL',
              values: [
                { value: l.nllRlUnderRl.value, lo: l.nllRlUnderRl.ci95[0], hi: l.nllRlUnderRl.ci95[1] },
              ],
            },
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
            {
              label: 'RL',
              values: [
                { value: l.llrSuccessRl.value, lo: l.llrSuccessRl.ci95[0], hi: l.llrSuccessRl.ci95[1] },
              ],
            },
            {
              label: 'base',
              values: [
                { value: l.llrSuccessBase.value, lo: l.llrSuccessBase.ci95[0], hi: l.llrSuccessBase.ci95[1] },
              ],
            },
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
        [
          'NLL of RL’s actions under base',
          l.nllRlUnderBase.value,
          interval(l.nllRlUnderBase.ci95),
          int(l.nllRlUnderBase.n),
          int(l.nllRlUnderBase.infinite),
        ],
        [
          'NLL of RL’s actions under RL',
          l.nllRlUnderRl.value,
          interval(l.nllRlUnderRl.ci95),
          int(l.nllRlUnderRl.n),
          int(l.nllRlUnderRl.infinite),
        ],
        [
          'LLR, RL’s successful trajectories',
          l.llrSuccessRl.value,
          interval(l.llrSuccessRl.ci95),
          int(l.llrSuccessRl.n),
          int(l.llrSuccessRl.infinite),
        ],
        [
          'LLR, base’s successful trajectories',
          l.llrSuccessBase.value,
          interval(l.llrSuccessBase.ci95),
          int(l.llrSuccessBase.n),
          int(l.llrSuccessBase.infinite),
        ],
        ['LLR gap (RL’s − base’s)', l.llrGap.value, interval(l.llrGap.ci95), null, null],
      ],
      { caption: 'Likelihood figures (terms: actions for NLL, successful trajectories for LLR)' },
    ),
  ]);

  // ── Training curves ───────────────────────────────────────────────────────────────────────────
  const trainedNames = names.filter((p) => p !== 'base');
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
  const training = section('Training curves', [
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

  // ── Failures ──────────────────────────────────────────────────────────────────────────────────
  const fail = s.failures;
  const kinds = FAILURE_KINDS.filter((k) => names.some((p) => (fail[p as 'base'].byKind[k] ?? 0) > 0));
  const failuresSection = section('Failure kinds', [
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

  // ── Timings ───────────────────────────────────────────────────────────────────────────────────
  const tm = s.timings;
  const trainingSeconds = trainedNames.reduce((a, p) => a + (tm[p] ?? 0), 0);
  const timings = section('Timings', [
    paragraph(
      `Wall-clock seconds on the machine that ran this (the only numbers that change between reruns with the same seed). The ${cfg.profile} profile was sized for ${cfg.timePlan.total} s in all: at most ${cfg.timePlan.study} s for the study’s own parts (behaviour cloning, evaluation, diagnostics) and at least ${cfg.timePlan.training} s for training.`,
    ),
    keyValues(
      [
        ['behaviour cloning', tm.bc],
        ...trainedNames.map((p) => [`training: ${LABEL[p]}`, tm[p]] as [string, number | undefined]),
        ['evaluation (Pass@(K,T), exact values)', tm.evaluation],
        ['diagnostics (step quality, recovery, likelihood)', tm.diagnostics],
        ['study without training', `${num(tm.study, 1)} s (plan ≤ ${cfg.timePlan.study} s)`],
        ['training', `${num(trainingSeconds, 1)} s (plan ≥ ${cfg.timePlan.training} s available)`],
        ['total', `${num(s.seconds, 1)} s (plan ≤ ${cfg.timePlan.total} s)`],
      ],
      { digits: 2 },
    ),
  ]);

  const raw = section('Configuration', [
    paragraph('The resolved configuration of this run (summary.json holds it with every number above).'),
    jsonDetails('config', cfg),
    list([`Re-render this page from the run directory with: turnwise report <run directory>`]),
  ]);

  return [findings, setup, pass, stepQ, recovery, likelihood, training, failuresSection, timings, raw];
}

// ── The study: worlds × seeds ────────────────────────────────────────────────────────────────────

const mark = (v: boolean | null | undefined) => (v === true ? '✓' : v === false ? '·' : '–');

/** report.html of the whole study: the findings across seeds per world, the per-seed verdicts, the
 * world comparison and the pre-registered design, then each world's first seed in full. */
export function renderBudgetReport(study: StudySummary): string {
  let n = 0;
  const fig = (caption: string, content: string) => figure(++n, caption, content);
  const worlds = study.worlds.map((w) => w.id);
  const first = study.runs[0];
  const cfg = first.config;
  const byWorld = (w: string) => study.findings.filter((x) => x.world === w);
  const runsOf = (w: string) => study.runs.filter((r) => r.world === w);

  const overview = htmlSection('The study: worlds and seeds', [
    paragraph(
      `This study measures, on our own policies, the quantities of ${PAPER}, and says finding by finding whether it holds here. ` +
        `It runs in ${worlds.length} world${worlds.length > 1 ? 's' : ''} (${worlds.join(', ')}) with ${study.seeds.length} seed${study.seeds.length > 1 ? 's' : ''} each (${study.seeds.join(', ')}); a seed drives everything random of a run — the base’s behaviour cloning, RL, the rollouts, the states, the bootstrap. ` +
        `Across seeds a finding is held when it holds in more than half of the seeds where it is decided; “held in” gives the fraction, and “ours” is the mean over seeds of each run’s tested quantity with a t-interval across seeds (one seed: that run’s own interval).`,
    ),
    keyValues(study.worlds.map((w) => [w.id, w.description] as [string, string])),
    ...worlds.map((w) =>
      findingsTable(
        byWorld(w).map((x) => ({
          claim: `${x.claim} (${x.id})`,
          paper: x.paper,
          ours: oursText(x.ours),
          held: x.held,
          note: `held in ${num(x.heldFraction, 2)} of seeds${x.perSeed ? ` (${x.perSeed.map(mark).join(' ')})` : ''}`,
        })),
        {
          caption: `World ${w}: ${byWorld(w).filter((x) => x.held === true).length} of ${byWorld(w).length} findings held across ${runsOf(w).length} seed(s)`,
        },
      ),
    ),
    '<h3>Per-seed verdicts</h3>',
    table(
      [
        'finding',
        ...worlds.flatMap((w) => [...runsOf(w).map((r) => `${w} ${r.config.seed}`), `${w}: held in`]),
      ],
      FINDING_IDS.map((id) => [
        id,
        ...worlds.flatMap((w) => {
          const x = byWorld(w).find((y) => y.id === id);
          return [...(x?.perSeed ?? []).map(mark), { value: x?.heldFraction ?? null, digits: 2 }];
        }),
      ]),
      { caption: 'Verdict of every finding in every run (✓ held, · not held, – not decided)' },
    ),
    '<h3>How each verdict is decided</h3>',
    `<ol>\n${byWorld(worlds[0])
      .map((x) => `<li><b>${escapeText(x.id)}</b> — ${escapeText(x.claim)}. ${escapeText(x.test)}</li>`)
      .join('\n')}\n</ol>`,
  ]);

  const compare = htmlSection('World comparison', [
    paragraph(
      'The quantities the verdicts read, side by side per world: each the mean over the world’s seeds (the interval across seeds, or the single run’s own).',
    ),
    table(
      ['finding', 'tested quantity', ...worlds],
      FINDING_IDS.map((id) => [
        id,
        byWorld(worlds[0]).find((x) => x.id === id)?.claim ?? '',
        ...worlds.map((w) => {
          const x = byWorld(w).find((y) => y.id === id);
          return x ? `${oursText(x.ours)} ${mark(x.held)}` : 'n/a';
        }),
      ]),
      { caption: 'Tested quantity per world (✓ held across seeds, · not held)' },
    ),
    ...study.acrossSeeds.map((a) =>
      table(
        ['', ...a.T.map((t) => `T=${t}`)],
        [
          ...Object.entries(a.exact).map(([p, xs]) => [
            LABEL[p] ?? p,
            ...xs.map((x) => withInterval(x.value, x.ci95)),
          ]),
          ['RL − base', ...a.lead.map((x) => withInterval(x.value, x.ci95, 3, true))],
        ],
        { caption: `World ${a.world}: exact Pass@(1,T), mean over seeds [95% interval]` },
      ),
    ),
    ...worlds.map((w) => {
      const rows = runsOf(w).map((r) => {
        const e = r.stepQuality.errorStates;
        return [
          String(r.config.seed),
          int(e.attempts),
          int(r.stepQuality.error.states),
          int(e.noBadAction),
          int(e.belowThreshold),
          int(e.terminal),
          { value: e.regret.p10 },
          { value: e.regret.median },
          { value: e.regret.p90 },
          { value: r.stepQuality.occupancy.normal.base },
          { value: r.stepQuality.occupancy.error.base },
          { value: r.stepQuality.occupancy.error.rl },
          { value: r.stepQuality.normal.value },
          { value: r.stepQuality.contrast.winError.value },
          { value: r.stepQuality.contrast.winPreError.value },
        ];
      });
      return table(
        [
          'seed',
          'forcing attempts',
          'error states',
          'no bad action',
          'only errors below the threshold',
          'forced action ended the episode (dropped)',
          'relative regret p10',
          'median',
          'p90',
          'normal states visited by the base',
          'error states visited by the base',
          'error states visited by RL',
          'win (normal)',
          'win (error)',
          'win (pre-error)',
        ],
        rows,
        {
          caption: `World ${w}: injected errors (relative regret (V* − Q*)/V* of the forced action, threshold ${first.config.eval.minRelRegret}), occupancy (share of the states whose map and observation the policy’s own diagnostic episodes visited) and RL’s win rate over the base, per seed`,
        },
      );
    }),
    ...worlds.map((w) =>
      table(
        [
          'seed',
          'forced move',
          'error states',
          'dropped (terminal)',
          'win (error)',
          'win (pre-error)',
          'Δ',
          'RL’s exact gain at error states',
          'at pre-error states',
          'DiD',
        ],
        runsOf(w).flatMap((r) =>
          (['intended', 'slipped'] as const).map((k) => {
            const c = r.stepQuality.contrastByMove[k];
            const d = r.recovery.didByMove[k];
            const m = r.stepQuality.errorStates.moves;
            return [
              String(r.config.seed),
              k,
              int(k === 'intended' ? m.intended : m.slipped),
              int(k === 'intended' ? m.terminalIntended : m.terminalSlipped),
              withInterval(c.winError.value, c.winError.ci95),
              withInterval(c.winPreError.value, c.winPreError.ci95),
              withInterval(c.delta.value, c.delta.ci95, 3, true),
              withInterval(d.gainError.value, d.gainError.ci95, 3, true),
              withInterval(d.gainPreError.value, d.gainPreError.ci95, 3, true),
              withInterval(d.did.value, d.did.ci95, 3, true),
            ];
          }),
        ),
        {
          caption: `World ${w}: injected errors whose forced move went the intended way, and those where the ice slipped (${study.worlds.find((x) => x.id === w)?.memory ? 'as the memory of the state reached records it' : 'the cell reached against the intended move’s cell; a slip into the same cell counts as intended'}) — the error contrast Δ = win(error) − win(pre-error) and RL’s exact gain V^RL − V^base with its difference in differences, per seed; shown beside the findings, which read all error states together`,
        },
      ),
    ),
    ...worlds.map((w) =>
      table(
        ['seed', 'best τ', ...(runsOf(w)[0]?.temperature.T ?? []).map((t) => `RL − base(best τ), T=${t}`)],
        runsOf(w).map((r) => [
          String(r.config.seed),
          { value: r.temperature.bestTemperature, digits: 2 },
          ...r.temperature.rlMinusBestBase.map((x) => withInterval(x.value, x.ci95, 3, true)),
        ]),
        {
          caption: `World ${w}: temperature control — the base sharpened to π^{1/τ}, τ ∈ {${runsOf(w)[0]?.temperature.temperatures.join(', ')}}, best τ at T=${cfg.rl.budget}; RL’s exact lead over that base (Pass@(1,T), paired over maps)`,
        },
      ),
    ),
    ...worlds.map((w) => {
      const r = runsOf(w)[0];
      if (r === undefined) return '';
      const sq = r.stepQuality;
      const rows = (
        [
          ['normal', sq.normal],
          ['error', sq.error],
          ['pre-error', sq.preError],
        ] as const
      ).flatMap(([kind, side]) =>
        (
          [
            ['all', side.detail.all],
            ['consequential', side.detail.consequential],
            ['from the base’s episodes', side.detail.fromBase],
            ['from RL’s episodes', side.detail.fromRl],
          ] as const
        ).map(([subset, x]) => [
          `${kind}: ${subset}`,
          int(x.states),
          withInterval(x.rlBetter.value, x.rlBetter.ci95),
          withInterval(x.ties.value, x.ties.ci95),
          withInterval(x.score.value, x.score.ci95),
          withInterval(x.tiesExcluded.value, x.tiesExcluded.ci95),
          withInterval(x.qRl.value, x.qRl.ci95),
          withInterval(x.qBase.value, x.qBase.ci95),
        ]),
      );
      return table(
        [
          'states',
          'n',
          'P(RL better)',
          'P(tie)',
          'P(better) + ½P(tie)',
          'ties excluded',
          'E_RL[Q*]',
          'E_base[Q*]',
        ],
        rows,
        {
          caption: `World ${w}, seed ${r.config.seed}: step quality in detail (exact; a tie is |ΔQ*| ≤ ${sq.normal.relTie} · V*; consequential: max − min Q* ≥ ${sq.normal.detail.consequentialGap}; intervals resample maps)`,
        },
      );
    }),
    ...worlds.map((w) => {
      const r = runsOf(w)[0];
      if (r === undefined) return '';
      const e = r.stepQuality.errorStates;
      const labels = e.regret.bins.slice(0, -1).map((lo, i) => `${lo}–${e.regret.bins[i + 1]}`);
      return fig(
        `World ${w}, seed ${r.config.seed}: how bad the injected errors are — the relative regret (V* − Q*)/V* of each forced action, kept error states and the dropped ones whose forced action ended the episode (${e.regret.n} kept, ${e.terminalRegret.n} dropped; threshold ${e.minRelRegret}).`,
        barChart({
          title: `Relative regret of injected errors (${w})`,
          series: ['kept', 'dropped (terminal)'],
          groups: labels.map((label, i) => ({
            label,
            values: [e.regret.counts[i], e.terminalRegret.counts[i]],
          })),
          digits: 0,
          xLabel: 'relative regret of the forced action',
          yLabel: 'forced actions',
        }),
      );
    }),
  ]);

  const narrow = study.worlds.find((w) => w.design !== undefined);
  const design =
    narrow?.design === undefined
      ? []
      : [
          htmlSection(`The pre-registered world: ${narrow.id}`, [
            paragraph(
              `Designed, and its predictions written into the code (src/studies/budget/world.ts) and the README, before it was first run. Premise: ${narrow.design.premise}`,
            ),
            paragraph(narrow.design.world),
            table(
              ['finding', 'prediction', 'result (held in, of seeds)'],
              FINDING_IDS.map((id) => {
                const x = byWorld(narrow.id).find((y) => y.id === id);
                return [
                  id,
                  narrow.design!.predictions[id] ?? '',
                  `${mark(x?.held)} ${num(x?.heldFraction, 2)}`,
                ];
              }),
              { caption: `World ${narrow.id}: the predictions and what the runs gave` },
            ),
          ]),
        ];

  const perWorld = worlds.flatMap((w) => {
    const r = runsOf(w)[0];
    return r === undefined ? [] : runSections(r, fig);
  });
  return page({
    title: 'What did RL really improve? — the budget study',
    subtitle: `FrozenLake ${cfg.env.size}×${cfg.env.size} random maps · profile ${study.profile} · worlds ${worlds.join(', ')} · seeds ${study.seeds.join(', ')}`,
    footer: `turnwise · study budget · profile ${study.profile} · rendered from summary.json · paper: ${PAPER}`,
    body: [overview, compare, ...design, ...perWorld],
  });
}
