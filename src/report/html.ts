// Self-contained HTML: one file with inline CSS and inline SVG, no scripts, no fonts, no images,
// nothing fetched — so a report opens offline, archives as a single file, and prints. The page's
// stylesheet is in report/css.ts, tables in report/table.ts.
//
// Convention for every function here: parameters that hold *text* (title, heading, caption, label,
// cell text) are escaped; parameters named `body`/`content`/`html` are trusted markup, normally the
// output of another function of this module or of the charts.

import { PAGE_CSS } from './css.ts';

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
    `<style>${PAGE_CSS}</style>`,
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
