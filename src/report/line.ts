// Line chart: several series over a shared x, optional shaded 95% CI bands, an optional second
// y-axis for a series on another scale (trajectory reward vs step reward over training, docs/methods.md
// §5: they can move in opposite directions, so they are drawn together), and a log x-axis for budgets.
// A missing y breaks the line (a gap, never a fake zero); an isolated point still shows as a marker.
import { seriesColor } from './color.ts';
import { formatNumber } from './html.ts';
import {
  axisTicks,
  formatTick,
  labelDecimals,
  linearScale,
  logScale,
  logTicks,
  niceTicks,
  type Scale,
  type Ticks,
} from './scale.ts';
import {
  type Axis,
  CHART_WIDTH,
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
  svgDocument,
  textWidth,
  withTooltip,
  xAxis,
  yAxis,
} from './svg.ts';

export interface LinePoint {
  x: number;
  /** null, undefined or non-finite: a gap in the line. */
  y: number | null | undefined;
  /** The 95% CI around y, drawn as a shaded band where both ends are finite. */
  lo?: number | null;
  hi?: number | null;
}

export interface LineSeries {
  name: string;
  points: readonly LinePoint[];
  /** Which y-axis the series is read on (default left). */
  axis?: 'left' | 'right';
  /** Dashed stroke; right-axis series are dashed unless this is false, so the axis shows without colour. */
  dashed?: boolean;
  /**
   * Default: the Okabe–Ito colour of the series' index. 'currentColor' is the page's text colour
   * (dark on a light page, light on a dark one): the colour for reference curves such as an optimum,
   * which a fixed grey would hide in one of the two themes.
   */
  color?: string;
  /** Opacity of the line, its markers and its legend swatch (default 1): shades of currentColor. */
  opacity?: number;
}

export interface LineChartOptions {
  /** Accessible name (`<title>`, aria-label); drawn at the top too when showTitle is set. */
  title: string;
  series: readonly LineSeries[];
  xLabel?: string;
  yLabel?: string;
  /** Title of the right axis (shown when some series has axis 'right'). */
  y2Label?: string;
  /** 'log' for budgets (10, 20, 50, 100 …); points with x ≤ 0 are then left out. */
  xScale?: 'linear' | 'log';
  /** Exact x tick values (e.g. the budgets measured) instead of generated ones. */
  xTicks?: readonly number[];
  /** Fixed domains; values beyond them are clamped to the frame (the tooltip keeps the true value). */
  xDomain?: readonly [number, number];
  yDomain?: readonly [number, number];
  y2Domain?: readonly [number, number];
  referenceLines?: readonly { y: number; label?: string; axis?: 'left' | 'right' }[];
  /** Draw the legend; default: when there are two or more series, or a right axis. */
  legend?: boolean;
  /** Dots with tooltips at every point; default: on when no series has more than 30 points. */
  markers?: boolean;
  /** Decimals in tooltips (default 3). */
  digits?: number;
  width?: number;
  height?: number;
  showTitle?: boolean;
}

type Prepared = LineSeries & { color: string; right: boolean; pts: LinePoint[] };

function xTicksFor(o: LineChartOptions, xs: number[], log: boolean): Ticks {
  const usable = (x: number) => Number.isFinite(x) && (!log || x > 0);
  if (o.xDomain && usable(o.xDomain[0]) && usable(o.xDomain[1]) && o.xDomain[0] !== o.xDomain[1]) {
    const [a, b] = o.xDomain[0] < o.xDomain[1] ? [o.xDomain[0], o.xDomain[1]] : [o.xDomain[1], o.xDomain[0]];
    const base = o.xTicks
      ? { ticks: [...o.xTicks], decimals: labelDecimals(o.xTicks) }
      : log
        ? logTicks(a, b)
        : niceTicks(a, b, 6);
    const ticks = base.ticks.filter((t) => usable(t) && t >= a && t <= b).sort((p, q) => p - q);
    return { ticks, domain: [a, b], step: 0, decimals: base.decimals };
  }
  if (o.xTicks?.some(usable)) {
    const ticks = o.xTicks.filter(usable).sort((p, q) => p - q);
    let a = Math.min(...ticks);
    let b = Math.max(...ticks);
    for (const x of xs) {
      if (x < a) a = x;
      if (x > b) b = x;
    }
    if (a === b) [a, b] = log ? [a / 2, a * 2] : [a - 1, a + 1];
    return { ticks, domain: [a, b], step: 0, decimals: labelDecimals(ticks) };
  }
  if (xs.length === 0) return log ? logTicks(1, 10) : niceTicks(0, 1, 6);
  let a = xs[0];
  let b = xs[0];
  for (const x of xs) {
    if (x < a) a = x;
    if (x > b) b = x;
  }
  return log ? logTicks(a, b) : niceTicks(a, b, 6);
}

