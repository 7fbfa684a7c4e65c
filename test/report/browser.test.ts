// The reports as a reader sees them (issue 14 point 7): real reports opened in headless Chromium
// (Debian's chromium driven by playwright-core) at a 600 px and a 1280 px window, in light and dark
// mode and as printed. Fails on rendered text below 11 px (SVG text measured through its transform to
// the screen), a table wider than its box or a cell squeezed to a word per line, horizontal overflow,
// a chart that does not fit its box, and a data series with too little contrast against the page.
// Without chromium the tests skip with a one-line notice, unless CI is set: there they are required
// (.ci/run installs chromium), and a missing chromium fails them.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { barChart, figure, page as htmlPage, lineChart, OKABE_ITO, table } from '../../src/report/index.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { studySummary } from '../../src/studies/budget/study.ts';
import { grpoTrainer } from '../../src/studies/budget/trainer.ts';
import { turnwise } from '../cli/run.ts';
import { TINY } from '../studies/fixtures.ts';
import { CHROMIUM, launchChromium, MISSING, SKIP } from './chromium.ts';
import { type Limits, type Measured, measurePage, type Problem } from './probe.ts';
import { samplePage } from './sample.ts';

/**
 * 11 px is the smallest text a report may show; 3:1 is WCAG 2.1's minimum contrast for graphics
 * needed to understand the content (1.4.11); six lines is a column squeezed, not a wrapped sentence.
 */
const LIMITS: Limits = { minTextPx: 11, minContrast: 3, maxCellLines: 6 };

interface View {
  name: string;
  width: number;
  media: 'screen' | 'print';
  colorScheme: 'light' | 'dark';
}

// Print: an A4 page at 96 px per inch less Chromium's default margins is ~720 px wide.
const VIEWS: readonly View[] = [
  { name: '600px light', width: 600, media: 'screen', colorScheme: 'light' },
  { name: '600px dark', width: 600, media: 'screen', colorScheme: 'dark' },
  { name: '1280px light', width: 1280, media: 'screen', colorScheme: 'light' },
  { name: '1280px dark', width: 1280, media: 'screen', colorScheme: 'dark' },
  { name: 'print (dark preference)', width: 720, media: 'print', colorScheme: 'dark' },
];

