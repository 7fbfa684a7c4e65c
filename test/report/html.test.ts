import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findingsTable } from '../../src/report/findings.ts';
import {
  badge,
  escapeAttr,
  escapeText,
  figure,
  formatNumber,
  jsonDetails,
  keyValues,
  page,
  section,
  slug,
  verdict,
} from '../../src/report/html.ts';
import { table } from '../../src/report/table.ts';
import { findAll, hasClass, parseXml, rootOf, textOf } from './xml.ts';

test('escaping: text escapes & < >, attributes also both quotes; XML-forbidden controls are dropped', () => {
  const nasty = `<a href="x" onclick='y'>&amp;</a>`;
  assert.equal(escapeText(nasty), `&lt;a href="x" onclick='y'&gt;&amp;amp;&lt;/a&gt;`);
  assert.equal(escapeAttr(nasty), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;');
  assert.equal(escapeText('a\u0000b\u0007c\td\ne\u001f'), 'abc\td\ne');
  // Escaped text round-trips through an XML parser to exactly the input.
  const doc = parseXml(`<p title="${escapeAttr(nasty)}">${escapeText(nasty)}</p>`);
  assert.equal(rootOf(doc).attrs.title, nasty);
  assert.equal(textOf(rootOf(doc)), nasty);
});

test('formatNumber: n/a for missing and non-finite values, no -0, signs and percentages', () => {
  for (const x of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, null, undefined])
    assert.equal(formatNumber(x), 'n/a');
  assert.equal(formatNumber(0.12345, 2), '0.12');
  assert.equal(formatNumber(-0.0001, 2), '0.00');
  assert.equal(formatNumber(-0.0001, 2, { signed: true }), '0.00');
  assert.equal(formatNumber(0.05, 2, { signed: true }), '+0.05');
  assert.equal(formatNumber(-0.05, 2, { signed: true }), '-0.05');
  assert.equal(formatNumber(0.513, 1, { percent: true }), '51.3%');
});

test('table: numbers right-aligned and formatted, n/a for missing, header escaped, rows highlighted', () => {
  const html = table(
    ['finding <x>', { label: 'paper', digits: 2 }, 'ours', { label: 'verdict', align: 'center' }],
    [
      ['a & b', 0.4321, Number.NaN, { html: badge('held') }],
      ['c', null, 3, { text: 'maybe', badge: 'partial', title: 'see "notes"' }],
    ],
    { caption: 'Findings', highlight: [1] },
  );
  const root = rootOf(parseXml(html, { html: true }));
  const th = findAll(root, (n) => n.name === 'th');
  assert.deepEqual(
    th.map((n) => [textOf(n), n.attrs.class ?? '']),
    [
      ['finding <x>', ''],
      ['paper', 'num'],
      ['ours', 'num'],
      ['verdict', 'center'],
    ],
  );
  const rows = findAll(root, (n) => n.name === 'tr').slice(1);
  const cells = rows.map((r) => findAll(r, (n) => n.name === 'td').map(textOf));
  assert.deepEqual(cells, [
    ['a & b', '0.43', 'n/a', '✓ held'],
    ['c', 'n/a', '3.000', 'maybe ≈ partly'],
  ]);
  assert.equal(rows[1].attrs.class, 'highlight');
  assert.equal(rows[0].attrs.class, undefined);
  const tds = findAll(root, (n) => n.name === 'td');
  assert.equal(tds[1].attrs.class, 'num');
  assert.equal(tds[2].attrs.class, 'num na');
  assert.equal(tds[7].attrs.title, 'see "notes"');
});

test('badges carry a symbol as well as a colour; verdict maps booleans', () => {
  assert.equal(badge('held'), '<span class="badge held">✓ held</span>');
  assert.equal(badge('not-held'), '<span class="badge not-held">✗ not held</span>');
  assert.equal(badge('na', '<none>'), '<span class="badge na">– &lt;none&gt;</span>');
  assert.deepEqual(
    [verdict(true), verdict(false), verdict(null), verdict(undefined)],
    ['held', 'not-held', 'na', 'na'],
  );
});

