// Inline SVG primitives shared by the charts. Every number that reaches an attribute goes through
// num() and every string through escapeText/escapeAttr, so a NaN or a '<' in a label cannot produce
// a broken or unsafe document. There are no ids (a page holds many charts: ids would collide or need
// a global counter, which would break byte-for-byte determinism), hence no gradients or clip paths.
// Text and axes use currentColor, so a chart follows the page's light or dark theme.
import { escapeAttr, escapeText } from './html.ts';
import type { Scale } from './scale.ts';

export const SVG_NS = 'http://www.w3.org/2000/svg';
const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif';
/** Default font size of chart text, in px. */
export const FONT_SIZE = 12;
/**
 * The smallest chart text (value labels, tick labels of colour legends, intervals in heatmap cells).
 * Charts are drawn at their own size, never scaled into their box (svg.turnwise-chart has no
 * max-width), so this is the size on screen at 100% zoom: 11 px, the smallest a report shows.
 */
export const SMALL_FONT_SIZE = 11;
/**
 * Default chart width, px: a 600 px window (a phone turned sideways, half a laptop screen) leaves
 * 560 px inside the page's padding, so a default chart fits it at full size.
 */
export const CHART_WIDTH = 560;
/** Average glyph advance of a sans-serif font, as a fraction of the font size (for layout estimates). */
const CHAR_WIDTH = 0.6;

/**
 * A coordinate for an attribute: rounded to 0.01 px (plenty on screen, and it keeps output small
 * and stable), -0 printed as 0. Non-finite input prints 0 — callers filter missing values first,
 * this is only the last line of defence against `NaN` in an attribute.
 */
export function num(x: number): string {
  if (!Number.isFinite(x)) return '0';
  const r = Math.round(x * 100) / 100;
  return r === 0 ? '0' : String(r);
}

export type AttrValue = string | number | undefined;

/** ` name="value"` pairs; numbers through num(), strings escaped, undefined skipped. */
export function attrs(a: Readonly<Record<string, AttrValue>>): string {
  let s = '';
  for (const [k, v] of Object.entries(a)) {
    if (v === undefined) continue;
    s += ` ${k}="${typeof v === 'number' ? num(v) : escapeAttr(v)}"`;
  }
  return s;
}

/** An element: self-closing without children, else wrapping the (trusted) child markup. */
export function el(tag: string, a: Readonly<Record<string, AttrValue>>, children?: string): string {
  return children === undefined ? `<${tag}${attrs(a)}/>` : `<${tag}${attrs(a)}>${children}</${tag}>`;
}

/** A group whose `<title>` is the hover tooltip of everything inside it. */
export function withTooltip(
  tooltip: string,
  body: string,
  a: Readonly<Record<string, AttrValue>> = {},
): string {
  return el('g', a, `<title>${escapeText(tooltip)}</title>${body}`);
}

/** Cuts text to at most maxChars characters (code points), ending in '…' when cut. */
export function truncate(text: string, maxChars: number): string {
  const chars = [...text];
  if (chars.length <= maxChars) return text;
  return `${chars.slice(0, Math.max(0, Math.floor(maxChars) - 1)).join('')}…`;
}

/** Estimated rendered width of text in px (no font metrics without a browser: an average glyph). */
export function textWidth(text: string, size = FONT_SIZE): number {
  return [...text].length * size * CHAR_WIDTH;
}

/** How many characters fit in `width` px at `size`. */
export function charsFitting(width: number, size = FONT_SIZE): number {
  return Math.max(1, Math.floor(width / (size * CHAR_WIDTH)));
}

export interface TextOptions {
  anchor?: 'start' | 'middle' | 'end';
  size?: number;
  bold?: boolean;
  /** A colour; currentColor (the page's text colour) by default. */
  fill?: string;
  opacity?: number;
  /** Longer text is truncated with '…' and the full text goes into a tooltip. */
  maxChars?: number;
  /** Degrees, around (x, y); -90 for a vertical axis title. */
  rotate?: number;
  /** Vertical placement relative to y: 'middle' centres the glyphs on y, 'top' hangs them below it. */
  baseline?: 'alphabetic' | 'middle' | 'top';
  className?: string;
}

