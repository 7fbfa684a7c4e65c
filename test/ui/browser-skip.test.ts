// The dashboard's browser tests on a machine without chromium (a fresh clone): skipped with one line
// that names what is missing and how to get it — unless CI is set, where they are required and a
// missing chromium fails each of them. Run as a user would, `node --test` on the file, with a PATH that
// holds no chromium.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runWithoutChromium } from './chromium.ts';

const BROWSER_TEST = fileURLToPath(new URL('./browser.test.ts', import.meta.url));
const run = (ci: boolean) => runWithoutChromium(BROWSER_TEST, ci);

test('without chromium and without CI: one line says why the dashboard tests skip, and they pass', async () => {
  const r = await run(false);
  assert.equal(r.code, 0, r.out);
  assert.match(
    r.out,
    /^ok 1 - the dashboard in headless chromium # SKIP chromium not found on PATH: .*\(apt-get install chromium; \.ci\/run installs it\); set CI=1 to require them$/m,
  );
  assert.equal(r.out.split('\n').filter((l) => l.includes('# SKIP')).length, 1, r.out);
});

test('without chromium under CI: every dashboard test fails, naming chromium', async () => {
  const r = await run(true);
  assert.equal(r.code, 1, r.out);
  assert.doesNotMatch(r.out, /# SKIP/);
  assert.match(r.out, /^# fail 10$/m);
  assert.equal(
    (r.out.match(/error: "chromium not found on PATH: [^"]*apt-get install chromium[^"]*"/g) ?? []).length,
    10,
    r.out,
  );
});
