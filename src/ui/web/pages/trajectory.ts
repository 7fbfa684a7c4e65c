/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// One trajectory, turn by turn: the turn's observation as its env shows it, the action with its
// log-prob (per token for a text policy), reward, info, the model call's figures, and a column of
// advantages per credit method chosen from the registry — computed by the server as `turnwise credit
// --in FILE` computes them — with `exact` where the env has an oracle. Keys: ←/→ turns, j/k the next
// and previous trajectory of the list it was opened from, `/` the search over turns.
import { keyValues } from '../../../report/index.ts';
import {
  ApiError,
  creditMethods,
  type EnvView,
  get,
  type Methods,
  runPath,
  type TokenText,
  type Trajectory,
  type TrajectoryAnswer,
  type TrajectoryPage,
} from '../api.ts';
import { attr, byId, esc, fmt, link, route } from '../dom.ts';
import { actionText, actionView, isConversation, observationView, tokensView } from '../observation.ts';
import { type Page, replaceQuery } from '../route.ts';
import { setStatus } from '../status.ts';
import { listQuery } from './trajectories.ts';

type Turn = Trajectory['turns'][number];

/** The methods a page shows when the URL names none: grpo, and exact where the env has an oracle. */
export function defaultMethods(view: EnvView | null): string[] {
  return view?.oracle ? ['grpo', 'exact'] : ['grpo'];
}

/** Checkboxes of the registry's methods (and exact when the env has an oracle). */
export function methodPicker(methods: Methods, view: EnvView | null, chosen: readonly string[]): string {
  const names = [
    ...methods.methods.map((m) => [m.name, m.summary]),
    ...(view?.oracle ? [['exact', methods.exact]] : []),
  ];
  return `<fieldset id="methods"><legend>credit columns</legend>${names
    .map(
      ([n, summary]) =>
        `<label title="${attr(summary)}"><input type="checkbox" value="${attr(n)}"${chosen.includes(n) ? ' checked' : ''}>${esc(n)}</label>`,
    )
    .join('')}</fieldset>`;
}

/** The methods of a `credit=` query value, in the order given. */
export const methodsOf = (raw: string | null) => (raw ?? '').split(',').filter((s) => s !== '');

/** What labels the chips: the run's tokenizer (named), or the ids and why. */
function tokensNote(text: TokenText | null): string {
  if (text === null) return '';
  return text.from === null
    ? `<div class="muted" id="tokens-note">labelled by token id: ${esc(text.reason ?? 'no tokenizer')}</div>`
    : `<div class="muted" id="tokens-note">labelled by the tokenizer in the run’s ${esc(text.from)} (· space, ↵ newline, ⇥ tab; \\xNN a control character, or a byte of a character split across tokens); the id on hover</div>`;
}

function traceView(turn: Turn, tokenText: TokenText | null): string {
  const tr = turn.trace;
  if (tr === undefined) return '';
  const rows: [string, string | number | null][] = [];
  if (tr.model !== undefined)
    rows.push(['model', tr.model + (tr.modelVersion ? ` (${tr.modelVersion})` : '')]);
  if (tr.latencyMs !== undefined) rows.push(['latency', `${fmt(tr.latencyMs, 0)} ms`]);
  if (tr.usage !== undefined)
    rows.push([
      'tokens',
      `${tr.usage.prompt} prompt, ${tr.usage.completion} completion${tr.usage.cached === undefined ? '' : `, ${tr.usage.cached} cached`}`,
    ]);
  if (tr.retries !== undefined) rows.push(['retries', String(tr.retries)]);
  if (tr.status !== undefined) rows.push(['HTTP status', String(tr.status)]);
  if (tr.finishReason !== undefined) rows.push(['finish', tr.finishReason]);
  if (tr.invalid !== undefined) rows.push(['invalid output', tr.invalid]);
  if (tr.errors !== undefined && tr.errors.length > 0) rows.push(['retried after', tr.errors.join('; ')]);
  const text =
    tr.text === undefined ? '' : `<div class="muted">output</div><pre><code>${esc(tr.text)}</code></pre>`;
  const tokens =
    tr.logprobs === undefined
      ? ''
      : `<div class="muted">tokens by log p, from −10 or less (dark) to 0 (yellow); hover for each</div>${tokensNote(tokenText)}${tokensView(tr.tokens, tr.logprobs, tokenText)}`;
  return `<h3>Model call</h3>${rows.length > 0 ? keyValues(rows) : ''}${text}${tokens}`;
}

