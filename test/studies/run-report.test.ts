// `turnwise report RUN` for training runs, harness runs and trajectory files, and `--trajectory ID`, as a
// user runs them: real runs made by the CLI, the pages read back as XML (well-formed, no URL of any
// kind: nothing to fetch), and every number checked against another reader — the run's summary.json
// and metrics.jsonl, `turnwise summary --json`, the trajectory file's lines, `turnwise credit --json`.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { formatNumber } from '../../src/report/html.ts';
import { readTrajectories } from '../../src/store/jsonl.ts';
import { type RowColumns, unpackTrajectory } from '../../src/store/pack.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import { chipText, tokenText } from '../fixtures/token-text.ts';
import { findAll, hasClass, parseXml, textOf, type XNode } from '../report/xml.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-run-report-'));
const at = (f: string) => join(dir, f);
after(() => rmSync(dir, { recursive: true, force: true }));

const cli = async (args: string[]) => {
  const r = await inProcess(args, dir);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
};
/** `report … --json`: the page written, parsed (throws on markup a parser would refuse). */
async function report(args: string[]): Promise<{ path: string; html: string; doc: XNode }> {
  const path = JSON.parse(await cli(['report', ...args, '--json'])).report as string;
  const html = readFileSync(join(dir, path), 'utf8');
  return { path, html, doc: parseXml(html, { html: true }) };
}

/** A self-contained page: no URL anywhere (no http(s), no src or href, nothing in CSS), and the CSP
 * that forbids every fetch. */
function selfContained(html: string): void {
  // The SVG namespace is a name, never fetched.
  const text = html.replaceAll('xmlns="http://www.w3.org/2000/svg"', '');
  assert.doesNotMatch(text, /https?:|\/\/[a-z]|\bsrc=|\bhref=|url\(|@import/i);
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none';/);
}

/** The element children of a node with this name. */
const children = (n: XNode, name: string) =>
  n.children.filter((c): c is XNode => typeof c !== 'string' && c.name === name);

/** The rows of the table with this caption (cells as text; a board inside a cell is that cell's). */
function tableRows(doc: XNode, caption: string): string[][] {
  const t = findAll(doc, (n) => n.name === 'table').find((n) =>
    children(n, 'caption').some((c) => textOf(c) === caption),
  );
  assert.ok(t, `a table "${caption}"`);
  return children(children(t, 'tbody')[0], 'tr').map((tr) => children(tr, 'td').map((td) => textOf(td)));
}

/** A number as a page's facts show it: whole numbers as they are, others with 4 decimals. */
const shown = (x: number) => (Number.isInteger(x) ? String(x) : formatNumber(x, 4));

/** The key–value facts of a page (its <dl>s), by key. */
function facts(doc: XNode): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of findAll(doc, (n) => n.name === 'div' && findAll(n, (c) => c.name === 'dt').length === 1))
    out[textOf(findAll(d, (n) => n.name === 'dt')[0])] = textOf(findAll(d, (n) => n.name === 'dd')[0]);
  return out;
}

const lines = (f: string): Trajectory[] => readTrajectories(at(f), 'test');

before(async () => {
  await cli([
    'train',
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    'tabular',
    '--iters',
    '4',
    '--out',
    'runs/t1',
  ]);
  await cli(
    'rollout --map 4x4 --slippery --policy oracle:eps=0.3 --tasks 4 --samples 4 --budget 20 --seed 5 --out r.jsonl'.split(
      ' ',
    ),
  );
  await cli('rollout --env sql --policy oracle:eps=0.5 --tasks 2 --samples 2 --out sql.jsonl'.split(' '));
});

