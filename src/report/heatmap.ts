// Heatmap of a grid of numbers, made for Pass@(K,T) (docs/methods.md §5): rows K, columns T, the value
// printed in every cell so the chart can be read without judging colour, the 95% CI in the cell when
// it fits and always in the tooltip. Probabilities use a sequential scale on [0, 1]; differences
// (RL − base) a diverging scale centred on 0, symmetric so +x and −x are equally strong.
import { contrastText, DIVERGING_NEUTRAL, diverging, sequential } from './color.ts';
import { formatNumber, type NumberFormat } from './html.ts';
import { formatTick, linearScale, niceTicks } from './scale.ts';
import {
  CHART_WIDTH,
  charsFitting,
  chartTitle,
  clamp,
  el,
  finite,
  isFiniteNumber,
  noData,
  SMALL_FONT_SIZE,
  svgDocument,
  text,
  textWidth,
  withTooltip,
} from './svg.ts';

export type Interval = readonly [number, number] | readonly number[];

export interface HeatmapOptions {
  /** Accessible name (`<title>`, aria-label); drawn at the top too when showTitle is set. */
  title: string;
  /** Row labels, top to bottom (e.g. K). */
  rows: readonly (number | string)[];
  /** Column labels, left to right (e.g. T). */
  cols: readonly (number | string)[];
  /** values[r][c]; missing, null or non-finite cells show as "n/a". */
  values: readonly (readonly (number | null | undefined)[])[];
  /** ci95[r][c] = [lo, hi], as eval's `ci95`. */
  ci95?: readonly (readonly (Interval | null | undefined)[])[];
  /** 'sequential' (default) for probabilities, 'diverging' for differences centred on 0. */
  scale?: 'sequential' | 'diverging';
  /**
   * Colour domain. Sequential: default [0, 1]. Diverging: always symmetric, [−m, m] with
   * m = max(|lo|, |hi|) when given, else max |value| rounded up to a nice number.
   */
  domain?: readonly [number, number];
  /** Decimals of the printed values (default 2); diverging values carry a '+' when positive. */
  digits?: number;
  /** Axis titles, e.g. "K (samples per task)". */
  rowLabel?: string;
  colLabel?: string;
  /** Short names used in tooltips (default: the axis titles, or "row"/"column"). */
  rowName?: string;
  colName?: string;
  /** Where the CI goes: 'auto' (default) prints it in the cell when it fits, tooltips always have it. */
  ci?: 'auto' | 'cell' | 'tooltip';
  /** Title of the colour legend. */
  legendLabel?: string;
  /** Diverging only: what the two ends mean, [negative, positive], e.g. ['base better', 'RL better']. */
  divergingLabels?: readonly [string, string];
  showTitle?: boolean;
  cellWidth?: number;
  cellHeight?: number;
}

const LEGEND_SLICES = 48;
/** Intervals inside cells: the smallest chart text. */
const CI_SIZE = SMALL_FONT_SIZE;

function at<T>(grid: readonly (readonly T[])[] | undefined, r: number, c: number): T | undefined {
  return grid?.[r]?.[c];
}

function interval(x: Interval | null | undefined): [number, number] | null {
  if (!x || x.length < 2 || !isFiniteNumber(x[0]) || !isFiniteNumber(x[1])) return null;
  return [x[0], x[1]];
}

