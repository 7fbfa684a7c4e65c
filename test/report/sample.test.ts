import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { samplePage } from './sample.ts';
import { findAll, hasClass, parseXml, rootOf, textOf } from './xml.ts';

test('a sample report with one chart of each kind is a well-formed, self-contained page', () => {
  const html = samplePage();
  const path = join(mkdtempSync(join(tmpdir(), 'turnwise-report-')), 'report.html');
  writeFileSync(path, html);
  const back = readFileSync(path, 'utf8');
  assert.equal(back, html);
  assert.equal(samplePage(), html, 'deterministic');

  const root = rootOf(parseXml(back, { html: true }));
  const svgs = findAll(root, (n) => n.name === 'svg');
  assert.equal(svgs.length, 9);
  for (const kind of ['heatmap', 'line-chart', 'bar-chart', 'stacked-bar-chart'])
    assert.ok(
      svgs.some((s) => hasClass(s, kind)),
      kind,
    );
  assert.ok(svgs.some((s) => hasClass(s, 'diverging')));
  const captions = findAll(root, (n) => n.name === 'figcaption').map(textOf);
  assert.deepEqual(
    captions.map((c) => c.split('.')[0]),
    [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `Figure ${i}`),
  );
  // Findings table: badges with symbols, the "not held" row highlighted.
  const badges = findAll(root, (n) => hasClass(n, 'badge')).map(textOf);
  assert.deepEqual(badges, ['✓ held', '✓ held', '✓ held', '✓ held', '✗ not held', '– n/a']);
  assert.equal(findAll(root, (n) => n.name === 'table').length, 2);
  assert.equal(findAll(root, (n) => n.name === 'tr' && hasClass(n, 'highlight')).length, 1);

  // Nothing fetched, nothing that runs, no broken numbers (the sample contains NaN on purpose).
  const urls = back.match(/https?:\/\/[^"\s]*/g) ?? [];
  assert.deepEqual(new Set(urls), new Set(['http://www.w3.org/2000/svg']));
  assert.ok(!/<script|<link|<img|<iframe|@import|url\(/i.test(back));
  for (const bad of ['NaN', 'Infinity', 'undefined']) assert.ok(!back.includes(bad), bad);
  assert.ok(back.length < 200_000, `${back.length} bytes`);
});
