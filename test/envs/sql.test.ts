// The sql env: generator determinism and difficulty spread, the InterCode reward against hand-computed
// values and a brute-force τ, the read-only guard and the runaway limits, failure kinds, checkEnv,
// closes after rollouts, the scripted policies' logp, and the CLI (rollout, describe, export).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import Database from 'better-sqlite3';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Env, ToolCall, Turn, TurnContext } from '../../src/core/types.ts';
import { checkEnv } from '../../src/envs/check.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import {
  buildSqlWorld,
  exactScore,
  interCodeScore,
  isOrdered,
  kendallTauOfOrders,
  multisetIoU,
  parseCall,
  SQL_TOOLS,
  type SqlEnv,
  type SqlObservation,
  sqlParams,
  sqlWorld,
} from '../../src/envs/sql/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import { rolloutContract } from './rollout-contract.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({
  ...envConfig('sql', params),
  seed,
});
const sqlEnv = (seed: number, params: Record<string, unknown> = {}) =>
  makeEnv(task(seed, params)) as unknown as SqlEnv;
const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });

test('the generator is deterministic: same (params, seed) ⇒ same database bytes and question', () => {
  const p = sqlParams({});
  const a = buildSqlWorld(p, 7);
  const b = buildSqlWorld(p, 7);
  assert.ok(a.bytes.equals(b.bytes));
  assert.deepEqual(a.question, b.question);
  assert.deepEqual(a.gold, b.gold);
  const c = buildSqlWorld(p, 8);
  assert.ok(!a.bytes.equals(c.bytes));
  // The bytes are a real SQLite file holding the generated rows.
  const db = new Database(a.bytes, { readonly: true });
  const people = a.domain.people.table;
  assert.equal(
    (db.prepare(`SELECT COUNT(*) AS n FROM ${people}`).get() as { n: number }).n,
    a.rows[people].length,
  );
  assert.deepEqual(db.prepare(a.question.gold).raw(true).all(), a.gold.rows);
  db.close();
});

