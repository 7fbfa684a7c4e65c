// The web env's pages as a small virtual DOM: what the apps render (apps/*.ts), what the in-process
// browser acts on (browser-model.ts) and what the HTTP server serialises for chromium (server.ts).
//
// Element ids. BrowserGym marks every element of a page with a `bid` attribute, numbered in document
// order, before it reads the accessibility tree; the ids an agent sees (`[12] button 'Add to cart'`) are
// those. Here the server writes the same attribute into the HTML it serves: `finalize` numbers every
// element of the document (html = 1, head, meta, title, body, …) in document order, so the in-process
// tree and chromium's tree carry the same ids by construction.
//
// The vocabulary is small on purpose — the elements whose accessibility mapping the in-process tree
// reproduces exactly (axtree.ts): nav, main, form, h1–h3, p, div, span, a, button, input (text,
// checkbox, radio, hidden), select/option, table/thead/tbody/tr/th/td; `role` radiogroup, alert, status.

export interface VElement {
  tag: string;
  attrs: Record<string, string | true>;
  children: VNode[];
}
export type VNode = VElement | string;

type Child = VNode | readonly Child[] | null | undefined | false;

/** An element: attributes with `false`/undefined values are left out, `true` is a bare attribute. */
export function h(
  tag: string,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): VElement {
  const a: Record<string, string | true> = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    a[k] = v === true ? true : String(v);
  }
  const out: VNode[] = [];
  const push = (c: Child) => {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) for (const x of c as readonly Child[]) push(x);
    else out.push(c as VNode);
  };
  for (const c of children) push(c);
  return { tag, attrs: a, children: out };
}

/** What an app's route renders: the page title, a kind (the oracle's name for the page, written as
 * `data-page` on body) and the body's children. */
export interface Page {
  title: string;
  kind: string;
  body: VNode[];
}

/** A page made into a document: ids assigned, lookups built. */
export interface Doc {
  title: string;
  kind: string;
  root: VElement;
  /** Every element by its bid. */
  byBid: ReadonlyMap<string, VElement>;
  /** The bid of each element's nearest form ancestor. */
  formOf: ReadonlyMap<VElement, VElement>;
  /** Elements in document order. */
  order: readonly VElement[];
}

export const bidOf = (el: VElement): string => el.attrs.bid as string;

/** Builds the document of a page and numbers its elements in document order (BrowserGym's marking). */
export function finalize(page: Page): Doc {
  const root = h(
    'html',
    { lang: 'en' },
    h('head', {}, h('meta', { charset: 'utf-8' }), h('title', {}, page.title)),
    h('body', { 'data-page': page.kind }, ...page.body),
  );
  const byBid = new Map<string, VElement>();
  const formOf = new Map<VElement, VElement>();
  const order: VElement[] = [];
  let next = 1;
  const walk = (el: VElement, form: VElement | undefined) => {
    // A copy: the page's nodes may be shared between renders (constants), ids are per document.
    el.attrs = { ...el.attrs, bid: String(next++) };
    byBid.set(bidOf(el), el);
    order.push(el);
    if (form !== undefined) formOf.set(el, form);
    const inner = el.tag === 'form' ? el : form;
    el.children = el.children.map((c) => (typeof c === 'string' ? c : { ...c }));
    for (const c of el.children) if (typeof c !== 'string') walk(c, inner);
  };
  walk(root, undefined);
  return { title: page.title, kind: page.kind, root, byBid, formOf, order };
}

const VOID = new Set(['meta', 'input', 'br']);

