/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A run's trajectories: filtered (task, outcome, failure kind, policy, length), sorted and paged by the
// API (GET /api/runs/:id/trajectories: SQL over a run store's rows), the filter kept in the URL so a
// trajectory opened from here steps through the same list with j/k.
import { FAILURE_KINDS } from '../../../core/types.ts';
import { get, runPath, type TrajectoryPage } from '../api.ts';
import { attr, byId, esc, fmt, link, route } from '../dom.ts';
import type { Page } from '../route.ts';

/** The list's query parameters, as the API takes them (the URL's hash carries the same). */
export const LIST_PARAMS = ['task', 'outcome', 'failure', 'policy', 'minTurns', 'maxTurns', 'sort'] as const;

const SORTS: [string, string][] = [
  ['index', 'index'],
  ['-turns', 'longest first'],
  ['turns', 'shortest first'],
  ['-return', 'highest return'],
  ['return', 'lowest return'],
];
const PAGE = 50;

/** The list's filter from a route's query (only the list's own parameters). */
export function listQuery(q: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const k of LIST_PARAMS) {
    const v = q.get(k);
    if (v !== null && v !== '') out.set(k, v);
  }
  return out;
}

const options = (values: [string, string][], chosen: string | null) =>
  values
    .map(
      ([v, label]) =>
        `<option value="${attr(v)}"${v === (chosen ?? '') ? ' selected' : ''}>${esc(label)}</option>`,
    )
    .join('');

function filterForm(q: URLSearchParams): string {
  const num = (name: string, label: string, search = false) =>
    `<label><span>${label}</span><input type="number" min="0" name="${name}" value="${attr(q.get(name) ?? '')}"${search ? ' data-search' : ''}></label>`;
  return `<form class="filters" id="filters">
${num('task', 'task seed (<span class="kbd">/</span>)', true)}
<label>outcome<select name="outcome">${options(
    [
      ['', 'any'],
      ['success', 'success'],
      ['failure', 'failure'],
    ],
    q.get('outcome'),
  )}</select></label>
<label>failure kind<select name="failure">${options(
    [['', 'any'], ...FAILURE_KINDS.map((f): [string, string] => [f, f])],
    q.get('failure'),
  )}</select></label>
<label>policy<input type="text" name="policy" value="${attr(q.get('policy') ?? '')}" size="14"></label>
${num('minTurns', 'turns ≥')}
${num('maxTurns', 'turns ≤')}
<label>sort<select name="sort">${options(SORTS, q.get('sort') ?? 'index')}</select></label>
<button type="submit">filter</button>
</form>`;
}

export const trajectoriesPage: Page = async (app, r, current) => {
  const id = r.path[1];
  const filter = listQuery(r.query);
  const offset = Number(r.query.get('offset') ?? 0) || 0;
  const api = new URLSearchParams(filter);
  api.set('offset', String(offset));
  api.set('limit', String(PAGE));
  const page = await get<TrajectoryPage>(`${runPath(id)}/trajectories?${api}`);
  if (!current()) return undefined;
  const here = (o: number) =>
    route(['run', id, 'trajectories'], { ...Object.fromEntries(filter), offset: String(o) });
  const rows = page.items
    .map((t, i) => {
      const open = route(['run', id, 't', t.index], {
        ...Object.fromEntries(filter),
        pos: String(offset + i),
      });
      return `<tr data-index="${t.index}">
<td data-label="index" class="num">${link(open, String(t.index))}</td>
<td data-label="id">${esc(t.id)}</td>
<td data-label="task">${link(route(['run', id, 'group', t.task.seed]), `task ${t.task.seed}`, ' title="its samples side by side"')}</td>
<td data-label="policy">${esc(t.policy)}</td>
<td data-label="outcome">${t.success ? '✓ success' : `✗ ${esc(t.failure ?? 'failure')}`}</td>
<td data-label="turns" class="num">${t.turns} / ${t.budget}</td>
<td data-label="return" class="num">${fmt(t.return, 3)}</td>
</tr>`;
    })
    .join('\n');
  const last = Math.min(offset + page.items.length, page.total);
  app.innerHTML = `<h1>Trajectories of ${link(route(['run', id]), id)}</h1>
${filterForm(filter)}
<p class="pager">${offset > 0 ? link(here(Math.max(0, offset - PAGE)), '← previous') : ''}
<span id="range">${page.total === 0 ? 'none match' : `${offset + 1}–${last} of ${page.total}`}</span>
${last < page.total ? link(here(offset + PAGE), 'next →') : ''}</p>
<div class="table-wrap"><table class="stack-40" id="trajectories"><thead><tr><th class="num">index</th><th>id</th><th>task</th><th>policy</th><th>outcome</th><th class="num">turns</th><th class="num">return</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
  const form = byId<HTMLFormElement>('filters')!;
  const apply = () => {
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form))
      if (typeof v === 'string' && v !== '' && !(k === 'sort' && v === 'index')) q.set(k, v);
    location.hash = route(['run', id, 'trajectories'], Object.fromEntries(q));
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    apply();
  });
  for (const s of form.querySelectorAll('select')) s.addEventListener('change', apply);
  return {
    keys: {
      ArrowRight: () => {
        if (last < page.total) location.hash = here(offset + PAGE);
      },
      ArrowLeft: () => {
        if (offset > 0) location.hash = here(Math.max(0, offset - PAGE));
      },
    },
  };
};
