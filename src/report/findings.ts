// The findings table of a study (issue 7): each claim of the paper, the paper's number, ours, and
// whether it held here. Rows that did not hold are shaded, so a reader scanning the report sees them.
import { badge, verdict } from './html.ts';
import { type Cell, table } from './table.ts';

export interface Finding {
  /** The claim, in words ("RL recovers from error states more often than base"). */
  claim: string;
  /** The paper's number: a value, or text when it is a range or a pair ("43–47%", "51.3% vs 38.6%"). */
  paper: number | string | null;
  /** Ours, in the same form. */
  ours: number | string | null;
  /** true: held; false: did not hold; null: not measured in this run. */
  held: boolean | null;
  /** A short qualification ("within the CI", "only at T ≥ 20"). */
  note?: string;
}

/** The findings as a table: claim, paper, ours, verdict badge (and notes when any finding has one). */
export function findingsTable(
  findings: readonly Finding[],
  options: { digits?: number; caption?: string } = {},
): string {
  const digits = options.digits ?? 3;
  const withNotes = findings.some((f) => f.note !== undefined && f.note !== '');
  const num = (v: number | string | null): Cell =>
    typeof v === 'string' ? { text: v } : { value: v, digits };
  const rows = findings.map((f) => {
    const row: Cell[] = [f.claim, num(f.paper), num(f.ours), { html: badge(verdict(f.held)) }];
    if (withNotes) row.push(f.note ?? '');
    return row;
  });
  const columns = [
    'finding',
    // Left-aligned (numbers too) when any cell is text: text such as "0.51 [0.48, 0.54] at T=10"
    // wraps, and wrapped lines read best from a common left edge.
    'paper',
    'ours',
    { label: 'verdict', align: 'center' as const },
    ...(withNotes ? ['note'] : []),
  ];
  const highlight = findings.flatMap((f, i) => (f.held === false ? [i] : []));
  return table(columns, rows, { caption: options.caption, highlight });
}
