// The dashboard's browser tests on a machine without chromium (a fresh clone): skipped with one line
// that names what is missing and how to get it — unless CI is set, where they are required and a
// missing chromium fails each of them. Run as a user would, `node --test` on the file, with a PATH that
// holds no chromium.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BROWSER_TEST = fileURLToPath(new URL('./browser.test.ts', import.meta.url));
const EMPTY = mkdtempSync(join(tmpdir(), 'turnwise-ui-no-chromium-'));
after(() => rmSync(EMPTY, { recursive: true, force: true }));

function run(ci: boolean): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: EMPTY };
  delete env.CI;
  delete env.NODE_TEST_CONTEXT;
  if (ci) env.CI = 'true';
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=tap', BROWSER_TEST],
      {
        cwd: REPO,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

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