test('keyValues keeps order and formats; jsonDetails never prints NaN, Infinity or undefined', () => {
  const kv = keyValues([
    ['seconds', 12.3456],
    ['aware', true],
    ['missing', undefined],
    ['bad', Number.NaN],
    ['name', '<b>'],
  ]);
  const dd = findAll(rootOf(parseXml(kv)), (n) => n.name === 'dd').map(textOf);
  assert.deepEqual(dd, ['12.346', 'yes', 'n/a', 'n/a', '<b>']);

  const value = {
    a: Number.NaN,
    b: Number.POSITIVE_INFINITY,
    c: undefined,
    d: [1, Number.NEGATIVE_INFINITY],
    e: 10n,
    s: '</pre>',
  };
  const html = jsonDetails('raw', value);
  for (const bad of ['NaN', 'Infinity', 'undefined']) assert.ok(!html.includes(bad), bad);
  const pre = findAll(rootOf(parseXml(html)), (n) => n.name === 'code')[0];
  assert.deepEqual(JSON.parse(textOf(pre)), { a: null, b: null, d: [1, null], e: '10', s: '</pre>' });
  assert.equal(jsonDetails('u', undefined).includes('undefined'), false);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.match(jsonDetails('c', cyclic), /not serialisable as JSON/);
  assert.match(jsonDetails('o', 1, { open: true }), /^<details open="">/);
});

test('sections and figures: escaped headings, slug anchors, numbered captions', () => {
  assert.equal(slug('Pass@(K,T) — RL vs base'), 'pass-k-t-rl-vs-base');
  assert.equal(slug('—'), 'section');
  const s = section('A <b> & c', '<p>x</p>', { level: 3 });
  assert.equal(s, '<section id="a-b-c">\n<h3>A &lt;b&gt; &amp; c</h3>\n<p>x</p>\n</section>');
  const f = rootOf(parseXml(figure(3, 'Recovery "rates" <per policy>', '<svg/>')));
  assert.equal(f.attrs.id, 'figure-3');
  assert.equal(
    textOf(findAll(f, (n) => n.name === 'figcaption')[0]),
    'Figure 3. Recovery "rates" <per policy>',
  );
});

test('page: a well-formed, self-contained document that fetches nothing', () => {
  const html = page({ title: 'T <&>', subtitle: 's', body: ['<p>one</p>', '<p>two</p>'], footer: 'f' });
  assert.ok(html.startsWith('<!doctype html>\n<html lang="en">'));
  const root = rootOf(parseXml(html, { html: true }));
  assert.equal(root.name, 'html');
  assert.equal(textOf(findAll(root, (n) => n.name === 'title')[0]), 'T <&>');
  assert.equal(textOf(findAll(root, (n) => n.name === 'h1')[0]), 'T <&>');
  assert.equal(findAll(root, (n) => n.name === 'p' && !hasClass(n, 'subtitle')).length, 2);
  const csp = findAll(root, (n) => n.name === 'meta' && n.attrs['http-equiv'] === 'Content-Security-Policy');
  assert.match(csp[0].attrs.content, /^default-src 'none'/);
  assert.match(html, /prefers-color-scheme:dark/);
  assert.match(html, /@media print/);
  assert.ok(!/https?:\/\//.test(html), 'no URL at all in the shell');
  assert.ok(!/<script|<link|<img|@import|url\(/i.test(html), 'nothing that loads');
  assert.equal(page({ title: 'x', body: '' }), page({ title: 'x', body: '' }));
});

test('findings table: numbers or text per cell, a verdict badge per row, rows that failed shaded', () => {
  const html = findingsTable([
    { claim: 'recovery <RL> base', paper: '51.3% vs 38.6%', ours: 0.5129, held: true },
    { claim: 'lead reverses at tight T', paper: null, ours: Number.NaN, held: false, note: 'T ≥ 20 only' },
    { claim: 'BudgetMix robust', paper: 0.9, ours: null, held: null },
  ]);
  const root = rootOf(parseXml(html, { html: true }));
  const rows = findAll(root, (n) => n.name === 'tr');
  assert.deepEqual(findAll(rows[0], (n) => n.name === 'th').map(textOf), [
    'finding',
    'paper',
    'ours',
    'verdict',
    'note',
  ]);
  assert.deepEqual(
    rows.slice(1).map((r) => findAll(r, (n) => n.name === 'td').map(textOf)),
    [
      ['recovery <RL> base', '51.3% vs 38.6%', '0.513', '✓ held', ''],
      ['lead reverses at tight T', 'n/a', 'n/a', '✗ not held', 'T ≥ 20 only'],
      ['BudgetMix robust', '0.900', 'n/a', '– n/a', ''],
    ],
  );
  assert.deepEqual(
    rows.slice(1).map((r) => r.attrs.class ?? ''),
    ['', 'highlight', ''],
  );
});