function axisOf(t: Ticks, scale: Scale): Axis {
  return { ticks: t.ticks, labels: t.ticks.map((v) => formatTick(v, t.decimals)), scale };
}

/** Splits points into maximal runs for which `ok` holds. */
function runs(points: readonly LinePoint[], ok: (p: LinePoint) => boolean): LinePoint[][] {
  const out: LinePoint[][] = [];
  let cur: LinePoint[] = [];
  for (const p of points) {
    if (ok(p)) cur.push(p);
    else if (cur.length > 0) {
      out.push(cur);
      cur = [];
    }
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** A line chart as an inline SVG string. */
export function lineChart(o: LineChartOptions): string {
  const W = o.width ?? CHART_WIDTH;
  const H = o.height ?? 360;
  const log = o.xScale === 'log';
  const digits = o.digits ?? 3;
  const usableX = (x: number) => isFiniteNumber(x) && (!log || x > 0);

  const series: Prepared[] = o.series.map((s, i) => ({
    ...s,
    color: s.color ?? seriesColor(i),
    right: s.axis === 'right',
    // Sorted by x so a line never doubles back; points with an unusable x are dropped.
    pts: s.points.filter((p) => usableX(p.x)).sort((a, b) => a.x - b.x),
  }));
  const hasRight = series.some((s) => s.right);

  const xs: number[] = [];
  for (const s of series) for (const p of s.pts) xs.push(p.x);
  const xT = xTicksFor(o, xs, log);
  const yValues = (right: boolean): number[] => {
    const v: number[] = [];
    for (const s of series) {
      if (s.right !== right) continue;
      for (const p of s.pts) for (const y of [p.y, p.lo, p.hi]) if (isFiniteNumber(y)) v.push(y);
    }
    for (const r of o.referenceLines ?? [])
      if ((r.axis === 'right') === right && isFiniteNumber(r.y)) v.push(r.y);
    return v;
  };
  const yT = axisTicks(yValues(false), o.yDomain);
  const y2T = hasRight ? axisTicks(yValues(true), o.y2Domain) : undefined;

  // Layout: title, legend, then the plot with room for tick labels and axis titles.
  const items: LegendItem[] = series.map((s) => ({
    label: hasRight ? `${s.name} (${s.right ? 'right' : 'left'} axis)` : s.name,
    color: s.color,
    shape: (s.dashed ?? s.right) ? 'dashed' : 'line',
    opacity: s.opacity,
  }));
  const titleH = o.showTitle ? 24 : 0;
  const showLegend = o.legend ?? (series.length > 1 || hasRight);
  const legH = showLegend ? legendHeight(items, W - 16) : 0;
  const top = 8 + titleH + legH + (legH > 0 ? 8 : 0) + 6;
  const yLabels = yT.ticks.map((v) => formatTick(v, yT.decimals));
  const y2Labels = y2T ? y2T.ticks.map((v) => formatTick(v, y2T.decimals)) : [];
  const xLabels = xT.ticks.map((v) => formatTick(v, xT.decimals));
  // Wide enough for the y tick labels, and for half of the first x tick label, which is centred on the axis.
  const firstX = xLabels.length > 0 ? textWidth(xLabels[0]) / 2 + 4 : 0;
  const left = Math.max(
    firstX,
    8 + (o.yLabel !== undefined ? 20 : 0) + Math.max(0, ...yLabels.map((s) => textWidth(s))) + 10,
  );
  const lastX = xLabels.length > 0 ? textWidth(xLabels[xLabels.length - 1]) / 2 + 4 : 0;
  const right = hasRight
    ? 8 + (o.y2Label !== undefined ? 20 : 0) + Math.max(0, ...y2Labels.map((s) => textWidth(s))) + 10
    : Math.max(16, lastX);
  const bottom = 8 + 18 + (o.xLabel !== undefined ? 20 : 0) + 4;
  const px0 = left;
  const px1 = Math.max(px0 + 10, W - right);
  const py0 = top;
  const py1 = Math.max(py0 + 10, H - bottom);
  const height = Math.max(H, py1 + bottom);

  const sx = log ? logScale(xT.domain, [px0, px1]) : linearScale(xT.domain, [px0, px1]);
  const syL = linearScale(yT.domain, [py1, py0]);
  const syR = y2T ? linearScale(y2T.domain, [py1, py0]) : syL;
  const X = (x: number) => clamp(sx(x), px0, px1);
  const Y = (y: number, r: boolean) => clamp((r ? syR : syL)(y), py0, py1);

  const out: string[] = [];
  if (o.showTitle) out.push(chartTitle(8, 8, o.title, W - 16));
  if (showLegend) out.push(legend(items, 8, 8 + titleH, W - 16).svg);
  out.push(
    xAxis(axisOf(xT, X), {
      y: py1,
      left: px0,
      right: px1,
      gridTo: py0,
      title: o.xLabel,
      titleY: py1 + 8 + 18 + 14,
    }),
  );
  out.push(
    yAxis(
      axisOf(yT, (v) => Y(v, false)),
      {
        x: px0,
        top: py0,
        bottom: py1,
        side: 'left',
        gridTo: px1,
        title: o.yLabel,
        titleX: 16,
      },
    ),
  );
  if (y2T)
    out.push(
      yAxis(
        axisOf(y2T, (v) => Y(v, true)),
        {
          x: px1,
          top: py0,
          bottom: py1,
          side: 'right',
          title: o.y2Label,
          titleX: W - 16,
        },
      ),
    );
  for (const r of o.referenceLines ?? [])
    if (isFiniteNumber(r.y)) out.push(referenceLine(Y(r.y, r.axis === 'right'), px0, px1, r.label));

  const maxPoints = Math.max(0, ...series.map((s) => s.pts.length));
  const markers = o.markers ?? maxPoints <= 30;
  let drawn = 0;
  for (const s of series) {
    const parts: string[] = [];
    const r = s.right;
    // CI bands: a polygon per run where both ends are finite; a lone interval becomes an error bar.
    for (const run of runs(s.pts, (p) => isFiniteNumber(p.lo) && isFiniteNumber(p.hi))) {
      if (run.length === 1) {
        const p = run[0];
        const x = X(p.x);
        const [ya, yb] = [Y(p.lo as number, r), Y(p.hi as number, r)];
        parts.push(
          el('path', {
            d: `M${num(x)},${num(ya)}V${num(yb)}M${num(x - 4)},${num(ya)}H${num(x + 4)}M${num(x - 4)},${num(yb)}H${num(x + 4)}`,
            stroke: s.color,
            'stroke-width': 1.5,
            fill: 'none',
            class: 'ci',
          }),
        );
        continue;
      }
      const upper = run.map((p) => `${num(X(p.x))},${num(Y(p.hi as number, r))}`);
      const lower = run.map((p) => `${num(X(p.x))},${num(Y(p.lo as number, r))}`).reverse();
      parts.push(
        el('path', {
          d: `M${upper.join('L')}L${lower.join('L')}Z`,
          fill: s.color,
          'fill-opacity': 0.18,
          class: 'band',
        }),
      );
    }
    // The line: one subpath per run of finite y, so a missing value is a visible gap.
    const segs = runs(s.pts, (p) => isFiniteNumber(p.y));
    const d = segs
      .filter((g) => g.length > 1)
      .map((g) => `M${g.map((p) => `${num(X(p.x))},${num(Y(p.y as number, r))}`).join('L')}`)
      .join('');
    if (d !== '')
      parts.push(
        el('path', {
          d,
          fill: 'none',
          stroke: s.color,
          'stroke-width': 2,
          'stroke-linejoin': 'round',
          'stroke-linecap': 'round',
          'stroke-dasharray': (s.dashed ?? s.right) ? '6 4' : undefined,
          'stroke-opacity': s.opacity,
          class: 'line',
        }),
      );
    for (const g of segs) {
      for (const p of g) {
        if (!markers && g.length > 1) continue;
        const ci =
          isFiniteNumber(p.lo) && isFiniteNumber(p.hi)
            ? ` (95% CI ${formatNumber(p.lo, digits)} to ${formatNumber(p.hi, digits)})`
            : '';
        const tip = `${s.name}: x = ${formatNumber(p.x, labelDecimals([p.x]))}, y = ${formatNumber(p.y, digits)}${ci}`;
        parts.push(
          withTooltip(
            tip,
            el('circle', {
              cx: X(p.x),
              cy: Y(p.y as number, r),
              r: 3.5,
              fill: s.color,
              'fill-opacity': s.opacity,
              class: 'marker',
            }),
          ),
        );
      }
      drawn += g.length;
    }
    out.push(el('g', { class: 'series' }, parts.join('')));
  }
  if (drawn === 0) out.push(noData((px0 + px1) / 2, (py0 + py1) / 2));

  return svgDocument({ width: W, height, title: o.title, className: 'line-chart' }, out);
}
