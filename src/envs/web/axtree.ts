// The observation's page text: an accessibility tree flattened as BrowserGym flattens chromium's
// (browsergym/utils/obs.py `flatten_axtree_to_str`, the text WebArena-style agents read):
//
//   RootWebArea 'Shop'
//   	[9] navigation ''
//   	[10] link 'Cart (0)'
//   	[14] textbox 'Search' value='shirt'
//   	[16] combobox 'Color' value='Red', hasPopup='menu', expanded=False
//
// one node a line, a tab per depth, `[bid] role 'name'` with the name and values in Python's repr, then
// ` value=…` and the properties joined by ", " (required, focused and atomic as bare words when true).
// Its rules, kept: nodes without a name and LineBreak are skipped (their children move up a level), a
// generic node without properties is skipped, a StaticText whose name is part of its parent's name is
// skipped, and the properties editable, readonly, level, settable, multiline, invalid, focusable are
// left out. Three more are left out here, each because it would make the text depend on the machine or
// the browser's mood rather than on the page: `url` (it carries the server's port; a fork of BrowserGym
// drops it for duplicating the link), `focused` (where focus sits after an action is chromium's
// business, not the app's state) and InlineTextBox nodes (they repeat their StaticText; chromium only
// reports them in some versions).
//
// Two sources build the same tree: `axFromDoc` computes it in process from the page's elements and the
// controls' current values, for the vocabulary of dom.ts, with chromium's own roles, names, values and
// property order; `axFromCdp` reads chromium's `Accessibility.getFullAXTree` with each node's bid from
// the DOM. test/envs/web/browser.test.ts holds the two equal on every page the apps render.
import {
  bidOf,
  controlKind,
  type Doc,
  type Fields,
  optionsOf,
  optionValue,
  type VElement,
  type VNode,
} from './dom.ts';

export type AxValue = string | number | boolean;

export interface AxNode {
  role: string;
  /** Absent: the node has no name (ignored by chromium) and is skipped with its children moved up. */
  name?: string;
  value?: AxValue;
  properties: [string, AxValue | undefined][];
  bid?: string;
  children: AxNode[];
}

const IGNORED_ROLES = new Set(['LineBreak', 'InlineTextBox']);
const IGNORED_PROPERTIES = new Set([
  'editable',
  'readonly',
  'level',
  'settable',
  'multiline',
  'invalid',
  'focusable',
  'url',
  'focused',
]);

/** Python's repr of a str, bool or number (BrowserGym prints names and values with repr). */
export function pyRepr(v: AxValue): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  const quote = v.includes("'") && !v.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of v) {
    const c = ch.codePointAt(0) as number;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c === 0xad)
      out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + quote;
}

/** BrowserGym's flatten_axtree_to_str over a tree (defaults; the properties above left out). */
export function flattenAx(root: AxNode): string {
  const lines: string[] = [];
  const dfs = (node: AxNode, depth: number, parentName: string) => {
    let skip = false;
    let name = '';
    if (IGNORED_ROLES.has(node.role)) {
      if (node.role === 'InlineTextBox') return;
      skip = true;
    } else if (node.name === undefined) skip = true;
    else {
      name = node.name;
      const attributes: string[] = [];
      for (const [prop, value] of node.properties) {
        if (value === undefined || IGNORED_PROPERTIES.has(prop)) continue;
        if (prop === 'required' || prop === 'focused' || prop === 'atomic') {
          if (value) attributes.push(prop);
        } else attributes.push(`${prop}=${pyRepr(value)}`);
      }
      if (node.role === 'generic' && attributes.length === 0) skip = true;
      if (node.role === 'StaticText' && parentName.includes(name)) skip = true;
      if (!skip) {
        let s = node.role === 'generic' && name === '' ? 'generic' : `${node.role} ${pyRepr(name.trim())}`;
        if (node.bid !== undefined) s = `[${node.bid}] ${s}`;
        if (node.value !== undefined) s += ` value=${pyRepr(node.value)}`;
        if (attributes.length > 0) s += `, ${attributes.join(', ')}`;
        lines.push('\t'.repeat(depth) + s);
      }
    }
    for (const c of node.children) dfs(c, skip ? depth : depth + 1, name);
  };
  dfs(root, 0, '');
  return lines.join('\n');
}

/** Chromium collapses runs of white space in text to one space. */
const collapse = (s: string) => s.replace(/[ \t\n\r\f]+/g, ' ');

/** The text a name from content takes: chromium does not descend into a form. */
const contentText = (n: VNode): string =>
  typeof n === 'string' ? n : n.tag === 'form' ? '' : n.children.map(contentText).join('');

/** An accessible name from content (the text of the subtree, white space collapsed and trimmed). */
const nameFromContent = (el: VElement) => collapse(contentText(el)).trim();

const node = (
  role: string,
  name: string | undefined,
  el: VElement | undefined,
  children: AxNode[] = [],
): AxNode => ({
  role,
  name,
  properties: [],
  bid: el === undefined ? undefined : bidOf(el),
  children,
});

