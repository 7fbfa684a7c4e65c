// Debian's chromium for the browser tests (reports, run reports): found on PATH, launched headless by
// playwright-core (which downloads nothing). Without it a browser test skips with a one-line notice,
// unless CI is set: there the tests are required (.ci/run installs chromium), and each fails saying so.
// The lookup, the notice and the flags are the dashboard's and the web env's (test/ui/chromium.ts).
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../../src/envs/web/browser.ts';
import { CHROMIUM, missingFor, skipFor } from '../ui/chromium.ts';

export { CHROMIUM };
export const MISSING = missingFor("the report's");
/** Without chromium, skipped — unless CI is set, where the browser tests are required. */
export const SKIP = skipFor("the report's");

/** Headless chromium with nothing of its own on the network (no updates, sync or first-run pages). */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: [...CHROMIUM_ARGS] });
}
