// The dashboard as a reader uses it: real runs made by the real CLI in a temporary directory (rollouts
// of FrozenLake, SQL and code, a transformer's tokens, a run through a served model, training runs —
// one of them written while the page watches, two that saved their policies, one of a transformer —
// and a budget study), `turnwise ui` serving them on a free loopback port, and headless Chromium
// (Debian's, driven by playwright-core) opening every page. Every expectation comes from another
// reader: the trajectory files' own lines, `turnwise credit --json`, `turnwise eval --in … --json`,
// `turnwise compare --json`, the API's token labels, the study's summary.json. Waits are on events — a line the
// CLI prints, the page's ready mark, a DOM change — never on time. Screenshots of each page, 1280 px
// light and 600 px dark, go to test-results/ui/ (ignored by git) for a person to look at.
// Without chromium the tests skip with a one-line notice, unless CI is set (test/ui/chromium.ts).
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { formatNumber } from '../../src/report/html.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { studySummary } from '../../src/studies/budget/study.ts';
import { grpoTrainer } from '../../src/studies/budget/trainer.ts';
import { type Limits, type Measured, measurePage } from '../report/probe.ts';
import { TINY } from '../studies/fixtures.ts';
import { CHROMIUM, launch, MISSING, SKIP } from './chromium.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO, 'bin', 'turnwise.js');
const SHOTS = join(REPO, 'test-results', 'ui');
/** What every report must pass (test/report/browser.test.ts), the dashboard too. */
const LIMITS: Limits = { minTextPx: 11, minContrast: 3, maxCellLines: 6 };

interface Turn {
  t: number;
  observation: unknown;
  action: unknown;
  forced?: boolean;
  trace?: {
    tokens?: number[];
    logprobs?: number[];
    latencyMs?: number;
    usage?: { prompt: number; completion: number };
    retries?: number;
  };
}
interface Line {
  id: string;
  task: { seed: number };
  turns: Turn[];
  outcome: { success: boolean; turns: number; failure: string | null };
}

let dir = '';
let runs = '';
let url = '';
let browser: Browser | undefined;
let tab: Page;
const children: ChildProcess[] = [];
/** Every URL the pages asked for, and every error they raised. */
const requested: string[] = [];
const pageErrors: string[] = [];

const cli = (...args: string[]) =>
  execFileSync(process.execPath, [BIN, ...args], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
const lines = (file: string): Line[] =>
  readFileSync(join(runs, file), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);

/** Starts `turnwise ARGS` and resolves with the first line of stderr that matches `until` (an event). */
function started(args: string[], until: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } });
  children.push(child);
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      stderr += d;
      const m = until.exec(stderr);
      if (m) resolve({ child, match: m });
    });
    child.on('close', (code) => reject(new Error(`turnwise ${args[0]} exited ${code}: ${stderr}`)));
  });
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('close', resolve);
  });

/** Opens a page of the dashboard in a fresh document and waits for it to be drawn. */
async function open(hash: string, width = 1280, colorScheme: 'light' | 'dark' = 'light'): Promise<void> {
  await tab.setViewportSize({ width, height: 900 });
  await tab.emulateMedia({ colorScheme });
  await tab.goto('about:blank');
  await tab.goto(`${url}/${hash}`);
  await tab.waitForFunction(() => document.body.dataset.ready !== undefined);
  const problem = await tab.locator('.error-box').allTextContents();
  assert.deepEqual(problem, [], `${hash}: the page says something went wrong`);
}

/** Waits for the page drawn after an in-page navigation (a key, a click) that changes the route. */
async function redrawn(action: () => Promise<void>): Promise<void> {
  const before = await tab.evaluate(() => document.body.dataset.ready);
  await action();
  await tab.waitForFunction((b) => document.body.dataset.ready !== b, before);
}

const shot = (name: string) => tab.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const texts = (selector: string) => tab.locator(selector).allTextContents();
const attrs = (selector: string, name: string) =>
  tab.$$eval(selector, (es, n) => es.map((e) => e.getAttribute(n) ?? ''), name);

