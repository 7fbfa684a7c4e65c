// What the sections of one run's part of report.html share: the run's summary and the page's section
// and figure makers (RunPage), and the labels and chart helpers of more than one section.
import { section as htmlSection, type PassKTGrid, slug } from '../../../report/index.ts';
import type { StudyConfig } from '../config.ts';
import type { Estimate, PassGrid } from '../figures.ts';
import type { Summary } from '../summary.ts';

export const LABEL: Record<string, string> = {
  base: 'base',
  rl: 'RL',
  budgetmix: 'BudgetMix',
  gigpo: 'GiGPO',
};
export const PAPER =
  'Zhu et al. 2026, “What Does Multi-Turn Reinforcement Learning Really Improve in LLM Agents?”';

/** An estimate as a chart point with its interval as the error bar or band. */
export const band = (e: Estimate) => ({ value: e.value, lo: e.ci95[0], hi: e.ci95[1] });

/** A table cell holding an integer. */
export const int = (x: number | null) => ({ value: x, digits: 0 });

/** One run (one world, one seed) as its sections see it. */
export interface RunPage {
  s: Summary;
  cfg: StudyConfig;
  /** The policies of the run, in the summary's order. */
  names: string[];
  /** The trained ones (all but the base). */
  trained: string[];
  /** The largest budget: the one the diagnostics ran at. */
  Tmax: number;
  /** A section with the run's world and seed in its heading and id. */
  section: (heading: string, body: string | readonly string[]) => string;
  /** A numbered figure (numbered across the whole page). */
  fig: (caption: string, content: string) => string;
}

/** The run's page: its sections' headings say its world and seed; `fig` numbers the figures. */
export function runPage(s: Summary, fig: RunPage['fig']): RunPage {
  const cfg = s.config;
  const W = `${s.world}, seed ${cfg.seed}`;
  const names = policiesOf(s);
  return {
    s,
    cfg,
    names,
    trained: names.filter((p) => p !== 'base'),
    Tmax: cfg.eval.T.at(-1)!,
    section: (heading, body) =>
      htmlSection(`${heading} (${W})`, body, { id: slug(`${s.world}-${cfg.seed}-${heading}`) }),
    fig,
  };
}

function policiesOf(s: Summary): string[] {
  return ['base', 'rl', 'budgetmix', ...(s.passKT.gigpo ? ['gigpo'] : [])];
}

/** The heatmap's grid: an interval with a missing end is no interval. */
export function heatGrid(g: PassGrid): PassKTGrid {
  return {
    ...g,
    ci95: g.ci95.map((row) =>
      row.map((c) => (c[0] === null || c[1] === null ? null : ([c[0], c[1]] as const))),
    ),
  };
}

/** Row K of a grid as line-chart points over T, with the interval as a band. */
export function rowPoints(g: PassGrid, k = 0) {
  return g.T.map((t, j) => ({ x: t, y: g.passKT[k][j], lo: g.ci95[k][j][0], hi: g.ci95[k][j][1] }));
}
