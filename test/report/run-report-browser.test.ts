// The pages of `turnwise report` for runs that are not studies, as a reader opens them: real runs made
// by the CLI, each page opened from disk in headless Chromium (Debian's chromium driven by
// playwright-core) at 600 px and 1280 px, light and dark, and as printed: no console error, nothing
// asked of the network (a page attached to a bug report opens offline), and the report probe's checks
// (test/report/probe.ts: text of 11 px or more, tables and charts within their box, no page overflow,
// series that stand out). Without chromium the tests skip with a one-line notice, unless CI is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { RunStore } from '../../src/store/sqlite.ts';
import { inProcess } from '../cli/run.ts';
import { CHROMIUM, launchChromium, MISSING, SKIP } from './chromium.ts';
import { type Limits, type Measured, measurePage } from './probe.ts';

const LIMITS: Limits = { minTextPx: 11, minContrast: 3, maxCellLines: 6 };
const VIEWS = [
  { name: '600px light', width: 600, media: 'screen', colorScheme: 'light' },
  { name: '600px dark', width: 600, media: 'screen', colorScheme: 'dark' },
  { name: '1280px light', width: 1280, media: 'screen', colorScheme: 'light' },
  { name: '1280px dark', width: 1280, media: 'screen', colorScheme: 'dark' },
  { name: 'print', width: 720, media: 'print', colorScheme: 'light' },
] as const;

describe('run reports in headless chromium', { skip: SKIP }, () => {
  let browser: Browser | undefined;
  let tab: Page;
  let dir: string;
  const requested: string[] = [];
  const errors: string[] = [];
  const cli = async (args: string) => {
    const r = await inProcess(args.split(' '), dir);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const report = async (args: string) => join(dir, JSON.parse(await cli(`report ${args} --json`)).report);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'turnwise-run-report-browser-'));
    if (CHROMIUM === undefined) return;
    browser = await launchChromium(CHROMIUM);
    tab = await browser.newPage();
    await tab.addInitScript('window.__name = (f) => f');
    tab.on('request', (r) => requested.push(r.url()));
    tab.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
    });
    tab.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    await cli('train --map 4x4 --slippery --policy tabular --iters 3 --store-trajectories --out t1');
    await cli(
      'rollout --map 8x8 --slippery --policy oracle:eps=0.2 --tasks 2 --samples 3 --budget 60 --out r.jsonl',
    );
    await cli('rollout --env sql --policy oracle:eps=0.5 --tasks 2 --samples 2 --out sql.jsonl');
  });

  beforeEach(() => {
    if (browser === undefined) throw new Error(MISSING);
  });

  after(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function check(file: string, minTexts: number): Promise<void> {
    const failures: string[] = [];
    for (const view of VIEWS) {
      await tab.setViewportSize({ width: view.width, height: 900 });
      await tab.emulateMedia({ media: view.media, colorScheme: view.colorScheme });
      await tab.goto(pathToFileURL(file).href);
      const m = (await tab.evaluate(`(${measurePage.toString()})(${JSON.stringify(LIMITS)})`)) as Measured;
      assert.ok(m.texts >= minTexts, `${view.name}: only ${m.texts} texts measured`);
      if (m.problems.length > 0)
        failures.push(
          `${view.name}:\n${m.problems
            .slice(0, 20)
            .map((p) => `  ${p.kind} ${p.value}: ${p.what}`)
            .join('\n')}`,
        );
    }
    assert.deepEqual(failures, [], `\n${failures.join('\n')}`);
    assert.deepEqual(errors, [], 'console errors');
    assert.deepEqual(
      requested.filter((u) => !u.startsWith('file://')),
      [],
      'a page fetched something',
    );
  }

  test('a training run’s report reads at 600 px, 1280 px, light, dark and in print', async () => {
    await check(await report('t1'), 200);
  });

  test('a trajectory file’s report (outcomes, failure kinds, tasks)', async () => {
    await check(await report('r.jsonl'), 60);
  });

  test('one FrozenLake trajectory, turn by turn, with its boards and credit columns', async () => {
    await check(await report('r.jsonl --trajectory r0-0-1'), 100);
  });

  test('one SQL trajectory, with its tool calls and result tables', async () => {
    await check(await report('sql.jsonl --trajectory r0-1-0'), 40);
  });

  test('one trajectory of a training run stored with its turns', async () => {
    const store = new RunStore(join(dir, 't1', 'run.sqlite'), 'run', true);
    const id = store.trajectoryAt('train', 0)!.id;
    store.close();
    await check(await report(`t1 --trajectory ${id}`), 40);
  });
});
