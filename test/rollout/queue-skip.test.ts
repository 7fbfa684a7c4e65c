// The rollout queue's Redis tests on a machine without redis-server (a fresh clone): skipped with one
// line that names what is missing and how to get it — unless CI is set, where they are required and a
// missing redis-server fails each of them. Run as a user would, `node --test` on the file, with a PATH
// that holds no redis-server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const QUEUE_TEST = fileURLToPath(new URL('./queue-redis.test.ts', import.meta.url));
/** An empty directory as the whole PATH: no redis-server on it (node is started by its absolute path). */
const EMPTY = mkdtempSync(join(tmpdir(), 'turnwise-no-redis-'));
after(() => rmSync(EMPTY, { recursive: true, force: true }));

function runQueueTests(ci: boolean): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: EMPTY };
  delete env.CI;
  delete env.NODE_TEST_CONTEXT; // a test runner of its own, not a subtest of this one
  if (ci) env.CI = 'true';
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', QUEUE_TEST], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const NOTICE =
  /^ok 1 - the rollout queue on a real Redis # SKIP redis-server not found on PATH: .*\(apt-get install redis-server; \.ci\/run installs it\); set CI=1 to require them$/m;

test('without redis-server and without CI: the Redis tests skip with a one-line notice, and pass', async () => {
  const r = await runQueueTests(false);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, NOTICE);
  assert.equal(r.out.split('\n').filter((l) => l.includes('# SKIP')).length, 1, r.out);
  assert.match(r.out, /^# fail 0$/m);
});

test('without redis-server under CI: the Redis tests are required, and each fails naming redis-server', async () => {
  const r = await runQueueTests(true);
  assert.equal(r.code, 1, r.out);
  assert.doesNotMatch(r.out, /# SKIP/);
  assert.match(r.out, /^# fail 10$/m);
  const failures =
    r.out.match(/error: "redis-server not found on PATH: [^"]*apt-get install redis-server[^"]*"/g) ?? [];
  assert.equal(failures.length, 10, r.out);
});
