// Self-contained HTML: one file with inline CSS and inline SVG, no scripts, no fonts, no images,
// nothing fetched — so a report opens offline, archives as a single file, and prints.
//
// Convention for every function here: parameters that hold *text* (title, heading, caption, label,
// cell text) are escaped; parameters named `body`/`content`/`html` are trusted markup, normally the
// output of another function of this module or of the charts.

import { ON_WHITE } from './color.ts';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

// XML 1.0 forbids most C0 controls even as character references: one stray \u0001 in a policy name
// would make an SVG saved on its own unparseable, so they are dropped (tab, LF and CR stay).
function dropControls(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0xfffe || c === 0xffff) continue;
    out += ch;
  }
  return out;
}

/** Escapes text for element content: `&`, `<`, `>` (and drops characters XML forbids). */
export function escapeText(text: string): string {
  return dropControls(String(text)).replace(/[&<>]/g, (c) => ESCAPES[c]);
}

/** Escapes text for a quoted attribute value: `&`, `<`, `>`, `"`, `'`. */
export function escapeAttr(text: string): string {
  return dropControls(String(text)).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** What a missing or non-finite number is shown as, everywhere in a report. */
export const NA = 'n/a';

export interface NumberFormat {
  /** Prefix positive values with '+' (differences such as RL − base). */
  signed?: boolean;
  /** Show x as a percentage (x·100, `digits` decimals, '%' appended). */
  percent?: boolean;
}

/**
 * `x.toFixed(digits)`, or `n/a` for null/undefined/NaN/±Infinity. A value that rounds to zero is
 * printed without a sign, so no `-0.00` appears.
 */
export function formatNumber(x: number | null | undefined, digits = 3, format: NumberFormat = {}): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return NA;
  const v = format.percent ? x * 100 : x;
  let s = v.toFixed(digits);
  if (Number(s) === 0) s = (0).toFixed(digits);
  else if (format.signed && v > 0) s = `+${s}`;
  return format.percent ? `${s}%` : s;
}

const CSS = `
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1b1f24;--muted:#57606a;--rule:#d0d7de;--panel:#f6f8fa;
--link:#0a5ea8;--held-bg:#d8f0e4;--held-fg:#00573a;--not-bg:#fde3d6;--not-fg:#8a2d00;
--part-bg:#fbf0c4;--part-fg:#5c4500;--na-bg:#eaeef2;--na-fg:#57606a}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--fg:#e6e9ed;--muted:#9aa5b1;--rule:#343b44;
--panel:#161b22;--link:#7cc4f2;--held-bg:#0d3b29;--held-fg:#8fe3bd;--not-bg:#4a1d08;--not-fg:#ffb892;
--part-bg:#3b3003;--part-fg:#f3e27a;--na-bg:#262c33;--na-fg:#9aa5b1}}
html{background:var(--bg);color:var(--fg)}
body{margin:0 auto;max-width:64rem;padding:2rem 1.25rem 4rem;overflow-wrap:break-word;
font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:1.85rem;line-height:1.2;margin:0 0 .35rem}
h2{font-size:1.35rem;line-height:1.25;margin:2.5rem 0 .75rem;padding-bottom:.3rem;border-bottom:1px solid var(--rule)}
h3{font-size:1.1rem;margin:1.75rem 0 .5rem}
h4{font-size:1rem;margin:1.25rem 0 .4rem}
p,ul,ol{max-width:46rem}
a{color:var(--link)}
.subtitle{color:var(--muted);margin:0 0 1.5rem;font-size:1.05rem}
figure{margin:1.75rem 0;break-inside:avoid}
figure .chart{overflow-x:auto}
svg{display:block;max-width:100%;height:auto}
svg.turnwise-chart{max-width:none}
figcaption{color:var(--muted);font-size:.92rem;margin-top:.5rem;max-width:46rem}
figcaption strong{color:var(--fg)}
.grid{display:flex;flex-wrap:wrap;gap:1rem 1.5rem;align-items:flex-start}
.grid>div{max-width:100%}
.table-wrap{overflow-x:auto;container-type:inline-size}
table{border-collapse:collapse;margin:1rem 0;font-size:.95rem;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;color:var(--muted);padding-bottom:.4rem}
th,td{padding:.35rem .75rem;border-bottom:1px solid var(--rule);text-align:left;vertical-align:top}
thead th{border-bottom:2px solid var(--fg);font-weight:600}
.num,.right{text-align:right}
td.num{white-space:nowrap}
td.long{min-width:10em}
.center{text-align:center}
tr.highlight td{background:var(--panel)}
.na{color:var(--muted)}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:999px;font-size:.85em;font-weight:600;
white-space:nowrap;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.badge.held{background:var(--held-bg);color:var(--held-fg)}
.badge.not-held{background:var(--not-bg);color:var(--not-fg)}
.badge.partial{background:var(--part-bg);color:var(--part-fg)}
.badge.na{background:var(--na-bg);color:var(--na-fg)}
dl.kv{display:grid;grid-template-columns:fit-content(40%) minmax(0,1fr);gap:.3rem 1.5rem;margin:1rem 0}
dl.kv>div{display:contents}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
details{margin:1rem 0;border:1px solid var(--rule);border-radius:6px;padding:.5rem .75rem;background:var(--panel)}
summary{cursor:pointer;font-weight:600}
pre{overflow:auto;max-height:36rem;margin:.5rem 0 0;
font:.82rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
footer{margin-top:3rem;padding-top:.75rem;border-top:1px solid var(--rule);color:var(--muted);font-size:.85rem}
@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--rule:#999;--panel:#f2f2f2;--link:#000;
--held-bg:#d8f0e4;--held-fg:#00573a;--not-bg:#fde3d6;--not-fg:#8a2d00;--part-bg:#fbf0c4;--part-fg:#5c4500;
--na-bg:#eee;--na-fg:#333}
body{max-width:none;padding:0;font-size:10.5pt}
h2,h3{break-after:avoid}
figure,table,dl,details{break-inside:avoid}
pre{max-height:none;white-space:pre-wrap}
figure .chart,.table-wrap{overflow:visible}}
`
  .trim()
  .replace(/\n/g, '');

