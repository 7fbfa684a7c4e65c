// What every web app shares: requests and responses, routing (hono's TrieRouter: the one route table
// that both the in-process browser and the HTTP server of browser mode dispatch through), the widgets
// (text box, choice, yes/no flag — each in the kinds a variant may swap), the page shell, and the
// helpers the checks and scripted oracles read pages with.
//
// Why the apps answer synchronously rather than through a hono app's fetch: the scripted view
// (ScriptedView.goldAction) replays an episode's history to find the page it is on and must answer
// synchronously, and so must the in-process env (the rollout's sync fast path); hono's body parsing is
// asynchronous. So the routes are matched by hono's router and answered by plain functions; browser
// mode's hono server (browser.ts) reads the body and calls the same function.
import { TrieRouter } from 'hono/router/trie-router';
import type { Rng } from '../../core/rng.ts';
import type { ToolCall } from '../../core/types.ts';
import {
  bidOf,
  byKey,
  controlKind,
  type Doc,
  type Fields,
  h,
  optionsOf,
  optionValue,
  type Page,
  textOf,
  type VElement,
  type VNode,
} from './dom.ts';
import type { Skin } from './skin.ts';

export type AppId = 'shop' | 'booking' | 'admin';
export const APP_IDS: readonly AppId[] = ['shop', 'booking', 'admin'];

export interface WebRequest {
  method: 'GET' | 'POST';
  path: string;
  query: URLSearchParams;
  /** The urlencoded body of a POST (empty for GET). */
  form: URLSearchParams;
}

/** A page (with its HTTP status), or a 303 redirect (every POST answers with one: post/redirect/get). */
export type WebResponse = { status: number; page: Page } | { redirect: string };

export interface Route<S> {
  method: 'GET' | 'POST';
  path: string;
  handle(state: S, req: WebRequest, params: Record<string, string>): WebResponse;
}

/** A route table: hono's router, a handler per route, and the app's not-found page. */
export class Routes<S> {
  private readonly router = new TrieRouter<Route<S>>();
  private readonly notFound: (req: WebRequest) => Page;

  constructor(routes: readonly Route<S>[], notFound: (req: WebRequest) => Page) {
    for (const r of routes) this.router.add(r.method, r.path, r);
    this.notFound = notFound;
  }

  respond(state: S, method: 'GET' | 'POST', url: string, form = new URLSearchParams()): WebResponse {
    const u = new URL(url, 'http://app.invalid');
    const req: WebRequest = { method, path: u.pathname, query: u.searchParams, form };
    const [matches] = this.router.match(method, u.pathname);
    const hit = matches[0] as [Route<S>, Record<string, string>] | undefined;
    if (hit === undefined) return { status: 404, page: this.notFound(req) };
    return hit[0].handle(state, req, hit[1]);
  }
}

/** What a page shows the checks and the oracle: where it is, its document and its controls' values. */
export interface PageView {
  /** Path and query, e.g. `/search?q=shirt`. */
  url: string;
  path: string;
  query: URLSearchParams;
  doc: Doc;
  fields: Fields;
}

export interface Subgoal {
  name: string;
  done: boolean;
}

/** How far the app's state (with the current page's unsent form values) is from the goal. */
export interface Progress {
  subgoals: Subgoal[];
  /** Changes the goal does not ask for (a stray cart line, another user's edited field). */
  collateral: number;
}

/** An app bound to a task: its goal, routes, state and checks. State is plain JSON (snapshots). */
export interface WebApp {
  readonly id: AppId;
  readonly goal: string;
  initial(): unknown;
  respond(state: unknown, method: 'GET' | 'POST', url: string, form?: URLSearchParams): WebResponse;
  /** Sub-goals met by the state and the page (the answer text counts for a goal that asks for a report). */
  progress(state: unknown, view: PageView, answer?: string): Progress;
  /** What a POST destroyed that the goal needed — a wrong order or booking placed, a wrong record
   * deleted — or undefined. */
  irreversible(before: unknown, after: unknown): string | undefined;
  /** The scripted oracle's next action on this page. */
  oracle(state: unknown, view: PageView): ToolCall;
  /** Texts the random policy's menu types into text boxes. */
  readonly texts: readonly string[];
  /** Answers the menu offers in this state: "Done." and a report of each order or booking made (the
   * oracle's answer is one of them). */
  answers(state: unknown): string[];
  /** The task's data and goal as plain data (env describe). */
  describe(): Record<string, unknown>;
}

/** Text compared as a person would: trimmed, case and runs of spaces ignored. */
export const norm = (s: string | undefined): string => (s ?? '').trim().replace(/\s+/g, ' ').toLowerCase();

export const money = (cents: number): string => `$${(cents / 100).toFixed(2)}`;

export const cap = (s: string): string => s[0].toUpperCase() + s.slice(1);

/** A uniformly drawn element. */
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

