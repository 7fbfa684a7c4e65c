// Debian's chromium for the dashboard's browser tests (test/ui/browser.test.ts; the web env's reuse it),
// found on PATH as the report's browser tests find it: without it they skip with a one-line notice,
// unless CI is set, where they are required (.ci/run installs chromium) and each fails naming what is
// missing.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumOnPath } from '../../src/envs/web/browser.ts';

/** The first executable file named chromium on PATH (as the web env looks for it first). */
export const CHROMIUM = chromiumOnPath();

/** What `whose` browser tests say when chromium is missing (other suites' browser tests reuse it). */
export const missingFor = (whose: string) =>
  `chromium not found on PATH: ${whose} browser tests need Debian's chromium (apt-get install chromium; .ci/run installs it)`;
const CI = !['', '0', 'false'].includes(process.env.CI ?? '');
/** The `skip` of `whose` browser tests: false with chromium or under CI, else the notice. */
export const skipFor = (whose: string): string | false =>
  CHROMIUM === undefined && !CI ? `${missingFor(whose)}; set CI=1 to require them` : false;

export const MISSING = missingFor("the dashboard's");
export const SKIP = skipFor("the dashboard's");

/** Headless chromium that reaches for nothing on the network by itself (the web env's flags). */
export function launch(): Promise<Browser> {
  if (CHROMIUM === undefined) throw new Error(MISSING);
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
}

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Runs a browser test file as a user would (`node --test`, TAP) on a machine without chromium: a PATH
 * that holds no chromium, CI set or not. Resolves with the exit code and everything it wrote. */
export function runWithoutChromium(
  testFile: string,
  ci: boolean,
): Promise<{ code: number | null; out: string }> {
  const empty = mkdtempSync(join(tmpdir(), 'turnwise-no-chromium-'));
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: empty };
  delete env.CI;
  delete env.NODE_TEST_CONTEXT;
  if (ci) env.CI = 'true';
  return new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', testFile], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  }).finally(() => rmSync(empty, { recursive: true, force: true }));
}
