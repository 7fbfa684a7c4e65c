// The reports of runs that are not studies (`turnwise report RUN`), each one self-contained page:
//   a training run     its curves (every metric the trainer logged, one small chart each, with a table
//                      of first, last, min and max), its final evaluation and its configuration;
//   trajectories       a harness run or a trajectory file: how many episodes, how they ended (failure
//                      kinds), and each task's success.
// Pure functions of the numbers the caller read (studies/run-report.ts reads the run); nothing fetched.
import { barChart } from './bars.ts';
import { figure, grid, jsonDetails, keyValues, page, paragraph, type SummaryValue, section } from './html.ts';
import { lineChart } from './line.ts';
import { table } from './table.ts';
import { wholeNumbers } from './trajectory.ts';

/** One iteration's metrics, as the run store (and metrics.jsonl) keeps them. */
export type MetricsRow = { iter: number; [key: string]: number | null };

export interface TrainingReportData {
  id: string;
  /** Status, start, duration and the like, as the dashboard lists the run. */
  facts: readonly (readonly [string, SummaryValue])[];
  config: unknown;
  /** summary.json's `final` (the held-out evaluation), when the run finished. */
  final: Record<string, unknown> | null;
  metrics: readonly MetricsRow[];
  footer?: string;
}

/** The metric keys in the order shown: by namespace (rollout/, credit/, train/, others), then name. */
function metricKeys(rows: readonly MetricsRow[]): string[] {
  const keys = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) if (k !== 'iter') keys.add(k);
  const rank = (k: string) => ['rollout/', 'credit/', 'train/'].findIndex((p) => k.startsWith(p)) >>> 0;
  return [...keys].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

const finite = (x: number | null | undefined): x is number => typeof x === 'number' && Number.isFinite(x);

export function trainingReport(d: TrainingReportData): string {
  const keys = metricKeys(d.metrics);
  let n = 0;
  const fig = (caption: string, content: string) => figure(++n, caption, content);
  const series = (k: string) => d.metrics.map((r) => ({ x: r.iter, y: r[k] }));
  const stats = keys.map((k) => {
    const ys = d.metrics.map((r) => r[k]).filter(finite);
    return [
      k,
      ys.length === 0 ? null : ys[0],
      ys.length === 0 ? null : ys[ys.length - 1],
      ys.length === 0 ? null : Math.min(...ys),
      ys.length === 0 ? null : Math.max(...ys),
    ];
  });
  const finalEntries = Object.entries(d.final ?? {}).filter(
    (e): e is [string, SummaryValue] =>
      e[1] === null || ['string', 'number', 'boolean'].includes(typeof e[1]),
  );
  return page({
    title: `Training run ${d.id}`,
    subtitle: `${d.metrics.length} iterations logged`,
    body: [
      section('Run', keyValues(wholeNumbers(d.facts))),
      section(
        'Final evaluation',
        d.final === null
          ? paragraph(
              'No summary.json yet: the run has not finished (its curves below are what it logged so far).',
            )
          : [
              paragraph('The held-out evaluation the trainer wrote to summary.json when it finished.'),
              keyValues(wholeNumbers(finalEntries), { digits: 4 }),
            ],
      ),
      section(
        'Training curves',
        keys.length === 0
          ? paragraph('No metrics logged yet.')
          : [
              paragraph(
                'Every metric the trainer logged, one point per iteration (the run store’s rows, the lines of metrics.jsonl): rollout/ the iteration’s sampled episodes, credit/ its groups, train/ the update.',
              ),
              fig(
                'Each logged metric over training iterations.',
                grid(
                  keys.map((k) =>
                    lineChart({
                      title: k,
                      showTitle: true,
                      series: [{ name: k, points: series(k) }],
                      xLabel: 'iteration',
                      // A few iterations: ticks at each (no iteration 0.5).
                      xTicks: d.metrics.length <= 12 ? d.metrics.map((r) => r.iter) : undefined,
                      width: 360,
                      height: 220,
                      legend: false,
                      digits: 4,
                    }),
                  ),
                ),
              ),
              table(
                [
                  'metric',
                  { label: 'first', digits: 4 },
                  { label: 'last', digits: 4 },
                  { label: 'min', digits: 4 },
                  { label: 'max', digits: 4 },
                ],
                stats,
                { caption: 'First, last, lowest and highest value of each metric' },
              ),
            ],
      ),
      section('Configuration', jsonDetails('The resolved configuration (config.json)', d.config)),
    ],
    footer: d.footer,
  });
}