/** A uniformly drawn permutation (Fisher–Yates). */
export function shuffled<T>(rng: Rng, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A path with a query, urlencoded as a browser encodes a form (empty values left out). */
export function href(path: string, query: Record<string, string | number | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s === '' ? path : `${path}?${s}`;
}

// ---- widgets ----------------------------------------------------------------------------------------

export interface Option {
  value: string;
  label: string;
}

/** A text box. */
export function textField(name: string, label: string, value = '', required = false): VElement {
  return h('input', {
    type: 'text',
    name,
    'aria-label': label,
    value: value === '' ? undefined : value,
    required,
  });
}

/** A choice among options as a select, radio buttons or a text box (where the value is typed). */
export function choiceField(
  kind: 'select' | 'radio' | 'text',
  name: string,
  label: string,
  options: readonly Option[],
  selected: string,
): VElement {
  if (kind === 'text') return textField(name, label, selected);
  if (kind === 'select')
    return h(
      'select',
      { name, 'aria-label': label },
      options.map((o) => h('option', { value: o.value, selected: o.value === selected }, o.label)),
    );
  return h(
    'div',
    { role: 'radiogroup', 'aria-label': label },
    options.map((o) =>
      h('input', {
        type: 'radio',
        name,
        value: o.value,
        'aria-label': o.label,
        checked: o.value === selected,
      }),
    ),
  );
}

/** A yes/no field as a checkbox (value "yes", absent when unchecked), a Yes/No select or Yes/No radios. */
export function flagField(
  kind: 'checkbox' | 'select' | 'radio',
  name: string,
  label: string,
  on: boolean,
): VElement {
  if (kind === 'checkbox')
    return h('input', { type: 'checkbox', name, value: 'yes', 'aria-label': label, checked: on });
  // A radio's own name says which question it answers ("Breakfast: Yes").
  const say = (answer: string) => (kind === 'radio' ? `${label}: ${answer}` : answer);
  const yesNo = [
    { value: 'yes', label: say('Yes') },
    { value: 'no', label: say('No') },
  ];
  return choiceField(kind, name, label, yesNo, on ? 'yes' : 'no');
}

export const button = (key: string, label: string, attrs: Record<string, string> = {}): VElement =>
  h('button', { type: 'submit', 'data-k': key, ...attrs }, label);

export const link = (key: string, url: string, label: string): VElement =>
  h('a', { href: url, 'data-k': key }, label);

/** A data table: column headers (chromium takes a table without them for layout) and rows of cells. */
export function table(headers: readonly string[], rows: readonly (readonly (VNode | string)[])[]): VElement {
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', {}, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          {},
          r.map((c) => h('td', {}, c)),
        ),
      ),
    ),
  );
}

/** A message line: an error as an alert, a confirmation as a status. */
export const message = (kind: 'alert' | 'status', text: string): VElement => h('div', { role: kind }, text);

/** The page: a nav of links and the main part, in the order the variant lays them out. */
export function shell(
  skin: Skin,
  app: AppId,
  title: string,
  kind: string,
  nav: readonly VNode[],
  main: readonly VNode[],
): Page {
  const parts = [h('nav', {}, ...nav), h('main', {}, ...skin.wrap(`${app}.main.${kind}`, ...main))];
  const [first, second] = skin.pick(`${app}.nav-last`, 2) === 0 ? parts : [parts[1], parts[0]];
  return { title, kind, body: [first, second] };
}

export function notFoundPage(skin: Skin, app: AppId, home: string, req: WebRequest): Page {
  return shell(
    skin,
    app,
    'Page not found',
    'not-found',
    [link('nav:home', '/', home)],
    [h('h1', {}, 'Page not found'), h('p', {}, `Nothing is at ${req.path}.`)],
  );
}

// ---- reading pages ----------------------------------------------------------------------------------

/** The controls of a page named `name` (a radio group's radios, or the one control). */
function controls(view: PageView, name: string): VElement[] {
  return view.doc.order.filter((el) => el.attrs.name === name && controlKind(el) !== 'none');
}

/** The value the page's control `name` would submit now ('' for an unchecked checkbox or an unchosen
 * radio group), or undefined when the page has no such control. */
export function formValue(view: PageView, name: string): string | undefined {
  const els = controls(view, name);
  if (els.length === 0) return undefined;
  for (const el of els) {
    const kind = controlKind(el);
    const v = view.fields[bidOf(el)];
    if (kind === 'checkbox' || kind === 'radio') {
      if (v === true) return typeof el.attrs.value === 'string' ? el.attrs.value : 'on';
      continue;
    }
    return String(v ?? '');
  }
  return '';
}

/** The page's values for `names`: the URL's query first, then the page's controls (which win). */
export function pageValues(view: PageView, names: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const n of names) {
    const q = view.query.get(n);
    const f = formValue(view, n);
    out[n] = f ?? (q === null ? undefined : q);
  }
  return out;
}

// ---- acting (the scripted oracle) -------------------------------------------------------------------

export const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({
  name,
  arguments: args,
});

/** A click on the element with data-k `key`, or undefined when the page has none. */
export function clickKey(view: PageView, key: string): ToolCall | undefined {
  const el = byKey(view.doc, key);
  return el === undefined ? undefined : call('click', { id: bidOf(el) });
}

/** The action that makes the page's control `name` hold `value` (type, select or click), or undefined
 * when it already does or the page has no such settable control. A checkbox is checked iff `value` is
 * its value. */
export function setField(view: PageView, name: string, value: string): ToolCall | undefined {
  const els = controls(view, name);
  for (const el of els) {
    const id = bidOf(el);
    const kind = controlKind(el);
    const v = view.fields[id];
    if (kind === 'text') return v === value ? undefined : call('type', { id, text: value });
    if (kind === 'select') {
      if (v === value) return undefined;
      const o = optionsOf(el).find((x) => optionValue(x) === value);
      return o === undefined ? undefined : call('select', { id, option: textOf(o) });
    }
    if (kind === 'checkbox')
      return (v === true) === (el.attrs.value === value) ? undefined : call('click', { id });
    if (kind === 'radio' && el.attrs.value === value) return v === true ? undefined : call('click', { id });
  }
  return undefined;
}

/** The first action of `fills` (name, value) the page still needs, or undefined when all hold. */
export function fillAll(view: PageView, fills: readonly (readonly [string, string])[]): ToolCall | undefined {
  for (const [name, value] of fills) {
    const a = setField(view, name, value);
    if (a !== undefined) return a;
  }
  return undefined;
}

/** The first of the actions that exists. */
export function first(...actions: (ToolCall | undefined)[]): ToolCall | undefined {
  return actions.find((a) => a !== undefined);
}
