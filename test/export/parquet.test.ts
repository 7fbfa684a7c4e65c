// Typed Parquet columns (src/export/parquet.ts): the inferred type of a column by pyarrow's rule for a
// list of dicts (and the two differences Parquet forces), and nested values written with
// hyparquet-writer read back equal by DuckDB and hyparquet — nulls, empty lists, missing struct members.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import {
  DOUBLE,
  INT64,
  inferType,
  listOf,
  opt,
  type ParquetType,
  req,
  STRING,
  struct,
  writeParquet,
} from '../../src/export/parquet.ts';

import { duckdb } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-parquet-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const duck = await duckdb();

const field = (name: string, type: ParquetType) => ({ name, type });

test('inference: struct members in the order first seen, missing ones nullable; lists of the unified element', () => {
  assert.deepEqual(inferType([{ a: 1 }, { b: 'x', a: 2 }, null]), {
    kind: 'struct',
    fields: [field('a', INT64), field('b', STRING)],
  });
  assert.deepEqual(inferType([[{ x: true }], [], [{ y: [1.5] }]]), {
    kind: 'list',
    element: {
      kind: 'struct',
      fields: [field('x', { kind: 'boolean' }), field('y', { kind: 'list', element: DOUBLE })],
    },
  });
});

test('inference: int and double unify to double; other mixed kinds, and structs that never have a member, are JSON text; all null is text', () => {
  assert.deepEqual(inferType([1, 2.5]), DOUBLE);
  assert.deepEqual(inferType([1, 2]), INT64);
  assert.deepEqual(inferType([1, 'a']), { kind: 'json' });
  assert.deepEqual(inferType([{ a: [1] }, { a: { b: 1 } }]), {
    kind: 'struct',
    fields: [field('a', { kind: 'json' })],
  });
  assert.deepEqual(inferType([{}, {}]), { kind: 'json' });
  assert.deepEqual(inferType([null, undefined]), STRING);
  assert.deepEqual(inferType([]), STRING);
});

test('round trip: nested lists and structs read back by DuckDB and hyparquet as written', async () => {
  const args = [{ query: 'SELECT 1' }, { table: 't' }, {}];
  const rows = [
    {
      name: 'a',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', calls: args.map((a, i) => ({ id: `c${i}`, args: a })) },
      ],
      n: 2 ** 40,
      mixed: 1,
    },
    { name: 'b', messages: [], n: -1, mixed: 'one' },
    { name: 'c', messages: [{ role: 'user', content: 'x', calls: [] }], n: 0, mixed: null },
  ];
  const call = struct(req('id', STRING), opt('args', inferType(args)));
  const fields = [
    req('name', STRING),
    req('messages', listOf(struct(req('role', STRING), req('content', STRING), opt('calls', listOf(call))))),
    req('n', INT64),
    opt('mixed', inferType(rows.map((r) => r.mixed))),
  ];
  const file = join(dir, 'x.parquet');
  writeFileSync(file, writeParquet(fields, rows));

  assert.deepEqual(Object.entries(await duck.describe(file)), [
    ['name', 'VARCHAR'],
    [
      'messages',
      'STRUCT("role" VARCHAR, "content" VARCHAR, calls STRUCT(id VARCHAR, args STRUCT(query VARCHAR, "table" VARCHAR))[])[]',
    ],
    ['n', 'BIGINT'],
    ['mixed', 'VARCHAR'],
  ]);
  const viaSql = await duck.rows(
    `SELECT len(messages) AS k, messages[2].calls[2].args."table" AS t, messages[2].calls[3].args.query AS q, messages[1].calls AS c, n, mixed FROM read_parquet('${file}')`,
  );
  assert.deepEqual(viaSql, [
    { k: 2, t: 't', q: null, c: null, n: 2 ** 40, mixed: '1' },
    { k: 0, t: null, q: null, c: null, n: -1, mixed: '"one"' },
    { k: 1, t: null, q: null, c: [], n: 0, mixed: null },
  ]);

  const read = (await parquetReadObjects({ file: await asyncBufferFromFile(file) })) as Record<
    string,
    unknown
  >[];
  assert.deepEqual(
    read.map((r) => r.messages),
    [
      [
        // hyparquet gives a null list nested in a struct as undefined.
        { role: 'user', content: 'hi', calls: undefined },
        {
          role: 'assistant',
          content: '',
          calls: [
            { id: 'c0', args: { query: 'SELECT 1', table: null } },
            { id: 'c1', args: { query: null, table: 't' } },
            { id: 'c2', args: { query: null, table: null } },
          ],
        },
      ],
      [],
      [{ role: 'user', content: 'x', calls: [] }],
    ],
  );
  assert.deepEqual(
    read.map((r) => [r.n, r.mixed]),
    [
      [BigInt(2 ** 40), '1'],
      [-1n, '"one"'],
      [0n, null],
    ],
  );
});