describe('reports in headless chromium', { skip: SKIP }, () => {
  let browser: Browser | undefined;
  let tab: Page;
  let dir: string;
  /** Every URL the pages asked for: a self-contained report asks for nothing but itself. */
  const requested: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'turnwise-browser-'));
    if (CHROMIUM === undefined) return; // CI without chromium: each test fails, saying so (beforeEach)
    browser = await launchChromium(CHROMIUM);
    tab = await browser.newPage();
    // tsx compiles measurePage with esbuild's keepNames, which calls a `__name` helper.
    await tab.addInitScript('window.__name = (f) => f');
    tab.on('request', (r) => requested.push(r.url()));
  });

  beforeEach(() => {
    if (browser === undefined) throw new Error(MISSING);
  });

  after(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function measure(file: string, view: View): Promise<Measured> {
    await tab.setViewportSize({ width: view.width, height: 900 });
    await tab.emulateMedia({ media: view.media, colorScheme: view.colorScheme });
    await tab.goto(pathToFileURL(file).href);
    return (await tab.evaluate(`(${measurePage.toString()})(${JSON.stringify(LIMITS)})`)) as Measured;
  }

  function listProblems(problems: readonly Problem[]): string {
    return problems.map((p) => `  ${p.kind} ${p.value}: ${p.what}`).join('\n');
  }

  /** Opens the report in every view; asserts it was measured (not empty) and that nothing is wrong. */
  async function checkReport(file: string, minTexts: number, minSeries: number): Promise<void> {
    const failures: string[] = [];
    for (const view of VIEWS) {
      const m = await measure(file, view);
      assert.ok(m.texts >= minTexts, `${view.name}: only ${m.texts} texts measured`);
      assert.ok(m.series >= minSeries, `${view.name}: only ${m.series} series marks measured`);
      if (m.problems.length > 0)
        failures.push(
          `${view.name} (${m.problems.length} problems):\n${listProblems(m.problems.slice(0, 25))}`,
        );
    }
    assert.deepEqual(failures, [], `\n${failures.join('\n')}`);
    const foreign = requested.filter((u) => !u.startsWith('file://'));
    assert.deepEqual(foreign, [], 'a report fetched something');
  }

  test('budget-study report (a real tiny study, re-rendered by `turnwise report RUN`) reads at 600 px, 1280 px, light, dark and in print', async () => {
    const { summary } = await runBudgetStudy(
      { ...TINY, rl: { ...TINY.rl, gigpo: true } },
      { trainer: grpoTrainer },
    );
    const run = join(dir, 'run');
    mkdirSync(run, { recursive: true });
    // summary.json holds the study (version 3): here one world, one seed.
    const study = studySummary(
      { config: summary.config, seeds: [summary.config.seed], worlds: [summary.config.world] },
      [summary],
      1,
      summary.seconds,
    );
    writeFileSync(join(run, 'summary.json'), JSON.stringify(study));
    const r = await turnwise(['report', run, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const file = JSON.parse(r.stdout).report as string;
    assert.match(readFileSync(file, 'utf8'), /<svg/);
    await checkReport(file, 500, 60);
  });

  test('sample report (one chart of each kind) reads at 600 px, 1280 px, light, dark and in print', async () => {
    const file = join(dir, 'sample.html');
    writeFileSync(file, samplePage());
    await checkReport(file, 200, 20);
  });

  test('every palette colour (lines, markers, bars, dots, swatches) stands out in light, dark and print', async () => {
    // Seven series: the whole Okabe–Ito palette, as lines with markers, as bars and as dots.
    const names = OKABE_ITO.map((_, i) => `series ${i + 1}`);
    const lines = lineChart({
      title: 'palette lines',
      series: names.map((name, i) => ({ name, points: [0, 1, 2].map((x) => ({ x, y: (i + x) / 10 })) })),
    });
    const groups = [0, 1].map((g) => ({
      label: `group ${g + 1}`,
      values: names.map((_, i) => (i + 1 + g) / 10),
    }));
    const bars = barChart({ title: 'palette bars', series: names, groups, valueLabels: false });
    const dots = barChart({ title: 'palette dots', series: names, groups, style: 'dot', valueLabels: false });
    const file = join(dir, 'palette.html');
    writeFileSync(
      file,
      htmlPage({
        title: 'palette',
        body: [figure(1, 'lines', lines), figure(2, 'bars', bars), figure(3, 'dots', dots)],
      }),
    );
    await checkReport(file, 30, 7 * 3 + 7 * 3 + 2 * 7 * 2);
  });

  test('the probe sees each fault: shrunk chart text, a dark line on a dark page, a table too wide, overflow', async () => {
    // A chart forced into a 300 px box (text drawn at 300 px / its width), a #222 series, a table of
    // unbreakable cells, and a 900 px block: every check must fire, or the tests above prove nothing.
    const chart = lineChart({
      title: 'shrunk',
      series: [
        {
          name: 'a',
          points: [
            { x: 0, y: 0 },
            { x: 1, y: 1 },
          ],
        },
        {
          name: 'dark',
          color: '#222222',
          points: [
            { x: 0, y: 1 },
            { x: 1, y: 0 },
          ],
        },
      ],
    }).replace('<svg ', '<svg style="max-width:300px" ');
    const wide = table(['a', 'b'], [['x'.repeat(120), 'y'.repeat(120)]]).replace(
      '<table class="',
      '<table style="white-space:nowrap" class="no-',
    );
    const squeezed = `<table><tr><td style="width:1px">${'word '.repeat(40)}</td><td>${'z'.repeat(200)}</td></tr></table>`;
    const html = htmlPage({
      title: 'faults',
      body: [figure(1, 'shrunk', chart), wide, squeezed, '<div style="width:900px">wide</div>'],
    });
    const file = join(dir, 'faults.html');
    writeFileSync(file, html);
    const m = await measure(file, { name: 'faults', width: 600, media: 'screen', colorScheme: 'dark' });
    const kinds = new Set(m.problems.map((p) => p.kind));
    for (const k of ['text-size', 'contrast', 'table-width', 'squeezed-cell', 'page-overflow'] as const)
      assert.ok(kinds.has(k), `${k} not detected:\n${listProblems(m.problems)}`);
    const small = m.problems.filter((p) => p.kind === 'text-size' && p.what.includes('chart "shrunk"'));
    // 12 px tick labels drawn at 300 px / the chart's own width.
    const chartWidth = Number(/ width="(\d+)"/.exec(chart)?.[1]);
    assert.ok(
      small.some((p) => Math.abs(p.value - (12 * 300) / chartWidth) < 0.05),
      listProblems(small),
    );
    const dark = m.problems.filter((p) => p.kind === 'contrast');
    assert.ok(dark.length > 0 && dark.every((p) => p.what.includes('34, 34, 34')), listProblems(dark));
  });
});