/** A `<text>` element, escaped, truncated with a tooltip when too long. */
export function text(x: number, y: number, content: string, o: TextOptions = {}): string {
  const shown = o.maxChars === undefined ? content : truncate(content, o.maxChars);
  // dy rather than dominant-baseline: renderers (browsers, Inkscape, rsvg) agree on dy.
  const dy = o.baseline === 'middle' ? '0.35em' : o.baseline === 'top' ? '0.8em' : undefined;
  const t = el(
    'text',
    {
      x,
      y,
      dy,
      'text-anchor': o.anchor && o.anchor !== 'start' ? o.anchor : undefined,
      'font-size': o.size !== undefined && o.size !== FONT_SIZE ? o.size : undefined,
      'font-weight': o.bold ? 'bold' : undefined,
      fill: o.fill ?? 'currentColor',
      'fill-opacity': o.opacity,
      transform: o.rotate ? `rotate(${num(o.rotate)} ${num(x)} ${num(y)})` : undefined,
      class: o.className,
    },
    escapeText(shown),
  );
  return shown === content ? t : withTooltip(content, t);
}

export interface Frame {
  width: number;
  height: number;
  /** The accessible name: the SVG's `<title>` and aria-label. */
  title: string;
  /** A longer accessible description (`<desc>`). */
  description?: string;
  className?: string;
}

/** The `<svg>` root: viewBox-scaled, role img, titled for screen readers. */
export function svgDocument(frame: Frame, body: string | readonly string[]): string {
  const inner = typeof body === 'string' ? body : body.join('');
  const desc = frame.description === undefined ? '' : `<desc>${escapeText(frame.description)}</desc>`;
  return el(
    'svg',
    {
      xmlns: SVG_NS,
      viewBox: `0 0 ${num(frame.width)} ${num(frame.height)}`,
      width: frame.width,
      height: frame.height,
      role: 'img',
      'aria-label': frame.title,
      'font-family': FONT,
      'font-size': FONT_SIZE,
      class: frame.className === undefined ? 'turnwise-chart' : `turnwise-chart ${frame.className}`,
    },
    `<title>${escapeText(frame.title)}</title>${desc}${inner}`,
  );
}

export interface LegendItem {
  label: string;
  color: string;
  shape: 'line' | 'dashed' | 'box' | 'dot';
  /** The swatch's opacity (default 1), as the series it stands for. */
  opacity?: number;
}

const LEGEND_ROW = 18;
const LEGEND_SWATCH = 18;
const LEGEND_MAX_CHARS = 36;

/** A legend laid out left to right from (x, y), wrapping at maxWidth; returns its height. */
export function legend(
  items: readonly LegendItem[],
  x: number,
  y: number,
  maxWidth: number,
): { svg: string; height: number } {
  if (items.length === 0) return { svg: '', height: 0 };
  const parts: string[] = [];
  let cx = x;
  let row = 0;
  for (const item of items) {
    const shown = truncate(item.label, LEGEND_MAX_CHARS);
    const w = LEGEND_SWATCH + 6 + textWidth(shown) + 16;
    if (cx > x && cx + w - 16 > x + maxWidth) {
      cx = x;
      row++;
    }
    const cy = y + row * LEGEND_ROW + LEGEND_ROW / 2;
    let swatch: string;
    if (item.shape === 'box')
      swatch = el('rect', {
        x: cx,
        y: cy - 6,
        width: 12,
        height: 12,
        fill: item.color,
        'fill-opacity': item.opacity,
      });
    else if (item.shape === 'dot')
      swatch = el('circle', { cx: cx + 6, cy, r: 4.5, fill: item.color, 'fill-opacity': item.opacity });
    else
      swatch = el('line', {
        x1: cx,
        y1: cy,
        x2: cx + LEGEND_SWATCH,
        y2: cy,
        stroke: item.color,
        'stroke-width': 2.5,
        'stroke-dasharray': item.shape === 'dashed' ? '5 3' : undefined,
        'stroke-opacity': item.opacity,
      });
    const label = text(cx + LEGEND_SWATCH + 6, cy, item.label, {
      baseline: 'middle',
      maxChars: LEGEND_MAX_CHARS,
    });
    parts.push(el('g', { class: 'legend-item' }, swatch + label));
    cx += w;
  }
  return { svg: el('g', { class: 'legend' }, parts.join('')), height: (row + 1) * LEGEND_ROW };
}

/** Height a legend of these items needs at maxWidth (to lay out the plot before drawing it). */
export function legendHeight(items: readonly LegendItem[], maxWidth: number): number {
  return legend(items, 0, 0, maxWidth).height;
}

export interface Axis {
  ticks: readonly number[];
  labels: readonly string[];
  scale: Scale;
}

const AXIS_STROKE = { stroke: 'currentColor', 'stroke-opacity': 0.55 };
const GRID_STROKE = { stroke: 'currentColor', 'stroke-opacity': 0.12 };

/**
 * A vertical axis at x with tick labels on its outer side, optional gridlines across to gridTo, and
 * an optional rotated title at titleX.
 */
