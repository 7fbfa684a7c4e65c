/// <reference lib="dom" />
// What a reader of a report sees, measured in a real browser page (test/report/browser.test.ts):
// the rendered size of every piece of text, tables and charts that do not fit their box, horizontal
// page overflow, and the contrast of every data series against the page. The function runs inside
// the page (page.evaluate), so it may use only DOM APIs and what it defines itself.

export interface Problem {
  kind: 'text-size' | 'table-width' | 'squeezed-cell' | 'page-overflow' | 'chart-overflow' | 'contrast';
  /** What and where, for the failure message (the text, the chart's title, the colour…). */
  what: string;
  /** The measured value: px for sizes and widths, the ratio for contrast. */
  value: number;
}

export interface Measured {
  problems: Problem[];
  /** Smallest rendered text size anywhere on the page, px. */
  minTextPx: number;
  /** Text nodes measured (so a test can tell an empty page from a clean one). */
  texts: number;
  /** Series marks whose contrast was measured. */
  series: number;
  /** Lowest series contrast ratio measured. */
  minContrast: number;
  /** Document scroll width and viewport width, px. */
  scrollWidth: number;
  viewportWidth: number;
}

export interface Limits {
  /** Rendered text below this (px) is a problem. */
  minTextPx: number;
  /** A series mark whose contrast ratio with the page background is below this is a problem. */
  minContrast: number;
  /** A table cell whose text wraps onto more lines than this is squeezed. */
  maxCellLines: number;
}

/** Runs in the page: measures everything in Measured. Must stay self-contained (it is serialised). */
export function measurePage(limits: Limits): Measured {
  const problems: Problem[] = [];
  const short = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}…` : s).replace(/\s+/g, ' ').trim();
  const chartName = (e: Element) => e.closest('svg')?.getAttribute('aria-label') ?? '(no chart)';

  // ── Text: computed font size × the scale of the element's transform to the screen (SVG text
  // in a viewBox shrunk to its container is drawn smaller than its font-size says).
  let minTextPx = Number.POSITIVE_INFINITY;
  let texts = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
    const content = n.textContent ?? '';
    if (content.trim() === '') continue;
    const el = n.parentElement;
    if (el === null) continue;
    // Not drawn: SVG <title>/<desc> are tooltips and accessible names; closed <details> and
    // display:none have no boxes.
    if (el.closest('title, desc, style, script') !== null) continue;
    if (el.getClientRects().length === 0) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const box = range.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    let px = Number.parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGGraphicsElement) {
      const m = el.getScreenCTM();
      if (m !== null) px *= Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    }
    texts++;
    minTextPx = Math.min(minTextPx, px);
    if (px < limits.minTextPx - 0.01)
      problems.push({
        kind: 'text-size',
        what: `"${short(content)}" in ${el instanceof SVGElement ? `chart "${chartName(el)}"` : `<${el.tagName.toLowerCase()}>`}`,
        value: Math.round(px * 100) / 100,
      });
  }

  // ── Tables: no wider than their container (no sideways scrolling to reach the verdict), and no
  // cell squeezed into a narrow column of many short lines.
  for (const t of Array.from(document.querySelectorAll('table'))) {
    const box = t.parentElement as HTMLElement;
    const w = t.getBoundingClientRect().width;
    const name = short(
      t.querySelector('caption')?.textContent ?? t.querySelector('th')?.textContent ?? 'table',
    );
    if (w > box.clientWidth + 0.5)
      problems.push({
        kind: 'table-width',
        what: `table "${name}" in a ${box.clientWidth}px box`,
        value: Math.round(w),
      });
    for (const cell of Array.from(t.querySelectorAll('td, th, caption'))) {
      const line = Number.parseFloat(getComputedStyle(cell).lineHeight);
      const range = document.createRange();
      range.selectNodeContents(cell);
      const lines = Math.round(range.getBoundingClientRect().height / line);
      if (Number.isFinite(line) && lines > limits.maxCellLines)
        problems.push({
          kind: 'squeezed-cell',
          what: `"${short(cell.textContent ?? '')}" (${lines} lines, ${Math.round(cell.getBoundingClientRect().width)}px wide) in table "${name}"`,
          value: lines,
        });
    }
  }

  // ── Page and charts: nothing wider than the viewport, no chart scrolled or cut in its box.
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth)
    problems.push({
      kind: 'page-overflow',
      what: `page ${doc.scrollWidth}px wide in a ${doc.clientWidth}px viewport`,
      value: doc.scrollWidth,
    });
  for (const c of Array.from(document.querySelectorAll('.chart'))) {
    if (c.scrollWidth > c.clientWidth + 0.5)
      problems.push({
        kind: 'chart-overflow',
        what: `chart "${chartName(c.querySelector('svg') ?? c)}" ${c.scrollWidth}px in a ${c.clientWidth}px box`,
        value: c.scrollWidth,
      });
  }

  // ── Contrast of every data mark (lines, markers, bars, dots, legend swatches) against the page
  // background, after its opacity (WCAG 2.1 relative luminance and contrast ratio).
  const rgba = (css: string): [number, number, number, number] | null => {
    const m = css.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1]
      .split(/[ ,/]+/)
      .filter((s) => s !== '')
      .map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const lum = (c: readonly number[]) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const bg = rgba(getComputedStyle(doc).backgroundColor) ?? [255, 255, 255, 1];
  const over = (c: readonly number[], alpha: number) =>
    [0, 1, 2].map((i) => c[i] * alpha + bg[i] * (1 - alpha));
  const ratio = (c: readonly number[]) => {
    const [a, b] = [lum(c), lum(bg)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  let series = 0;
  let minContrast = Number.POSITIVE_INFINITY;
  const marks =
    'path.line, circle.marker, rect.bar, circle.dot, .legend-item line, .legend-item rect, .legend-item circle';
  for (const m of Array.from(document.querySelectorAll(marks))) {
    const s = getComputedStyle(m);
    const stroked = m.tagName === 'path' || m.tagName === 'line';
    const paint = rgba(stroked ? s.stroke : s.fill);
    if (paint === null) continue;
    let alpha = paint[3] * Number.parseFloat(stroked ? s.strokeOpacity : s.fillOpacity);
    for (let e: Element | null = m; e !== null && e !== doc; e = e.parentElement)
      alpha *= Number.parseFloat(getComputedStyle(e).opacity);
    const r = ratio(over(paint, alpha));
    series++;
    minContrast = Math.min(minContrast, r);
    if (r < limits.minContrast) {
      const label =
        m.closest('.legend-item')?.textContent ??
        m.closest('g.series')?.querySelector('title')?.textContent?.split(':')[0] ??
        '';
      problems.push({
        kind: 'contrast',
        what: `${m.tagName}.${m.getAttribute('class') ?? ''} "${short(label)}" ${stroked ? s.stroke : s.fill} in chart "${chartName(m)}"`,
        value: Math.round(r * 100) / 100,
      });
    }
  }
  return {
    problems,
    minTextPx,
    texts,
    series,
    minContrast,
    scrollWidth: doc.scrollWidth,
    viewportWidth: doc.clientWidth,
  };
}