test('a training run: curves and their table from the run’s metrics, the final figures of its summary.json', async () => {
  const { path, html, doc } = await report(['runs/t1']);
  assert.equal(path, 'runs/t1/report.html');
  selfContained(html);
  const metrics = readFileSync(at('runs/t1/metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);
  const rows = tableRows(doc, 'First, last, lowest and highest value of each metric');
  const keys = Object.keys(metrics[0]).filter((k) => k !== 'iter');
  assert.deepEqual(rows.map((r) => r[0]).sort(), [...keys].sort());
  for (const [key, first, last, min, max] of rows) {
    const ys = metrics.map((m) => m[key]);
    assert.deepEqual(
      [first, last, min, max],
      [ys[0], ys.at(-1)!, Math.min(...ys), Math.max(...ys)].map((x) => formatNumber(x, 4)),
      key,
    );
  }
  // One chart a metric, each with a point per iteration.
  const charts = findAll(doc, (n) => n.name === 'svg' && hasClass(n, 'turnwise-chart'));
  assert.equal(charts.length, keys.length);
  const summary = JSON.parse(readFileSync(at('runs/t1/summary.json'), 'utf8'));
  const f = facts(doc);
  for (const [k, v] of Object.entries(summary.final as Record<string, number>))
    assert.equal(f[k], shown(v), k);
  assert.equal(f.iterations, '4 of 4');
  assert.equal(f.status, 'finished');
});

test('a harness run and a trajectory file: outcomes and failure kinds as `turnwise summary`, each task’s success', async () => {
  // A harness run's directory as `harness run` leaves it: run.sqlite holding run "harness".
  mkdirSync(at('runs/h1'), { recursive: true });
  const store = new RunStore(at('runs/h1/run.sqlite'));
  store.createRun('harness', 'harness', { cmd: 'agent', budget: 20 });
  store.addTrajectories('harness', 0, lines('r.jsonl'));
  store.setStatus('harness', 'done');
  store.close();
  const summary = JSON.parse(await cli(['summary', '--in', 'r.jsonl', '--json']));
  for (const run of ['runs/h1', 'r.jsonl']) {
    const { path, html, doc } = await report([run]);
    assert.equal(path, run === 'r.jsonl' ? 'r.report.html' : 'runs/h1/report.html');
    selfContained(html);
    const f = facts(doc);
    assert.equal(f.episodes, String(summary.episodes));
    assert.equal(f['success rate'], shown(summary.success));
    assert.equal(f['mean turns'], shown(summary.meanTurns));
    assert.equal(f.kind, run === 'r.jsonl' ? 'file' : 'harness');
    const outcomes = tableRows(doc, 'Episodes by outcome');
    assert.deepEqual(
      Object.fromEntries(outcomes.slice(1).map((r) => [r[0], Number(r[1])])),
      summary.failures,
    );
    // Per task: its samples and successes, counted from the file's lines.
    const byTask = new Map<number, Trajectory[]>();
    for (const t of lines('r.jsonl')) byTask.set(t.task.seed, [...(byTask.get(t.task.seed) ?? []), t]);
    const taskTable = findAll(doc, (n) => n.name === 'section' && n.attrs.id === 'success-per-task')[0];
    const rows = findAll(taskTable, (n) => n.name === 'tr')
      .slice(1)
      .map((tr) => findAll(tr, (n) => n.name === 'td').map(textOf));
    assert.deepEqual(
      rows.map((r) => r.slice(0, 3)),
      [...byTask].map(([seed, ts]) => [
        `seed ${seed}`,
        String(ts.length),
        String(ts.filter((t) => t.outcome.success).length),
      ]),
    );
  }
});

test('--trajectory ID: the turns as played, FrozenLake boards, and credit columns equal to `turnwise credit`', async () => {
  const all = lines('r.jsonl');
  const k = 6;
  const t = all[k];
  const { path, html, doc } = await report(['r.jsonl', '--trajectory', t.id]);
  assert.equal(path, `r.trajectory-${t.id}.html`);
  selfContained(html);
  const f = facts(doc);
  assert.deepEqual(
    [f.trajectory, f.index, f['task seed'], f.policy, f.turns, f.success],
    [
      t.id,
      String(k),
      String(t.task.seed),
      t.policy,
      String(t.outcome.turns),
      t.outcome.success ? 'yes' : 'no',
    ],
  );
  // A board per turn, the agent (●) where the turn's observation says.
  const boards = findAll(doc, (n) => n.name === 'table' && hasClass(n, 'board'));
  assert.equal(boards.length, t.turns.length);
  boards.forEach((b, i) => {
    const cells = findAll(b, (n) => n.name === 'td');
    assert.equal(
      cells.findIndex((c) => hasClass(c, 'agent')),
      t.turns[i].observation,
      `turn ${i}`,
    );
  });
  const names = ['Left', 'Down', 'Right', 'Up'];
  const rows = tableRows(doc, 'Credit per turn');
  assert.deepEqual(
    rows.map((r) => r[1]),
    t.turns.map((u) => `${names[u.action as number]} (${u.action})`),
  );
  for (const [col, method] of [
    [3, 'grpo'],
    [4, 'exact'],
  ] as const) {
    const expected = JSON.parse(await cli(['credit', '--in', 'r.jsonl', '--method', method, '--json']))
      .advantages[k] as number[];
    assert.deepEqual(
      rows.map((r) => r[col]),
      expected.map((a) => formatNumber(a, 4, { signed: true })),
      method,
    );
  }
});

test('--trajectory on an env without an oracle: no exact column, said why; tool calls and SQL results as tables', async () => {
  const t = lines('sql.jsonl').find((x) =>
    x.turns.some((u) => (u.action as { name: string }).name === 'execute_sql'),
  );
  assert.ok(t, 'an episode that ran a query');
  const { html, doc } = await report(['sql.jsonl', '--trajectory', t.id]);
  selfContained(html);
  assert.match(html, /No exact column: needs an exact oracle \(trajectory [^)]+\): sql has none/);
  const heads = findAll(doc, (n) => n.name === 'th').map(textOf);
  assert.ok(heads.includes('credit: grpo') && !heads.includes('credit: exact'));
  // The query's result set, as a table of its columns.
  const i = t.turns.findIndex((u) => (u.action as { name: string }).name === 'execute_sql');
  const result = (t.turns[i + 1]?.observation as { last?: { output?: { columns?: string[] } } } | undefined)
    ?.last;
  if (result?.output?.columns !== undefined)
    for (const c of result.output.columns) assert.ok(heads.includes(c), `column ${c} of the result`);
  assert.ok(
    findAll(doc, (n) => n.name === 'code').some((c) => textOf(c).startsWith('SELECT')),
    'the query as code',
  );
});

test('bad input: one line, exit 2, nothing written', async () => {
  mkdirSync(at('runs/bc'), { recursive: true });
  writeFileSync(at('runs/bc/bc.json'), '{}');
  mkdirSync(at('runs/empty'), { recursive: true });
  const cases: [string[], RegExp][] = [
    [['report', 'runs/bc'], /^turnwise: runs\/bc\/summary\.json: missing; RUN must be a study’s directory/],
    [['report', 'runs/empty', '--trajectory', 'x'], /^turnwise: runs\/empty\/summary\.json: missing/],
    [
      ['report', 'r.jsonl', '--trajectory', 'nope'],
      /^turnwise: --trajectory: got "nope"; no trajectory with this id in r\.jsonl/,
    ],
    [['report', 'r.jsonl', '--trajectory', ''], /^turnwise: --trajectory: got ""; expected a trajectory id/],
    [
      ['report', 'runs/t1', '--trajectory', 'x'],
      /^turnwise: --trajectory: got "x"; no trajectory with this id in t1/,
    ],
    [
      ['report', 'r.jsonl', '--out', '/dev/null/x.html'],
      /^turnwise: --out: got "\/dev\/null\/x\.html"; is under \/dev/,
    ],
    [['report', 'sql.jsonl.none'], /^turnwise: RUN: got "sql\.jsonl\.none"; no such run directory/],
  ];
  for (const [args, line] of cases) {
    const r = await turnwise(args.map((a) => (a.startsWith('runs/') || a.endsWith('.jsonl') ? at(a) : a)));
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.split('\n').length, 2, r.stderr);
    assert.match(r.stderr.replaceAll(`${dir}/`, ''), line, args.join(' '));
  }
  // A training run keeps its trajectories' outcomes only (without --store-trajectories): said so.
  const store = new RunStore(at('runs/t1/run.sqlite'), 'run', true);
  const first = store.db
    .prepare(
      'SELECT task, policy, budget, success, turns, ret, failure, data FROM trajectories WHERE idx = 0',
    )
    .get() as { data: Buffer } & RowColumns;
  store.close();
  const { id } = unpackTrajectory(first.data, first) as { id: string };
  const r = await turnwise(['report', at('runs/t1'), '--trajectory', id]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr.split('\n').length, 2, r.stderr);
  assert.match(r.stderr, /run train row 0: holds the outcome only \(stored without turns\)$/m);
});

