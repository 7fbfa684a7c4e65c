// The browser tests on a machine without chromium (a fresh clone): skipped with one line that names what
// is missing and how to get it — unless CI is set, where they are required and a missing chromium fails
// them. Run as a user would, `node --test` on the file, with a PATH that holds no chromium.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runWithoutChromium } from '../ui/chromium.ts';

const BROWSER_TEST = fileURLToPath(new URL('./browser.test.ts', import.meta.url));
const runBrowserTests = (ci: boolean) => runWithoutChromium(BROWSER_TEST, ci);

const NOTICE =
  /^ok 1 - reports in headless chromium # SKIP chromium not found on PATH: .*\(apt-get install chromium; \.ci\/run installs it\); set CI=1 to require them$/m;

test('without chromium and without CI: the browser tests skip with a one-line notice, and pass', async () => {
  const r = await runBrowserTests(false);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, NOTICE);
  assert.equal(r.out.split('\n').filter((l) => l.includes('# SKIP')).length, 1, r.out);
  assert.match(r.out, /^# fail 0$/m);
});

test('without chromium under CI: the browser tests are required, and each fails naming chromium', async () => {
  const r = await runBrowserTests(true);
  assert.equal(r.code, 1, r.out);
  assert.doesNotMatch(r.out, /# SKIP/);
  assert.match(r.out, /^# fail 4$/m);
  const failures =
    r.out.match(/error: "chromium not found on PATH: [^"]*apt-get install chromium[^"]*"/g) ?? [];
  assert.equal(failures.length, 4, r.out);
});
