// One run's part of report.html: its findings and how each is decided, the setup, then the sections of
// what was measured (pass.ts, diagnostics.ts, training.ts), the timings and the configuration.
import {
  escapeText,
  findingsTable,
  jsonDetails,
  keyValues,
  lineChart,
  list,
  paragraph,
} from '../../../report/index.ts';
import { oursText } from '../findings.ts';
import { num } from '../format.ts';
import type { Summary } from '../summary.ts';
import { likelihoodSection, recoverySection, stepQualitySection } from './diagnostics.ts';
import { passSection } from './pass.ts';
import { LABEL, PAPER, type RunPage, rowPoints, runPage } from './run-page.ts';
import { failuresSection, trainingSection } from './training.ts';

/** The sections of one run (one world, one seed), headings prefixed with its world; `fig` numbers
 * the figures across the whole page. */
export function runSections(s: Summary, fig: (caption: string, content: string) => string): string[] {
  const p = runPage(s, fig);
  return [
    findingsSection(p),
    setupSection(p),
    passSection(p),
    stepQualitySection(p),
    recoverySection(p),
    likelihoodSection(p),
    trainingSection(p),
    failuresSection(p),
    timingsSection(p),
    configSection(p),
  ];
}

/** The findings of the run with their verdicts, and the test that decides each. */
export function findingsSection({ s, cfg, section }: RunPage): string {
  const held = s.findings.filter((x) => x.held === true).length;
  const identical =
    s.exactPassKT.diff.passKT.every((row) => row.every((x) => x === 0)) && s.likelihood.llrGap.value === 0;
  return section('Findings', [
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
        ours: oursText(x),
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
}

/** What was measured: the maps, the expert, the base, the trainer's request, the evaluation; the exact success curves. */
export function setupSection({ s, cfg, names, section, fig }: RunPage): string {
  const env = `FrozenLake ${cfg.env.size}×${cfg.env.size} random maps (p ${cfg.env.p}), world ${s.world}`;
  const ref = s.reference;
  const refLine = (name: string, ys: (number | null)[], opacity: number) => ({
    name,
    dashed: true,
    color: 'currentColor',
    opacity,
    points: ref.T.map((t, j) => ({ x: t, y: ys[j] })),
  });
  return section('Setup', [
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
}

/** Wall-clock seconds per stage against the profile's time plan. */
export function timingsSection({ s, cfg, trained: trainedNames, section }: RunPage): string {
  const tm = s.timings;
  const trainingSeconds = trainedNames.reduce((a, p) => a + (tm[p] ?? 0), 0);
  return section('Timings', [
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
}

/** The resolved configuration of the run. */
export function configSection({ cfg, section }: RunPage): string {
  return section('Configuration', [
    paragraph('The resolved configuration of this run (summary.json holds it with every number above).'),
    jsonDetails('config', cfg),
    list([`Re-render this page from the run directory with: turnwise report <run directory>`]),
  ]);
}
