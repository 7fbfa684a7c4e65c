// A sample report with one chart of each kind, on made-up numbers shaped like the budget study's
// (issue 7). Used by the tests, and runnable to look at the result in a browser:
//   npx tsx test/report/sample.ts /tmp/report-sample.html
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  barChart,
  type Finding,
  figure,
  findingsTable,
  grid,
  jsonDetails,
  keyValues,
  lineChart,
  page,
  paragraph,
  passKTHeatmap,
  section,
  stackedBarChart,
  table,
} from '../../src/report/index.ts';

const K = [1, 2, 4, 8, 16];
const T = [5, 10, 20, 50, 100];

// Smooth, monotone grids: success within T turns with K tries.
function grid2(p1: (t: number) => number): number[][] {
  return K.map((k) => T.map((t) => 1 - (1 - p1(t)) ** k));
}
const base = grid2((t) => 0.55 * (1 - Math.exp(-t / 25)));
const rl = grid2((t) => 0.7 * (1 - Math.exp(-t / 12)) - (t <= 5 ? 0.16 : 0));
const diff = base.map((row, i) => row.map((b, j) => rl[i][j] - b));
const ci = (g: number[][], w: number) =>
  g.map((row) => row.map((v): [number, number] => [Math.max(0, v - w), Math.min(1, v + w)]));

export const sampleSummary = {
  passKT: {
    base: { K, T, passKT: base, ci95: ci(base, 0.04) },
    rl: { K, T, passKT: rl, ci95: ci(rl, 0.04) },
    diff: {
      K,
      T,
      passKT: diff,
      ci95: diff.map((row) => row.map((v): [number, number] => [v - 0.05, v + 0.05])),
    },
  },
  stepQuality: { normal: { value: 0.46, ci95: [0.42, 0.5] }, error: { value: 0.66, ci95: [0.61, 0.71] } },
  recovery: { base: 0.386, rl: 0.513, budgetmix: Number.NaN },
  curves: {
    trajectoryReward: Array.from({ length: 40 }, (_, i) => 0.3 + 0.3 * (1 - Math.exp(-i / 12))),
    stepReward: Array.from({ length: 40 }, (_, i) =>
      i === 17 ? Number.NaN : 0.72 - 0.08 * (1 - Math.exp(-i / 15)),
    ),
  },
  seconds: 42.5,
};

