// The compact terminal summary of a budget-study run (what `turnwise study budget` prints on stdout):
// the exact success curves, RL − base, the findings with their verdicts, the time taken. A pure
// function of the summary; the report has everything else.
import { formatNumber } from '../../report/html.ts';
import { oursText } from './findings.ts';
import type { Interval, StudyFinding, Summary } from './summary.ts';

const f = (x: number | null | undefined, digits = 3) => formatNumber(x, digits);
const sg = (x: number | null | undefined, digits = 3) => formatNumber(x, digits, { signed: true });
const LABEL: Record<string, string> = { base: 'base', rl: 'RL', budgetmix: 'BudgetMix', gigpo: 'GiGPO' };

/** Aligned columns, first column left, the rest right. */
function columns(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, [...c].length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A difference with a star when its interval excludes 0. */
function starred(x: number | null, c: Interval): string {
  const sig = (c[0] !== null && c[0] > 0) || (c[1] !== null && c[1] < 0);
  return `${sg(x)}${sig ? '*' : ' '}`;
}

export function terminalSummary(s: Summary, reportPath?: string): string {
  const cfg = s.config;
  const names = ['base', 'rl', 'budgetmix', ...(s.passKT.gigpo ? ['gigpo'] : [])];
  const T = s.exactPassKT.base.T;
  const lines: string[] = [];
  lines.push(
    `Budget study — profile ${cfg.profile}, seed ${cfg.seed}: slippery FrozenLake ${cfg.env.size}x${cfg.env.size} random maps (p ${cfg.env.p}), ${s.passKT.tasks} held-out maps`,
  );
  lines.push(
    `base = BC of ${s.policies.expert} (${s.base.parameters} parameters); RL trained at T=${cfg.rl.budget}; BudgetMix over {${cfg.budgetmix.budgets.join(', ')}}`,
  );
  lines.push('');
  lines.push('Exact success within T on held-out maps (Pass@(1,T); * = 95% interval excludes 0)');
  const d = s.exactPassKT.diff;
  const bm = s.exactPassKT.budgetmixDiff;
  lines.push(
    columns([
      ['', ...T.map((t) => `T=${t}`)],
      ['optimal (knows T)', ...s.reference.optimal.map((x) => f(x))],
      ...names.map((p) => [LABEL[p], ...s.exactPassKT[p as 'base'].passKT[0].map((x) => f(x))]),
      ['RL − base', ...d.passKT[0].map((x, j) => starred(x, d.ci95[0][j]))],
      ['BudgetMix − base', ...bm.passKT[0].map((x, j) => starred(x, bm.ci95[0][j]))],
    ]),
  );
  const sq = s.stepQuality;
  const r = s.recovery;
  const l = s.likelihood;
  lines.push('');
  const c = sq.contrast;
  lines.push(
    `step quality (RL vs base win rate): normal ${f(sq.normal.value)} [${f(sq.normal.ci95[0])}, ${f(sq.normal.ci95[1])}], error ${f(c.winError.value)}, its pre-error states ${f(c.winPreError.value)} (${c.pairs} pairs)`,
  );
  lines.push(
    `recovery from error states (exact): base ${f(r.base.exact)}, RL ${f(r.rl.exact)}, BudgetMix ${f(r.budgetmix.exact)}; RL's gain ${sg(r.did.gainError.value)} there vs ${sg(r.did.gainPreError.value)} at the pre-error states`,
  );
  lines.push(
    `NLL under the base: of RL's actions ${f(l.nllRlUnderBase.value)}, of its own ${f(l.nllBaseUnderBase.value)}; LLR (RL/base) of successes: base's ${sg(l.llrSuccessBase.value, 2)}, RL's ${sg(l.llrSuccessRl.value, 2)}`,
  );
  lines.push('');
  lines.push(...findingLines(s.findings, `Findings (${PAPER_SHORT})`));
  lines.push('');
  const training = names.slice(1).reduce((a, p) => a + (s.timings[p] ?? 0), 0);
  lines.push(
    `time: ${f(s.seconds, 1)} s (training ${f(training, 1)} s, everything else ${f(s.timings.study, 1)} s)`,
  );
  if (reportPath !== undefined) lines.push(`report: ${reportPath}`);
  return lines.join('\n');
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
    lines.push(`  ${mark}  ${x.id.padEnd(width)}  ${x.claim} — ours ${oursText(x.ours)}; paper ${x.paper}`);
    lines.push(`  ${' '.repeat(8)}  ${' '.repeat(width)}  test: ${x.test}`);
  }
  return lines;
}
