// Grouped comparisons with 95% CIs: recovery rate per policy, step-quality win rates at normal vs
// error states (docs/methods.md §5), with reference lines such as 0.5 (no preference). Two styles: bars
// from a baseline, or dots with whiskers (better when the interesting range is far from zero).
import { seriesColor } from './color.ts';
import { formatNumber } from './html.ts';
import { axisTicks, formatTick, linearScale } from './scale.ts';
import {
  CHART_WIDTH,
  charsFitting,
  chartTitle,
  clamp,
  el,
  isFiniteNumber,
  type LegendItem,
  legend,
  legendHeight,
  noData,
  num,
  referenceLine,
  SMALL_FONT_SIZE,
  svgDocument,
  text,
  textWidth,
  withTooltip,
  xAxis,
  yAxis,
} from './svg.ts';

export interface BarValue {
  /** null, undefined or non-finite: shown as "n/a". */
  value: number | null | undefined;
  /** The 95% CI, drawn as a whisker where both ends are finite. */
  lo?: number | null;
  hi?: number | null;
  /** Extra tooltip text (e.g. "n = 200 states"). */
  note?: string;
}

export interface BarGroup {
  /** The category on the x-axis (e.g. a policy, or "normal states"). */
  label: string;
  /** values[i] belongs to series[i]; a bare number is a value without CI. */
  values: readonly (BarValue | number | null | undefined)[];
}

export interface BarChartOptions {
  /** Accessible name (`<title>`, aria-label); drawn at the top too when showTitle is set. */
  title: string;
  /** Series names (one bar or dot per series in every group); a legend is drawn when there are two or more. */
  series: readonly string[];
  groups: readonly BarGroup[];
  /** 'bar' (default): bars from the baseline (0 is always in the domain); 'dot': dots with whiskers. */
  style?: 'bar' | 'dot';
  yLabel?: string;
  xLabel?: string;
  /** Fixed value domain, e.g. [0, 1] for rates; values beyond it are clamped to the frame. */
  yDomain?: readonly [number, number];
  /** Horizontal dashed lines, e.g. { y: 0.5, label: 'no preference' }. */
  referenceLines?: readonly { y: number; label?: string }[];
  /** Decimals of value labels and tooltips (default 2). */
  digits?: number;
  /** Print each value above its bar; default: on when there are at most 12 bars. */
  valueLabels?: boolean;
  /** One colour per series; default Okabe–Ito. */
  colors?: readonly string[];
  width?: number;
  height?: number;
  showTitle?: boolean;
}

function asValue(v: BarValue | number | null | undefined): BarValue {
  if (v === null || v === undefined) return { value: null };
  return typeof v === 'number' ? { value: v } : v;
}

