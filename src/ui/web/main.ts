/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The dashboard in the browser: routes on the URL's hash (so every view is a link, and back and
// forward work), draws the page of the route into <main id="app">, and hands keys to it. A page
// returns what to undo when the route changes (a live stream to close) and the keys it answers.
// `/` focuses the page's search box wherever there is one.
import { ApiError } from './api.ts';
import { byId, esc } from './dom.ts';
import { comparePage } from './pages/compare.ts';
import { groupPage } from './pages/group.ts';
import { runPage } from './pages/run.ts';
import { runsPage } from './pages/runs.ts';
import { trajectoriesPage } from './pages/trajectories.ts';
import { trajectoryPage } from './pages/trajectory.ts';
import type { Page, Route } from './route.ts';
import { setStatus } from './status.ts';

function parse(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = (q < 0 ? raw : raw.slice(0, q))
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  return { path, query };
}

function pageOf(r: Route): Page | undefined {
  const [head, id, what, arg] = r.path;
  if (head === undefined) return runsPage;
  if (head === 'compare') return comparePage;
  if (head !== 'run' || id === undefined) return undefined;
  if (what === undefined) return runPage;
  if (what === 'trajectories') return trajectoriesPage;
  if (what === 't' && arg !== undefined) return trajectoryPage;
  if (what === 'group' && arg !== undefined) return groupPage;
  return undefined;
}

let undo: (() => void) | undefined;
let keys: Record<string, () => void> = {};
let generation = 0;

async function show(): Promise<void> {
  const mine = ++generation;
  undo?.();
  undo = undefined;
  keys = {};
  const app = byId('app')!;
  const r = parse(location.hash);
  const page = pageOf(r);
  if (page === undefined) {
    app.innerHTML = `<h1>No such page</h1><p><a href="#/">All runs</a></p>`;
    return;
  }
  setStatus('loading…');
  try {
    const shown = await page(app, r, () => mine === generation);
    if (mine !== generation) {
      shown?.undo?.();
      return;
    }
    undo = shown?.undo;
    keys = shown?.keys ?? {};
    setStatus('');
    document.body.dataset.page = r.path[0] === 'run' ? (r.path[2] ?? 'run') : (r.path[0] ?? 'runs');
    document.body.dataset.ready = String(mine);
  } catch (e) {
    if (mine !== generation) return;
    const message = e instanceof ApiError ? e.message : String(e);
    app.innerHTML = `<h1>Cannot show this page</h1><p class="error-box">${esc(message)}</p><p><a href="#/">All runs</a></p>`;
    setStatus('error', true);
    document.body.dataset.ready = String(mine);
  }
}

function typing(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  return t !== null && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA');
}

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (typing(e)) {
    if (e.key === 'Escape') (e.target as HTMLElement).blur();
    return;
  }
  if (e.key === '/') {
    const search = document.querySelector<HTMLInputElement>('[data-search]');
    if (search !== null) {
      e.preventDefault();
      search.focus();
      search.select();
    }
    return;
  }
  const f = keys[e.key];
  if (f !== undefined) {
    e.preventDefault();
    f();
  }
});

window.addEventListener('hashchange', () => void show());
void show();
