// The web env's page model against the specs it follows: BrowserGym's flatten_axtree_to_str rules on a
// tree in chromium's CDP shape (the node kinds chromium really reports: an ignored html node, generic
// containers, StaticText under links, InlineTextBox, a select's MenuListPopup), Python's repr for names
// and values, HTML's element numbering in document order, and HTML's form submission (the entry list,
// application/x-www-form-urlencoded as the URL standard serialises it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  axFromCdp,
  axFromDoc,
  bidsShown,
  type CdpAxNode,
  defaultButton,
  finalize,
  flattenAx,
  formEntries,
  h,
  initialFields,
  pyRepr,
  toHtml,
} from '../../../src/envs/web/index.ts';

test("pyRepr is Python's repr of str and bool", () => {
  // Each right-hand side is what CPython 3 prints for repr(x).
  assert.equal(pyRepr('Add to cart'), "'Add to cart'");
  assert.equal(pyRepr('Shop — search'), "'Shop — search'");
  assert.equal(pyRepr("it's"), '"it\'s"');
  assert.equal(pyRepr('say "hi"'), '\'say "hi"\'');
  assert.equal(pyRepr('both \' and "'), "'both \\' and \"'");
  assert.equal(pyRepr('a\nb\tc'), "'a\\nb\\tc'");
  assert.equal(pyRepr('back\\slash'), "'back\\\\slash'");
  assert.equal(pyRepr('\x07'), "'\\x07'");
  assert.equal(pyRepr('\xa0'), "'\\xa0'");
  assert.equal(pyRepr('café'), "'café'");
  assert.equal(pyRepr(''), "''");
  assert.equal(pyRepr(true), 'True');
  assert.equal(pyRepr(false), 'False');
});

/** CDP nodes as chromium 150 reports them for a small page (shapes copied from a real dump). */
function cdpPage(): { nodes: CdpAxNode[]; bids: Map<number, string> } {
  const p = (name: string, value: unknown) => ({ name, value: { type: 'x', value } });
  const nodes: CdpAxNode[] = [
    {
      nodeId: '1',
      role: { value: 'RootWebArea' },
      name: { value: 'Shop' },
      properties: [p('focusable', true), p('focused', true), p('url', 'http://127.0.0.1:4000/')],
      childIds: ['2'],
    },
    { nodeId: '2', ignored: true, role: { value: 'none' }, childIds: ['3'], backendDOMNodeId: 101 },
    {
      nodeId: '3',
      role: { value: 'generic' },
      name: { value: '' },
      childIds: ['4', '6', '8', '13', '16', '17'],
      backendDOMNodeId: 105,
    },
    {
      nodeId: '4',
      role: { value: 'link' },
      name: { value: 'Cart (0)' },
      properties: [p('focusable', true), p('url', 'http://127.0.0.1:4000/cart')],
      childIds: ['5'],
      backendDOMNodeId: 107,
    },
    { nodeId: '5', role: { value: 'StaticText' }, name: { value: 'Cart (0)' }, childIds: ['5b'] },
    { nodeId: '5b', role: { value: 'InlineTextBox' }, name: { value: 'Cart (0)' }, childIds: [] },
    {
      nodeId: '6',
      role: { value: 'heading' },
      name: { value: 'Search' },
      properties: [p('level', 1)],
      childIds: ['7'],
      backendDOMNodeId: 108,
    },
    { nodeId: '7', role: { value: 'StaticText' }, name: { value: 'Search' }, childIds: [] },
    {
      nodeId: '8',
      role: { value: 'textbox' },
      name: { value: 'City' },
      value: { value: 'Busan' },
      properties: [
        p('invalid', 'false'),
        p('focusable', true),
        p('editable', 'plaintext'),
        p('settable', true),
        p('multiline', false),
        p('readonly', false),
        p('required', true),
        { name: 'labelledby', value: { type: 'nodeList' } },
      ],
      childIds: ['9'],
      backendDOMNodeId: 110,
    },
    {
      nodeId: '9',
      role: { value: 'generic' },
      name: { value: '' },
      properties: [p('editable', 'plaintext')],
      childIds: ['10'],
    },
    { nodeId: '10', role: { value: 'StaticText' }, name: { value: 'Busan' }, childIds: [] },
    {
      nodeId: '13',
      role: { value: 'combobox' },
      name: { value: 'Shipping' },
      value: { value: 'Express' },
      properties: [p('invalid', 'false'), p('focusable', true), p('hasPopup', 'menu'), p('expanded', false)],
      childIds: ['14'],
      backendDOMNodeId: 112,
    },
    { nodeId: '14', role: { value: 'MenuListPopup' }, name: { value: '' }, childIds: ['15', '15b'] },
    {
      nodeId: '15',
      role: { value: 'option' },
      name: { value: 'Standard' },
      properties: [p('focusable', true), p('selected', false)],
      childIds: [],
      backendDOMNodeId: 113,
    },
    {
      nodeId: '15b',
      role: { value: 'option' },
      name: { value: 'Express' },
      properties: [p('focusable', true), p('selected', true)],
      childIds: [],
      backendDOMNodeId: 114,
    },
    { nodeId: '16', role: { value: 'LineBreak' }, name: { value: '\n' }, childIds: [] },
    {
      nodeId: '17',
      role: { value: 'checkbox' },
      name: { value: "It's a gift" },
      properties: [p('invalid', 'false'), p('focusable', true), p('checked', 'true')],
      childIds: [],
      backendDOMNodeId: 115,
    },
  ];
  const bids = new Map([
    [101, '1'],
    [105, '5'],
    [107, '7'],
    [108, '8'],
    [110, '10'],
    [112, '12'],
    [113, '13'],
    [114, '14'],
    [115, '15'],
  ]);
  return { nodes, bids };
}