/** One task's samples. */
export interface TaskRow {
  /** The task as a reader names it (its env params and seed). */
  task: string;
  samples: number;
  successes: number;
  meanTurns: number;
  /** How its failed samples ended, by failure kind. */
  failures: Record<string, number>;
}

export interface TrajectoriesReportData {
  title: string;
  facts: readonly (readonly [string, SummaryValue])[];
  episodes: number;
  successes: number;
  meanTurns: number;
  meanTurnsSuccess: number | null;
  /** Failed episodes by failure kind (every kind, 0 included). */
  failures: Record<string, number>;
  tasks: readonly TaskRow[];
  /** The configuration the run recorded, if any. */
  config?: unknown;
  footer?: string;
}

/** Tasks listed in full up to this many (a report of 100 000 tasks would be a table nobody reads). */
export const MAX_TASK_ROWS = 500;

export function trajectoriesReport(d: TrajectoriesReportData): string {
  let n = 0;
  const fig = (caption: string, content: string) => figure(++n, caption, content);
  const kinds = Object.keys(d.failures).filter((k) => d.failures[k] > 0);
  const failed = d.episodes - d.successes;
  const shown = d.tasks.slice(0, MAX_TASK_ROWS);
  const topFailure = (t: TaskRow) => {
    const [k, c] = Object.entries(t.failures).sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
    return c > 0 ? `${k} (${c})` : '';
  };
  return page({
    title: d.title,
    subtitle: `${d.episodes} episodes of ${d.tasks.length} tasks`,
    body: [
      section(
        'Summary',
        keyValues(
          wholeNumbers([
            ...d.facts,
            ['episodes', d.episodes],
            ['successes', d.successes],
            ['success rate', d.episodes > 0 ? d.successes / d.episodes : null],
            ['mean turns', d.meanTurns],
            ['mean turns of successes', d.meanTurnsSuccess],
            ['tasks', d.tasks.length],
          ]),
          { digits: 4 },
        ),
      ),
      section('Failure kinds', [
        paragraph(
          failed === 0
            ? 'No episode failed.'
            : `How the ${failed} episodes that did not succeed ended: budget (out of turns), invalid-action (a malformed or illegal action ended it), irreversible (a dead state), wrong-answer, error (the env or the agent raised), context (the prompt outgrew the model).`,
        ),
        ...(kinds.length === 0
          ? []
          : [
              fig(
                'Failed episodes by failure kind.',
                barChart({
                  title: 'Failure kinds',
                  series: ['episodes'],
                  groups: kinds.map((k) => ({ label: k, values: [d.failures[k]] })),
                  yLabel: 'episodes',
                  digits: 0,
                }),
              ),
            ]),
        table(
          [
            'outcome',
            { label: 'episodes', digits: 0 },
            { label: 'share', digits: 1, format: { percent: true } },
          ],
          [
            ['success', d.successes, d.episodes > 0 ? d.successes / d.episodes : null],
            ...Object.keys(d.failures).map((k) => [
              k,
              d.failures[k],
              d.episodes > 0 ? d.failures[k] / d.episodes : null,
            ]),
          ],
          { caption: 'Episodes by outcome' },
        ),
      ]),
      section('Success per task', [
        paragraph(
          d.tasks.length > MAX_TASK_ROWS
            ? `The first ${MAX_TASK_ROWS} of ${d.tasks.length} tasks, in the order of their first episode.`
            : 'Each task’s samples, in the order of their first episode.',
        ),
        table(
          [
            'task',
            { label: 'samples', digits: 0 },
            { label: 'successes', digits: 0 },
            { label: 'success rate', digits: 3 },
            { label: 'mean turns', digits: 1 },
            'most frequent failure',
          ],
          shown.map((t) => [
            t.task,
            t.samples,
            t.successes,
            t.successes / t.samples,
            t.meanTurns,
            topFailure(t),
          ]),
        ),
      ]),
      ...(d.config === undefined
        ? []
        : [section('Configuration', jsonDetails('The configuration the run recorded', d.config))]),
    ],
    footer: d.footer,
  });
}