const escapeText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttr = (s: string) => escapeText(s).replace(/"/g, '&quot;');

/** The document as HTML (what the server sends chromium). */
export function toHtml(doc: Doc): string {
  const out: string[] = ['<!DOCTYPE html>'];
  const walk = (n: VNode) => {
    if (typeof n === 'string') {
      out.push(escapeText(n));
      return;
    }
    out.push(`<${n.tag}`);
    for (const [k, v] of Object.entries(n.attrs)) out.push(v === true ? ` ${k}` : ` ${k}="${escapeAttr(v)}"`);
    out.push('>');
    if (VOID.has(n.tag)) return;
    for (const c of n.children) walk(c);
    out.push(`</${n.tag}>`);
  };
  walk(doc.root);
  return out.join('');
}

/** The concatenated text of a subtree. */
export function textOf(n: VNode): string {
  return typeof n === 'string' ? n : n.children.map(textOf).join('');
}

/** What a click, type or select does to an element. */
export type ControlKind = 'link' | 'submit' | 'text' | 'checkbox' | 'radio' | 'select' | 'hidden' | 'none';

export function controlKind(el: VElement): ControlKind {
  if (el.tag === 'a' && typeof el.attrs.href === 'string') return 'link';
  if (el.tag === 'button') return el.attrs.type === 'button' ? 'none' : 'submit';
  if (el.tag === 'select') return 'select';
  if (el.tag === 'input') {
    const t = el.attrs.type ?? 'text';
    if (t === 'checkbox' || t === 'radio' || t === 'hidden') return t;
    if (t === 'submit') return 'submit';
    return 'text';
  }
  return 'none';
}

/** The options of a select, in order. */
export function optionsOf(select: VElement): VElement[] {
  return select.children.filter((c): c is VElement => typeof c !== 'string' && c.tag === 'option');
}

/** The value of an option (its text when it has no value attribute, as HTML defines). */
export const optionValue = (o: VElement): string =>
  typeof o.attrs.value === 'string' ? o.attrs.value : textOf(o);

/**
 * The client-side state of a page's controls, by bid: a text box's value, a checkbox's or radio's
 * checkedness, a select's selected option value. The server writes the initial values (value, checked,
 * selected attributes); typing, clicking and selecting change them until the page is left.
 */
export type Fields = Record<string, string | boolean>;

export function initialFields(doc: Doc): Fields {
  const f: Fields = {};
  for (const el of doc.order) {
    const kind = controlKind(el);
    if (kind === 'text' || kind === 'hidden')
      f[bidOf(el)] = typeof el.attrs.value === 'string' ? el.attrs.value : '';
    else if (kind === 'checkbox' || kind === 'radio') f[bidOf(el)] = el.attrs.checked === true;
    else if (kind === 'select') {
      const opts = optionsOf(el);
      const chosen = opts.find((o) => o.attrs.selected === true) ?? opts[0];
      f[bidOf(el)] = chosen === undefined ? '' : optionValue(chosen);
    }
  }
  return f;
}

/** The form-data entries a form submits (HTML's "constructing the entry list"): its named controls in
 * tree order — text and hidden inputs, checked checkboxes and radios (value or "on"), selects' selected
 * values — with the submitter button's name and value at its own place. */
export function formEntries(
  doc: Doc,
  form: VElement,
  fields: Fields,
  submitter?: VElement,
): [string, string][] {
  const out: [string, string][] = [];
  for (const el of doc.order) {
    if (doc.formOf.get(el) !== form) continue;
    const name = el.attrs.name;
    if (typeof name !== 'string' || name === '') continue;
    const kind = controlKind(el);
    const v = fields[bidOf(el)];
    if (kind === 'text' || kind === 'hidden' || kind === 'select') out.push([name, String(v ?? '')]);
    else if ((kind === 'checkbox' || kind === 'radio') && v === true)
      out.push([name, typeof el.attrs.value === 'string' ? el.attrs.value : 'on']);
    else if (kind === 'submit' && el === submitter)
      out.push([name, typeof el.attrs.value === 'string' ? el.attrs.value : '']);
  }
  return out;
}

/** A form's default button (HTML's implicit submission): its first submit button in tree order. */
export function defaultButton(doc: Doc, form: VElement): VElement | undefined {
  return doc.order.find((el) => doc.formOf.get(el) === form && controlKind(el) === 'submit');
}

/** The first element whose `data-k` (the oracle's key of an element) is `key`. */
export function byKey(doc: Doc, key: string): VElement | undefined {
  return doc.order.find((el) => el.attrs['data-k'] === key);
}