test('flattenAx: BrowserGym’s rules on a chromium tree (url, focused and InlineTextBox left out)', () => {
  const { nodes, bids } = cdpPage();
  const text = flattenAx(axFromCdp(nodes, bids));
  assert.equal(
    text,
    [
      "RootWebArea 'Shop'",
      // The ignored html node and the generic body are skipped; their children stay one level down.
      "\t[7] link 'Cart (0)'",
      // The link's StaticText repeats its name: skipped. The heading's level is an ignored property.
      "\t[8] heading 'Search'",
      "\t[10] textbox 'City' value='Busan', required",
      // The editor's generic has only an ignored property: skipped; its text is not part of the name.
      "\t\tStaticText 'Busan'",
      "\t[12] combobox 'Shipping' value='Express', hasPopup='menu', expanded=False",
      "\t\tMenuListPopup ''",
      "\t\t\t[13] option 'Standard', selected=False",
      "\t\t\t[14] option 'Express', selected=True",
      // LineBreak is skipped.
      "\t[15] checkbox \"It's a gift\", checked='true'",
    ].join('\n'),
  );
  assert.deepEqual([...bidsShown(text)], ['7', '8', '10', '12', '13', '14', '15']);
});

test('finalize numbers every element in document order; toHtml escapes text and attributes', () => {
  const doc = finalize({
    title: 'A & B',
    kind: 'x',
    body: [h('main', {}, h('h1', {}, '<Hi>'), h('a', { href: '/s?q=a&b="c"' }, 'go'))],
  });
  assert.deepEqual(
    doc.order.map((e) => `${e.attrs.bid}:${e.tag}`),
    ['1:html', '2:head', '3:meta', '4:title', '5:body', '6:main', '7:h1', '8:a'],
  );
  assert.equal(
    toHtml(doc),
    '<!DOCTYPE html><html lang="en" bid="1"><head bid="2"><meta charset="utf-8" bid="3"><title bid="4">A &amp; B</title></head>' +
      '<body data-page="x" bid="5"><main bid="6"><h1 bid="7">&lt;Hi&gt;</h1><a href="/s?q=a&amp;b=&quot;c&quot;" bid="8">go</a></main></body></html>',
  );
});