test('difficulty levels: each level uses its own templates, with non-empty gold answers', () => {
  const seen: Record<number, Set<string>> = { 1: new Set(), 2: new Set(), 3: new Set() };
  for (const level of [1, 2, 3] as const) {
    for (let s = 0; s < 40; s++) {
      const w = buildSqlWorld(sqlParams({ level }), s);
      assert.equal(w.question.level, level);
      assert.ok(w.gold.rows.length > 0, `level ${level} seed ${s}: empty gold`);
      seen[level].add(w.question.template);
      const g = w.question.gold.toUpperCase();
      if (level === 1) assert.ok(!/JOIN|GROUP BY|\(SELECT/.test(g), g);
      if (level === 2) assert.ok(/JOIN|GROUP BY/.test(g) && !/HAVING|\(SELECT|LIMIT/.test(g), g);
      if (level === 3) assert.ok(/HAVING|\(SELECT|LIMIT/.test(g), g);
    }
  }
  assert.deepEqual([...seen[1]].sort(), ['count', 'filter', 'ordered-filter']);
  assert.deepEqual([...seen[2]].sort(), ['aggregate', 'group-by', 'join']);
  assert.ok(seen[3].size >= 3, [...seen[3]].join());
  // Mixed draws levels and domains from the seed: all of them show up.
  const levels = new Set<number>();
  const domains = new Set<string>();
  for (let s = 0; s < 60; s++) {
    const w = sqlWorld(task(s));
    levels.add(w.question.level);
    domains.add(w.domain.id);
  }
  assert.deepEqual([...levels].sort(), [1, 2, 3]);
  assert.deepEqual([...domains].sort(), ['library', 'school', 'shop']);
});

// Brute-force Kendall τ of a permutation: 1 − 4·inversions / (n(n−1)), inversions by bubble sort.
function bubbleTau(agent: string[], gold: string[]): number {
  const pos = agent.map((k) => gold.indexOf(k));
  let inv = 0;
  const a = [...pos];
  for (let i = 0; i < a.length; i++)
    for (let j = 0; j + 1 < a.length - i; j++)
      if (a[j] > a[j + 1]) {
        [a[j], a[j + 1]] = [a[j + 1], a[j]];
        inv++;
      }
  const n = pos.length;
  return 1 - (4 * inv) / (n * (n - 1));
}

test('the InterCode reward on hand-made cases', () => {
  const r = (...xs: unknown[][]) => xs;
  // IoU: {a, b, c} vs {b, c, d} → 2/4.
  assert.equal(interCodeScore(r([1], [2], [3]), r([2], [3], [4]), false).reward, 0.5);
  // Multiset duplicates count: agent [x, x, y], gold [x, y, y] → min: x1 + y1 = 2, max: x2 + y2 = 4.
  assert.equal(multisetIoU(['x', 'x', 'y'], ['x', 'y', 'y']), 0.5);
  assert.equal(interCodeScore(r(['a'], ['a']), r(['a']), false).reward, 0.5);
  // Both empty → 1; one empty → 0; not a list (an error) → 0.
  assert.deepEqual(interCodeScore([], [], true), { reward: 1, iou: 1, tau: null });
  assert.equal(interCodeScore([], r([1]), false).reward, 0);
  assert.equal(interCodeScore(null, [], false).reward, 0);
  // Rows are compared as whole tuples: [1, 2] is not [2, 1]; 1 is not '1'.
  assert.equal(interCodeScore(r([1, 2]), r([2, 1]), false).reward, 0);
  assert.equal(interCodeScore(r([1]), r(['1']), false).reward, 0);
  // Unordered questions ignore the order; ordered ones scale by τ.
  const gold = r([1], [2], [3], [4]);
  const reversed = r([4], [3], [2], [1]);
  assert.equal(interCodeScore(reversed, gold, false).reward, 1);
  assert.deepEqual(interCodeScore(reversed, gold, true), { reward: -1, iou: 1, tau: -1 });
  // One swap of four: τ = (5 − 1)/6 = 2/3.
  const swapped = r([2], [1], [3], [4]);
  assert.equal(interCodeScore(swapped, gold, true).tau, 2 / 3);
  // τ only over the intersected rows: agent [3, 9, 1], gold [1, 2, 3] → IoU 2/4, intersected orders
  // [3, 1] vs [1, 3] → τ = −1, reward −0.5.
  assert.deepEqual(interCodeScore(r([3], [9], [1]), r([1], [2], [3]), true), {
    reward: -0.5,
    iou: 0.5,
    tau: -1,
  });
  // A single intersected row: τ undefined, the reward is the IoU.
  assert.deepEqual(interCodeScore(r([1], [5]), r([1], [6]), true), { reward: 1 / 3, iou: 1 / 3, tau: null });
  // Duplicates in order: the k-th occurrences pair up, so [x, x, y] vs itself is τ = 1.
  assert.equal(kendallTauOfOrders(['x', 'x', 'y'], ['x', 'x', 'y']), 1);
  assert.equal(kendallTauOfOrders(['y', 'x', 'x'], ['x', 'x', 'y']), -1 / 3);
  // Against brute force on random permutations.
  const rng = Rng.derive(13);
  for (let trial = 0; trial < 200; trial++) {
    const n = 2 + rng.int(9);
    const g = Array.from({ length: n }, (_, i) => `r${i}`);
    const a = rng.shuffle([...g]);
    assert.ok(Math.abs((kendallTauOfOrders(a, g) as number) - bubbleTau(a, g)) < 1e-12);
  }
  // The exact-match variant.
  assert.equal(exactScore(reversed, gold, false).reward, 1);
  assert.equal(exactScore(reversed, gold, true).reward, 0);
  assert.equal(exactScore(gold, gold, true).reward, 1);
  assert.equal(exactScore(r([1]), gold, false).reward, 0);
  // ORDER BY inside a string literal does not make a question ordered.
  assert.equal(isOrdered("SELECT name FROM t WHERE x = 'order by'"), false);
  assert.equal(isOrdered('SELECT name FROM t ORDER  BY id'), true);
});

async function stepAll(env: SqlEnv, actions: ToolCall[]) {
  env.reset(0);
  const out = [];
  for (const a of actions) out.push(await env.step(a));
  return out;
}

test('the connection is read-only: writes, ATTACH, PRAGMA writes and load_extension are tool errors', async () => {
  const env = sqlEnv(1);
  const t = env.world.domain.people.table;
  const before = env.world.rows[t].length;
  const refused = [
    `INSERT INTO ${t} VALUES (999, 'x', 'y', 2020)`,
    `DELETE FROM ${t}`,
    `UPDATE ${t} SET name = 'x'`,
    `DROP TABLE ${t}`,
    'CREATE TABLE evil (x)',
    "ATTACH DATABASE '/tmp/evil.db' AS evil",
    "  /* hidden */ attach ':memory:' AS m",
    'DETACH DATABASE main',
    'PRAGMA user_version = 3',
    'PRAGMA journal_mode = WAL',
    'PRAGMA writable_schema',
    "SELECT load_extension('/tmp/x.so')",
    'SELECT randomblob(1000000000)',
    `SELECT 1; DROP TABLE ${t}`,
  ];
  for (const q of refused) {
    const [r] = await stepAll(env, [call('execute_sql', { query: q })]);
    assert.equal(r.info.valid, false, q);
    assert.equal(r.info.error, 'refused', `${q}: ${r.observation.last?.error}`);
    assert.equal(r.terminated, false, q);
    assert.equal(r.observation.last?.ok, false);
  }
  // Allowed read-only PRAGMA, and the table is untouched.
  const [info] = await stepAll(env, [call('execute_sql', { query: `PRAGMA table_info(${t})` })]);
  assert.equal(info.info.valid, undefined);
  const [count] = await stepAll(env, [call('execute_sql', { query: `SELECT COUNT(*) FROM ${t}` })]);
  assert.deepEqual((count.observation.last!.output as { rows: unknown[][] }).rows, [[before]]);
  env.close();
});

test('runaway queries return within the limit as tool errors', async () => {
  const env = sqlEnv(2);
  const t = env.world.domain.links.table;
  const runaway = [
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c',
    // SQLite does not need the RECURSIVE keyword: the plan, not the text, gives it away.
    'WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c',
    `SELECT COUNT(*) FROM ${t} a, ${t} b, ${t} c, ${t} d, ${t} e`,
    `SELECT * FROM ${t} a CROSS JOIN ${t} b CROSS JOIN ${t} c CROSS JOIN ${t} d`,
  ];
  for (const q of runaway) {
    const t0 = performance.now();
    const [r] = await stepAll(env, [call('execute_sql', { query: q })]);
    assert.ok(performance.now() - t0 < 2000, q);
    assert.equal(r.info.valid, false, q);
    assert.ok(r.info.error === 'limit' || r.info.error === 'refused', `${q}: ${r.info.error}`);
  }
  // A three-way join is within the limits.
  const [ok] = await stepAll(env, [
    call('execute_sql', { query: `SELECT COUNT(*) FROM ${t} a, ${t} b, ${t} c` }),
  ]);
  const n = env.world.rows[t].length;
  assert.deepEqual((ok.observation.last!.output as { rows: unknown[][] }).rows, [[n ** 3]]);
  env.close();
});

test('failure kinds: only submit ends an episode; unknown names are misperception there', async () => {
  const env = sqlEnv(5, { level: 2 });
  const gold = env.world.question.gold;
  const submit = (query: string) => call('submit', { query });
  const cases: [ToolCall, string | undefined, boolean | undefined][] = [
    [submit('SELECT * FROM nowhere'), 'misperception', false],
    [submit(`SELECT nosuchcolumn FROM ${env.world.domain.people.table}`), 'misperception', false],
    [submit('SELEC name'), 'invalid-action', false],
    [submit(`DROP TABLE ${env.world.domain.people.table}`), 'invalid-action', false],
    [submit('SELECT 1'), 'wrong-answer', undefined],
    [submit(gold), undefined, undefined],
  ];
  for (const [a, failure, valid] of cases) {
    const [r] = await stepAll(env, [a]);
    assert.equal(r.terminated, true, JSON.stringify(a));
    assert.equal(r.info.failure, failure, JSON.stringify(a));
    assert.equal(r.info.valid, valid);
    assert.equal(r.info.success, failure === undefined);
    assert.equal(r.reward, failure === undefined ? 1 : 0);
    // Acting after the end is a tool error, not an exception.
    const after = await env.step(call('list_tables'));
    assert.equal(after.info.valid, false);
  }
  // Tool errors that do not end the episode carry the category and an informative message.
  const steps = await stepAll(env, [
    call('describe_table', { table: 'nowhere' }),
    call('execute_sql', { query: 'SELECT nope FROM nowhere' }),
    call('drop_everything'),
    call('execute_sql', { query: 42 }),
    call('submit', {}),
    call('list_tables', { extra: 1 }),
  ]);
  assert.deepEqual(
    steps.map((r) => [r.terminated, r.info.valid, r.info.error]),
    [
      [false, false, 'no-such-table'],
      [false, false, 'no-such-table'],
      [false, false, 'schema'],
      [false, false, 'schema'],
      [false, false, 'schema'],
      [false, false, 'schema'],
    ],
  );
  assert.match(steps[0].observation.last?.error ?? '', /tables are .*customers|students|members/);
  // execute_sql reports the per-turn quality: the gold query scores 1, an unrelated one less.
  const [g, other] = await stepAll(env, [
    call('execute_sql', { query: gold }),
    call('execute_sql', { query: 'SELECT 1' }),
  ]);
  assert.equal(g.info.quality, 1);
  assert.equal(other.info.quality, 0);
  env.close();
  env.close(); // a second close is safe
});

test('results are cut to params.rows with the total count, and the text view shows them', async () => {
  const env = sqlEnv(4, { rows: 3 });
  const t = env.world.domain.people.table;
  const [r] = await stepAll(env, [call('execute_sql', { query: `SELECT id FROM ${t}` })]);
  const out = r.observation.last?.output as { rows: unknown[][]; total: number };
  assert.deepEqual(out.rows, [[1], [2], [3]]);
  assert.equal(out.total, env.world.rows[t].length);
  const text = env.text(r.observation);
  assert.match(text, new RegExp(`${out.total} row\\(s\\), first 3 shown`));
  assert.ok(text.startsWith(`Question: ${env.world.question.text}`));
  // stateKey is the question and the result, not the call.
  const o2: SqlObservation = { ...r.observation, last: { ...r.observation.last!, tool: 'submit' } };
  assert.equal(env.stateKey(o2), env.stateKey(r.observation));
  env.close();
});

test('checkEnv passes on the sql env (menu actions, errors, snapshots) and closes every env', async () => {
  for (const seed of [0, 1, 2]) {
    let made = 0;
    let closed = 0;
    const make = () => {
      const env = sqlEnv(seed);
      made++;
      const close = env.close.bind(env);
      env.close = () => {
        closed++;
        close();
      };
      return env as unknown as Env<SqlObservation, ToolCall>;
    };
    const menu = sqlEnv(seed).scripted().validActions([]);
    const extra = [call('describe_table', { table: 'nope' }), call('execute_sql', { query: 'SELEC' })];
    const problems = await checkEnv(make, {
      episodes: 6,
      maxTurns: 12,
      seed,
      action: (rng) => (rng.int(5) === 0 ? extra[rng.int(2)] : menu[rng.int(menu.length)]),
      malformed: { name: 'no_such_tool', arguments: {} },
    });
    assert.deepEqual(problems, []);
    assert.equal(closed, made);
  }
});

test('the menu is valid and the tool schemas agree with the checks (ajv)', async () => {
  const env = sqlEnv(9);
  const menu = env.scripted().validActions([]);
  assert.equal(new Set(menu.map((a) => JSON.stringify(a))).size, menu.length);
  for (const a of menu) {
    const [r] = await stepAll(env, [a]);
    assert.notEqual(r.info.valid, false, JSON.stringify(a));
  }
  env.close();
  const ajv = new Ajv();
  const byName = new Map(SQL_TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
  const cases: ToolCall[] = [
    call('list_tables'),
    call('list_tables', { x: 1 }),
    call('describe_table', { table: 'a' }),
    call('describe_table', {}),
    call('execute_sql', { query: '' }),
    call('execute_sql', { query: 'SELECT 1' }),
    call('submit', { query: 1 }),
    call('submit', { query: 'SELECT 1', extra: true }),
  ];
  for (const c of cases) assert.equal(byName.get(c.name)!(c.arguments), parseCall(c).ok, JSON.stringify(c));
});

function ctxFor(env: SqlEnv, history: Turn[], seed = 0): TurnContext<unknown> {
  return { observation: null, history, turn: history.length, rng: Rng.derive(seed), env } as never;
}

test('scripted policies: honest logp from ctx.rng, gold path for the oracle', () => {
  const env = sqlEnv(3, { level: 2 });
  const spec = env.spec;
  const menu = env.scripted().validActions([]);
  const oracle = makePolicy('oracle', spec);
  const first = oracle.act(ctxFor(env, [])) as { action: ToolCall; logp: number };
  assert.deepEqual([first.action, first.logp], [call('list_tables'), 0]);
  // After list_tables, the oracle describes the gold's tables in order, then executes and submits gold.
  const seen: ToolCall[] = [];
  const history: Turn[] = [];
  for (let t = 0; t < 8; t++) {
    const a = (oracle.act(ctxFor(env, history)) as { action: ToolCall }).action;
    seen.push(a);
    history.push({ t, observation: null, action: a, reward: 0, logp: 0, info: {} });
    if (a.name === 'submit') break;
  }
  const q = env.world.question;
  assert.deepEqual(seen, [
    call('list_tables'),
    ...q.tables.map((table) => call('describe_table', { table })),
    call('execute_sql', { query: q.gold }),
    call('submit', { query: q.gold }),
  ]);
  // eps: the gold action has log(1 − ε), a detour log(ε / |menu without gold|).
  const eps = makePolicy('oracle:eps=0.3', spec);
  const wrong = menu.filter((a) => a.name !== 'list_tables').length;
  const logps = new Set<number>();
  for (let s = 0; s < 200; s++) {
    const ctx = ctxFor(env, [], s);
    const a = eps.act(ctx) as { action: ToolCall; logp: number };
    assert.equal(eps.logProb!(ctxFor(env, []), a.action), a.logp);
    logps.add(a.logp);
  }
  assert.deepEqual([...logps].sort(), [Math.log(0.3 / wrong), Math.log(0.7)].sort());
  const random = makePolicy('random', spec);
  const a = random.act(ctxFor(env, [], 1)) as { action: ToolCall; logp: number };
  assert.equal(a.logp, -Math.log(menu.length));
  assert.equal(random.logProb!(ctxFor(env, []), call('submit', { query: 'SELECT 42' })), -Infinity);
  assert.throws(() => makePolicy('oracle:temp=0.5', spec), InputError);
  env.close();
});

test('every env a rollout makes is closed once', async () => {
  let made = 0;
  let closed = 0;
  const makeCounted = (t: Parameters<typeof envs.make>[0]) => {
    const env = envs.make(t) as unknown as SqlEnv;
    made++;
    const close = env.close.bind(env);
    env.close = () => {
      closed++;
      close();
    };
    return env as unknown as Env<unknown, unknown>;
  };
  const tasks = makeTasks(envConfig('sql', {}), 12, 100);
  const spec = envs.spec(tasks[0]);
  for (const p of ['oracle', 'oracle:eps=0.3', 'random']) {
    const r = await rollout({
      tasks,
      samples: 2,
      budget: 20,
      runSeed: 1,
      policy: makePolicy(p, spec),
      makeEnv: makeCounted,
      concurrency: 3,
    });
    assert.equal(r.length, 24);
    if (p === 'oracle') assert.ok(r.every((t) => t.outcome.success && t.outcome.turns <= 6));
  }
  // One env per episode (queries are asynchronous, so the rollout runs its async pool, which makes an
  // env per episode; the sync loop would reuse a task's env across its samples), each closed once.
  assert.deepEqual([made, closed], [72, 72]);
});

test('CLI: rollout --env sql succeeds on every task with the oracle, on fewer with eps, almost none at random', async () => {
  const run = (policy: string) => rolloutContract('sql', policy);
  const oracle = await run('oracle');
  assert.deepEqual([oracle.episodes, oracle.success], [50, 1]);
  const eps = await run('oracle:eps=0.3');
  assert.ok(eps.success > 0.1 && eps.success < 0.9, String(eps.success));
  const random = await run('random');
  assert.ok(random.success <= 0.06, String(random.success));
  assert.equal(random.failures['wrong-answer'] + random.failures.budget, 50 - random.success * 50);
});

test('CLI: env describe and env export; the exported file gives the gold result', async () => {
  const d = await turnwise(['env', 'describe', 'sql', '--task-seed', '11', '--gold', '--json']);
  assert.equal(d.code, 0, d.stderr);
  const desc = JSON.parse(d.stdout) as { question: string; gold: { query: string; rows: unknown[][] } };
  assert.equal(desc.question, sqlWorld(task(11)).question.text);
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-sql-'));
  const file = join(dir, 'db.sqlite');
  const e = await turnwise(['env', 'export', 'sql', '--task-seed', '11', '--out', file]);
  assert.equal(e.code, 0, e.stderr);
  assert.ok(existsSync(file));
  const db = new Database(file, { readonly: true });
  assert.deepEqual(db.prepare(desc.gold.query).raw(true).all(), desc.gold.rows);
  db.close();
  assert.ok(readFileSync(file).equals(sqlWorld(task(11)).bytes));
  // An existing or unwritable path is refused with one line and exit 2.
  for (const out of [file, join(dir, 'missing', 'db.sqlite')]) {
    const again = await inProcess(['env', 'export', 'sql', '--task-seed', '11', '--out', out]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /^turnwise: --out: got .*\n$/);
  }
  const bad = await turnwise([
    'rollout',
    '--env',
    'sql',
    '--level',
    '4',
    '--policy',
    'oracle',
    '--tasks',
    '1',
  ]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, 'turnwise: --level: got "4"; expected 1, 2, 3 or mixed\n');
  const text = await turnwise(['env', 'describe', 'sql', '--task-seed', '11']);
  assert.match(text.stdout, /^sql \{.*\} task seed 11\ndomain \w+, level \d/);
  assert.ok(!text.stdout.includes('gold:'));
});