// A table that cannot fit its box shows one card per row instead (the cells as label: value pairs,
// the header's labels repeated in each), so no column is cut off in print or pushed off-screen on a
// phone, and no text column is squeezed to a word per line. CSS cannot measure a table's natural
// width, so table() estimates it and names the container width below which to stack (STACK_AT, rem):
// the container queries below then switch each table by the width of its own box.
const STACK_AT = [30, 40, 48, 56, 64] as const;
function stackRules(s: string): string {
  return (
    `${s},${s} tbody,${s} tr,${s} caption{display:block}${s} thead{display:none}` +
    `${s} tr{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.25rem 1.25rem;` +
    `padding:.5rem .25rem;border-bottom:1px solid var(--rule)}${s} tr:first-child{border-top:2px solid var(--fg)}` +
    `${s} tr.highlight{background:var(--panel)}${s} td{display:block;padding:0;border:0;text-align:left;` +
    `white-space:normal;min-width:0}${s} td::before{content:attr(data-label);display:block;color:var(--muted);` +
    `font-size:.85em}${s} td.long{grid-column:1/-1}`
  );
}
// Light page and print: the palette's lightest colours darkened (ON_WHITE); attribute selectors,
// because the charts write their colours as presentation attributes, which CSS overrides.
const PALETTE_CSS = `@media print,not all and (prefers-color-scheme:dark){${Object.entries(ON_WHITE)
  .map(
    ([from, to]) =>
      `svg.turnwise-chart [stroke="${from}" i]{stroke:${to}}svg.turnwise-chart [fill="${from}" i]{fill:${to}}`,
  )
  .join('')}}`;

const STACK_CSS =
  STACK_AT.map((b) => `@container (width < ${b}rem){${stackRules(`table.stack-${b}`)}}`).join('') +
  stackRules('table.stack-all');

export interface PageOptions {
  title: string;
  subtitle?: string;
  /** Trusted markup, or a list of fragments joined by newlines. */
  body: string | readonly string[];
  /** Footer text (e.g. "turnwise 0.1.0 · seed 0 · 2026-01-31"): pass dates in, the page never reads a clock. */
  footer?: string;
  lang?: string;
}

/**
 * A whole HTML document. The Content-Security-Policy forbids every fetch (scripts, styles, images,
 * fonts, frames, connections), so even markup that slipped into a body cannot reach the network.
 */
export function page(options: PageOptions): string {
  const body = typeof options.body === 'string' ? options.body : options.body.join('\n');
  return [
    '<!doctype html>',
    `<html lang="${escapeAttr(options.lang ?? 'en')}">`,
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    `<title>${escapeText(options.title)}</title>`,
    `<style>${CSS}${STACK_CSS}${PALETTE_CSS}</style>`,
    '</head>',
    '<body>',
    '<header>',
    `<h1>${escapeText(options.title)}</h1>`,
    options.subtitle === undefined ? '' : `<p class="subtitle">${escapeText(options.subtitle)}</p>`,
    '</header>',
    '<main>',
    body,
    '</main>',
    options.footer === undefined ? '' : `<footer>${escapeText(options.footer)}</footer>`,
    '</body>',
    '</html>',
    '',
  ]
    .filter((line, i, all) => line !== '' || i === all.length - 1)
    .join('\n');
}

/** A lower-case, dash-separated anchor id made from a heading ("Pass@(K,T)" → "pass-k-t"). */
export function slug(text: string): string {
  const s = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return s === '' ? 'section' : s;
}

