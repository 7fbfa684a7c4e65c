/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A group: the K samples of one task as parallel lanes, a cell per turn (its action), coloured by the
// turn's advantage under the chosen credit method (blue above 0, red below, on one symmetric scale), with
// where the samples part (the first turn at which they do not all agree: a bar before that column; ◆
// where each leaves the first sample), forced turns (injected errors, expert prefixes) dashed, and each
// lane's outcome at its end.
import { contrastText, diverging } from '../../../report/color.ts';
import { niceTicks } from '../../../report/index.ts';
import { creditMethods, type GroupAnswer, get, runPath } from '../api.ts';
import { attr, esc, fmt, link, route } from '../dom.ts';
import { actionLabel, actionText } from '../observation.ts';
import type { Page } from '../route.ts';
import { defaultMethods, methodsOf } from './trajectory.ts';

function lane(g: GroupAnswer, i: number, method: string | undefined, limit: number, runId: string): string {
  const tr = g.trajectories[i];
  const col = method === undefined ? undefined : g.credit[method]?.[i];
  const parts = g.fromFirst[i];
  const forced = new Set(g.forced[i]);
  const cells = tr.turns.map((turn, t) => {
    const v = col?.[t];
    const bg = v === undefined ? undefined : diverging(v, limit);
    const cls = [
      'step',
      forced.has(t) ? 'forced' : '',
      t === g.divergedAt ? 'split' : '',
      t === parts ? 'parts' : '',
    ].filter((c) => c !== '');
    const tip = [
      `sample ${i}, turn ${t}: ${actionText(turn.action, g.view)}`,
      `reward ${fmt(turn.reward, 3)}`,
      v === undefined ? '' : `${method} ${fmt(v, 3, { signed: true })}`,
      forced.has(t) ? 'forced (injected)' : '',
      turn.info.valid === false ? 'refused by the env' : '',
      t === parts ? 'first turn that differs from sample 0' : '',
    ].filter((s) => s !== '');
    const style = bg === undefined ? '' : ` style="background:${bg};color:${contrastText(bg)}"`;
    return `<a class="${cls.join(' ')}"${style} title="${attr(tip.join('; '))}" data-t="${t}" data-value="${v ?? ''}" href="${attr(
      route(['run', runId, 't', g.indices[i]], { turn: String(t), credit: method }),
    )}">${esc(turn.info.valid === false ? '✗' : actionLabel(turn.action, g.view))}</a>`;
  });
  const o = tr.outcome;
  return `<div class="lane" data-sample="${i}"><div class="label">${link(route(['run', runId, 't', g.indices[i]]), `sample ${i}`)}<span class="muted">#${g.indices[i]} · ${o.turns} turns</span></div>${cells.join('')}<div class="end">${
    o.success ? '✓ success' : `✗ ${esc(o.failure ?? 'failure')}`
  }</div></div>`;
}

export const groupPage: Page = async (app, r, current) => {
  const id = r.path[1];
  const seed = Number(r.path[3]);
  const path = `${runPath(id)}/groups/${seed}`;
  const asked = r.query.get('credit');
  const method = methodsOf(
    asked ?? defaultMethods((await get<GroupAnswer>(path)).view).reverse()[0] ?? '',
  )[0];
  const [g, registry] = await Promise.all([
    get<GroupAnswer>(method === undefined ? path : `${path}?credit=${encodeURIComponent(method)}`),
    creditMethods(),
  ]);
  if (!current()) return undefined;
  const values = method === undefined ? [] : (g.credit[method] ?? []).flat();
  const m = Math.max(0, ...values.map(Math.abs));
  const limit = m > 0 ? niceTicks(-m, m, 4).domain[1] : 1;
  const longest = Math.max(0, ...g.trajectories.map((t) => t.turns.length));
  const axis = `<div class="lane axis"><div class="label muted">turn</div>${Array.from(
    { length: longest },
    (_, t) => `<span class="step${t === g.divergedAt ? ' split' : ''}">${t}</span>`,
  ).join('')}</div>`;
  const names = [...registry.methods.map((x) => x.name), ...(g.view?.oracle ? ['exact'] : [])];
  const successes = g.trajectories.filter((t) => t.outcome.success).length;
  app.innerHTML = `<h1>Task ${seed} of ${link(route(['run', id]), id)}</h1>
<p class="meta"><span>${esc(g.task.env)} ${esc(JSON.stringify(g.task.params))}</span><span>${g.trajectories.length} samples${
    g.samples > g.trajectories.length ? ` shown of ${g.samples}` : ''
  }</span><span>${successes} succeeded</span><span id="diverged">${
    g.divergedAt === null ? 'the samples are identical' : `the samples part at turn ${g.divergedAt}`
  }</span></p>
<div class="controls"><label>colour by the advantage of<select id="method">${names
    .map((n) => `<option${n === method ? ' selected' : ''}>${esc(n)}</option>`)
    .join('')}</select></label>
<div class="swatches"><span><span class="sw" style="background:${diverging(-limit, limit)}"></span>${fmt(-limit, 2)}</span><span><span class="sw" style="background:${diverging(0, limit)}"></span>0</span><span><span class="sw" style="background:${diverging(limit, limit)}"></span>+${fmt(limit, 2)}</span>
<span>▏ where the samples part · ◆ where a sample leaves sample 0 · dashed: forced (injected) · ✗ refused by the env</span></div></div>
<div class="lanes" id="lanes">${axis}${g.trajectories.map((_, i) => lane(g, i, method, limit, id)).join('')}</div>`;
  app.querySelector('#method')!.addEventListener('change', (e) => {
    location.hash = route(['run', id, 'group', seed], { credit: (e.target as HTMLSelectElement).value });
  });
  return undefined;
};