/** The in-process accessibility tree of a document whose controls hold `fields`. */
export function axFromDoc(doc: Doc, fields: Fields): AxNode {
  const kids = (el: VElement): AxNode[] => el.children.flatMap((c) => toAx(c));
  const toAx = (n: VNode): AxNode[] => {
    if (typeof n === 'string') {
      const text = collapse(n);
      return text === '' ? [] : [node('StaticText', text, undefined)];
    }
    const el = n;
    const role = typeof el.attrs.role === 'string' ? el.attrs.role : undefined;
    const label = typeof el.attrs['aria-label'] === 'string' ? el.attrs['aria-label'] : undefined;
    switch (role) {
      case 'radiogroup':
        return [node('radiogroup', label ?? '', el, kids(el))];
      case 'alert':
      case 'status': {
        const x = node(role, '', el, kids(el));
        x.properties = [
          ['live', role === 'alert' ? 'assertive' : 'polite'],
          ['atomic', true],
          ['relevant', 'additions text'],
        ];
        return [x];
      }
    }
    switch (el.tag) {
      case 'head':
        return [];
      case 'html':
      case 'body':
      case 'div':
      case 'span':
      case 'tbody':
        // Ignored or generic without properties: skipped, children one level up.
        return kids(el);
      case 'nav':
        return [node('navigation', '', el, kids(el))];
      case 'main':
        return [node('main', '', el, kids(el))];
      case 'form':
        return [node('form', '', el, kids(el))];
      case 'p':
        return [node('paragraph', '', el, kids(el))];
      case 'h1':
      case 'h2':
      case 'h3':
        return [node('heading', nameFromContent(el), el, kids(el))];
      case 'a':
        return [node('link', nameFromContent(el), el, kids(el))];
      case 'button':
        return [node('button', nameFromContent(el), el, kids(el))];
      case 'table':
        return [node('table', '', el, kids(el))];
      case 'thead':
        return [node('rowgroup', '', el, kids(el))];
      case 'tr':
        return [node('row', '', el, kids(el))];
      case 'th':
        return [node('columnheader', nameFromContent(el), el, kids(el))];
      case 'td':
        return [node('cell', nameFromContent(el), el, kids(el))];
      case 'select': {
        const chosen = String(fields[bidOf(el)] ?? '');
        const options = optionsOf(el).map((o) => {
          const x = node('option', nameFromContent(o), o);
          x.properties = [['selected', optionValue(o) === chosen]];
          return x;
        });
        const selected = optionsOf(el).find((o) => optionValue(o) === chosen);
        const x = node('combobox', label ?? '', el, [node('MenuListPopup', '', undefined, options)]);
        if (selected !== undefined) x.value = nameFromContent(selected);
        x.properties = [
          ['hasPopup', 'menu'],
          ['expanded', false],
        ];
        return [x];
      }
      case 'input': {
        const kind = controlKind(el);
        if (kind === 'hidden') return [];
        if (kind === 'checkbox' || kind === 'radio') {
          const x = node(kind, label ?? '', el);
          x.properties = [['checked', fields[bidOf(el)] === true ? 'true' : 'false']];
          return [x];
        }
        const v = String(fields[bidOf(el)] ?? '');
        // Chromium shows a non-empty value twice: as the box's value and as the text of its editor.
        const x = node('textbox', label ?? '', el, v === '' ? [] : [node('StaticText', v, undefined)]);
        if (v !== '') x.value = v;
        x.properties = [['required', el.attrs.required === true]];
        return [x];
      }
      default:
        throw new Error(`web: no accessibility mapping for <${el.tag}>`);
    }
  };
  return node('RootWebArea', doc.title, undefined, kids(doc.root));
}

/** CDP's `Accessibility.AXValue` (its type, and the value itself when it has one). */
interface CdpAxValue {
  type?: string;
  value?: unknown;
}

/** The parts of a CDP `Accessibility.AXNode` read here. */
export interface CdpAxNode {
  nodeId: string;
  ignored?: boolean;
  role?: CdpAxValue;
  name?: CdpAxValue;
  value?: CdpAxValue;
  properties?: { name: string; value?: CdpAxValue }[];
  childIds?: string[];
  backendDOMNodeId?: number;
}

const axValue = (v: unknown): AxValue | undefined =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined;

/** Chromium's tree (`Accessibility.getFullAXTree`, root first) with each node's bid looked up by its
 * backend DOM node id. */
export function axFromCdp(nodes: readonly CdpAxNode[], bidOfBackend: ReadonlyMap<number, string>): AxNode {
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  const build = (n: CdpAxNode): AxNode => {
    const role = String(n.role?.value ?? 'none');
    const name = n.name === undefined ? undefined : String(n.name.value ?? '');
    const out: AxNode = {
      role,
      name,
      properties: (n.properties ?? []).map((p) => [p.name, axValue(p.value?.value)]),
      bid: n.backendDOMNodeId === undefined ? undefined : bidOfBackend.get(n.backendDOMNodeId),
      children: [],
    };
    if (n.value !== undefined && n.value.value !== undefined) out.value = axValue(n.value.value);
    for (const c of n.childIds ?? []) {
      const child = byId.get(c);
      if (child !== undefined && c !== n.nodeId) out.children.push(build(child));
    }
    return out;
  };
  if (nodes.length === 0) throw new Error('web: the browser returned an empty accessibility tree');
  return build(nodes[0]);
}

/** The bids an observation's page text shows (the ids an action may name). */
export function bidsShown(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^\t*\[(\d+)\] /gm)) out.add(m[1]);
  return out;
}