test('--trajectory of a transformer run: token chips show the text of each token, from the tokenizer its checkpoint holds', async () => {
  await cli(
    'bc --map 4x4 --slippery --policy transformer:layers=1,d=16,heads=2,ctx=1024,seed=3 --train-seeds 0:1 --test-seeds 1000000:1000001 --epochs 1 --eval-samples 1 --budget 3 --out lm'.split(
      ' ',
    ),
  );
  await cli(
    'train --map 4x4 --slippery --policy lm --iters 1 --groups 1 --group-size 2 --budget 3 --eval-episodes 2 --store-trajectories --out runs/tf'.split(
      ' ',
    ),
  );
  const store = new RunStore(at('runs/tf/run.sqlite'), 'run', true);
  const [t] = store.trajectories('train');
  store.close();
  const { doc } = await report(['runs/tf', '--trajectory', t.id]);
  const chips = findAll(doc, (n) => n.name === 'span' && hasClass(n, 'tok'));
  const ids = t.turns.flatMap((u) => u.trace?.tokens ?? []);
  assert.ok(ids.length > 0);
  assert.equal(chips.length, ids.length);
  // Each chip's text, whitespace and \xNN written back, is its token's text as the checkpoint's
  // tokenizer has it (the policy loader's reading, not the page's code).
  const { readSavedTransformer } = await import('../../src/policies/transformer.ts');
  const tok = readSavedTransformer(at('runs/tf'))!.tokenizer;
  chips.forEach((c, i) => {
    const id = ids[i];
    assert.equal(chipText(tok, id, textOf(c)), tokenText(tok, id), `chip ${i} (id ${id})`);
    assert.match(c.attrs.title ?? '', new RegExp(`\\(id ${id}\\)`));
  });
  assert.ok(
    findAll(doc, (n) => n.name === 'p' || n.name === 'li').some((n) =>
      textOf(n).includes('from the tokenizer in policy.safetensors'),
    ),
    'the page says where the text comes from',
  );
  // A trajectory file of the same policy records ids only: the chips keep them, and the page says why.
  await cli(
    'rollout --map 4x4 --slippery --policy lm --tasks 1 --samples 1 --budget 2 --out lm.jsonl'.split(' '),
  );
  const [u] = lines('lm.jsonl');
  const file = await report(['lm.jsonl', '--trajectory', u.id]);
  const fileChips = findAll(file.doc, (n) => n.name === 'span' && hasClass(n, 'tok')).map((c) => textOf(c));
  assert.deepEqual(
    fileChips,
    u.turns.flatMap((x) => (x.trace?.tokens ?? []).map(String)),
  );
  assert.match(file.html, /Token chips show ids: a trajectory file records token ids, not the tokenizer\./);
});