function turnDetails(a: TrajectoryAnswer, t: number, methods: readonly string[]): string {
  const turn = a.trajectory.turns[t];
  const { success, failure, valid, ...extra } = turn.info;
  const rows: [string, string | number | null][] = [
    ['reward', turn.reward],
    ['log p', turn.logp],
  ];
  if (valid === false) rows.push(['valid', 'no: the env refused the action']);
  if (success !== undefined) rows.push(['success', success ? 'yes' : 'no']);
  if (failure !== undefined) rows.push(['failure', failure]);
  for (const [k, v] of Object.entries(extra))
    rows.push([k, typeof v === 'number' || typeof v === 'string' ? v : JSON.stringify(v)]);
  for (const m of methods) rows.push([`advantage (${m})`, a.credit[m]?.[t] ?? null]);
  // A tool env's call is in the conversation beside: here, its one line.
  const action = isConversation(turn.observation)
    ? `<p class="action">${esc(actionText(turn.action, a.view))}</p>`
    : actionView(turn.action, a.view);
  return `<h3>Action${turn.forced ? ' <span class="forced">(forced: imposed, not the policy’s)</span>' : ''}</h3>
${action}
${keyValues(rows, { digits: 4 })}
${traceView(turn, a.tokenText)}`;
}

function turnRows(a: TrajectoryAnswer, methods: readonly string[]): string {
  return a.trajectory.turns
    .map((turn, t) => {
      const credit = methods
        .map((m) => {
          const v = a.credit[m]?.[t];
          return `<td class="num" data-label="${attr(m)}" data-method="${attr(m)}" data-value="${v ?? ''}">${fmt(v, 3, { signed: true })}</td>`;
        })
        .join('');
      return `<tr data-t="${t}"><td class="num" data-label="turn">${t}</td><td data-label="action"${turn.forced ? ' class="forced"' : ''}>${esc(actionText(turn.action, a.view))}${turn.forced ? ' (forced)' : ''}</td><td class="num" data-label="reward">${fmt(turn.reward, 3)}</td><td class="num" data-label="log p">${fmt(turn.logp, 3)}</td>${credit}</tr>`;
    })
    .join('\n');
}

