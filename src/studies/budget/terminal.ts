// The compact terminal summary of a budget-study run (what `turnwise study budget` prints on stdout):
// the exact success curves, RL − base, the findings with their verdicts, the time taken. A pure
// function of the summary; the report has everything else.
import { formatNumber } from '../../report/html.ts';
import type { Interval, Summary } from './summary.ts';

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
  lines.push(
    `step quality (RL vs base win rate): normal ${f(sq.normal.value)} [${f(sq.normal.ci95[0])}, ${f(sq.normal.ci95[1])}], error ${f(sq.error.value)} [${f(sq.error.ci95[0])}, ${f(sq.error.ci95[1])}]`,
  );
  lines.push(
    `recovery from error states (exact): base ${f(r.base.exact)}, RL ${f(r.rl.exact)}, BudgetMix ${f(r.budgetmix.exact)}`,
  );
  lines.push(
    `NLL of RL's actions: under base ${f(l.nllRlUnderBase.value)}, under RL ${f(l.nllRlUnderRl.value)}; LLR of successes: RL ${f(l.llrSuccessRl.value, 2)}, base ${f(l.llrSuccessBase.value, 2)}`,
  );
  lines.push('');
  const held = s.findings.filter((x) => x.held === true).length;
  lines.push(`Findings (${PAPER_SHORT}): ${held} of ${s.findings.length} held here`);
  for (const x of s.findings) {
    const mark = x.held === true ? 'held    ' : x.held === false ? 'not held' : 'n/a     ';
    lines.push(`  ${mark}  ${x.claim} — ours ${x.ours ?? 'n/a'}; paper ${x.paper ?? 'n/a'}`);
  }
  lines.push('');
  const training = names.slice(1).reduce((a, p) => a + (s.timings[p] ?? 0), 0);
  lines.push(
    `time: ${f(s.seconds, 1)} s (training ${f(training, 1)} s, everything else ${f(s.timings.study, 1)} s)`,
  );
  if (reportPath !== undefined) lines.push(`report: ${reportPath}`);
  return lines.join('\n');
}

const PAPER_SHORT = 'Zhu et al. 2026';
