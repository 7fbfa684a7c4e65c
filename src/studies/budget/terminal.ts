// The compact terminal summary of a budget-study run (what `turnwise study budget` prints on stdout):
// the exact success curves, RL − base, the findings with their verdicts, the time taken. A pure
// function of the summary; the report has everything else.
import type { Interval } from './figures.ts';
import { oursText } from './findings.ts';
import { num, signed } from './format.ts';
import { FINDING_IDS, type StudyFinding, type StudySummary } from './summary.ts';

const LABEL: Record<string, string> = { base: 'base', rl: 'RL', budgetmix: 'BudgetMix', gigpo: 'GiGPO' };

/** Aligned columns: the first `left` columns left-aligned, the rest right. */
export function columns(rows: readonly (readonly string[])[], left = 1): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, [...c].length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i < left ? c.padEnd(widths[i]) : c.padStart(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A difference with a star when its interval excludes 0. */
function starred(x: number | null, c: Interval): string {
  const sig = (c[0] !== null && c[0] > 0) || (c[1] !== null && c[1] < 0);
  return `${signed(x)}${sig ? '*' : ' '}`;
}

/** What `turnwise study budget` prints: per world the exact success curves (means over seeds) and the
 * findings across seeds, then every run's verdict, then the time. */
export function terminalSummary(study: StudySummary, reportPath?: string): string {
  const first = study.runs[0];
  const cfg = first.config;
  const worlds = study.worlds.map((w) => w.id);
  const lines: string[] = [];
  lines.push(
    `Budget study — profile ${study.profile}: FrozenLake ${cfg.env.size}x${cfg.env.size} random maps (p ${cfg.env.p}), ${first.passKT.tasks} held-out maps; worlds ${worlds.join(', ')}; seeds ${study.seeds.join(', ')}`,
  );
  lines.push(
    `base = BC of ${first.policies.expert}; RL trained at T=${cfg.rl.budget}; BudgetMix over {${cfg.budgetmix.budgets.join(', ')}}`,
  );
  for (const w of study.worlds) {
    const a = study.acrossSeeds.find((x) => x.world === w.id)!;
    const runs = study.runs.filter((r) => r.world === w.id);
    lines.push('');
    lines.push(`World ${w.id}: ${w.description}`);
    lines.push(
      `Exact success within T on held-out maps (Pass@(1,T), mean over ${runs.length} seed${runs.length > 1 ? 's' : ''}; * = 95% interval excludes 0)`,
    );
    const names = Object.keys(a.exact);
    lines.push(
      columns([
        ['', ...a.T.map((t) => `T=${t}`)],
        ['optimal (knows T)', ...runs[0].reference.optimal.map((x) => num(x))],
        ...names.map((p) => [LABEL[p] ?? p, ...a.exact[p].map((x) => num(x.value))]),
        ['RL − base', ...a.lead.map((x) => starred(x.value, x.ci95))],
      ]),
    );
    const tc = runs.map((r) => r.temperature);
    const jT = tc[0].T.indexOf(cfg.rl.budget);
    lines.push(
      `temperature control: the base at its best τ (per seed ${tc.map((x) => x.bestTemperature).join(', ')}) at T=${cfg.rl.budget}: ${tc.map((x) => num(x.base[x.temperatures.indexOf(x.bestTemperature)][jT])).join(', ')}; RL − that base ${tc.map((x) => starred(x.rlMinusBestBase[jT].value, x.rlMinusBestBase[jT].ci95).trim()).join(', ')}`,
    );
    const sq = runs.map((r) => r.stepQuality);
    const per = (g: (x: (typeof sq)[number]) => number | null) => sq.map((x) => num(g(x))).join(', ');
    lines.push(
      `step quality, RL vs base (exact, ties |ΔQ*| ≤ ${sq[0].normal.relTie}·V*; per seed): win normal ${per((x) => x.normal.value)}, error ${per((x) => x.contrast.winError.value)}, pre-error ${per((x) => x.contrast.winPreError.value)}; ties at normal states ${per((x) => x.normal.detail.all.ties.value)}; ties excluded at consequential normal states ${per((x) => x.normal.detail.consequential.tiesExcluded.value)}`,
    );
    const e = runs.map((r) => r.stepQuality.errorStates);
    const sum = (k: 'attempts' | 'belowThreshold' | 'terminal' | 'noBadAction') =>
      e.reduce((a, x) => a + x[k], 0);
    lines.push(
      `injected errors (forced action loses ≥ ${num(e[0].minRelRegret * 100, 0)}% of V*): ${e.reduce((a, x) => a + x.regret.n, 0)} error states from ${sum('attempts')} attempts (${sum('belowThreshold')} had only smaller errors, ${sum('noBadAction')} none, ${sum('terminal')} ended the episode and were dropped); median relative regret ${e.map((x) => num(x.regret.median)).join(', ')} (per seed)`,
    );
    lines.push(moveLine(runs));
    lines.push('');
    lines.push(
      ...findingLines(
        study.findings.filter((x) => x.world === w.id),
        `Findings (${PAPER_SHORT})`,
      ),
    );
  }
  lines.push('');
  lines.push(...perSeedLines(study));
  lines.push('');
  lines.push(
    `time: ${num(study.seconds, 1)} s for ${study.runs.length} runs, ${study.parallel} at a time (per run: ${study.runs.map((r) => num(r.seconds, 0)).join(', ')} s)`,
  );
  if (reportPath !== undefined) lines.push(`report: ${reportPath}`);
  return lines.join('\n');
}

/** The injected errors split by how the forced move went (per seed): counts, win(error), Δ and RL's
 * exact gain at error states with its difference in differences, intended against slipped. */
export function moveLine(runs: readonly StudySummary['runs'][number][]): string {
  const seeds = (g: (r: (typeof runs)[number]) => string) => runs.map(g).join(', ');
  const vs = (g: (r: (typeof runs)[number], k: 'intended' | 'slipped') => number | null, sign = false) =>
    `${seeds((r) => (sign ? signed : num)(g(r, 'intended')))} vs ${seeds((r) => (sign ? signed : num)(g(r, 'slipped')))}`;
  const m = (r: (typeof runs)[number]) => r.stepQuality.errorStates.moves;
  return `forced moves, intended vs slipped (per seed): error states ${seeds((r) => String(m(r).intended))} vs ${seeds((r) => String(m(r).slipped))} (dropped terminal ${seeds((r) => String(m(r).terminalIntended))} vs ${seeds((r) => String(m(r).terminalSlipped))}); win(error) ${vs((r, k) => r.stepQuality.contrastByMove[k].winError.value)}; Δ ${vs((r, k) => r.stepQuality.contrastByMove[k].delta.value, true)}; RL’s exact gain at error states ${vs((r, k) => r.recovery.didByMove[k].gainError.value, true)}, DiD ${vs((r, k) => r.recovery.didByMove[k].did.value, true)} (beside the findings, not a verdict)`;
}

/** Every run's verdict: findings as rows, (world, seed) as columns, and the fraction held per world. */
export function perSeedLines(study: StudySummary): string[] {
  const worlds = study.worlds.map((w) => w.id);
  const mark = (v: boolean | null | undefined) => (v === true ? 'held' : v === false ? '-' : 'n/a');
  const header = ['', ...worlds.flatMap((w) => [...study.seeds.map((s) => `${w} ${s}`), `${w} held`])];
  const rows = FINDING_IDS.map((id) => [
    id,
    ...worlds.flatMap((w) => {
      const x = study.findings.find((y) => y.world === w && y.id === id);
      return [...(x?.perSeed ?? []).map(mark), num(x?.heldFraction, 2)];
    }),
  ]);
  return [
    'Per-seed verdicts (held / - not held; "held" column: fraction of seeds)',
    columns([header, ...rows]),
  ];
}

const PAPER_SHORT = 'Zhu et al. 2026';

/** The findings as text: a header with the count held, then per finding its verdict, id, claim, the
 * tested quantity with its interval, and the one-sentence test (also what `study verdicts` prints). */
export function findingLines(findings: readonly StudyFinding[], title = 'Findings'): string[] {
  const held = findings.filter((x) => x.held === true).length;
  const worlds = [...new Set(findings.map((x) => x.world))].join(', ');
  const lines = [`${title}, world ${worlds}: ${held} of ${findings.length} held here`];
  const width = Math.max(...findings.map((x) => x.id.length));
  for (const x of findings) {
    const mark = x.held === true ? 'held    ' : x.held === false ? 'not held' : 'n/a     ';
    lines.push(`  ${mark}  ${x.id.padEnd(width)}  ${x.claim} — ours ${oursText(x)}; paper ${x.paper}`);
    lines.push(`  ${' '.repeat(8)}  ${' '.repeat(width)}  test: ${x.test}`);
  }
  return lines;
}