/** A heatmap as an inline SVG string; one `rect.cell` per (row, column), always rows × cols of them. */
export function heatmap(o: HeatmapOptions): string {
  const digits = o.digits ?? 2;
  const isDiv = o.scale === 'diverging';
  const fmt: NumberFormat = { signed: isDiv };
  const nR = o.rows.length;
  const nC = o.cols.length;
  const rowNames = o.rows.map(String);
  const colNames = o.cols.map(String);

  // Colour domain and legend ticks.
  let lo: number;
  let hi: number;
  if (isDiv) {
    let m: number;
    if (o.domain && isFiniteNumber(o.domain[0]) && isFiniteNumber(o.domain[1]))
      m = Math.max(Math.abs(o.domain[0]), Math.abs(o.domain[1]));
    else {
      const vals = finite(o.values.flat().map((v) => (isFiniteNumber(v) ? Math.abs(v) : null)));
      const maxAbs = vals.length > 0 ? Math.max(...vals) : 0;
      m = maxAbs > 0 ? niceTicks(-maxAbs, maxAbs, 4).domain[1] : 1;
    }
    if (!(m > 0)) m = 1;
    [lo, hi] = [-m, m];
  } else {
    const d = o.domain && isFiniteNumber(o.domain[0]) && isFiniteNumber(o.domain[1]) ? o.domain : [0, 1];
    [lo, hi] = d[0] < d[1] ? [d[0], d[1]] : d[0] > d[1] ? [d[1], d[0]] : [d[0] - 0.5, d[0] + 0.5];
  }
  const colorOf = (v: number): string => (isDiv ? diverging(v, hi) : sequential((v - lo) / (hi - lo)));
  const legendTicks = niceTicks(lo, hi, isDiv ? 4 : 5);
  const lTicks = legendTicks.ticks.filter((t) => t >= lo - 1e-12 && t <= hi + 1e-12);
  const lLabels = lTicks.map((t) => {
    const s = formatTick(t, legendTicks.decimals);
    return isDiv && t > 0 ? `+${s}` : s;
  });

  // Cell texts, computed first: their widths decide whether the CI fits in a cell.
  const cells: { value: number | null; shown: string; ci: [number, number] | null; ciShown: string }[][] = [];
  let widestCi = 0;
  for (let r = 0; r < nR; r++) {
    const row = [];
    for (let c = 0; c < nC; c++) {
      const raw = at(o.values, r, c);
      const value = isFiniteNumber(raw) ? raw : null;
      const ci = value === null ? null : interval(at(o.ci95, r, c));
      const ciShown = ci ? `[${formatNumber(ci[0], digits, fmt)}, ${formatNumber(ci[1], digits, fmt)}]` : '';
      widestCi = Math.max(widestCi, textWidth(ciShown, CI_SIZE));
      row.push({ value, shown: formatNumber(value, digits, fmt), ci, ciShown });
    }
    cells.push(row);
  }
  const anyCi = widestCi > 0;

  // Layout, left to right: row axis title, row labels, grid, colour legend. The cells share what the
  // labels and the legend leave of the default chart width (so a heatmap fits a 600 px window), and
  // widen to hold their interval when there is room.
  const rowLabelW = Math.min(120, Math.max(0, ...rowNames.map((s) => textWidth(s))));
  const titleH = o.showTitle ? 24 : 0;
  const divLabels = isDiv ? o.divergingLabels : undefined;
  const left = 8 + (o.rowLabel !== undefined ? 22 : 0) + rowLabelW + 8;
  const barW = 14;
  const tickW = Math.max(0, ...lLabels.map((s) => textWidth(s, SMALL_FONT_SIZE)));
  const divW = divLabels ? Math.max(...divLabels.map((s) => textWidth(`▲ ${s}`, SMALL_FONT_SIZE))) : 0;
  // From the grid's right edge to the chart's: gap, colour bar, ticks, legend title, margin.
  const legendW =
    22 + Math.max(barW + 8 + tickW + (o.legendLabel !== undefined ? 24 : 0), Math.min(divW, 160)) + 10;
  const fit = Math.floor((CHART_WIDTH - left - legendW) / Math.max(1, nC));
  const widest = anyCi ? clamp(widestCi + 8, 84, 100) : 84;
  const cellW = o.cellWidth ?? clamp(fit, 44, widest);
  const ciInCell = anyCi && (o.ci === 'cell' || ((o.ci ?? 'auto') === 'auto' && widestCi + 8 <= cellW));
  const cellH = o.cellHeight ?? (ciInCell ? 46 : 34);
  const top = 8 + titleH + (divLabels ? 18 : 6);
  const gridW = Math.max(1, nC) * cellW;
  const gridH = Math.max(1, nR) * cellH;
  const barX = left + gridW + 22;
  const barH = Math.max(gridH, 120);
  const legendRight = Math.max(
    barX + barW + 8 + tickW + (o.legendLabel !== undefined ? 24 : 0),
    barX + Math.min(divW, 160),
  );
  const width = Math.ceil(legendRight + 10);
  const bottomAxis = top + gridH + 8 + 16 + (o.colLabel !== undefined ? 22 : 0);
  const height = Math.ceil(Math.max(bottomAxis, top + barH + (divLabels ? 18 : 0)) + 8);

  const out: string[] = [];
  if (o.showTitle) out.push(chartTitle(8, 8, o.title, width - 16));

  if (nR === 0 || nC === 0) {
    out.push(noData(left + gridW / 2, top + gridH / 2));
  }
  const rowName = o.rowName ?? o.rowLabel ?? 'row';
  const colName = o.colName ?? o.colLabel ?? 'column';
  for (let r = 0; r < nR; r++) {
    for (let c = 0; c < nC; c++) {
      const cell = cells[r][c];
      const x = left + c * cellW;
      const y = top + r * cellH;
      const cx = x + cellW / 2;
      const cy = y + cellH / 2;
      const where = `${rowName} = ${rowNames[r]}, ${colName} = ${colNames[c]}`;
      let body: string;
      let tip: string;
      if (cell.value === null) {
        body =
          el('rect', {
            x: x + 1,
            y: y + 1,
            width: cellW - 2,
            height: cellH - 2,
            fill: 'none',
            stroke: 'currentColor',
            'stroke-opacity': 0.35,
            'stroke-dasharray': '3 3',
            class: 'cell missing',
          }) +
          text(cx, cy, cell.shown, {
            anchor: 'middle',
            baseline: 'middle',
            opacity: 0.7,
            className: 'cell-value',
          });
        tip = `${where}: no value`;
      } else {
        const fill = colorOf(cell.value);
        const ink = contrastText(fill);
        body = el('rect', { x: x + 1, y: y + 1, width: cellW - 2, height: cellH - 2, fill, class: 'cell' });
        const ciLine = ciInCell && cell.ci;
        body += text(cx, ciLine ? cy - 7 : cy, cell.shown, {
          anchor: 'middle',
          baseline: 'middle',
          fill: ink,
          bold: true,
          // Only absurd magnitudes get cut; the tooltip keeps the full number.
          maxChars: charsFitting(cellW - 4),
          className: 'cell-value',
        });
        if (ciLine)
          body += text(cx, cy + 10, cell.ciShown, {
            anchor: 'middle',
            baseline: 'middle',
            size: CI_SIZE,
            fill: ink,
            opacity: 0.85,
            maxChars: charsFitting(cellW - 4, CI_SIZE),
            className: 'cell-ci',
          });
        tip = `${where}: ${cell.shown}${cell.ci ? ` (95% CI ${cell.ciShown})` : ''}`;
      }
      out.push(withTooltip(tip, body));
    }
  }

  // Row and column labels and axis titles.
  const maxRowChars = charsFitting(120);
  rowNames.forEach((s, r) => {
    out.push(
      text(left - 8, top + r * cellH + cellH / 2, s, {
        anchor: 'end',
        baseline: 'middle',
        maxChars: maxRowChars,
      }),
    );
  });
  colNames.forEach((s, c) => {
    out.push(
      text(left + c * cellW + cellW / 2, top + gridH + 8, s, {
        anchor: 'middle',
        baseline: 'top',
        maxChars: charsFitting(cellW - 4),
      }),
    );
  });
  if (o.rowLabel !== undefined)
    out.push(
      text(18, top + gridH / 2, o.rowLabel, {
        anchor: 'middle',
        baseline: 'middle',
        rotate: -90,
        maxChars: charsFitting(Math.max(gridH, 60)),
        className: 'axis-title',
      }),
    );
  if (o.colLabel !== undefined)
    out.push(
      text(left + gridW / 2, top + gridH + 8 + 16 + 16, o.colLabel, {
        anchor: 'middle',
        maxChars: charsFitting(Math.max(gridW, 80)),
        className: 'axis-title',
      }),
    );

  // Colour legend: a stack of thin slices (no gradient: that would need an id).
  const barTop = top;
  const barBottom = top + barH;
  const sliceH = barH / LEGEND_SLICES;
  const legend: string[] = [];
  for (let k = 0; k < LEGEND_SLICES; k++) {
    const v = lo + ((k + 0.5) / LEGEND_SLICES) * (hi - lo);
    const y = barBottom - (k + 1) * sliceH;
    // Each slice overlaps the next by half a pixel so no hairline seams show between them.
    const overlap = k < LEGEND_SLICES - 1 ? 0.5 : 0;
    legend.push(
      el('rect', { x: barX, y: y - overlap, width: barW, height: sliceH + overlap, fill: colorOf(v) }),
    );
  }
  legend.push(
    el('rect', {
      x: barX,
      y: barTop,
      width: barW,
      height: barH,
      fill: 'none',
      stroke: 'currentColor',
      'stroke-opacity': 0.4,
    }),
  );
  const ly = linearScale([lo, hi], [barBottom, barTop]);
  lTicks.forEach((t, i) => {
    const y = ly(t);
    legend.push(
      el('line', {
        x1: barX + barW,
        y1: y,
        x2: barX + barW + 4,
        y2: y,
        stroke: 'currentColor',
        'stroke-opacity': 0.55,
      }),
    );
    legend.push(text(barX + barW + 7, y, lLabels[i], { baseline: 'middle', size: SMALL_FONT_SIZE }));
  });
  if (isDiv)
    legend.push(
      el('line', {
        x1: barX - 3,
        y1: ly(0),
        x2: barX + barW,
        y2: ly(0),
        stroke: contrastText(DIVERGING_NEUTRAL),
        'stroke-opacity': 0.6,
      }),
    );
  if (divLabels) {
    legend.push(text(barX, barTop - 7, `▲ ${divLabels[1]}`, { size: SMALL_FONT_SIZE, maxChars: 26 }));
    legend.push(
      text(barX, barBottom + 7, `▼ ${divLabels[0]}`, {
        size: SMALL_FONT_SIZE,
        baseline: 'top',
        maxChars: 26,
      }),
    );
  }
  if (o.legendLabel !== undefined)
    legend.push(
      text(barX + barW + 8 + tickW + 14, (barTop + barBottom) / 2, o.legendLabel, {
        anchor: 'middle',
        baseline: 'middle',
        rotate: 90,
        size: SMALL_FONT_SIZE,
        maxChars: charsFitting(barH, SMALL_FONT_SIZE),
        className: 'axis-title',
      }),
    );
  out.push(el('g', { class: 'color-legend' }, legend.join('')));

  return svgDocument(
    { width, height, title: o.title, className: `heatmap ${isDiv ? 'diverging' : 'sequential'}` },
    out,
  );
}

/** A Pass@(K,T) grid as eval reports it: rows of passKT are K, columns T. */
export interface PassKTGrid {
  K: readonly number[];
  T: readonly number[];
  passKT: readonly (readonly (number | null)[])[];
  ci95?: readonly (readonly (Interval | null)[])[];
}

/**
 * A Pass@(K,T) heatmap with the K/T axis titles filled in. For a difference grid (RL − base), pass
 * the differences as `passKT` and `scale: 'diverging'`.
 */
export function passKTHeatmap(
  grid: PassKTGrid,
  options: Partial<HeatmapOptions> & { title: string },
): string {
  const isDiv = options.scale === 'diverging';
  return heatmap({
    rowLabel: 'K (samples per task)',
    colLabel: 'T (turn budget)',
    rowName: 'K',
    colName: 'T',
    legendLabel: isDiv ? 'difference in Pass@(K,T)' : 'Pass@(K,T)',
    ...options,
    rows: grid.K,
    cols: grid.T,
    values: grid.passKT,
    ci95: grid.ci95,
  });
}
