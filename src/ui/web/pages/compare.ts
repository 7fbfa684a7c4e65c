/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Two runs compared from their trajectories (GET /api/compare: Pass@(K,T) of each as `turnwise eval
// --in` computes it, B − A with a paired interval when both ran the same tasks, failure kinds, the
// step-quality proxy, invalid outputs, the tasks whose success differs most), then — measured on their
// saved policies, after the rest is drawn — step quality, recovery and likelihood (diagnostics.ts).
import { barChart, figure, grid, keyValues, passKTHeatmap } from '../../../report/index.ts';
import { type DiagnosticsAnswer, get, type RunComparison, type RunInfo } from '../api.ts';
import { attr, byId, esc, fmt, link, route } from '../dom.ts';
import type { Page } from '../route.ts';
import { diagnosticsView, measuringView } from './diagnostics.ts';
import { WITH_TRAJECTORIES } from './runs.ts';

const select = (name: string, runs: readonly RunInfo[], chosen: string | null) =>
  `<label>run ${name.toUpperCase()}<select name="${name}"><option value="">(choose)</option>${runs
    .map((r) => `<option value="${attr(r.id)}"${r.id === chosen ? ' selected' : ''}>${esc(r.id)}</option>`)
    .join('')}</select></label>`;

function sides(c: RunComparison): string {
  const row = (label: string, f: (s: RunComparison['a']) => string | number | null): [string, string] => [
    label,
    `A ${typeof f(c.a) === 'number' ? fmt(f(c.a) as number, 3) : (f(c.a) ?? 'n/a')} · B ${typeof f(c.b) === 'number' ? fmt(f(c.b) as number, 3) : (f(c.b) ?? 'n/a')}`,
  ];
  const Tmax = c.T.length - 1;
  return keyValues([
    ['runs', `A ${c.a.run} · B ${c.b.run}`],
    ['policies', `A ${c.a.policies.join(', ')} · B ${c.b.policies.join(', ')}`],
    row('episodes', (s) => String(s.episodes)),
    row('tasks', (s) => String(s.tasks)),
    row(`Pass@(1,${c.T[Tmax]})`, (s) => s.passKT[0][Tmax]),
    row('mean turns (success)', (s) => s.failures.meanTurnsSuccess),
    row('mean turns (failure)', (s) => s.failures.meanTurnsFailure),
    row('step-quality proxy (info.quality)', (s) => s.stepQuality.mean),
    row('invalid outputs', (s) => s.invalidRate),
    [
      'mode',
      `${c.mode}${c.mode === 'prefix' ? ': success within each T read off one run at the largest budget' : ': one run per budget'}`,
    ],
  ]);
}

function taskTable(c: RunComparison): string {
  if (c.tasks.length === 0) return '';
  const rate = (x: { n: number; success: number } | null) =>
    x === null ? 'not run' : `${Math.round(x.success * x.n)} of ${x.n}`;
  const rows = c.tasks
    .map(
      (t) =>
        `<tr><td data-label="task">task ${t.task.seed}</td><td class="num" data-label="A">${
          t.a === null ? 'not run' : link(route(['run', c.a.run, 'group', t.task.seed]), rate(t.a))
        }</td><td class="num" data-label="B">${
          t.b === null ? 'not run' : link(route(['run', c.b.run, 'group', t.task.seed]), rate(t.b))
        }</td><td class="num" data-label="B − A" data-value="${t.diff ?? ''}">${fmt(t.diff, 2, { signed: true })}</td></tr>`,
    )
    .join('');
  return `<div class="table-wrap"><table class="stack-30" id="task-diffs"><caption>Tasks whose success within T=${c.T.at(-1)} differs most (a link opens the task’s samples)</caption><thead><tr><th>task</th><th class="num">A success</th><th class="num">B success</th><th class="num">B − A</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function results(c: RunComparison): string {
  const heat = (s: RunComparison['a'], name: string) =>
    passKTHeatmap(
      { K: c.K, T: c.T, passKT: s.passKT, ci95: s.ci95 },
      { title: `Pass@(K,T), ${name}`, showTitle: true },
    );
  const diff = passKTHeatmap(
    { K: c.K, T: c.T, passKT: c.diff, ci95: c.diffCi95 ?? undefined },
    {
      title: 'B − A',
      showTitle: true,
      scale: 'diverging',
      divergingLabels: ['A better', 'B better'],
    },
  );
  const kinds = Object.keys(c.a.failures.byKind).filter(
    (k) =>
      (c.a.failures.byKind as Record<string, number>)[k] +
        (c.b.failures.byKind as Record<string, number>)[k] >
      0,
  );
  const failures =
    kinds.length === 0
      ? '<p class="muted">No failures in either run.</p>'
      : figure(
          3,
          'Failed episodes by kind, as a fraction of each run’s episodes.',
          barChart({
            title: 'failure kinds',
            series: ['A', 'B'],
            groups: kinds.map((k) => ({
              label: k,
              values: [c.a, c.b].map(
                (s) => (s.failures.byKind as Record<string, number>)[k] / s.failures.episodes,
              ),
            })),
            yLabel: 'fraction of episodes',
          }),
        );
  return `<h2>Summary</h2>${sides(c)}
<h2>Pass@(K,T)</h2>
${figure(1, `Pass@(K,T) of each run (hover a cell for its 95% bootstrap interval over tasks), as turnwise eval --in computes it.`, grid([heat(c.a, 'A'), heat(c.b, 'B')]))}
<div id="diff" data-paired="${c.paired}">${figure(
    2,
    c.paired
      ? 'B − A: blue where B is ahead, red where A is; 95% intervals paired over the same resampled tasks.'
      : 'B − A: blue where B is ahead, red where A is. The runs did not run the same tasks and samples, so no paired interval is given.',
    diff,
  )}</div>
<h2>Failures</h2>${failures}
<h2>Where they differ most</h2>${taskTable(c)}`;
}

export const comparePage: Page = async (app, r, current) => {
  const runs = (await get<{ runs: RunInfo[] }>('/api/runs')).runs.filter((x) =>
    WITH_TRAJECTORIES.has(x.kind),
  );
  const a = r.query.get('a');
  const b = r.query.get('b');
  const grid = { K: r.query.get('K') ?? undefined, T: r.query.get('T') ?? undefined };
  let body = '<p class="muted">Choose two runs.</p>';
  if (a && b) {
    const q = new URLSearchParams({ a, b });
    if (grid.K) q.set('K', grid.K);
    if (grid.T) q.set('T', grid.T);
    try {
      body = results(await get<RunComparison>(`/api/compare?${q}`));
    } catch (e) {
      body = `<p class="error-box">${esc((e as Error).message)}</p>`;
    }
  }
  if (!current()) return undefined;
  app.innerHTML = `<h1>Compare two runs</h1>
<form class="filters" id="pick">${select('a', runs, a)}${select('b', runs, b)}
<label>K (optional)<input name="K" size="8" placeholder="1,2,4" value="${attr(grid.K ?? '')}" data-search></label>
<label>T (optional)<input name="T" size="10" placeholder="10,20,50" value="${attr(grid.T ?? '')}"></label>
<button type="submit">compare</button></form>
<div id="comparison">${body}</div>
${a && b ? `<section id="diagnostics" data-state="measuring"><h2>Measured on the saved policies</h2><div id="diagnostics-body">${measuringView()}</div></section>` : ''}`;
  byId<HTMLFormElement>('pick')!.addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const q = Object.fromEntries(
      [...f].filter((x): x is [string, string] => typeof x[1] === 'string' && x[1] !== ''),
    );
    location.hash = route(['compare'], q);
  });
  // Off the page's own request: the page is drawn (and ready) before the server has measured.
  if (a && b) void diagnostics(a, b, current);
  return undefined;
};

async function diagnostics(a: string, b: string, current: () => boolean): Promise<void> {
  let html: string;
  let state: string;
  try {
    const d = await get<DiagnosticsAnswer>(`/api/compare/diagnostics?${new URLSearchParams({ a, b })}`);
    html = diagnosticsView(d);
    state = d.available ? 'measured' : 'unavailable';
  } catch (e) {
    html = `<p class="error-box">${esc((e as Error).message)}</p>`;
    state = 'error';
  }
  const section = byId('diagnostics');
  if (!current() || section === null) return;
  byId('diagnostics-body')!.innerHTML = html;
  section.dataset.state = state;
}
