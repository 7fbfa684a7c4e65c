/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A run: what it is, its training curves (drawn by the report's line chart, so the dashboard and
// `turnwise report` draw alike) gaining points while the run writes — the run's event stream says when
// it changed, and the page fetches its metrics again — its config and final figures, and for a study
// its findings and Pass@(K,T) heatmaps.
import { figure, jsonDetails, keyValues, type LineSeries, lineChart } from '../../../report/index.ts';
import { get, type Metrics, type RunDetails, type RunInfo, runPath } from '../api.ts';
import { attr, duration, envText, esc, link, policyText, route, when } from '../dom.ts';
import type { Page } from '../route.ts';
import { headline, statusBadge, WITH_TRAJECTORIES } from './runs.ts';
import { studySections } from './study.ts';

type Iteration = Metrics['iterations'][number];

/** A curve of the run page: the metric keys it draws (or a ratio of two), in the order shown. */
interface Curve {
  title: string;
  keys: string[];
  /** Draw keys[0] / keys[1] as one series (dead groups over groups). */
  ratio?: string;
  yDomain?: [number, number];
  caption: string;
}

const CURVES: readonly Curve[] = [
  {
    title: 'success',
    keys: ['rollout/success'],
    yDomain: [0, 1],
    caption: 'Success rate of the iteration’s rollouts.',
  },
  {
    title: 'step quality',
    keys: ['rollout/step_quality'],
    caption: 'Step quality of the rollouts’ turns (the env’s per-turn signal).',
  },
  { title: 'loss', keys: ['train/loss'], caption: 'Policy loss of the update.' },
  { title: 'entropy', keys: ['train/entropy'], caption: 'Entropy of the policy on the rollouts’ turns.' },
  {
    title: 'KL',
    keys: ['train/kl', 'train/approx_kl'],
    caption: 'KL to the reference policy (train/kl) and the update’s approximate KL (train/approx_kl).',
  },
  { title: 'clip fraction', keys: ['train/clipfrac'], caption: 'Fraction of ratios clipped by PPO.' },
  {
    title: 'dead groups',
    keys: ['credit/dead_groups', 'credit/groups'],
    ratio: 'dead groups / groups',
    yDomain: [0, 1],
    caption: 'Fraction of groups whose samples all share one outcome (no group-baseline signal).',
  },
  {
    title: 'invalid rate',
    keys: ['rollout/invalid_rate'],
    yDomain: [0, 1],
    caption: 'Fraction of turns whose output did not parse into an action.',
  },
];

const TOKENS_PER_SECOND = /tokens_per_s|tokens\/s/;

function series(iterations: readonly Iteration[], c: Curve): LineSeries[] {
  if (c.ratio !== undefined) {
    const [num, den] = c.keys;
    return [
      {
        name: c.ratio,
        points: iterations.map((m) => {
          const a = m[num];
          const b = m[den];
          return { x: m.iter, y: typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null };
        }),
      },
    ];
  }
  return c.keys
    .filter((k) => iterations.some((m) => k in m))
    .map((k) => ({ name: k, points: iterations.map((m) => ({ x: m.iter, y: m[k] })) }));
}

function curveFigure(
  n: number,
  c: Curve,
  iterations: readonly Iteration[],
  metric: string,
  width?: number,
): string {
  const s = series(iterations, c);
  const points = s.reduce((most, x) => Math.max(most, x.points.filter((p) => p.y !== null).length), 0);
  const chart = lineChart({
    title: `${c.title} by iteration`,
    series: s,
    xLabel: 'iteration',
    yLabel: c.title,
    yDomain: c.yDomain,
    height: 260,
    width,
  });
  return `<div data-metric="${attr(metric)}" data-points="${points}">${figure(n, c.caption, chart)}</div>`;
}

/** The curves of a training run: the known ones first, tokens/s where recorded, then every other key. */
export function curves(iterations: readonly Iteration[]): string {
  if (iterations.length === 0) return '<p class="muted">No iteration recorded yet.</p>';
  const present = new Set(iterations.flatMap((m) => Object.keys(m)));
  present.delete('iter');
  const known = CURVES.filter((c) =>
    c.ratio !== undefined ? present.has(c.keys[0]) : c.keys.some((k) => present.has(k)),
  );
  for (const c of known) for (const k of c.keys) present.delete(k);
  const speed = [...present].filter((k) => TOKENS_PER_SECOND.test(k));
  const rest = [...present].filter((k) => !TOKENS_PER_SECOND.test(k)).sort();
  let n = 0;
  const main = [
    ...known.map((c) => curveFigure(++n, c, iterations, c.keys[0])),
    ...speed.map((k) =>
      curveFigure(++n, { title: 'tokens/s', keys: [k], caption: `Throughput (${k}).` }, iterations, k),
    ),
  ];
  const others = rest.map((k) =>
    // Inside <details> (its padding): a little narrower, so they fit a 600 px window too.
    curveFigure(++n, { title: k, keys: [k], caption: `${k} by iteration.` }, iterations, k, 520),
  );
  return `<div class="charts">${main.join('\n')}</div>${
    others.length === 0
      ? ''
      : `<details><summary>Every other metric (${others.length})</summary><div class="charts">${others.join('\n')}</div></details>`
  }`;
}

/** How long the run took; a live run's store says so only at its end, so its age is shown instead. */
function elapsed(r: RunInfo): string {
  if (r.status === 'live' && r.started !== null)
    return `running for ${duration((Date.now() - Date.parse(r.started)) / 1000)}`;
  return r.seconds === null ? '' : duration(r.seconds);
}

function header(r: RunInfo): string {
  const env = r.env === null ? '' : `<span>${esc(envText(r.env))}</span>`;
  const policy = r.policy === null ? '' : `<span>${esc(policyText(r.policy))}</span>`;
  return `<p class="meta"><span>${esc(r.kind)}</span>${env}${policy}<span id="run-status">${statusBadge(r.status)}</span><span>started ${esc(when(r.started))}</span><span>${esc(elapsed(r))}</span></p>
<p id="run-headline">${headline(r.headline)}</p>`;
}

/** Final figures: the scalar fields of `final` (and of its `final` member, a training run's summary). */
function finalFigures(final: unknown): string {
  if (final === null || typeof final !== 'object') return '<p class="muted">None recorded (yet).</p>';
  const f = final as Record<string, unknown>;
  const scalars = (o: Record<string, unknown>) =>
    Object.entries(o).filter((e): e is [string, number | string | boolean] =>
      ['number', 'string', 'boolean'].includes(typeof e[1]),
    );
  const inner =
    f.final !== null && typeof f.final === 'object' ? scalars(f.final as Record<string, unknown>) : [];
  // Integers as they are (episodes 2000, not 2000.000), other numbers to 3 decimals.
  const pairs = [...inner, ...scalars(f)].map(([k, v]): [string, string | number | boolean] => [
    k,
    Number.isInteger(v) ? String(v) : v,
  ]);
  return `${pairs.length > 0 ? keyValues(pairs) : ''}${jsonDetails('final figures (JSON)', final)}`;
}

export const runPage: Page = async (app, r, current) => {
  const id = r.path[1];
  const run = await get<RunDetails>(runPath(id));
  const metrics = run.kind === 'train' ? await get<Metrics>(`${runPath(id)}/metrics`) : undefined;
  if (!current()) return undefined;
  const links = [
    WITH_TRAJECTORIES.has(run.kind) ? link(route(['run', id, 'trajectories']), 'trajectories') : '',
    WITH_TRAJECTORIES.has(run.kind) ? link(route(['compare'], { a: id }), 'compare with another run') : '',
  ].filter((s) => s !== '');
  app.innerHTML = `<h1>${esc(run.id)}</h1>
<div id="run-header">${header(run)}</div>
${links.length > 0 ? `<p>${links.join(' · ')}</p>` : ''}
${metrics === undefined ? '' : `<section><h2>Training curves</h2><div id="curves">${curves(metrics.iterations)}</div></section>`}
${run.kind === 'study' ? studySections(run.final) : ''}
<section><h2>Final figures</h2>${finalFigures(run.final)}</section>
<section><h2>Config</h2>${run.config === null ? '<p class="muted">None recorded.</p>' : jsonDetails('config (JSON)', run.config)}</section>`;
  if (run.status === 'finished' || run.kind === 'study' || run.kind === 'bc') return undefined;
  // Live: the run's stream says when it changed; the page reads its state and metrics again.
  const events = new EventSource(`${runPath(id)}/events`);
  let seen = JSON.stringify((({ config: _c, final: _f, ...info }) => info)(run));
  let busy = Promise.resolve();
  events.addEventListener('run', (e) => {
    const data = (e as MessageEvent<string>).data;
    if (data === seen) return;
    seen = data;
    const info = JSON.parse(data) as RunInfo;
    if (info.status === 'finished') events.close();
    // The metrics first, then header and curves together: a page that says `stopped` shows every
    // iteration written before the stop.
    busy = busy
      .then(async () => {
        const m = metrics === undefined ? undefined : await get<Metrics>(`${runPath(id)}/metrics`);
        if (!current()) return;
        const head = document.getElementById('run-header');
        const box = document.getElementById('curves');
        if (box !== null && m !== undefined) box.innerHTML = curves(m.iterations);
        if (head !== null) head.innerHTML = header(info);
      })
      .catch(() => {}); // the next event tries again
  });
  events.addEventListener('gone', () => events.close());
  return { undo: () => events.close() };
};
