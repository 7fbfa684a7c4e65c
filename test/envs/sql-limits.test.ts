// The sql env's limits hold whatever the query does (issue 21 §2): refused functions are refused by the
// name SQLite resolves, however the query spells them; queries that spend their time inside one native
// step (an aggregate over a product of virtual tables that no plan estimate sees) end at the deadline
// because the host kills their process, and the event loop stays free meanwhile; memory is capped per
// process; results and error messages that cross to the host are bounded; no process is left once the
// envs are closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { ToolCall } from '../../src/core/types.ts';
import { envConfig } from '../../src/envs/index.ts';
import {
  DEFAULT_LIMITS,
  ERROR_CHARS,
  guardConnection,
  KILL_GRACE_MS,
  queryPool,
  SqlEnv,
  sqlWorld,
} from '../../src/envs/sql/index.ts';

const task = (seed: number) => ({ ...envConfig('sql', {}), seed });
const run = (query: string): ToolCall => ({ name: 'execute_sql', arguments: { query } });

/** A text of 10^k ones separated by commas, built by nested replace() (no refused function). */
const ones = (k: number) => {
  let s = "'1'";
  for (let i = 0; i < k; i++) s = `replace(${s}, '1', '1,1,1,1,1,1,1,1,1,1')`;
  return s;
};
const array = (k: number) => `'[' || ${ones(k)} || ']'`;

test('refused functions are refused by what SQLite resolves, however spelled, and overridden on the connection', async () => {
  const env = new SqlEnv(sqlWorld(task(1)));
  env.reset(1);
  const t = env.world.domain.people.table;
  const cases: [string, string][] = [
    [`SELECT "printf"('%.*c', 1000000000, 'x')`, 'printf() is not allowed'],
    [`SELECT [printf]('%.*c', 1000000000, 'x')`, 'printf() is not allowed'],
    ["SELECT `PRINTF`('%.*c', 1000000000, 'x')", 'printf() is not allowed'],
    [`SELECT "format"('%.*c', 1000000000, 'x')`, 'format() is not allowed'],
    [`SELECT length([zeroblob](1000000000))`, 'zeroblob() is not allowed'],
    [`SELECT hex("RandomBlob"(1000000000))`, 'randomblob() is not allowed'],
    [
      `SELECT name FROM ${t} WHERE id IN (SELECT length("zeroblob"(id)) FROM ${t})`,
      'zeroblob() is not allowed',
    ],
    [`SELECT group_concat(name) FROM ${t} GROUP BY "printf"('%d', id)`, 'printf() is not allowed'],
    [`SELECT "load_extension"('/tmp/x.so')`, 'load_extension() is not allowed'],
  ];
  for (const [query, message] of cases) {
    const r = await env.step(run(query));
    assert.deepEqual(
      [r.info.valid, r.info.error, r.observation.last?.error],
      [false, 'refused', message],
      query,
    );
  }
  env.close();
  // Whatever the bytecode check might miss, the built-in is never reached: the connection's own
  // function wins SQLite's resolution at every arity and spelling.
  const db = guardConnection(new Database(sqlWorld(task(1)).bytes, { readonly: true }));
  for (const q of [`SELECT "printf"('x')`, 'SELECT ZEROBLOB(1, 2)', 'SELECT [randomblob]()']) {
    assert.throws(() => db.prepare(q).get(), /is not allowed/, q);
  }
  db.close();
});

test('queries inside one long native step end at the deadline: the host kills the process', async () => {
  const timeoutMs = 300;
  const world = sqlWorld(task(2));
  const env = new SqlEnv(world, { ...DEFAULT_LIMITS, timeoutMs });
  env.reset(2);
  const t = world.domain.links.table;
  // Warm a process (its start-up is not the step's time).
  await env.step(run(`SELECT COUNT(*) FROM ${t}`));
  // Each passes the plan's cost estimate (a virtual table counts as the largest table) and runs for
  // seconds to hours in one sqlite3_step: json_each/json_tree over generated arrays, pragma functions.
  const runaway = [
    `SELECT count(*) FROM json_each(${array(4)}) a, json_each(${array(4)}) b, json_each(${array(4)}) c`,
    `SELECT count(*) FROM pragma_function_list a, pragma_function_list b, pragma_function_list c`,
    `SELECT count(*) FROM json_tree(${array(4)}) a, json_each(${array(4)}) b`,
    `SELECT max(a.value + b.value) FROM json_each(${array(4)}) a, json_each(${array(4)}) b, ${t} c`,
  ];
  for (const query of runaway) {
    let free = false;
    setImmediate(() => {
      free = true;
    });
    const t0 = performance.now();
    const r = await env.step(run(query));
    const ms = performance.now() - t0;
    assert.ok(free, `the step blocked the event loop: ${query}`);
    assert.ok(ms >= timeoutMs && ms < timeoutMs + KILL_GRACE_MS + 5000, `${ms} ms: ${query}`);
    assert.deepEqual(
      [r.info.valid, r.info.error, r.observation.last?.error],
      [false, 'limit', `the query ran past ${timeoutMs} ms`],
      query,
    );
    // The next query runs in a fresh process.
    const ok = await env.step(run(`SELECT COUNT(*) FROM ${t}`));
    assert.deepEqual(ok.observation.last?.output, {
      columns: ['COUNT(*)'],
      rows: [[world.rows[t].length]],
      total: 1,
    });
  }
  env.close();
  await queryPool.drained();
  assert.equal(queryPool.live, 0, 'a query process outlived its envs');
});

test('memory is capped per query process; results and messages crossing to the host are bounded', async () => {
  const world = sqlWorld(task(3));
  const env = new SqlEnv(world);
  env.reset(3);
  const t = world.domain.people.table;
  // Three values of 200 MB each, none past SQLite's length limit: 600 MB in one row.
  const huge = await env.step(
    run(
      `SELECT length(a) + length(b) + length(c) FROM (SELECT ${ones(8)} a, ${ones(8)} || 'b' b, ${ones(8)} || 'c' c)`,
    ),
  );
  assert.deepEqual([huge.info.error, huge.observation.last?.error], ['limit', 'out of memory']);
  // 100 000 characters per row, one row per person: past maxChars.
  const wide = await env.step(run(`SELECT ${ones(5)} FROM ${t}`));
  assert.deepEqual(
    [wide.info.error, wide.observation.last?.error],
    ['limit', `the result is over ${DEFAULT_LIMITS.maxChars} characters (6 rows read)`],
  );
  // An error message quoting a 19 000-character name is cut.
  const long = await env.step(run(`SELECT * FROM "${'x'.repeat(19_000)}"`));
  assert.equal(long.info.error, 'no-such-table');
  assert.equal(long.observation.last?.error, `no such table: ${'x'.repeat(ERROR_CHARS - 15)}`);
  // The env still answers.
  const ok = await env.step(run(`SELECT COUNT(*) FROM ${t}`));
  assert.equal(ok.info.valid, undefined);
  env.close();
  await queryPool.drained();
  assert.equal(queryPool.live, 0);
});