describe('the dashboard in headless chromium', { skip: SKIP }, () => {
  before(async () => {
    if (CHROMIUM === undefined) return; // CI without chromium: each test fails, saying so (beforeEach)
    dir = mkdtempSync(join(tmpdir(), 'turnwise-ui-browser-'));
    runs = join(dir, 'runs');
    mkdirSync(runs);
    mkdirSync(SHOTS, { recursive: true });
    const lake = ['--map', '4x4', '--slippery', '--tasks', '4', '--samples', '4', '--budget', '20'];
    cli('rollout', ...lake, '--policy', 'oracle:eps=0.3', '--out', 'runs/r.jsonl');
    cli('train', '--map', '4x4', '--policy', 'tabular', '--iters', '3', '--out', 'runs/t1');
    // Two training runs that keep their trajectories and save their policies: compare measures the
    // policies themselves.
    const kept = ['--map', '4x4', '--slippery', '--store-trajectories'];
    cli('train', ...kept, '--policy', 'tabular', '--iters', '3', '--out', 'runs/ta');
    cli(
      'train',
      ...kept,
      ...['--policy', 'mlp:hidden=16', '--iters', '2', '--groups', '4', '--group-size', '4'],
      '--out',
      'runs/tb',
    );
    // A transformer trained from a one-epoch clone (kept outside the runs): its checkpoint holds the
    // tokenizer its chips are labelled with.
    cli(
      ...[
        'bc',
        '--map',
        '4x4',
        '--slippery',
        '--policy',
        'transformer:layers=1,d=16,heads=2,ctx=1024,seed=3',
      ],
      ...['--train-seeds', '0:1', '--test-seeds', '1000000:1000001', '--epochs', '1', '--eval-samples', '1'],
      ...['--budget', '3', '--out', 'lm'],
    );
    cli(
      ...['train', ...kept, '--policy', 'lm', '--iters', '1', '--groups', '1', '--group-size', '2'],
      ...['--budget', '3', '--eval-episodes', '2', '--out', 'runs/tft'],
    );
    // Two runs to compare, both blind to their budget (so Pass@(K,T) reads every T off one run).
    const blind = ['--map', '4x4', '--slippery', '--tasks', '4', '--samples', '8', '--budget', '50'];
    cli('rollout', ...blind, '--policy', 'random', '--out', 'runs/cmp-a.jsonl');
    cli('rollout', ...blind, '--policy', 'oracle:eps=0.2,horizon=50', '--out', 'runs/cmp-b.jsonl');
    for (const env of ['sql', 'code'])
      cli(
        ...`rollout --env ${env} --policy oracle:eps=0.3 --tasks 1 --samples 2 --out runs/${env}.jsonl`.split(
          ' ',
        ),
      );
    cli(
      'rollout',
      ...['--random', '--size', '4', '--slippery', '--tasks', '2', '--samples', '2', '--budget', '3'],
      ...['--policy', 'transformer:layers=1,d=16,heads=2,ctx=1024,seed=3', '--out', 'runs/tf.jsonl'],
    );
    // A model behind an OpenAI-compatible server (turnwise serve, with 429s on the way): the turns carry
    // the call's latency, usage and retries.
    const serve = await started(
      ['serve', '--policy', 'oracle:eps=0.2', '--slippery', '--port', '0', '--faults', '429=0.3,seed=7'],
      /listening on (http:\/\/\S+)\n/,
    );
    cli(
      'rollout',
      ...['--slippery', '--tasks', '2', '--samples', '2', '--budget', '10', '--seed', '1'],
      ...['--policy', `openai:${serve.match[1]}#oracle`, '--out', 'runs/served.jsonl'],
    );
    serve.child.kill('SIGTERM');
    assert.equal(await exited(serve.child), 0);
    // An injected error: the r.jsonl run with sample 1 of task 1 forced at its turn 2.
    const forced = lines('r.jsonl');
    const hit = forced.filter((t) => t.task.seed === 1)[1];
    hit.turns[2].forced = true;
    writeFileSync(join(runs, 'forced.jsonl'), `${forced.map((t) => JSON.stringify(t)).join('\n')}\n`);
    // A budget study (the tiny configuration of the study's tests), as `study budget --out` leaves it.
    const { summary } = await runBudgetStudy(TINY, { trainer: grpoTrainer });
    mkdirSync(join(runs, 'study'));
    writeFileSync(
      join(runs, 'study', 'summary.json'),
      JSON.stringify(
        studySummary(
          { config: summary.config, seeds: [summary.config.seed], worlds: [summary.config.world] },
          [summary],
          1,
          summary.seconds,
        ),
      ),
    );
    url = (
      await started(['ui', '--runs', 'runs', '--port', '0'], /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/)
    ).match[1];
    browser = await launch();
    tab = await browser.newPage();
    // tsx compiles measurePage with esbuild's keepNames, which calls a `__name` helper.
    await tab.addInitScript('window.__name = (f) => f');
    tab.on('request', (r) => requested.push(r.url()));
    tab.on('pageerror', (e) => pageErrors.push(String(e)));
  });

  beforeEach(() => {
    if (browser === undefined) throw new Error(MISSING);
  });

  after(async () => {
    await browser?.close();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
    const foreign = requested.filter((u) => !u.startsWith(url) && u !== 'about:blank');
    assert.deepEqual(foreign, [], 'a page asked for something off its own server');
    assert.deepEqual(pageErrors, [], 'a page raised an error');
  });

  test('the runs page lists every run with its kind and status', async () => {
    await open('#/');
    const ids = await attrs('#runs tbody tr', 'data-run');
    assert.deepEqual(ids, [
      'cmp-a.jsonl',
      'cmp-b.jsonl',
      'code.jsonl',
      'forced.jsonl',
      'r.jsonl',
      'served.jsonl',
      'sql.jsonl',
      'study',
      't1',
      'ta',
      'tb',
      'tf.jsonl',
      'tft',
    ]);
    const row = (id: string, col: string) =>
      tab.locator(`tr[data-run="${id}"] td[data-label="${col}"]`).textContent();
    assert.equal(await row('t1', 'kind'), 'train');
    assert.equal(await row('t1', 'status'), 'finished');
    assert.equal(await row('study', 'kind'), 'study');
    assert.equal(await row('r.jsonl', 'policy'), 'oracle:eps=0.3');
    assert.equal(await row('sql.jsonl', 'env'), 'sql level=mixed domain=mixed rows=20 reward=intercode');
    // `/` focuses the search box; typing narrows the list.
    await tab.keyboard.press('/');
    assert.equal(await tab.evaluate(() => document.activeElement?.id), 'run-filter');
    await tab.keyboard.type('jsonl');
    assert.equal((await attrs('#runs tbody tr', 'data-run')).length, 8);
    await shot('runs');
  });

  test('a training run being written: its curves gain points live, and it shows stopped once killed', async () => {
    // 30 ms an iteration: a million will not finish while the page watches. The tenth iteration's line
    // on stderr says the run is on disk with ten iterations in its store.
    const { child } = await started(
      ['train', '--map', '4x4', '--policy', 'tabular', '--iters', '1000000', '--out', 'runs/live'],
      /iter 10\//,
    );
    await open('#/run/live');
    assert.equal(await tab.locator('#run-status .live').count(), 1, 'marked live');
    const points = async () =>
      Number(await tab.getAttribute('[data-metric="rollout/success"]', 'data-points'));
    const seen = await points();
    assert.ok(seen >= 10, `${seen} points`);
    // The page gains points with no reload: the run's event stream said it changed.
    await tab.waitForFunction(
      (n) =>
        Number(document.querySelector('[data-metric="rollout/success"]')?.getAttribute('data-points')) > n,
      seen,
    );
    await shot('run-live');
    child.kill('SIGTERM');
    await exited(child);
    await tab.waitForFunction(() => document.querySelector('#run-status')?.textContent === 'stopped');
    const last = await points();
    // What the page drew is what the store holds now: every iteration written before the kill.
    const api = (await (await fetch(`${url}/api/runs/live/metrics`)).json()) as { iterations: unknown[] };
    assert.equal(last, api.iterations.length);
  });

  test('a trajectory turn by turn: ←/→ step turns, j/k step trajectories, / searches', async () => {
    const file = lines('r.jsonl');
    const k = file.findIndex((t, i) => t.turns.length >= 5 && i + 1 < file.length);
    const agentAt = () => tab.getAttribute('.board .cell:has(.agent)', 'data-cell');
    await open(`#/run/r.jsonl/t/${k}`);
    assert.equal(await tab.textContent('h1'), `Trajectory ${file[k].id}`);
    assert.equal(await agentAt(), String(file[k].turns[0].observation));
    for (let i = 0; i < 3; i++) await tab.keyboard.press('ArrowRight');
    assert.equal(await tab.evaluate(() => document.body.dataset.turn), '3');
    assert.equal(await agentAt(), String(file[k].turns[3].observation));
    assert.equal(await tab.getAttribute('#turns tr.current', 'data-t'), '3');
    await tab.keyboard.press('ArrowLeft');
    assert.equal(await agentAt(), String(file[k].turns[2].observation));
    // The path walked so far: the cells of turns 0 and 1, marked, the agent's own cell not.
    const walked = new Set(file[k].turns.slice(0, 2).map((t) => String(t.observation)));
    walked.delete(String(file[k].turns[2].observation));
    assert.deepEqual(new Set(await attrs('.board .cell.path', 'data-cell')), walked);
    await shot('trajectory-frozenlake');
    await redrawn(() => tab.keyboard.press('j'));
    assert.equal(await tab.textContent('h1'), `Trajectory ${file[k + 1].id}`);
    await redrawn(() => tab.keyboard.press('k'));
    assert.equal(await tab.textContent('h1'), `Trajectory ${file[k].id}`);
    await tab.keyboard.press('/');
    assert.equal(await tab.evaluate(() => document.activeElement?.id), 'turn-search');

    // Opened from a filtered, sorted list, j goes to the next trajectory of that list.
    const failed = file
      .map((t, i) => ({ i, t }))
      .filter(({ t }) => !t.outcome.success)
      .sort((a, b) => b.t.outcome.turns - a.t.outcome.turns || a.i - b.i)
      .map(({ i }) => String(i));
    await open('#/run/r.jsonl/trajectories?outcome=failure&sort=-turns');
    assert.deepEqual(await attrs('#trajectories tbody tr', 'data-index'), failed);
    await shot('trajectories');
    await redrawn(() => tab.click('#trajectories tbody tr:first-child td a'));
    assert.equal(await tab.textContent('h1'), `Trajectory ${file[Number(failed[0])].id}`);
    await redrawn(() => tab.keyboard.press('j'));
    assert.equal(await tab.textContent('h1'), `Trajectory ${file[Number(failed[1])].id}`);
  });

  test('the credit columns show what `turnwise credit --json` computes, exact included', async () => {
    const of = (method: string) =>
      (
        JSON.parse(cli('credit', '--in', 'runs/r.jsonl', '--method', method, '--json')) as {
          advantages: number[][];
        }
      ).advantages;
    const grpo = of('grpo');
    const k = grpo.findIndex((row) => row.some((a) => a !== 0));
    assert.ok(k >= 0, 'a group with mixed outcomes');
    const column = async (method: string) =>
      (await attrs(`#turns td[data-method="${method}"]`, 'data-value')).map(Number);
    await open(`#/run/r.jsonl/t/${k}`);
    assert.deepEqual(await attrs('#turns th[data-method]', 'data-method'), ['grpo', 'exact']);
    assert.deepEqual(await column('grpo'), grpo[k]);
    assert.deepEqual(await column('exact'), of('exact')[k]);
    assert.deepEqual(
      await texts('#turns td[data-method="grpo"]'),
      grpo[k].map((a) => formatNumber(a, 3, { signed: true })),
    );
    // A method chosen from the registry adds its column.
    await redrawn(() => tab.check('#methods input[value="gigpo"]'));
    assert.deepEqual(await attrs('#turns th[data-method]', 'data-method'), ['grpo', 'exact', 'gigpo']);
    assert.deepEqual(await column('gigpo'), of('gigpo')[k]);
  });

  test('each env drawn its way: a SQL result table, test results, a text policy’s tokens, a model call', async () => {
    const sql = lines('sql.jsonl')[0];
    type Last = { output?: { columns?: unknown; rows?: unknown[][] }; passed?: number; total?: number };
    const lastAfter = (tr: Line, t: number) =>
      (tr.turns[t + 1]?.observation as { last?: Last } | undefined)?.last;
    const t = sql.turns.findIndex((_, i) => Array.isArray(lastAfter(sql, i)?.output?.rows));
    const result = lastAfter(sql, t)!.output!;
    await open(`#/run/sql.jsonl/t/0?turn=${t}`);
    assert.deepEqual(await texts('.msg.tool.current th'), result.columns);
    assert.deepEqual(
      await texts('.msg.tool.current tbody tr:first-child td'),
      result.rows![0].map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
    );
    await shot('trajectory-sql');

    const code = lines('code.jsonl')[0];
    const c = code.turns.findIndex((_, i) => typeof lastAfter(code, i)?.passed === 'number');
    const tests = lastAfter(code, c)!;
    await open(`#/run/code.jsonl/t/0?turn=${c}`);
    assert.match(
      (await tab.textContent('.msg.tool.current')) ?? '',
      new RegExp(`${tests.passed} of ${tests.total} tests passed`),
    );
    const sent = (code.turns[c].action as { arguments: { code: string } }).arguments.code;
    assert.equal(await tab.textContent('.msg.assistant.current pre code'), sent);
    await shot('trajectory-code');

    const tf = lines('tf.jsonl')[0].turns[0].trace!;
    await open('#/run/tf.jsonl/t/0');
    assert.deepEqual((await attrs('.tokens span', 'data-logprob')).map(Number), tf.logprobs);
    // A trajectory file holds no tokenizer: the chips are labelled by id, and the page says why.
    assert.deepEqual((await texts('.tokens span')).map(Number), tf.tokens);
    assert.equal(
      await tab.textContent('#tokens-note'),
      'labelled by token id: a trajectory file records token ids, not the tokenizer',
    );
    // The transformer's distribution is not explicit: exact is said to be unavailable, not faked.
    assert.match((await tab.textContent('#credit-note')) ?? '', /no explicit action distribution/);
    await shot('trajectory-transformer');

    // A training run of a transformer: its checkpoint's tokenizer labels each chip with its text (the
    // labels the API gives, which test/ui/api.test.ts checks against the tokenizer), the id on hover.
    const answer = (await (await fetch(`${url}/api/trajectories/tft/0`)).json()) as {
      trajectory: Line;
      tokenText: { labels: Record<string, string>; special: number[] };
    };
    const trace = answer.trajectory.turns[0].trace!;
    await open('#/run/tft/t/0');
    assert.match(
      (await tab.textContent('#tokens-note')) ?? '',
      /^labelled by the tokenizer in the run’s policy\.safetensors/,
    );
    assert.deepEqual(
      await texts('.tokens span'),
      trace.tokens!.map((id) => answer.tokenText.labels[id]),
    );
    assert.deepEqual((await attrs('.tokens span', 'data-id')).map(Number), trace.tokens);
    const titles = await attrs('.tokens span', 'title');
    for (const [i, id] of trace.tokens!.entries())
      assert.ok(titles[i].startsWith(`token ${i} (id ${id}, `), titles[i]);
    assert.equal(
      await tab.locator('.tokens span.special').count(),
      trace.tokens!.filter((id) => answer.tokenText.special.includes(id)).length,
    );
    await shot('trajectory-transformer-text');

    const served = lines('served.jsonl');
    const s = served.findIndex((x) => x.turns.some((turn) => (turn.trace?.retries ?? 0) > 0));
    const u = served[s].turns.findIndex((turn) => (turn.trace?.retries ?? 0) > 0);
    const call = served[s].turns[u].trace!;
    await open(`#/run/served.jsonl/t/${s}?turn=${u}`);
    const figures = Object.fromEntries(
      await tab.$$eval('#details dl.kv > div', (ds) =>
        ds.map((d) => [d.querySelector('dt')?.textContent, d.querySelector('dd')?.textContent]),
      ),
    );
    assert.equal(figures.latency, `${formatNumber(call.latencyMs, 0)} ms`);
    assert.equal(figures.tokens, `${call.usage!.prompt} prompt, ${call.usage!.completion} completion`);
    assert.equal(figures.retries, String(call.retries));
    await shot('trajectory-served');
  });

  test('a group side by side: a lane per sample, where they part, the injected error', async () => {
    const group = lines('forced.jsonl').filter((t) => t.task.seed === 1);
    const same = (a: Turn | undefined, b: Turn | undefined) =>
      a !== undefined &&
      b !== undefined &&
      JSON.stringify([a.observation, a.action]) === JSON.stringify([b.observation, b.action]);
    let parted = 0;
    while (group.every((g) => same(g.turns[parted], group[0].turns[parted]))) parted++;
    await open('#/run/forced.jsonl/group/1');
    assert.equal(await tab.locator('.lane[data-sample]').count(), group.length);
    for (let i = 0; i < group.length; i++)
      assert.equal(await tab.locator(`.lane[data-sample="${i}"] .step`).count(), group[i].turns.length);
    assert.equal(await tab.textContent('#diverged'), `the samples part at turn ${parted}`);
    assert.deepEqual(await attrs('.lane .step.forced', 'data-t'), ['2']);
    assert.equal(await tab.locator('.lane[data-sample="1"] .step.forced').count(), 1);
    // Coloured by the exact advantage (FrozenLake has an oracle), as `turnwise credit` gives it.
    const all = lines('forced.jsonl');
    const exact = (
      JSON.parse(cli('credit', '--in', 'runs/forced.jsonl', '--method', 'exact', '--json')) as {
        advantages: number[][];
      }
    ).advantages;
    const rows = all.flatMap((t, i) => (t.task.seed === 1 ? [exact[i]] : []));
    for (let i = 0; i < group.length; i++)
      assert.deepEqual((await attrs(`.lane[data-sample="${i}"] .step`, 'data-value')).map(Number), rows[i]);
    await shot('group');
  });

  test('compare two runs: Pass@(K,T) as `turnwise eval --in` gives it, the paired difference, the tasks apart', async () => {
    await open('#/compare?a=cmp-a.jsonl&b=cmp-b.jsonl');
    // Both policies were blind to their budget: prefix mode, K up to the 8 samples, T up to the budget.
    const K = '1,2,4,8';
    const T = '1,2,5,10,20,50';
    const evalIn = (f: string) =>
      JSON.parse(cli('eval', '--in', `runs/${f}`, '--K', K, '--T', T, '--json')) as { passKT: number[][] };
    for (const [side, f] of [
      ['A', 'cmp-a.jsonl'],
      ['B', 'cmp-b.jsonl'],
    ])
      assert.deepEqual(
        await texts(`svg[aria-label="Pass@(K,T), ${side}"] text.cell-value`),
        evalIn(f)
          .passKT.flat()
          .map((x) => formatNumber(x, 2)),
      );
    // The same tasks and samples in both: the difference's intervals are paired.
    assert.equal(await tab.getAttribute('#diff', 'data-paired'), 'true');
    assert.equal(await tab.locator('svg[aria-label="B − A"] rect.cell').count(), 24);
    // The task listed first differs most in success (within T = 50, the whole budget here).
    const rate = (f: string) => {
      const by = new Map<number, number[]>();
      for (const t of lines(f))
        by.set(t.task.seed, [...(by.get(t.task.seed) ?? []), t.outcome.success ? 1 : 0]);
      return new Map([...by].map(([s, xs]) => [s, xs.reduce((a, b) => a + b, 0) / xs.length]));
    };
    const [a, b] = [rate('cmp-a.jsonl'), rate('cmp-b.jsonl')];
    const most = Math.max(...[...a.keys()].map((s) => Math.abs(b.get(s)! - a.get(s)!)));
    assert.equal(
      Math.abs(
        Number(await tab.getAttribute('#task-diffs tbody tr:first-child td[data-value]', 'data-value')),
      ),
      most,
    );
    // Trajectory files hold no policy: what needs the policies is not measured, and one line says why.
    await tab.waitForFunction(
      () => document.querySelector('#diagnostics')?.getAttribute('data-state') !== 'measuring',
    );
    assert.equal(await tab.getAttribute('#diagnostics', 'data-state'), 'unavailable');
    assert.equal(
      await tab.textContent('#diagnostics-note'),
      'Step quality, recovery and likelihood: not measured — run "cmp-a.jsonl" is a trajectory file: it holds no policy.',
    );
    await shot('compare');
  });

  test('compare two runs with saved policies: step quality and recovery as `turnwise compare` measures them', async () => {
    await open('#/compare?a=ta&b=tb');
    // The page is drawn before the measurement: it says so, then shows the figures.
    await tab.waitForFunction(
      () => document.querySelector('#diagnostics')?.getAttribute('data-state') !== 'measuring',
    );
    assert.equal(await tab.getAttribute('#diagnostics', 'data-state'), 'measured');
    const report = JSON.parse(
      cli(
        ...['compare', '--map', '4x4', '--slippery', '--a', 'runs/ta', '--b', 'runs/tb', '--tasks', '8'],
        ...['--samples', '8', '--K', '1,2,4,8', '--T', '100', '--states', '50', '--actions', '8'],
        ...['--continuations', '4', '--seed', '0', '--json'],
      ),
    ) as Record<string, unknown>;
    const at = (path: string) =>
      path.split('.').reduce<unknown>((x, k) => (x as Record<string, unknown> | null)?.[k], report);
    const figures = await tab.$$eval('#diagnostics [data-figure]', (es) =>
      es.map((e) => [e.getAttribute('data-figure')!, e.getAttribute('data-value')!] as const),
    );
    const paths = figures.map(([p]) => p);
    for (const p of [
      'stepQuality.normal.score',
      'stepQuality.error.score',
      'recovery.a.success',
      'recovery.b.success',
      'recovery.diffCi95',
    ])
      assert.ok(paths.includes(p), `${p} shown`);
    for (const [path, value] of figures) {
      const x = at(path);
      assert.equal(value, x === null ? '' : String(x), path);
    }
    // Drawn as the command prints them (4 decimals).
    assert.equal(
      await tab.textContent('[data-figure="stepQuality.normal.aBetter"]'),
      formatNumber(at('stepQuality.normal.aBetter') as number, 4),
    );
    await shot('compare-policies');
  });

  test('a study: its findings and Pass@(K,T) heatmaps', async () => {
    const summary = JSON.parse(readFileSync(join(runs, 'study', 'summary.json'), 'utf8')) as {
      findings: { held: boolean | null }[];
    };
    await open('#/run/study');
    assert.equal(
      await tab.locator('section:has(h2:text("Findings")) tbody tr').count(),
      summary.findings.length,
    );
    assert.equal(
      await tab.locator('section:has(h2:text("Findings")) .badge.held').count(),
      summary.findings.filter((f) => f.held === true).length,
    );
    // Base, RL and BudgetMix sampled; RL − base sampled and exact; every cell's interval on hover.
    assert.equal(await tab.locator('svg.heatmap').count(), 5);
    assert.match((await tab.textContent('svg.heatmap g title')) ?? '', /95% CI/);
    await shot('study');
  });

  test('600 px wide and dark: every page legible (no overflow, text ≥ 11 px, marks in contrast)', async () => {
    const pages: [string, string][] = [
      ['runs', '#/'],
      ['run', '#/run/t1'],
      ['trajectories', '#/run/r.jsonl/trajectories'],
      ['trajectory-frozenlake', '#/run/r.jsonl/t/1?turn=3'],
      ['trajectory-sql', '#/run/sql.jsonl/t/0?turn=2'],
      ['trajectory-code', '#/run/code.jsonl/t/0?turn=1'],
      ['trajectory-transformer', '#/run/tf.jsonl/t/0'],
      ['trajectory-transformer-text', '#/run/tft/t/0'],
      ['group', '#/run/forced.jsonl/group/1'],
      ['compare', '#/compare?a=cmp-a.jsonl&b=cmp-b.jsonl'],
      ['compare-policies', '#/compare?a=ta&b=tb'],
      ['study', '#/run/study'],
    ];
    const failures: string[] = [];
    for (const [name, hash] of pages) {
      await open(hash, 600, 'dark');
      // Measured after the page is drawn: its figures are part of the page.
      await tab.waitForFunction(
        () => document.querySelector('#diagnostics')?.getAttribute('data-state') !== 'measuring',
      );
      const m = (await tab.evaluate(`(${measurePage.toString()})(${JSON.stringify(LIMITS)})`)) as Measured;
      assert.ok(m.texts > 10, `${name}: only ${m.texts} texts measured`);
      for (const p of m.problems) failures.push(`${name}: ${p.kind} ${p.value}: ${p.what}`);
      await shot(`${name}-600-dark`);
    }
    assert.deepEqual(failures, []);
  });
});