export function samplePage(): string {
  const s = sampleSummary;
  const findings: Finding[] = [
    { claim: 'RL − base Pass@(1,100) > 0', paper: 0.12, ours: 0.18, held: true },
    { claim: 'step quality at normal states < 0.5', paper: '43–47%', ours: 0.46, held: true },
    { claim: 'step quality at error states > 0.5', paper: '66–67%', ours: 0.66, held: true },
    { claim: 'recovery: RL > base', paper: '51.3% vs 38.6%', ours: '51.3% vs 38.6%', held: true },
    {
      claim: 'lead shrinks at tight budgets',
      paper: null,
      ours: -0.02,
      held: false,
      note: 'reversed at T = 5',
    },
    { claim: 'BudgetMix robust across budgets', paper: null, ours: Number.NaN, held: null },
  ];
  const traj = s.curves.trajectoryReward;
  const step = s.curves.stepReward;
  return page({
    title: 'Budget study <sample>',
    subtitle: 'What did RL really improve? — slippery FrozenLake 4×4, made-up numbers for a rendering test',
    footer: 'turnwise 0.1.0 · seed 0 · rendered by test/report/sample.ts',
    body: [
      section('Summary', [
        keyValues([
          ['tasks (held out)', 200],
          ['samples per task', 64],
          ['seconds', s.seconds],
          ['budget-aware', false],
          ['GiGPO variant', null],
        ]),
        findingsTable(findings, { caption: 'Findings: the paper’s number, ours, and whether it held' }),
        table(
          [
            'policy',
            { label: 'Pass@(1,100)', digits: 3 },
            { label: 'RL − base', format: { signed: true } },
            'kind',
          ],
          [
            ['base', base[0][4], null, { text: 'behaviour cloning' }],
            ['RL', rl[0][4], rl[0][4] - base[0][4], 'GRPO'],
          ],
          { caption: 'A plain table' },
        ),
      ]),
      section('Pass@(K,T)', [
        paragraph(
          'Rows are K (samples per task), columns T (turn budget); cells print the estimate and its 95% CI.',
        ),
        figure(
          1,
          'Pass@(K,T) of the RL policy on held-out maps.',
          passKTHeatmap(s.passKT.rl, { title: 'Pass@(K,T), RL' }),
        ),
        figure(
          2,
          'RL − base: blue where RL is better, red where the base is; 0 is white.',
          passKTHeatmap(s.passKT.diff, {
            title: 'Pass@(K,T), RL − base',
            scale: 'diverging',
            divergingLabels: ['base better', 'RL better'],
          }),
        ),
        figure(
          3,
          'Pass@(1,T) against the budget T (log scale), with 95% CIs.',
          lineChart({
            title: 'Pass@(1,T) by budget',
            xScale: 'log',
            xTicks: T,
            yDomain: [0, 1],
            xLabel: 'T (turn budget)',
            yLabel: 'Pass@(1,T)',
            series: [
              {
                name: 'base',
                points: T.map((t, j) => ({
                  x: t,
                  y: base[0][j],
                  lo: base[0][j] - 0.04,
                  hi: base[0][j] + 0.04,
                })),
              },
              {
                name: 'RL',
                points: T.map((t, j) => ({ x: t, y: rl[0][j], lo: rl[0][j] - 0.04, hi: rl[0][j] + 0.04 })),
              },
            ],
          }),
        ),
      ]),
      section('Step quality and recovery', [
        figure(
          4,
          'P(RL action better than base) + ½P(tie) at the same state; 0.5 means no preference.',
          barChart({
            title: 'Step quality: RL vs base win rate',
            style: 'dot',
            series: ['RL vs base'],
            groups: [
              { label: 'normal states', values: [{ value: 0.46, lo: 0.42, hi: 0.5, note: '200 states' }] },
              { label: 'error states', values: [{ value: 0.66, lo: 0.61, hi: 0.71 }] },
            ],
            yDomain: [0, 1],
            yLabel: 'win rate',
            referenceLines: [{ y: 0.5, label: '0.5 = no preference' }],
          }),
        ),
        figure(
          5,
          'Continuation success after a forced bad action, per policy (BudgetMix not run: n/a).',
          barChart({
            title: 'Recovery from error states',
            series: ['recovery rate'],
            groups: [
              { label: 'base', values: [{ value: s.recovery.base, lo: 0.34, hi: 0.43 }] },
              { label: 'RL', values: [{ value: s.recovery.rl, lo: 0.47, hi: 0.56 }] },
              { label: 'BudgetMix', values: [{ value: s.recovery.budgetmix }] },
            ],
            yDomain: [0, 1],
            yLabel: 'success after error',
          }),
        ),
        figure(
          6,
          'Why episodes failed, per policy (shares of each policy’s failures).',
          stackedBarChart({
            title: 'Failure kinds',
            categories: ['base', 'RL', 'BudgetMix'],
            segments: [
              { name: 'irreversible', values: [310, 220, 205] },
              { name: 'budget', values: [90, 140, 60] },
              { name: 'invalid-action', values: [0, 4, 1] },
            ],
          }),
        ),
      ]),
      section('Training', [
        figure(
          7,
          'Trajectory reward rose while step reward fell (one chart, two axes; iteration 17 has no step reward).',
          lineChart({
            title: 'Trajectory vs step reward over training',
            xLabel: 'iteration',
            yLabel: 'trajectory reward',
            y2Label: 'step reward',
            series: [
              {
                name: 'trajectory reward',
                points: traj.map((y, x) => ({ x, y, lo: y - 0.03, hi: y + 0.03 })),
              },
              { name: 'step reward', axis: 'right', points: step.map((y, x) => ({ x, y })) },
            ],
          }),
        ),
        figure(
          8,
          'The same curves as small multiples.',
          grid([
            lineChart({
              title: 'trajectory reward',
              showTitle: true,
              width: 360,
              height: 240,
              xLabel: 'iteration',
              series: [{ name: 'trajectory reward', points: traj.map((y, x) => ({ x, y })) }],
            }),
            lineChart({
              title: 'step reward',
              showTitle: true,
              width: 360,
              height: 240,
              xLabel: 'iteration',
              series: [{ name: 'step reward', color: '#D55E00', points: step.map((y, x) => ({ x, y })) }],
            }),
          ]),
        ),
      ]),
      section('Raw numbers', [jsonDetails('summary.json', s)]),
    ],
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2] ?? '/tmp/report-sample.html';
  writeFileSync(out, samplePage());
  process.stderr.write(`wrote ${out}\n`);
}
