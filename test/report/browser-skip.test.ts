// The browser tests on a machine without chromium (a fresh clone): skipped with one line that names what
// is missing and how to get it — unless CI is set, where they are required and a missing chromium fails
// them. Run as a user would, `node --test` on the file, with a PATH that holds no chromium.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BROWSER_TEST = fileURLToPath(new URL('./browser.test.ts', import.meta.url));
/** An empty directory as the whole PATH: no chromium on it (node is started by its absolute path). */
const EMPTY = mkdtempSync(join(tmpdir(), 'turnwise-no-chromium-'));
after(() => rmSync(EMPTY, { recursive: true, force: true }));

function runBrowserTests(ci: boolean): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: EMPTY };
  delete env.CI;
  delete env.NODE_TEST_CONTEXT; // a test runner of its own, not a subtest of this one
  if (ci) env.CI = 'true';
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=tap', BROWSER_TEST],
      { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

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
