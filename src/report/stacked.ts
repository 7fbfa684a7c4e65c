// A small horizontal stacked bar: how each policy's failures split by kind (budget, invalid-action,
// irreversible, …; docs/architecture.md's taxonomy). Shares by default, so policies with different failure
// counts compare at a glance; the count behind each bar is printed at its end.
import { contrastText, seriesColor } from './color.ts';
import { formatNumber } from './html.ts';
import { axisTicks, formatTick, linearScale } from './scale.ts';
import {
  CHART_WIDTH,
  charsFitting,
  chartTitle,
  el,
  isFiniteNumber,
  type LegendItem,
  legend,
  legendHeight,
  noData,
  SMALL_FONT_SIZE,
  svgDocument,
  text,
  textWidth,
  withTooltip,
  xAxis,
} from './svg.ts';

export interface StackedSegment {
  /** e.g. a failure kind. */
  name: string;
  /** values[i] belongs to categories[i]; missing, negative or non-finite values count as 0. */
  values: readonly (number | null | undefined)[];
  color?: string;
}

export interface StackedBarOptions {
  /** Accessible name (`<title>`, aria-label); drawn at the top too when showTitle is set. */
  title: string;
  /** One bar per category, top to bottom (e.g. policies). */
  categories: readonly string[];
  segments: readonly StackedSegment[];
  /** Shares of each bar's total (default true) or raw values. */
  normalize?: boolean;
  xLabel?: string;
  /** Decimals of non-integer raw values (default 2). */
  digits?: number;
  width?: number;
  showTitle?: boolean;
}

const ROW_H = 24;
const ROW_GAP = 10;

function amount(v: number | null | undefined): number {
  return isFiniteNumber(v) && v > 0 ? v : 0;
}

function showCount(v: number, digits: number): string {
  return Number.isInteger(v) ? String(v) : formatNumber(v, digits);
}

/** A horizontal stacked bar chart as an inline SVG string. */
export function stackedBarChart(o: StackedBarOptions): string {
  const W = o.width ?? CHART_WIDTH;
  const normalize = o.normalize ?? true;
  const digits = o.digits ?? 2;
  const colors = o.segments.map((s, i) => s.color ?? seriesColor(i));
  const totals = o.categories.map((_, c) => o.segments.reduce((sum, s) => sum + amount(s.values[c]), 0));
  const maxTotal = Math.max(0, ...totals);

  const items: LegendItem[] = o.segments.map((s, i) => ({ label: s.name, color: colors[i], shape: 'box' }));
  const titleH = o.showTitle ? 24 : 0;
  const legH = legendHeight(items, W - 16);
  const top = 8 + titleH + legH + (legH > 0 ? 10 : 0);
  const labelW = Math.min(160, Math.max(0, ...o.categories.map((c) => textWidth(c))));
  const totalLabels = totals.map((t) => `n = ${showCount(t, digits)}`);
  const left = 8 + labelW + 10;
  const right = 8 + Math.max(0, ...totalLabels.map((s) => textWidth(s, SMALL_FONT_SIZE))) + 10;
  const px0 = left;
  const px1 = Math.max(px0 + 10, W - right);
  const nC = Math.max(1, o.categories.length);
  const plotH = nC * ROW_H + (nC - 1) * ROW_GAP;
  const py1 = top + plotH + 8;
  const height = Math.ceil(py1 + 8 + 18 + (o.xLabel !== undefined ? 20 : 0) + 6);

  const xT = normalize ? axisTicks([], [0, 1]) : axisTicks([0, maxTotal > 0 ? maxTotal : 1]);
  const sx = linearScale(xT.domain, [px0, px1]);
  const xLabels = xT.ticks.map((v) => (normalize ? `${Math.round(v * 100)}%` : formatTick(v, xT.decimals)));

  const out: string[] = [];
  if (o.showTitle) out.push(chartTitle(8, 8, o.title, W - 16));
  out.push(legend(items, 8, 8 + titleH, W - 16).svg);
  out.push(
    xAxis(
      { ticks: xT.ticks, labels: xLabels, scale: sx },
      { y: py1, left: px0, right: px1, gridTo: top - 4, title: o.xLabel, titleY: py1 + 8 + 18 + 14 },
    ),
  );
  if (o.categories.length === 0) out.push(noData((px0 + px1) / 2, top + ROW_H / 2));
  const maxLabel = charsFitting(160);
  o.categories.forEach((cat, c) => {
    const y = top + c * (ROW_H + ROW_GAP);
    const cy = y + ROW_H / 2;
    out.push(text(left - 10, cy, cat, { anchor: 'end', baseline: 'middle', maxChars: maxLabel }));
    const total = totals[c];
    if (total === 0) {
      out.push(text(px0 + 6, cy, 'none', { baseline: 'middle', opacity: 0.6, className: 'no-data' }));
      return;
    }
    const scaleBy = normalize ? 1 / total : 1;
    let acc = 0;
    o.segments.forEach((s, i) => {
      const raw = s.values[c];
      const v = amount(raw);
      if (v === 0) return;
      const x0 = sx(acc * scaleBy);
      const x1 = sx((acc + v) * scaleBy);
      acc += v;
      const share = v / total;
      const shown = normalize ? formatNumber(share, 0, { percent: true }) : showCount(v, digits);
      let body = el('rect', {
        x: x0,
        y,
        width: Math.max(0, x1 - x0),
        height: ROW_H,
        fill: colors[i],
        class: 'segment',
      });
      if (x1 - x0 >= textWidth(shown, SMALL_FONT_SIZE) + 6)
        body += text((x0 + x1) / 2, cy, shown, {
          anchor: 'middle',
          baseline: 'middle',
          size: SMALL_FONT_SIZE,
          fill: contrastText(colors[i]),
        });
      const tip = `${cat} — ${s.name}: ${showCount(v, digits)} of ${showCount(total, digits)} (${formatNumber(share, 1, { percent: true })})`;
      out.push(withTooltip(tip, body));
    });
    out.push(
      text(sx(normalize ? 1 : total) + 6, cy, totalLabels[c], {
        baseline: 'middle',
        size: SMALL_FONT_SIZE,
        opacity: 0.8,
      }),
    );
  });

  return svgDocument({ width: W, height, title: o.title, className: 'stacked-bar-chart' }, out);
}
