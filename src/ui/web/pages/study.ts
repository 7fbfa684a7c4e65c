/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A budget study's part of its run page, from its summary.json (`final` of GET /api/runs/:id): the
// findings across seeds per world, and per run (world × seed) the sampled Pass@(K,T) of each policy and
// RL − base, sampled and exact, as the study's report draws them (report/heatmap.ts: every cell's
// value printed, its 95% interval in the cell when it fits and always on hover). The summary is read
// by shape here — the study's schema belongs to studies/, which the dashboard does not import — and a
// part that is missing is left out, not guessed.
import { findingsTable, grid, niceTicks, passKTHeatmap } from '../../../report/index.ts';
import { esc, fmt } from '../dom.ts';

type Interval = readonly (number | null)[];
interface Grid {
  K: number[];
  T: number[];
  passKT: (number | null)[][];
  ci95?: Interval[][];
}
interface Finding {
  id: string;
  world?: string;
  claim: string;
  paper: string | number | null;
  ours: { value: number | null; ci95: Interval };
  held: boolean | null;
  heldFraction?: number;
}
interface RunSummary {
  world: string;
  config?: { seed?: number };
  passKT?: Record<string, unknown> & { diff?: (number | null)[][]; diffCi95?: Interval[][] };
  exactPassKT?: { diff?: Grid };
}

const POLICIES: Record<string, string> = { base: 'base', rl: 'RL', budgetmix: 'BudgetMix', gigpo: 'GiGPO' };

const isGrid = (x: unknown): x is Grid =>
  x !== null && typeof x === 'object' && Array.isArray((x as Grid).K) && Array.isArray((x as Grid).passKT);

/** A grid for the heatmap: an interval with a missing end is no interval. */
const heat = (g: Grid) => ({
  K: g.K,
  T: g.T,
  passKT: g.passKT,
  ci95: g.ci95?.map((row) =>
    row.map((c) => (c[0] === null || c[1] === null ? null : ([c[0], c[1]] as const))),
  ),
});

const ours = (f: Finding) =>
  f.ours.value === null
    ? 'n/a'
    : `${fmt(f.ours.value, 3)} [${fmt(f.ours.ci95[0], 3)}, ${fmt(f.ours.ci95[1], 3)}]`;

function runSection(r: RunSummary): string {
  const p = r.passKT ?? {};
  const policies = Object.keys(POLICIES).filter((k) => isGrid(p[k]));
  const sampled = policies.map((k) =>
    passKTHeatmap(heat(p[k] as Grid), { title: `Pass@(K,T), ${POLICIES[k]}`, showTitle: true }),
  );
  const diffs: [Grid, string][] = [];
  const base = p.base as Grid | undefined;
  if (base !== undefined && Array.isArray(p.diff))
    diffs.push([{ K: base.K, T: base.T, passKT: p.diff, ci95: p.diffCi95 }, 'RL − base (sampled)']);
  if (r.exactPassKT?.diff && isGrid(r.exactPassKT.diff))
    diffs.push([r.exactPassKT.diff, 'RL − base (exact)']);
  // Difference grids side by side share one colour scale, so equal colours mean equal numbers.
  const m = Math.max(
    0,
    ...diffs.flatMap(([g]) => g.passKT.flat().map((x) => (x === null ? 0 : Math.abs(x)))),
  );
  const domain: [number, number] = m > 0 ? niceTicks(-m, m, 4).domain : [-1, 1];
  const diffHeats = diffs.map(([g, title]) =>
    passKTHeatmap(heat(g), {
      title,
      showTitle: true,
      scale: 'diverging',
      divergingLabels: ['base better', 'RL better'],
      domain,
    }),
  );
  const seed = r.config?.seed;
  return `<h3>${esc(r.world)}${seed === undefined ? '' : `, seed ${esc(String(seed))}`}</h3>
${sampled.length > 0 ? `<figure><div class="chart">${grid(sampled)}</div><figcaption>Sampled Pass@(K,T) of each policy on the held-out maps (hover a cell for its 95% interval).</figcaption></figure>` : ''}
${diffHeats.length > 0 ? `<figure><div class="chart">${grid(diffHeats)}</div><figcaption>RL − base: blue where RL is ahead, red where the base is; paired 95% intervals over maps.</figcaption></figure>` : ''}`;
}

export function studySections(final: unknown): string {
  if (final === null || typeof final !== 'object') return '';
  const s = final as { findings?: Finding[]; runs?: RunSummary[] };
  const findings = Array.isArray(s.findings) ? s.findings : [];
  const worlds = [...new Set(findings.map((f) => f.world ?? ''))];
  const tables = worlds.map((w) => {
    const fs = findings.filter((f) => (f.world ?? '') === w);
    return findingsTable(
      fs.map((f) => ({
        claim: `${f.claim} (${f.id})`,
        paper: f.paper,
        ours: ours(f),
        held: f.held,
        note: f.heldFraction === undefined ? undefined : `held in ${fmt(f.heldFraction, 2)} of seeds`,
      })),
      {
        caption: `${w === '' ? 'Findings' : `World ${w}`}: ${fs.filter((f) => f.held === true).length} of ${fs.length} held`,
      },
    );
  });
  const runs = Array.isArray(s.runs) ? s.runs : [];
  return `<section><h2>Findings</h2>${tables.join('\n') || '<p class="muted">None recorded.</p>'}</section>
<section><h2>Pass@(K,T)</h2>${runs.map(runSection).join('\n')}</section>`;
}