export const trajectoryPage: Page = async (app, r, current) => {
  const id = r.path[1];
  const index = Number(r.path[3]);
  const query = r.query;
  const path = `/api/trajectories/${encodeURIComponent(id)}/${index}`;
  // Without credit= in the URL: the defaults, which depend on the env (has it an oracle?).
  const asked = query.get('credit');
  let methods = methodsOf(asked ?? defaultMethods((await get<TrajectoryAnswer>(path)).view).join(','));
  const withCredit = (ms: readonly string[]) =>
    get<TrajectoryAnswer>(ms.length === 0 ? path : `${path}?credit=${encodeURIComponent(ms.join(','))}`);
  // `exact` needs the policy's whole distribution (an oracle's, a tabular one's): for another policy the
  // server refuses it, and the page shows the other columns with the reason.
  let note = '';
  const answer = await withCredit(methods).catch((e) => {
    if (!(e instanceof ApiError && e.field === 'credit' && methods.includes('exact'))) throw e;
    note = e.message;
    methods = methods.filter((m) => m !== 'exact');
    return withCredit(methods);
  });
  const registry = await creditMethods();
  if (!current()) return undefined;
  const tr = answer.trajectory;
  const n = tr.turns.length;
  let t = Math.min(Math.max(0, Number(query.get('turn') ?? 0) || 0), Math.max(0, n - 1));
  const list = listQuery(query);
  const pos = query.get('pos');
  const o = tr.outcome;
  app.innerHTML = `<h1>Trajectory ${esc(tr.id)}</h1>
<p class="meta"><span>${link(route(['run', id]), id)} #${index}</span><span>${link(route(['run', id, 'group', tr.task.seed]), `task ${tr.task.seed}`)} (${esc(tr.task.env)})</span><span>${esc(tr.policy)}</span><span>budget ${tr.budget}${tr.revealBudget ? ' (told)' : ''}</span>
<span id="outcome">${o.success ? '✓ success' : `✗ ${esc(o.failure ?? 'failure')}`} in ${o.turns} turns, return ${fmt(o.return, 3)}</span></p>
${o.error ? `<p class="error-box">${esc(o.error)}</p>` : ''}
${note === '' ? '' : `<p class="muted" id="credit-note">exact: not shown (${esc(note.replace(/^credit: /, ''))})</p>`}
<div class="controls">
${methodPicker(registry, answer.view, methods)}
<label><span>search turns (<span class="kbd">/</span>)</span><input id="turn-search" data-search type="search" placeholder="action or observation text"></label>
<span class="muted"><span class="kbd">←</span> <span class="kbd">→</span> turns · <span class="kbd">j</span> <span class="kbd">k</span> next / previous trajectory${list.size > 0 ? ' of the filtered list' : ''}</span>
</div>
${
  n === 0
    ? '<p class="muted">No turn.</p>'
    : `<div class="turnbar"><button id="prev" aria-label="previous turn">←</button><b id="turn-label"></b><button id="next" aria-label="next turn">→</button></div>
<div class="turn-view"><div id="observation"></div><div id="details"></div></div>`
}
<h2>Turns</h2>
<div class="table-wrap"><table class="turns stack-30" id="turns"><thead><tr><th class="num">turn</th><th>action</th><th class="num">reward</th><th class="num">log p</th>${methods
    .map((m) => `<th class="num" data-method="${attr(m)}">${esc(m)}</th>`)
    .join('')}</tr></thead><tbody>${turnRows(answer, methods)}</tbody></table></div>`;

  const rows = [...app.querySelectorAll<HTMLTableRowElement>('#turns tbody tr')];
  const draw = () => {
    if (n === 0) return;
    byId('turn-label')!.textContent = `turn ${t} · ${n} turns`;
    byId('observation')!.innerHTML = observationView(tr, t, answer.view);
    byId('details')!.innerHTML = turnDetails(answer, t, methods);
    for (const [i, row] of rows.entries()) row.classList.toggle('current', i === t);
    // The conversation scrolls by itself (not the page) to the turn's call and its result, the call's
    // top kept in view when both do not fit.
    const chat = app.querySelector<HTMLElement>('.chat');
    const shown = app.querySelectorAll<HTMLElement>('.msg.current');
    if (chat !== null && shown.length > 0) {
      const box = () => chat.getBoundingClientRect();
      const below = shown[shown.length - 1].getBoundingClientRect().bottom - box().bottom + 4;
      if (below > 0) chat.scrollTop += below;
      const above = box().top - shown[0].getBoundingClientRect().top + 4;
      if (above > 0) chat.scrollTop -= above;
    }
    document.body.dataset.turn = String(t);
    const q = new URLSearchParams(query);
    q.set('turn', String(t));
    replaceQuery(q);
  };
  const go = (to: number) => {
    if (n === 0) return;
    t = Math.min(Math.max(0, to), n - 1);
    draw();
  };
  draw();
  byId('prev')?.addEventListener('click', () => go(t - 1));
  byId('next')?.addEventListener('click', () => go(t + 1));
  byId('turns')!.addEventListener('click', (e) => {
    const row = (e.target as HTMLElement).closest('tr[data-t]') as HTMLElement | null;
    if (row !== null) go(Number(row.dataset.t));
  });
  byId('methods')!.addEventListener('change', () => {
    // The columns shown keep their places; a method checked now comes last.
    const checked = [...app.querySelectorAll<HTMLInputElement>('#methods input:checked')].map((x) => x.value);
    const chosen = [
      ...methods.filter((m) => checked.includes(m)),
      ...checked.filter((m) => !methods.includes(m)),
    ];
    const q = new URLSearchParams(query);
    q.set('credit', chosen.join(','));
    q.set('turn', String(t));
    location.hash = route(['run', id, 't', index], Object.fromEntries(q));
  });
  const search = byId<HTMLInputElement>('turn-search')!;
  const texts = tr.turns.map((x) =>
    `${actionText(x.action, answer.view)} ${JSON.stringify(x.observation)}`.toLowerCase(),
  );
  const matches = () => {
    const s = search.value.trim().toLowerCase();
    return s === '' ? [] : texts.flatMap((x, i) => (x.includes(s) ? [i] : []));
  };
  search.addEventListener('input', () => {
    const m = new Set(matches());
    for (const [i, row] of rows.entries()) row.classList.toggle('match', m.has(i));
  });
  search.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    const m = matches();
    if (m.length > 0) go(m.find((i) => i > t) ?? m[0]);
  });

  /** The trajectory `step` away in the list it was opened from (by index when opened on its own). */
  const neighbour = async (step: 1 | -1) => {
    let to: number;
    let toPos: string | undefined;
    if (pos !== null) {
      const p = Number(pos) + step;
      if (p < 0) return setStatus('first trajectory of the list');
      const q = new URLSearchParams(list);
      q.set('offset', String(p));
      q.set('limit', '1');
      const page = await get<TrajectoryPage>(`${runPath(id)}/trajectories?${q}`);
      if (page.items.length === 0) return setStatus('last trajectory of the list');
      to = page.items[0].index;
      toPos = String(p);
    } else {
      to = index + step;
      if (to < 0) return setStatus('first trajectory');
      try {
        await get(`/api/trajectories/${encodeURIComponent(id)}/${to}`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return setStatus('last trajectory');
        throw e;
      }
    }
    location.hash = route(['run', id, 't', to], {
      ...Object.fromEntries(list),
      pos: toPos,
      credit: query.get('credit') ?? undefined,
    });
  };
  return {
    keys: {
      ArrowLeft: () => go(t - 1),
      ArrowRight: () => go(t + 1),
      j: () => void neighbour(1),
      k: () => void neighbour(-1),
    },
  };
};
