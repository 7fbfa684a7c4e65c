// report.html of a budget study: a pure function of its summary (so `turnwise report RUN` can
// re-render it), self-contained (inline SVG and CSS, nothing fetched), every chart with axes, labels
// and a numbered caption. Every number shown here is in summary.json.
//
// The page: the findings across seeds per world, the per-seed verdicts, the world comparison and the
// pre-registered design (here), then each world's first run in full (run.ts).
import {
  barChart,
  escapeText,
  figure,
  findingsTable,
  section as htmlSection,
  keyValues,
  page,
  paragraph,
  table,
} from '../../../report/index.ts';
import { oursText } from '../findings.ts';
import { num, withInterval } from '../format.ts';
import { FINDING_IDS, type StudySummary } from '../summary.ts';
import { runSections } from './run.ts';
import { int, LABEL, PAPER } from './run-page.ts';

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
          ours: oursText(x),
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
          return x ? `${oursText(x)} ${mark(x.held)}` : 'n/a';
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
