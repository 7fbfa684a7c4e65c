// Debian's chromium for the dashboard's browser tests (test/ui/browser.test.ts; the web env's reuse it),
// found on PATH as the report's browser tests find it: without it they skip with a one-line notice,
// unless CI is set, where they are required (.ci/run installs chromium) and each fails naming what is
// missing.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** The first executable file named chromium on PATH. */
export const CHROMIUM = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((d) => d !== '')
  .map((d) => join(d, 'chromium'))
  .find(executable);

/** What `whose` browser tests say when chromium is missing (other suites' browser tests reuse it). */
export const missingFor = (whose: string) =>
  `chromium not found on PATH: ${whose} browser tests need Debian's chromium (apt-get install chromium; .ci/run installs it)`;
const CI = !['', '0', 'false'].includes(process.env.CI ?? '');
/** The `skip` of `whose` browser tests: false with chromium or under CI, else the notice. */
export const skipFor = (whose: string): string | false =>
  CHROMIUM === undefined && !CI ? `${missingFor(whose)}; set CI=1 to require them` : false;

export const MISSING = missingFor("the dashboard's");
export const SKIP = skipFor("the dashboard's");

/** Headless chromium that reaches for nothing on the network by itself. */
export function launch(): Promise<Browser> {
  if (CHROMIUM === undefined) throw new Error(MISSING);
  return chromium.launch({
    executablePath: CHROMIUM,
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
