import assert from 'node:assert/strict';
import { test } from 'node:test';
import { barChart } from '../../src/report/bars.ts';
import { DIVERGING_NEUTRAL, diverging, sequential } from '../../src/report/color.ts';
import { heatmap, passKTHeatmap } from '../../src/report/heatmap.ts';
import { lineChart } from '../../src/report/line.ts';
import { stackedBarChart } from '../../src/report/stacked.ts';
import { textWidth } from '../../src/report/svg.ts';
import { findAll, hasClass, parseXml, rootOf, textOf, walk, type XNode } from './xml.ts';

const NASTY = '<b>&"it\'s"</b>';
const LONG = 'a policy label that goes on and on, far longer than any axis has room for, really';

/** Parses an SVG string strictly and checks what every chart must satisfy; returns the root. */
function checkSvg(svg: string): XNode {
  for (const bad of ['NaN', 'Infinity', 'undefined']) assert.ok(!svg.includes(bad), `"${bad}" in output`);
  const urls = svg.match(/https?:\/\/[^"]*/g) ?? [];
  assert.deepEqual(urls, ['http://www.w3.org/2000/svg'], 'the SVG namespace is the only URL');
  const root = rootOf(parseXml(svg));
  assert.equal(root.name, 'svg');
  assert.equal(root.attrs.role, 'img');
  assert.ok(root.attrs['aria-label'].length > 0);
  const first = root.children.find((c) => typeof c !== 'string') as XNode;
  assert.equal(first.name, 'title', 'the accessible name comes first');
  assert.equal(textOf({ ...first, name: 'x' }), root.attrs['aria-label']);
  const [x0, y0, W, H] = root.attrs.viewBox.split(' ').map(Number);
  assert.deepEqual([x0, y0, W, H], [0, 0, Number(root.attrs.width), Number(root.attrs.height)]);
  assert.ok(W > 0 && H > 0);
  assertInside(root, W, H);
  return root;
}

const X_ATTRS = ['x', 'x1', 'x2', 'cx'];
const Y_ATTRS = ['y', 'y1', 'y2', 'cy'];
const NUMERIC = [
  ...X_ATTRS,
  ...Y_ATTRS,
  'width',
  'height',
  'r',
  'stroke-width',
  'font-size',
  'fill-opacity',
  'stroke-opacity',
];

/** Every coordinate (attributes, path data, rotation centres, estimated text extents) lies in the viewBox. */
function assertInside(root: XNode, W: number, H: number): void {
  const tol = 0.51;
  const inX = (v: number, what: string) =>
    assert.ok(v >= -tol && v <= W + tol, `${what}: x=${v} outside [0, ${W}]`);
  const inY = (v: number, what: string) =>
    assert.ok(v >= -tol && v <= H + tol, `${what}: y=${v} outside [0, ${H}]`);
  for (const n of walk(root)) {
    if (n.name === 'svg') continue;
    for (const k of NUMERIC)
      if (k in n.attrs)
        assert.ok(/^-?\d+(\.\d+)?$/.test(n.attrs[k]), `${n.name} ${k}="${n.attrs[k]}" is not a plain number`);
    for (const k of X_ATTRS) if (k in n.attrs) inX(Number(n.attrs[k]), `${n.name}.${k}`);
    for (const k of Y_ATTRS) if (k in n.attrs) inY(Number(n.attrs[k]), `${n.name}.${k}`);
    if (n.name === 'rect') {
      assert.ok(Number(n.attrs.width) >= 0 && Number(n.attrs.height) >= 0, 'negative size');
      inX(Number(n.attrs.x) + Number(n.attrs.width), 'rect right');
      inY(Number(n.attrs.y) + Number(n.attrs.height), 'rect bottom');
    }
    if (n.name === 'path') {
      let cmd = '';
      let pairIndex = 0;
      for (const tok of n.attrs.d.match(/[A-Za-z]|-?\d+(?:\.\d+)?/g) ?? []) {
        if (/[A-Za-z]/.test(tok)) {
          assert.ok('MLVHZ'.includes(tok), `unexpected path command ${tok}`);
          cmd = tok;
          pairIndex = 0;
          continue;
        }
        const v = Number(tok);
        if (cmd === 'V') inY(v, 'path V');
        else if (cmd === 'H') inX(v, 'path H');
        else (pairIndex++ % 2 === 0 ? inX : inY)(v, `path ${cmd}`);
      }
    }
    if (n.attrs.transform) {
      const m = /^rotate\((-?[\d.]+) (-?[\d.]+) (-?[\d.]+)\)$/.exec(n.attrs.transform);
      assert.ok(m, `unexpected transform ${n.attrs.transform}`);
      inX(Number(m[2]), 'rotation centre');
      inY(Number(m[3]), 'rotation centre');
    }
    // Unrotated text: its estimated extent (the same estimate layout uses) stays inside too.
    if (n.name === 'text' && !n.attrs.transform) {
      const w = textWidth(textOf(n), Number(n.attrs['font-size'] ?? 12));
      const x = Number(n.attrs.x);
      const anchor = n.attrs['text-anchor'] ?? 'start';
      const [a, b] =
        anchor === 'middle' ? [x - w / 2, x + w / 2] : anchor === 'end' ? [x - w, x] : [x, x + w];
      assert.ok(a >= -4 && b <= W + 4, `text "${textOf(n)}" spans [${a}, ${b}] outside [0, ${W}]`);
    }
  }
}

const byClass = (root: XNode, cls: string) => findAll(root, (n) => hasClass(n, cls));

const K = [1, 2, 4, 8, 16];
const T = [10, 20, 50, 100];
const grid = K.map((k, i) => T.map((t, j) => Math.round((1 - 0.9 ** ((k * t) / 10)) * 1000 + i + j) / 1000));

test('heatmap: one cell per (K, T), the printed values and CIs match the input, colours follow the scale', () => {
  const ci95 = grid.map((row) => row.map((v): [number, number] => [v - 0.031, Math.min(1, v + 0.029)]));
  const svg = passKTHeatmap({ K, T, passKT: grid, ci95 }, { title: 'Pass@(K,T) of RL' });
  const root = checkSvg(svg);
  const cells = byClass(root, 'cell');
  assert.equal(cells.length, K.length * T.length);
  assert.deepEqual(
    byClass(root, 'cell-value').map(textOf),
    grid.flat().map((v) => v.toFixed(2)),
  );
  assert.deepEqual(
    byClass(root, 'cell-ci').map(textOf),
    ci95.flat().map(([lo, hi]) => `[${lo.toFixed(2)}, ${hi.toFixed(2)}]`),
  );
  assert.deepEqual(
    cells.map((c) => c.attrs.fill),
    grid.flat().map((v) => sequential(v)),
  );
  // The tooltip names the cell and carries the CI.
  const tips = findAll(
    root,
    (n) => n.name === 'g' && n.children.some((c) => typeof c !== 'string' && hasClass(c, 'cell')),
  );
  assert.equal(
    textOf({ ...(tips[1].children[0] as XNode), name: 'x' }),
    `K = 1, T = 20: ${grid[0][1].toFixed(2)} (95% CI [${ci95[0][1][0].toFixed(2)}, ${ci95[0][1][1].toFixed(2)}])`,
  );
  assert.equal(
    svg,
    passKTHeatmap({ K, T, passKT: grid, ci95 }, { title: 'Pass@(K,T) of RL' }),
    'deterministic',
  );
});

test('diverging heatmap: signed values, 0 is the neutral colour, ± symmetric around a nice limit', () => {
  const values = [
    [0, 0.1, -0.1],
    [0.137, -0.137, 0.02],
  ];
  const root = checkSvg(
    heatmap({
      title: 'RL − base',
      rows: [1, 2],
      cols: [10, 20, 50],
      values,
      scale: 'diverging',
      divergingLabels: ['base', 'RL'],
    }),
  );
  assert.deepEqual(byClass(root, 'cell-value').map(textOf), [
    '0.00',
    '+0.10',
    '-0.10',
    '+0.14',
    '-0.14',
    '+0.02',
  ]);
  const fills = byClass(root, 'cell').map((c) => c.attrs.fill);
  assert.equal(fills[0], DIVERGING_NEUTRAL);
  // max |v| = 0.137 rounds up to the nice limit 0.2.
  assert.deepEqual(
    fills,
    values.flat().map((v) => diverging(v, 0.2)),
  );
  assert.notEqual(fills[1], fills[2]);
  // An explicit domain is made symmetric: [-0.05, 0.5] means ±0.5.
  const wide = checkSvg(
    heatmap({
      title: 'd',
      rows: [1],
      cols: [1, 2],
      values: [[0.25, -0.25]],
      scale: 'diverging',
      domain: [-0.05, 0.5],
    }),
  );
  assert.deepEqual(
    byClass(wide, 'cell').map((c) => c.attrs.fill),
    [diverging(0.25, 0.5), diverging(-0.25, 0.5)],
  );
});

test('heatmap with broken input: n/a cells, ragged rows, escaped and truncated labels, still rows × cols cells', () => {
  const svg = heatmap({
    title: NASTY,
    rows: [1, NASTY, LONG],
    cols: [5, 10, 20],
    values: [[Number.NaN, 0.5, Number.POSITIVE_INFINITY], [null, undefined, Number.NEGATIVE_INFINITY], [0.1]],
    ci95: [[[0, 1], [Number.NaN, 0.6], null]],
    rowLabel: 'K',
    colLabel: LONG,
    legendLabel: NASTY,
    showTitle: true,
  });
  const root = checkSvg(svg);
  assert.equal(root.attrs['aria-label'], NASTY);
  assert.equal(byClass(root, 'cell').length, 9);
  assert.equal(byClass(root, 'missing').length, 7);
  assert.deepEqual(byClass(root, 'cell-value').map(textOf), [
    'n/a',
    '0.50',
    'n/a',
    'n/a',
    'n/a',
    'n/a',
    '0.10',
    'n/a',
    'n/a',
  ]);
  assert.equal(byClass(root, 'cell-ci').length, 0, 'a CI with a NaN end is not printed');
  assert.ok(svg.includes('&lt;b&gt;&amp;"it\'s"&lt;/b&gt;'), 'label escaped in text');
  const titles = findAll(root, (n) => n.name === 'title').map(textOf);
  assert.ok(titles.includes(LONG), 'a truncated label keeps its full text in a tooltip');
  assert.ok(findAll(root, (n) => n.name === 'text').some((n) => textOf(n).endsWith('…')));
  // Empty grids render too.
  checkSvg(heatmap({ title: 'empty', rows: [], cols: [], values: [] }));
  checkSvg(heatmap({ title: 'no columns', rows: [1, 2], cols: [], values: [[], []], scale: 'diverging' }));
});

test('line chart: gaps at missing values, CI bands, log-x spacing, a second axis, clamping to a fixed domain', () => {
  const svg = lineChart({
    title: 'Pass@(1,T)',
    xScale: 'log',
    xTicks: T,
    yDomain: [0, 1],
    series: [
      {
        name: 'base',
        points: T.map((x, j) => ({ x, y: grid[0][j], lo: grid[0][j] - 0.05, hi: grid[0][j] + 0.05 })),
      },
      {
        name: 'RL',
        points: [
          { x: 10, y: 0.2 },
          { x: 20, y: Number.NaN },
          { x: 50, y: 0.5 },
          { x: 100, y: 2 },
        ],
      },
    ],
  });
  const root = checkSvg(svg);
  const lines = byClass(root, 'line');
  assert.equal((lines[0].attrs.d.match(/M/g) ?? []).length, 1);
  assert.equal(
    (lines[1].attrs.d.match(/M/g) ?? []).length,
    1,
    'RL: the lone point at 10 is a marker, not a subpath',
  );
  assert.equal(byClass(root, 'band').length, 1);
  const markers = byClass(root, 'marker');
  assert.equal(markers.length, 4 + 3);
  const cx = markers.slice(0, 4).map((m) => Number(m.attrs.cx));
  // log10(20/10) = log10(100/50): equal spacing on a log axis.
  assert.ok(Math.abs(cx[1] - cx[0] - (cx[3] - cx[2])) < 0.02, `${cx}`);
  const xLabels = findAll(byClass(root, 'axis-x')[0], (n) => n.name === 'text').map(textOf);
  assert.deepEqual(xLabels, ['10', '20', '50', '100']);
  // y = 2 beyond the fixed domain [0, 1] is clamped to the top of the frame, where the tick 1.0 is.
  const yAxis = byClass(root, 'axis-y')[0];
  const top = findAll(yAxis, (n) => n.name === 'text').find((n) => textOf(n) === '1.0')!;
  assert.equal(markers[6].attrs.cy, top.attrs.y);

  const dual = checkSvg(
    lineChart({
      title: 'reward',
      yLabel: 'trajectory',
      y2Label: 'step',
      series: [
        { name: 'trajectory', points: [0, 1, 2, 3].map((x) => ({ x, y: 0.3 + 0.1 * x })) },
        { name: 'step', axis: 'right', points: [0, 1, 2, 3].map((x) => ({ x, y: 10 - x })) },
      ],
    }),
  );
  const y2 = byClass(dual, 'axis-y2');
  assert.equal(y2.length, 1);
  assert.deepEqual(findAll(y2[0], (n) => n.name === 'text' && !hasClass(n, 'axis-title')).map(textOf), [
    '7',
    '8',
    '9',
    '10',
  ]);
  assert.equal(byClass(dual, 'line')[1].attrs['stroke-dasharray'], '6 4', 'right-axis series are dashed');
});

test('line chart with broken input: NaN, Infinity, non-positive x on a log axis, empty and single-point series', () => {
  const svg = lineChart({
    title: NASTY,
    xLabel: LONG,
    yLabel: NASTY,
    xScale: 'log',
    series: [
      {
        name: NASTY,
        points: [
          { x: 0, y: 0.5 },
          { x: -3, y: 0.5 },
          { x: 1, y: Number.NaN, lo: Number.NaN, hi: 0.3 },
          { x: 2, y: Number.POSITIVE_INFINITY },
          { x: Number.NaN, y: 0.5 },
          { x: 5, y: 0.4, lo: 0.3, hi: 0.5 },
        ],
      },
      { name: 'empty', points: [] },
      { name: LONG, points: [{ x: 7, y: 1e9 }] },
    ],
    referenceLines: [
      { y: Number.NaN, label: 'nan' },
      { y: 0.5, label: NASTY },
    ],
  });
  const root = checkSvg(svg);
  assert.equal(byClass(root, 'marker').length, 2, 'the two finite points show as markers');
  assert.equal(byClass(root, 'ci').length, 1, 'a lone CI becomes an error bar');
  assert.equal(byClass(root, 'reference').length, 1);
  for (const empty of [[], [{ name: 'e', points: [] }], [{ name: 'n', points: [{ x: 1, y: null }] }]]) {
    const r = checkSvg(lineChart({ title: 'empty', series: empty }));
    assert.equal(byClass(r, 'no-data').length, 1);
  }
  // Many long series names: the legend wraps onto several rows and stays inside the chart.
  const many = checkSvg(
    lineChart({
      title: 'many',
      width: 420,
      series: Array.from({ length: 9 }, (_, i) => ({
        name: `${LONG.slice(0, 10 + 4 * i)} ${i}`,
        points: [{ x: i, y: i }],
      })),
    }),
  );
  const rows = new Set(
    byClass(many, 'legend-item').map((g) => findAll(g, (n) => n.name === 'text')[0].attrs.y),
  );
  assert.ok(rows.size >= 3, `${rows.size} legend rows`);
  const one = checkSvg(lineChart({ title: 'one', series: [{ name: 'p', points: [{ x: 3, y: 3 }] }] }));
  assert.equal(byClass(one, 'marker').length, 1);
  assert.equal(byClass(one, 'line').length, 0);
});

test('bar and dot charts: heights proportional, CI whiskers, the 0.5 reference line, n/a for missing', () => {
  const svg = barChart({
    title: 'recovery',
    series: ['rate'],
    groups: [
      { label: 'base', values: [{ value: 1, lo: 0.9, hi: 1 }] },
      { label: 'RL', values: [0.5] },
      { label: NASTY, values: [{ value: Number.NaN }] },
      { label: LONG, values: [0.25] },
    ],
    yDomain: [0, 1],
    referenceLines: [{ y: 0.5, label: '0.5 = no preference' }],
  });
  const root = checkSvg(svg);
  const bars = byClass(root, 'bar');
  assert.equal(bars.length, 3);
  const h = bars.map((b) => Number(b.attrs.height));
  assert.ok(Math.abs(h[1] - h[0] / 2) < 0.02 && Math.abs(h[2] - h[0] / 4) < 0.02, `${h}`);
  const ref = findAll(byClass(root, 'reference')[0], (n) => n.name === 'line')[0];
  assert.equal(ref.attrs.y1, bars[1].attrs.y, 'the 0.5 line meets the top of the 0.5 bar');
  assert.ok(byClass(root, 'value-label').some((n) => textOf(n) === 'n/a'));
  assert.deepEqual(byClass(root, 'value-label').map(textOf), ['1.00', '0.50', 'n/a', '0.25']);
  assert.equal(byClass(root, 'ci').length, 1);

  const dots = checkSvg(
    barChart({
      title: 'step quality',
      style: 'dot',
      series: ['RL vs base', NASTY],
      groups: [
        { label: 'normal', values: [{ value: 0.46, lo: 0.42, hi: 0.5 }, null] },
        {
          label: 'error',
          values: [
            { value: 0.66, lo: Number.NaN, hi: 0.7 },
            { value: Number.NEGATIVE_INFINITY, lo: 0, hi: 1 },
          ],
        },
      ],
      referenceLines: [{ y: 0.5 }],
    }),
  );
  assert.equal(byClass(dots, 'dot').length, 2);
  assert.equal(byClass(dots, 'ci').length, 1);
  assert.equal(byClass(dots, 'legend-item').length, 2);
  checkSvg(barChart({ title: 'empty', series: [], groups: [] }));
  checkSvg(barChart({ title: 'no series', series: [], groups: [{ label: 'a', values: [1] }] }));
});

test('stacked bars: shares fill the plot width, counts at the end, zero totals say none', () => {
  const svg = stackedBarChart({
    title: 'failure kinds',
    categories: ['base', 'RL', LONG, 'nothing'],
    segments: [
      { name: 'irreversible', values: [300, 50, Number.NaN, 0] },
      { name: 'budget', values: [100, 150, -4, null] },
      { name: NASTY, values: [0, 0, 2] },
    ],
  });
  const root = checkSvg(svg);
  const segs = byClass(root, 'segment');
  assert.equal(segs.length, 5);
  const w = segs.map((s) => Number(s.attrs.width));
  // base: 75% + 25%; RL: 25% + 75%; the long one: 100% of its only valid value.
  assert.ok(Math.abs(w[0] + w[1] - w[4]) < 0.02 && Math.abs(w[2] + w[3] - w[4]) < 0.02);
  assert.ok(Math.abs(w[0] - 3 * w[1]) < 0.02 && Math.abs(w[3] - 3 * w[2]) < 0.02);
  const texts = findAll(root, (n) => n.name === 'text').map(textOf);
  for (const t of ['n = 400', 'n = 200', 'n = 2', 'none', '75%', '25%']) assert.ok(texts.includes(t), t);
  const raw = checkSvg(
    stackedBarChart({
      title: 'counts',
      categories: ['a', 'b'],
      segments: [{ name: 'k', values: [3, 6] }],
      normalize: false,
    }),
  );
  const rw = byClass(raw, 'segment').map((s) => Number(s.attrs.width));
  assert.ok(Math.abs(rw[1] - 2 * rw[0]) < 0.02);
  checkSvg(stackedBarChart({ title: 'empty', categories: [], segments: [] }));
});

test('extreme magnitudes near the float limit still give finite coordinates', () => {
  const huge = [-Number.MAX_VALUE, Number.MAX_VALUE, Number.MIN_VALUE, 1e300];
  checkSvg(
    lineChart({
      title: 'huge',
      series: [{ name: 'h', points: huge.map((y, x) => ({ x, y, lo: y, hi: y })) }],
    }),
  );
  checkSvg(lineChart({ title: 'huge x', series: [{ name: 'h', points: huge.map((x) => ({ x, y: 1 })) }] }));
  checkSvg(
    barChart({ title: 'huge', series: ['s'], groups: huge.map((v) => ({ label: String(v), values: [v] })) }),
  );
  checkSvg(
    stackedBarChart({
      title: 'huge',
      categories: ['a', 'b'],
      segments: [{ name: 'k', values: [Number.MAX_VALUE, 1] }],
    }),
  );
  checkSvg(
    heatmap({ title: 'huge', rows: [1], cols: [1, 2], values: [huge.slice(0, 2)], scale: 'diverging' }),
  );
});

test('every chart is deterministic: the same input gives the same bytes', () => {
  const make = [
    () => heatmap({ title: 'h', rows: K, cols: T, values: grid, scale: 'diverging' }),
    () =>
      lineChart({
        title: 'l',
        series: [{ name: 'a', points: [1, 2, 3].map((x) => ({ x, y: x * x, lo: x, hi: x * x + 1 })) }],
      }),
    () => barChart({ title: 'b', series: ['s'], groups: [{ label: 'g', values: [0.5] }] }),
    () => stackedBarChart({ title: 's', categories: ['a'], segments: [{ name: 'k', values: [1] }] }),
  ];
  for (const f of make) assert.equal(f(), f());
});