export function yAxis(
  axis: Axis,
  o: {
    x: number;
    top: number;
    bottom: number;
    side: 'left' | 'right';
    gridTo?: number;
    title?: string;
    titleX?: number;
  },
): string {
  const out: string[] = [];
  const dir = o.side === 'left' ? -1 : 1;
  axis.ticks.forEach((t, i) => {
    const y = axis.scale(t);
    if (o.gridTo !== undefined) out.push(el('line', { x1: o.x, y1: y, x2: o.gridTo, y2: y, ...GRID_STROKE }));
    out.push(el('line', { x1: o.x, y1: y, x2: o.x + dir * 5, y2: y, ...AXIS_STROKE }));
    out.push(
      text(o.x + dir * 8, y, axis.labels[i], {
        anchor: o.side === 'left' ? 'end' : 'start',
        baseline: 'middle',
      }),
    );
  });
  out.push(el('line', { x1: o.x, y1: o.top, x2: o.x, y2: o.bottom, ...AXIS_STROKE }));
  if (o.title !== undefined && o.titleX !== undefined) {
    const mid = (o.top + o.bottom) / 2;
    out.push(
      text(o.titleX, mid, o.title, {
        anchor: 'middle',
        rotate: o.side === 'left' ? -90 : 90,
        baseline: 'middle',
        maxChars: charsFitting(o.bottom - o.top),
        className: 'axis-title',
      }),
    );
  }
  return el('g', { class: `axis axis-${o.side === 'left' ? 'y' : 'y2'}` }, out.join(''));
}

/** A horizontal axis at y with tick labels below, optional gridlines up to gridTo and a title. */
export function xAxis(
  axis: Axis,
  o: {
    y: number;
    left: number;
    right: number;
    gridTo?: number;
    title?: string;
    titleY?: number;
    maxLabelChars?: number;
  },
): string {
  const out: string[] = [];
  axis.ticks.forEach((t, i) => {
    const x = axis.scale(t);
    if (o.gridTo !== undefined) out.push(el('line', { x1: x, y1: o.y, x2: x, y2: o.gridTo, ...GRID_STROKE }));
    out.push(el('line', { x1: x, y1: o.y, x2: x, y2: o.y + 5, ...AXIS_STROKE }));
    out.push(
      text(x, o.y + 8, axis.labels[i], { anchor: 'middle', baseline: 'top', maxChars: o.maxLabelChars }),
    );
  });
  out.push(el('line', { x1: o.left, y1: o.y, x2: o.right, y2: o.y, ...AXIS_STROKE }));
  if (o.title !== undefined && o.titleY !== undefined)
    out.push(
      text((o.left + o.right) / 2, o.titleY, o.title, {
        anchor: 'middle',
        maxChars: charsFitting(o.right - o.left),
        className: 'axis-title',
      }),
    );
  return el('g', { class: 'axis axis-x' }, out.join(''));
}

/** A dashed horizontal reference line (e.g. 0.5 = no preference) with its label above the right end. */
export function referenceLine(y: number, left: number, right: number, label: string | undefined): string {
  const line = el('line', {
    x1: left,
    y1: y,
    x2: right,
    y2: y,
    stroke: 'currentColor',
    'stroke-opacity': 0.7,
    'stroke-dasharray': '6 4',
  });
  const t =
    label === undefined
      ? ''
      : text(right - 4, y - 5, label, {
          anchor: 'end',
          size: SMALL_FONT_SIZE,
          opacity: 0.85,
          maxChars: charsFitting(right - left, SMALL_FONT_SIZE),
        });
  return el('g', { class: 'reference' }, line + t);
}

/** A visible title at the top of a chart (for small multiples, where each panel needs its own). */
export function chartTitle(x: number, y: number, title: string, maxWidth: number): string {
  return text(x, y, title, {
    bold: true,
    size: 13,
    baseline: 'top',
    maxChars: charsFitting(maxWidth, 13),
    className: 'chart-title',
  });
}

/** A centred note inside an empty plot area. */
export function noData(x: number, y: number, message = 'no data'): string {
  return text(x, y, message, { anchor: 'middle', baseline: 'middle', opacity: 0.6, className: 'no-data' });
}

/** The finite numbers among the arguments. */
export function finite(values: Iterable<number | null | undefined>): number[] {
  const out: number[] = [];
  for (const v of values) if (typeof v === 'number' && Number.isFinite(v)) out.push(v);
  return out;
}

/** True for a number that is neither NaN nor ±Infinity (a type guard that also rules out null). */
export function isFiniteNumber(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** Clamps v into [lo, hi] (in either order). */
export function clamp(v: number, lo: number, hi: number): number {
  const a = Math.min(lo, hi);
  const b = Math.max(lo, hi);
  return Math.min(b, Math.max(a, v));
}
