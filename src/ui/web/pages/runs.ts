/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The runs page: every run under the directory, its status live (GET /api/events sends the list again
// when it changes: a run that starts, gains iterations, finishes or stops), a search box over ids, envs
// and policies, and two runs picked to compare.
import { get, type RunInfo } from '../api.ts';
import {
  attr,
  byId,
  duration,
  envText,
  esc,
  link,
  policyText,
  route,
  runRoute,
  short,
  when,
} from '../dom.ts';
import type { Page } from '../route.ts';

/** A run's status as a word, with the live marker on a run being written. */
export function statusBadge(status: RunInfo['status']): string {
  return status === 'live'
    ? '<span class="live" title="its writer holds the run now">live</span>'
    : `<span class="status-${status}">${esc(status)}</span>`;
}

/** The headline figures as `key value` pairs, numbers to 3 decimals. */
export function headline(h: Record<string, unknown>): string {
  return Object.entries(h)
    .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `<span class="muted">${esc(k)}</span> ${esc(short(v))}`)
    .join(' · ');
}

/** Kinds whose trajectories can be read (and compared). */
export const WITH_TRAJECTORIES = new Set(['train', 'harness', 'rollout', 'file']);

function rows(runs: readonly RunInfo[], filter: string, picked: ReadonlySet<string>): string {
  const f = filter.trim().toLowerCase();
  const shown = runs.filter((r) =>
    f === '' ? true : `${r.id} ${r.kind} ${envText(r.env)} ${policyText(r.policy)}`.toLowerCase().includes(f),
  );
  if (shown.length === 0)
    return `<tr><td colspan="7" class="muted">${runs.length === 0 ? 'No runs under this directory yet.' : 'No run matches.'}</td></tr>`;
  return shown
    .map(
      (r) => `<tr data-run="${attr(r.id)}">
<td data-label="run">${WITH_TRAJECTORIES.has(r.kind) ? `<input type="checkbox" aria-label="compare ${attr(r.id)}" data-pick="${attr(r.id)}"${picked.has(r.id) ? ' checked' : ''}> ` : ''}${link(runRoute(r.id), r.id)}</td>
<td data-label="kind">${esc(r.kind)}</td>
<td data-label="env">${esc(envText(r.env))}</td>
<td data-label="policy">${esc(policyText(r.policy))}</td>
<td data-label="status" class="status">${statusBadge(r.status)}</td>
<td data-label="started" class="nowrap">${esc(when(r.started))}${r.seconds === null ? '' : `<br><span class="muted">${esc(duration(r.seconds))}</span>`}</td>
<td data-label="headline" class="long">${headline(r.headline)}</td>
</tr>`,
    )
    .join('\n');
}

export const runsPage: Page = async (app) => {
  let runs = (await get<{ runs: RunInfo[] }>('/api/runs')).runs;
  const picked = new Set<string>();
  app.innerHTML = `<h1>Runs</h1>
<div class="controls">
<label><span>search (<span class="kbd">/</span>)</span><input id="run-filter" data-search type="search" placeholder="id, env, policy"></label>
<a id="compare-picked" class="muted">pick two runs to compare</a>
</div>
<div class="table-wrap"><table class="stack-48" id="runs"><thead><tr><th>run</th><th>kind</th><th>env</th><th>policy</th><th>status</th><th>started</th><th>headline</th></tr></thead>
<tbody></tbody></table></div>`;
  const body = app.querySelector('#runs tbody')!;
  const filter = byId<HTMLInputElement>('run-filter')!;
  const compare = byId<HTMLAnchorElement>('compare-picked')!;
  const draw = () => {
    body.innerHTML = rows(runs, filter.value, picked);
    const [a, b] = [...picked];
    if (picked.size === 2) {
      compare.href = route(['compare'], { a, b });
      compare.textContent = `compare ${a} with ${b}`;
      compare.className = '';
    } else {
      compare.removeAttribute('href');
      compare.textContent = 'pick two runs to compare';
      compare.className = 'muted';
    }
  };
  filter.addEventListener('input', draw);
  body.addEventListener('change', (e) => {
    const id = (e.target as HTMLElement).dataset.pick;
    if (id === undefined) return;
    if (picked.has(id)) picked.delete(id);
    else {
      if (picked.size === 2) picked.delete([...picked][0]);
      picked.add(id);
    }
    draw();
  });
  draw();
  const events = new EventSource('/api/events');
  events.addEventListener('runs', (e) => {
    runs = (JSON.parse((e as MessageEvent<string>).data) as { runs: RunInfo[] }).runs;
    draw();
  });
  return { undo: () => events.close() };
};