test("formEntries: HTML's entry list — unchecked boxes absent, 'on' by default, the submitter alone among buttons", () => {
  const doc = finalize({
    title: 't',
    kind: 'x',
    body: [
      h(
        'form',
        { method: 'post', action: '/go' },
        h('input', { type: 'text', name: 'q', value: 'red shirt & tie' }),
        h('input', { type: 'hidden', name: 'id', value: 'P1' }),
        h('input', { type: 'checkbox', name: 'gift' }),
        h('input', { type: 'checkbox', name: 'wrap', checked: true }),
        h('input', { type: 'radio', name: 'ship', value: 'std' }),
        h('input', { type: 'radio', name: 'ship', value: 'exp', checked: true }),
        h(
          'select',
          { name: 'color' },
          h('option', { value: 'r' }, 'Red'),
          h('option', { selected: true }, 'Blue'),
        ),
        h('input', { type: 'text', 'aria-label': 'unnamed' }),
        h('button', { type: 'submit', name: 'act', value: 'save' }, 'Save'),
        h('button', { type: 'submit', name: 'act', value: 'delete' }, 'Delete'),
      ),
    ],
  });
  const form = doc.order.find((e) => e.tag === 'form')!;
  const fields = initialFields(doc);
  const buttons = doc.order.filter((e) => e.tag === 'button');
  assert.equal(defaultButton(doc, form), buttons[0]);
  const entries = formEntries(doc, form, fields, buttons[1]);
  assert.deepEqual(entries, [
    ['q', 'red shirt & tie'],
    ['id', 'P1'],
    ['wrap', 'on'],
    ['ship', 'exp'],
    ['color', 'Blue'],
    ['act', 'delete'],
  ]);
  // application/x-www-form-urlencoded as the URL standard serialises it: space as +, the rest %-encoded.
  assert.equal(
    new URLSearchParams(entries).toString(),
    'q=red+shirt+%26+tie&id=P1&wrap=on&ship=exp&color=Blue&act=delete',
  );
});

test('axFromDoc: a page in process, in the same text (values, checked, selected follow the fields)', () => {
  const doc = finalize({
    title: 'Checkout',
    kind: 'x',
    body: [
      h('nav', {}, h('a', { href: '/' }, 'Home')),
      h(
        'main',
        {},
        h('div', { role: 'alert' }, 'City is required'),
        h(
          'form',
          { method: 'post', action: '/c' },
          h('div', {}, h('input', { type: 'text', name: 'city', 'aria-label': 'City' })),
          h(
            'div',
            { role: 'radiogroup', 'aria-label': 'Shipping' },
            h('input', { type: 'radio', name: 's', value: 'a', 'aria-label': 'Standard', checked: true }),
            h('input', { type: 'radio', name: 's', value: 'b', 'aria-label': 'Express' }),
          ),
          h('button', { type: 'submit' }, 'Continue'),
        ),
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Item'))),
          h('tbody', {}, h('tr', {}, h('td', {}, 'Mug'))),
        ),
      ),
    ],
  });
  const fields = initialFields(doc);
  fields['12'] = 'Busan';
  fields['14'] = false;
  fields['15'] = true;
  assert.equal(
    flattenAx(axFromDoc(doc, fields)),
    [
      "RootWebArea 'Checkout'",
      "\t[6] navigation ''",
      "\t\t[7] link 'Home'",
      "\t[8] main ''",
      "\t\t[9] alert '', live='assertive', atomic, relevant='additions text'",
      "\t\t\tStaticText 'City is required'",
      "\t\t[10] form ''",
      "\t\t\t[12] textbox 'City' value='Busan'",
      "\t\t\t\tStaticText 'Busan'",
      "\t\t\t[13] radiogroup 'Shipping'",
      "\t\t\t\t[14] radio 'Standard', checked='false'",
      "\t\t\t\t[15] radio 'Express', checked='true'",
      "\t\t\t[16] button 'Continue'",
      "\t\t[17] table ''",
      "\t\t\t[18] rowgroup ''",
      "\t\t\t\t[19] row ''",
      "\t\t\t\t\t[20] columnheader 'Item'",
      "\t\t\t[22] row ''",
      "\t\t\t\t[23] cell 'Mug'",
    ].join('\n'),
  );
});
