// Tables of a report: number cells formatted and right-aligned, rich cells (badges, tooltips, trusted
// markup), and the estimate of a table's natural width that picks when it stacks into one card per row
// (the breakpoints, STACK_AT, are in report/css.ts).
// As everywhere in report/html.ts: text is escaped, parameters named `html` are trusted markup.
import { STACK_AT } from './css.ts';
import {
  type BadgeKind,
  badge,
  escapeAttr,
  escapeText,
  formatNumber,
  NA,
  type NumberFormat,
} from './html.ts';

export type Align = 'left' | 'right' | 'center';

export interface Column {
  label: string;
  /** Default: right when every present cell of the column is a number, else left. */
  align?: Align;
  /** Decimals for number cells of this column (default 3). */
  digits?: number;
  /** Number format for this column (signed differences, percentages). */
  format?: NumberFormat;
}

/** A rich cell: a number or text, optionally a badge, a tooltip, or trusted markup. */
export interface CellSpec {
  value?: number | null;
  text?: string;
  badge?: BadgeKind;
  /** Tooltip (the `title` attribute). */
  title?: string;
  /** Trusted markup, used as is (takes precedence over value/text). */
  html?: string;
  digits?: number;
  format?: NumberFormat;
}

export type Cell = string | number | null | undefined | CellSpec;

export interface TableOptions {
  caption?: string;
  /** Row indices to shade (e.g. the findings that did not hold). */
  highlight?: readonly number[];
}

function isNumeric(cell: Cell): boolean {
  if (typeof cell === 'number') return true;
  if (cell !== null && typeof cell === 'object')
    return cell.html === undefined && cell.text === undefined && 'value' in cell && cell.badge === undefined;
  return false;
}

function isPresent(cell: Cell): boolean {
  return cell !== null && cell !== undefined;
}

// Estimates for table layout, in em of the table's font: an average glyph advance, the width a
// column of wrapping text keeps (td.long in the CSS), and the cell padding (.75rem on each side).
const CHAR_EM = 0.55;
const LONG_CHARS = 24;
const LONG_EM = 10;
const PAD_EM = 1.6;
/** The table's font size in rem (the CSS's `table{font-size:.95rem}`). */
const TABLE_REM = 0.95;

/** The visible text of trusted cell markup (tags dropped, the escapes this module writes undone). */
function plain(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(
      /&(lt|gt|quot|#39|amp);/g,
      (_m, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e] ?? '',
    );
}

/** The narrowest a cell can be without cutting a word (or a number, or a badge), in em. */
function cellMinEm(inner: string, nowrap: boolean): number {
  const t = plain(inner);
  if (nowrap) return [...t].length * CHAR_EM;
  const words = t.split(/\s+|(?<=-)/);
  const widest = Math.max(0, ...words.map((w) => [...w].length)) * CHAR_EM;
  const badges = [...inner.matchAll(/<span class="badge[^>]*>([^<]*)<\/span>/g)];
  const badgeEm = Math.max(0, ...badges.map((b) => [...plain(b[1])].length * CHAR_EM * 0.85 + 1.2));
  return Math.max(widest, badgeEm, [...t].length > LONG_CHARS ? LONG_EM : 0);
}

function renderCell(cell: Cell, col: Column, align: Align): { html: string; minEm: number } {
  const cls: string[] = [];
  if (align !== 'left') cls.push(align === 'right' ? 'num' : 'center');
  let inner: string;
  let title: string | undefined;
  if (cell === null || cell === undefined) {
    inner = NA;
    cls.push('na');
  } else if (typeof cell === 'number') {
    inner = formatNumber(cell, col.digits ?? 3, col.format);
    if (!Number.isFinite(cell)) cls.push('na');
  } else if (typeof cell === 'string') {
    inner = escapeText(cell);
  } else {
    title = cell.title;
    if (cell.html !== undefined) inner = cell.html;
    else {
      const parts: string[] = [];
      if (cell.text !== undefined) parts.push(escapeText(cell.text));
      else if ('value' in cell) {
        parts.push(formatNumber(cell.value, cell.digits ?? col.digits ?? 3, cell.format ?? col.format));
        if (cell.value === null || cell.value === undefined || !Number.isFinite(cell.value)) cls.push('na');
      }
      if (cell.badge !== undefined) parts.push(badge(cell.badge));
      inner = parts.join(' ');
    }
  }
  const numeric = cls.includes('num') && (isNumeric(cell) || !isPresent(cell));
  // Text in a right-aligned column wraps like any text (only numbers keep to one line).
  if (cls.includes('num') && !numeric) cls[cls.indexOf('num')] = 'right';
  const minEm = cellMinEm(inner, numeric);
  if (!numeric && [...plain(inner)].length > LONG_CHARS) cls.push('long');
  const attrs = `${cls.length > 0 ? ` class="${cls.join(' ')}"` : ''}${title === undefined ? '' : ` title="${escapeAttr(title)}"`} data-label="${escapeAttr(col.label)}"`;
  return { html: `<td${attrs}>${inner}</td>`, minEm };
}

/** The container width (rem) below which a table of columns this wide must stack (see STACK_AT). */
function stackClass(columnEm: readonly number[]): string {
  const rem = columnEm.reduce((sum, w) => sum + w + PAD_EM, 0) * TABLE_REM;
  const at = STACK_AT.find((b) => rem <= b);
  return at === undefined ? 'stack-all' : `stack-${at}`;
}

/**
 * A table with a header row. Number cells are formatted with the column's digits and right-aligned
 * (tabular figures); missing or non-finite numbers show as `n/a`.
 */
export function table(
  columns: readonly (string | Column)[],
  rows: readonly (readonly Cell[])[],
  options: TableOptions = {},
): string {
  const cols: Column[] = columns.map((c) => (typeof c === 'string' ? { label: c } : c));
  const aligns: Align[] = cols.map((c, j) => {
    if (c.align) return c.align;
    const present = rows.map((r) => r[j]).filter(isPresent);
    return present.length > 0 && present.every(isNumeric) ? 'right' : 'left';
  });
  const highlight = new Set(options.highlight ?? []);
  const head = cols
    .map(
      (c, j) =>
        `<th${aligns[j] === 'left' ? '' : ` class="${aligns[j] === 'right' ? 'num' : 'center'}"`}>${escapeText(c.label)}</th>`,
    )
    .join('');
  // Headers wrap between words and after hyphens; they are bold (wider glyphs).
  const widths = cols.map((c) => cellMinEm(escapeText(c.label), false) * 1.1);
  const body = rows
    .map((r, i) => {
      const cells = cols.map((c, j) => {
        const cell = renderCell(r[j], c, aligns[j]);
        widths[j] = Math.max(widths[j], cell.minEm);
        return cell.html;
      });
      return `<tr${highlight.has(i) ? ' class="highlight"' : ''}>${cells.join('')}</tr>`;
    })
    .join('\n');
  return [
    `<div class="table-wrap"><table class="${stackClass(widths)}">`,
    options.caption === undefined ? '' : `<caption>${escapeText(options.caption)}</caption>`,
    `<thead><tr>${head}</tr></thead>`,
    `<tbody>\n${body}\n</tbody>`,
    '</table></div>',
  ]
    .filter((s) => s !== '')
    .join('\n');
}
