// Debian's chromium for the browser tests (reports, run reports): found on PATH, launched headless by
// playwright-core (which downloads nothing). Without it a browser test skips with a one-line notice,
// unless CI is set: there the tests are required (.ci/run installs chromium), and each fails saying so.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium on PATH (an executable file named chromium), or undefined. */
function findChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, 'chromium');
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {}
  }
  return undefined;
}

export const CHROMIUM = findChromium();
export const MISSING =
  "chromium not found on PATH: the report's browser tests need Debian's chromium (apt-get install chromium; .ci/run installs it)";
/** Without chromium, skipped — unless CI is set, where the browser tests are required. */
const CI = !['', '0', 'false'].includes(process.env.CI ?? '');
export const SKIP = CHROMIUM === undefined && !CI ? `${MISSING}; set CI=1 to require them` : false;

/** Headless chromium with nothing of its own on the network (no updates, sync or first-run pages). */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