export interface SectionOptions {
  /** Anchor id; defaults to slug(heading). */
  id?: string;
  /** Heading level, 2 by default (the page title is the only h1). */
  level?: 2 | 3 | 4;
}

/** A `<section>` with a heading and trusted body markup. */
export function section(
  heading: string,
  body: string | readonly string[],
  options: SectionOptions = {},
): string {
  const level = options.level ?? 2;
  const inner = typeof body === 'string' ? body : body.join('\n');
  const id = escapeAttr(options.id ?? slug(heading));
  return `<section id="${id}">\n<h${level}>${escapeText(heading)}</h${level}>\n${inner}\n</section>`;
}

/** A paragraph of plain text. */
export function paragraph(text: string): string {
  return `<p>${escapeText(text)}</p>`;
}

/** A bulleted list of plain-text items. */
export function list(items: readonly string[]): string {
  return `<ul>\n${items.map((i) => `<li>${escapeText(i)}</li>`).join('\n')}\n</ul>`;
}

/**
 * A numbered figure: the chart (trusted markup, e.g. an SVG) and a caption "Figure N. …". The number
 * is passed in rather than counted here, so rendering stays a pure function and the text can refer
 * to "Figure 3" before the figure appears.
 */
export function figure(
  number: number,
  caption: string,
  content: string,
  options: { id?: string } = {},
): string {
  const id = escapeAttr(options.id ?? `figure-${number}`);
  return [
    `<figure id="${id}">`,
    `<div class="chart">${content}</div>`,
    `<figcaption><strong>Figure ${escapeText(String(number))}.</strong> ${escapeText(caption)}</figcaption>`,
    '</figure>',
  ].join('\n');
}

/** Side-by-side panels (small multiples) that wrap on narrow screens. */
export function grid(items: readonly string[]): string {
  return `<div class="grid">\n${items.map((i) => `<div>${i}</div>`).join('\n')}\n</div>`;
}

export type BadgeKind = 'held' | 'not-held' | 'partial' | 'na';

const BADGE: Record<BadgeKind, { symbol: string; text: string }> = {
  held: { symbol: '✓', text: 'held' },
  'not-held': { symbol: '✗', text: 'not held' },
  partial: { symbol: '≈', text: 'partly' },
  na: { symbol: '–', text: 'n/a' },
};

/**
 * A pill such as "✓ held" / "✗ not held". The symbol is always there, so the meaning never rests on
 * colour alone (colour-blind readers, black-and-white print).
 */
export function badge(kind: BadgeKind, text?: string): string {
  const b = BADGE[kind];
  return `<span class="badge ${kind}">${b.symbol} ${escapeText(text ?? b.text)}</span>`;
}

/** Maps a verdict to its badge kind: true → held, false → not-held, null/undefined → na. */
export function verdict(held: boolean | null | undefined): BadgeKind {
  return held === true ? 'held' : held === false ? 'not-held' : 'na';
}

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

export type SummaryValue = string | number | boolean | null | undefined;

/**
 * A key–value block (`<dl>`): numbers formatted with `digits`, booleans as yes/no, missing as n/a.
 * Entries keep the order given (pass an array of pairs, or a record in insertion order).
 */
export function keyValues(
  entries: readonly (readonly [string, SummaryValue])[] | Readonly<Record<string, SummaryValue>>,
  options: { digits?: number } = {},
): string {
  const pairs = Array.isArray(entries)
    ? (entries as readonly (readonly [string, SummaryValue])[])
    : Object.entries(entries as Record<string, SummaryValue>);
  const show = (v: SummaryValue): string => {
    if (typeof v === 'number') return formatNumber(v, options.digits ?? 3);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (v === null || v === undefined) return NA;
    return escapeText(v);
  };
  const items = pairs.map(([k, v]) => `<div><dt>${escapeText(k)}</dt><dd>${show(v)}</dd></div>`);
  return `<dl class="kv">\n${items.join('\n')}\n</dl>`;
}

/**
 * Raw JSON in a collapsible `<details>`. Non-finite numbers become null (as JSON.stringify does),
 * bigints become strings, and a value JSON cannot hold (a cycle) is reported instead of thrown.
 */
export function jsonDetails(summary: string, value: unknown, options: { open?: boolean } = {}): string {
  let json: string;
  try {
    json =
      JSON.stringify(
        value,
        (_key, v: unknown) =>
          typeof v === 'bigint' ? v.toString() : typeof v === 'number' && !Number.isFinite(v) ? null : v,
        2,
      ) ?? 'null';
  } catch (e) {
    json = `(not serialisable as JSON: ${e instanceof Error ? e.message : String(e)})`;
  }
  return [
    `<details${options.open ? ' open=""' : ''}>`,
    `<summary>${escapeText(summary)}</summary>`,
    `<pre><code>${escapeText(json)}</code></pre>`,
    '</details>',
  ].join('\n');
}
