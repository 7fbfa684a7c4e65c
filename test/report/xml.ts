// A minimal, strict XML tokenizer for the report tests: it builds a tree and throws on anything a
// real XML parser would refuse (unbalanced or mismatched tags, unquoted or duplicate attributes, a
// raw '<' or a bad entity). In html mode it also accepts the doctype, HTML void elements and the
// raw text of <style>.

export interface XNode {
  name: string;
  attrs: Record<string, string>;
  children: (XNode | string)[];
}

const VOID = new Set([
  'meta',
  'link',
  'br',
  'hr',
  'img',
  'input',
  'source',
  'wbr',
  'col',
  'area',
  'base',
  'embed',
  'track',
]);
const ENTITY = /&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/y;
const NAME = /[A-Za-z_:][-\w:.]*/y;

function decode(s: string, where: number): string {
  for (let i = s.indexOf('&'); i !== -1; i = s.indexOf('&', i + 1)) {
    ENTITY.lastIndex = i;
    if (!ENTITY.test(s)) throw new Error(`bad entity near ${where + i}: ${s.slice(i, i + 12)}`);
  }
  return s
    .replace(/&#x([0-9a-fA-F]+);/g, (_, h) => String.fromCodePoint(Number.parseInt(h, 16)))
    .replace(/&#([0-9]+);/g, (_, d) => String.fromCodePoint(Number(d)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

export function parseXml(src: string, options: { html?: boolean } = {}): XNode {
  const root: XNode = { name: '#document', attrs: {}, children: [] };
  const stack: XNode[] = [root];
  let i = 0;
  const fail = (msg: string): never => {
    throw new Error(`${msg} at ${i}: …${src.slice(Math.max(0, i - 40), i + 40)}…`);
  };
  while (i < src.length) {
    const lt = src.indexOf('<', i);
    const textEnd = lt === -1 ? src.length : lt;
    if (textEnd > i) {
      const t = src.slice(i, textEnd);
      if (stack.length === 1 && t.trim() !== '') fail('text outside the root element');
      stack[stack.length - 1].children.push(decode(t, i));
      i = textEnd;
      continue;
    }
    if (src.startsWith('<!--', i)) {
      const end = src.indexOf('-->', i);
      if (end === -1) fail('unclosed comment');
      i = end + 3;
      continue;
    }
    if (src.startsWith('<!', i)) {
      if (!options.html || !/^<!doctype html>/i.test(src.slice(i, i + 15))) fail('unexpected declaration');
      i = src.indexOf('>', i) + 1;
      continue;
    }
    if (src.startsWith('</', i)) {
      NAME.lastIndex = i + 2;
      const m = NAME.exec(src);
      if (!m) return fail('bad closing tag');
      const close = src.indexOf('>', i);
      if (src.slice(NAME.lastIndex, close).trim() !== '') fail('junk in closing tag');
      const open = stack.pop();
      if (!open || open === root || open.name !== m[0]) fail(`</${m[0]}> closes <${open?.name}>`);
      i = close + 1;
      continue;
    }
    NAME.lastIndex = i + 1;
    const m = NAME.exec(src);
    if (!m) return fail('bad tag');
    const node: XNode = { name: m[0], attrs: {}, children: [] };
    i = NAME.lastIndex;
    for (;;) {
      const ws = /\s*/y;
      ws.lastIndex = i;
      ws.exec(src);
      const hadSpace = ws.lastIndex > i;
      i = ws.lastIndex;
      if (src.startsWith('/>', i) || src[i] === '>') break;
      if (!hadSpace) fail('attributes must be separated by space');
      const a = /([A-Za-z_:][-\w:.]*)="([^"<]*)"/y;
      a.lastIndex = i;
      const am = a.exec(src);
      if (!am) fail('bad attribute');
      const [, key, value] = am!;
      if (key in node.attrs) fail(`duplicate attribute ${key}`);
      node.attrs[key] = decode(value, i);
      i = a.lastIndex;
    }
    const selfClosing = src.startsWith('/>', i);
    i += selfClosing ? 2 : 1;
    if (stack.length === 1 && root.children.some((c) => typeof c !== 'string')) fail('second root element');
    stack[stack.length - 1].children.push(node);
    if (selfClosing || (options.html && VOID.has(node.name))) continue;
    if (options.html && (node.name === 'style' || node.name === 'script')) {
      const end = src.indexOf(`</${node.name}>`, i);
      if (end === -1) fail(`unclosed <${node.name}>`);
      node.children.push(src.slice(i, end));
      i = end + node.name.length + 3;
      continue;
    }
    stack.push(node);
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack[stack.length - 1].name}>`);
  return root;
}

export function* walk(node: XNode): Generator<XNode> {
  yield node;
  for (const c of node.children) if (typeof c !== 'string') yield* walk(c);
}

export function findAll(node: XNode, pred: (n: XNode) => boolean): XNode[] {
  return [...walk(node)].filter(pred);
}

export function hasClass(n: XNode, cls: string): boolean {
  return (n.attrs.class ?? '').split(/\s+/).includes(cls);
}

export function textOf(node: XNode): string {
  return node.children.map((c) => (typeof c === 'string' ? c : c.name === 'title' ? '' : textOf(c))).join('');
}

/** The single root element of a document. */
export function rootOf(doc: XNode): XNode {
  const els = doc.children.filter((c): c is XNode => typeof c !== 'string');
  if (els.length !== 1) throw new Error(`expected one root element, got ${els.length}`);
  return els[0];
}