/** A grouped bar (or dot) chart with error bars, as an inline SVG string. */
export function barChart(o: BarChartOptions): string {
  const W = o.width ?? CHART_WIDTH;
  const H = o.height ?? 340;
  const style = o.style ?? 'bar';
  const digits = o.digits ?? 2;
  const nG = o.groups.length;
  const nS = Math.max(1, o.series.length);
  const groups = o.groups.map((g) => ({
    label: g.label,
    values: o.series.map((_, i) => asValue(g.values[i])),
  }));
  const colors = o.series.map((_, i) => o.colors?.[i] ?? seriesColor(i));
  const showValues = o.valueLabels ?? nG * nS <= 12;

  const vals: number[] = [];
  for (const g of groups)
    for (const v of g.values) for (const x of [v.value, v.lo, v.hi]) if (isFiniteNumber(x)) vals.push(x);
  for (const r of o.referenceLines ?? []) if (isFiniteNumber(r.y)) vals.push(r.y);
  if (style === 'bar') vals.push(0);
  const yT = axisTicks(vals, o.yDomain);

  const items: LegendItem[] = o.series.map((name, i) => ({
    label: name,
    color: colors[i],
    shape: style === 'bar' ? 'box' : 'dot',
  }));
  const titleH = o.showTitle ? 24 : 0;
  const legH = o.series.length > 1 ? legendHeight(items, W - 16) : 0;
  const top = 8 + titleH + legH + (legH > 0 ? 8 : 0) + (showValues ? 16 : 6);
  const yLabels = yT.ticks.map((v) => formatTick(v, yT.decimals));
  const left = 8 + (o.yLabel !== undefined ? 20 : 0) + Math.max(0, ...yLabels.map((s) => textWidth(s))) + 10;
  const bottom = 8 + 18 + (o.xLabel !== undefined ? 20 : 0) + 4;
  const px0 = left;
  const px1 = Math.max(px0 + 10, W - 16);
  const py0 = top;
  const py1 = Math.max(py0 + 10, H - bottom);
  const height = Math.max(H, py1 + bottom);
  const sy = linearScale(yT.domain, [py1, py0]);
  const Y = (v: number) => clamp(sy(v), py0, py1);
  const baseline = Y(clamp(0, yT.domain[0], yT.domain[1]));

  const out: string[] = [];
  if (o.showTitle) out.push(chartTitle(8, 8, o.title, W - 16));
  if (legH > 0) out.push(legend(items, 8, 8 + titleH, W - 16).svg);
  out.push(
    yAxis(
      { ticks: yT.ticks, labels: yLabels, scale: Y },
      { x: px0, top: py0, bottom: py1, side: 'left', gridTo: px1, title: o.yLabel, titleX: 16 },
    ),
  );

  const groupW = (px1 - px0) / Math.max(1, nG);
  const inner = groupW * 0.72;
  const slotW = inner / nS;
  const barW = Math.min(56, slotW * 0.8);
  // The x-axis is categorical: one tick per group centre, labels truncated to the group's width.
  out.push(
    xAxis(
      {
        ticks: groups.map((_, i) => i),
        labels: groups.map((g) => g.label),
        scale: (i) => px0 + groupW * (i + 0.5),
      },
      {
        y: py1,
        left: px0,
        right: px1,
        title: o.xLabel,
        titleY: py1 + 8 + 18 + 14,
        maxLabelChars: charsFitting(groupW - 6),
      },
    ),
  );
  for (const r of o.referenceLines ?? [])
    if (isFiniteNumber(r.y)) out.push(referenceLine(Y(r.y), px0, px1, r.label));

  groups.forEach((g, gi) => {
    g.values.forEach((v, si) => {
      const cx = px0 + groupW * gi + (groupW - inner) / 2 + slotW * (si + 0.5);
      const name = o.series[si] ?? '';
      const where = name === '' ? g.label : `${g.label} — ${name}`;
      const parts: string[] = [];
      if (!isFiniteNumber(v.value)) {
        parts.push(
          text(cx, baseline - 8, 'n/a', {
            anchor: 'middle',
            size: SMALL_FONT_SIZE,
            opacity: 0.7,
            className: 'value-label',
          }),
        );
        out.push(withTooltip(`${where}: n/a${v.note ? ` (${v.note})` : ''}`, parts.join('')));
        return;
      }
      const y = Y(v.value);
      const hasCi = isFiniteNumber(v.lo) && isFiniteNumber(v.hi);
      if (style === 'bar')
        parts.push(
          el('rect', {
            x: cx - barW / 2,
            y: Math.min(y, baseline),
            width: barW,
            height: Math.abs(baseline - y),
            fill: colors[si],
            class: 'bar',
          }),
        );
      if (hasCi) {
        const [ya, yb] = [Y(v.lo as number), Y(v.hi as number)];
        const cap = Math.min(6, barW / 3);
        parts.push(
          el('path', {
            d: `M${num(cx)},${num(ya)}V${num(yb)}M${num(cx - cap)},${num(ya)}H${num(cx + cap)}M${num(cx - cap)},${num(yb)}H${num(cx + cap)}`,
            stroke: style === 'bar' ? 'currentColor' : colors[si],
            'stroke-width': 1.5,
            fill: 'none',
            class: 'ci',
          }),
        );
      }
      if (style === 'dot') parts.push(el('circle', { cx, cy: y, r: 5, fill: colors[si], class: 'dot' }));
      const shown = formatNumber(v.value, digits);
      if (showValues) {
        const topY = Math.min(y, hasCi ? Y(v.hi as number) : y, style === 'bar' ? baseline : y);
        parts.push(
          text(cx, Math.max(12, topY - 6), shown, {
            anchor: 'middle',
            size: SMALL_FONT_SIZE,
            className: 'value-label',
          }),
        );
      }
      const ci = hasCi ? ` (95% CI ${formatNumber(v.lo, digits)} to ${formatNumber(v.hi, digits)})` : '';
      out.push(withTooltip(`${where}: ${shown}${ci}${v.note ? `; ${v.note}` : ''}`, parts.join('')));
    });
  });
  if (nG === 0) out.push(noData((px0 + px1) / 2, (py0 + py1) / 2));

  return svgDocument({ width: W, height, title: o.title, className: `bar-chart ${style}-style` }, out);
}
