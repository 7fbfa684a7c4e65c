// `turnwise export --format verl | verl-sft` end to end, through the real CLI, on real trajectories:
// FrozenLake rolled out by the openai policy against `turnwise serve` in tools and in text mode (every
// request kept: what the model was sent), and sql episodes of examples/sql-agent.ts recorded by
// `turnwise harness run` (fixtures.ts). Each file is read back by two readers that are not
// hyparquet-writer: DuckDB (the column types as DESCRIBE states them, and values through SQL on the
// nested columns) and hyparquet (every row, checked against the trajectories, the requests and
// `turnwise env describe --gold`).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { Trajectory } from '../../src/core/types.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import {
  type ChatRequest,
  canonical,
  duckdb,
  harnessSql,
  type Msg,
  plain,
  readJsonl,
  servedFrozenLake,
} from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'turnwise-export-verl-'));
after(() => rmSync(root, { recursive: true, force: true }));
const { describe, rows: sql } = await duckdb();

const NAMES = ['Left', 'Down', 'Right', 'Up'];
type Row = Record<string, unknown>;

/** A struct read back without its null members: the keys another value of the file has. */
const dropNulls = (x: unknown): unknown =>
  Array.isArray(x)
    ? x.map(dropNulls)
    : x !== null && typeof x === 'object'
      ? Object.fromEntries(
          Object.entries(x)
            .filter(([, v]) => v !== null && v !== undefined)
            .map(([k, v]) => [k, dropNulls(v)]),
        )
      : x;

/** hyparquet's rows and its flattened schema (name:type:repetition:converted). */
async function hyparquet(file: string): Promise<{ rows: Row[]; schema: string[] }> {
  const buf = await asyncBufferFromFile(file);
  const md = await parquetMetadataAsync(buf);
  const rows = plain(await parquetReadObjects({ file: buf })) as Row[];
  const schema = md.schema.map((s) =>
    [s.name, s.type ?? '', s.repetition_type ?? '', s.converted_type ?? ''].join(':'),
  );
  return { rows, schema };
}

async function exported(args: string[]): Promise<Record<string, unknown>> {
  const r = await turnwise(['export', ...args, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  return JSON.parse(r.stdout);
}

/** The ground truth an independent route gives: `turnwise env describe … --gold --json`. */
async function described(args: string[]): Promise<Record<string, unknown>> {
  const r = await turnwise(['env', 'describe', ...args, '--gold', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** Trajectories grouped by task, in the order first seen. */
function byTask(ts: readonly Trajectory[]): Trajectory[][] {
  const groups = new Map<string, Trajectory[]>();
  for (const t of ts) {
    const k = canonical(t.task);
    groups.set(k, [...(groups.get(k) ?? []), t]);
  }
  return [...groups.values()];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const PROMPT_TYPE = 'STRUCT("role" VARCHAR, "content" VARCHAR)[]';
const LAKE_TASK =
  'STRUCT(env VARCHAR, params STRUCT(random BOOLEAN, size BIGINT, p DOUBLE, slippery BOOLEAN), seed BIGINT)';
const EXTRA_INFO = `split VARCHAR, "index" BIGINT, task ${LAKE_TASK}, samples BIGINT, successes BIGINT, mean_return DOUBLE, need_tools_kwargs BOOLEAN`;

// ── FrozenLake through `turnwise serve`, tools and text mode ────────────────────────────────────────
const lake = ['--random', '--size', '4'];
const fl = {
  tools: join(root, 'fl-tools.jsonl'),
  text: join(root, 'fl-text.jsonl'),
  sent: [] as ChatRequest[][],
};
before(async () => {
  const args = [...lake, '--tasks', '3', '--samples', '4', '--budget', '12', '--seed', '7'];
  fl.sent = await servedFrozenLake(
    ['--policy', 'oracle:eps=0.3', ...lake, '--tasks', '3', '--seed', '7'],
    [
      { file: fl.tools, args },
      { file: fl.text, args, mode: 'text' },
    ],
  );
});

for (const mode of ['tools', 'text'] as const)
  test(`verl of served FrozenLake (${mode}): one row per task, prompt a list of {role, content} structs — the first request of its episodes — and the map as ground truth`, async () => {
    const file = mode === 'tools' ? fl.tools : fl.text;
    const sent = fl.sent[mode === 'tools' ? 0 : 1];
    const ts = readJsonl<Trajectory>(file);
    const groups = byTask(ts);
    assert.equal(groups.length, 3);
    const out = join(root, `fl-${mode}-verl.parquet`);
    const summary = await exported(['--in', file, '--format', 'verl', '--chat', mode, '--out', out]);
    assert.deepEqual(
      [summary.trajectories, summary.rows, summary.tasks, summary.withGroundTruth, summary.split],
      [12, 3, 3, 3, 'train'],
    );

    const toolsKwargs = `, tools_kwargs STRUCT("move" STRUCT(create_kwargs STRUCT(ground_truth VARCHAR, task ${LAKE_TASK})))`;
    assert.deepEqual(await describe(out), {
      data_source: 'VARCHAR',
      prompt: PROMPT_TYPE,
      ability: 'VARCHAR',
      reward_model: 'STRUCT(style VARCHAR, ground_truth VARCHAR)',
      extra_info: `STRUCT(${EXTRA_INFO}${mode === 'tools' ? toolsKwargs : ''})`,
    });
    const { rows, schema } = await hyparquet(out);
    const at = schema.indexOf('prompt::REQUIRED:LIST');
    assert.deepEqual(schema.slice(at, at + 5), [
      'prompt::REQUIRED:LIST',
      'list::REPEATED:',
      'element::REQUIRED:',
      'role:BYTE_ARRAY:REQUIRED:UTF8',
      'content:BYTE_ARRAY:REQUIRED:UTF8',
    ]);

    // The prompt of an episode is its first request (system and the first board): every row's prompt is
    // the first request of exactly its task's episodes, and the rows cover them all.
    const firsts = sent.filter((q) => q.messages.length === 2).map((q) => canonical(q.messages));
    assert.equal(firsts.length, ts.length);
    const truths: string[] = [];
    for (const [i, g] of groups.entries()) {
      const row = rows[i] as { prompt: Msg[]; reward_model: Row; extra_info: Row } & Row;
      const d = await described(['frozenlake', ...lake, '--seed', String(g[0].task.seed)]);
      truths.push((d.desc as string[]).join('\n'));
      assert.equal(firsts.filter((f) => f === canonical(row.prompt)).length, g.length, `row ${i}`);
      assert.deepEqual(
        row.prompt.map((m) => m.role),
        ['system', 'user'],
      );
      assert.equal(row.data_source, 'turnwise/frozenlake');
      assert.equal(row.ability, 'navigation');
      assert.deepEqual(row.reward_model, { style: 'rule', ground_truth: truths[i] });
      const task = g[0].task;
      const kwargs = { move: { create_kwargs: { ground_truth: truths[i], task } } };
      assert.deepEqual(row.extra_info, {
        split: 'train',
        index: i,
        task,
        samples: g.length,
        successes: g.filter((t) => t.outcome.success).length,
        mean_return: mean(g.map((t) => t.outcome.return)),
        need_tools_kwargs: mode === 'tools',
        ...(mode === 'tools' ? { tools_kwargs: kwargs } : {}),
      });
    }
    assert.ok(new Set(truths).size === 3, 'three maps');

    // The same values through SQL on the nested columns.
    assert.deepEqual(
      await sql(
        `SELECT len(prompt) AS n, prompt[1].role AS first, prompt[2].content AS board, reward_model.ground_truth AS truth, extra_info.task.seed AS seed, extra_info.samples AS samples FROM read_parquet('${out}')`,
      ),
      groups.map((g, i) => ({
        n: 2,
        first: 'system',
        board: (rows[i].prompt as Msg[])[1].content,
        truth: truths[i],
        seed: g[0].task.seed,
        samples: 4,
      })),
    );
  });

test('verl --split: written in every row', async () => {
  const out = join(root, 'fl-test.parquet');
  await exported(['--in', fl.tools, '--format', 'verl', '--split', 'test', '--out', out]);
  assert.deepEqual(await sql(`SELECT DISTINCT extra_info.split AS s FROM read_parquet('${out}')`), [
    { s: 'test' },
  ]);
});

/** A recorded request's messages in verl's shape: content "" when none, arguments parsed. */
const verlShape = (ms: Msg[]) =>
  ms.map((m) => ({
    ...m,
    content: m.content ?? '',
    ...(Array.isArray(m.tool_calls)
      ? {
          tool_calls: (m.tool_calls as { function: { name: string; arguments: string } }[]).map((c) => ({
            ...c,
            function: { ...c.function, arguments: JSON.parse(c.function.arguments) },
          })),
        }
      : {}),
  }));

test('verl-sft of served FrozenLake (tools): messages a list of structs with tool calls, the successful trajectories, each the conversation the policy sent', async () => {
  const ts = readJsonl<Trajectory>(fl.tools);
  const won = ts.filter((t) => t.outcome.success);
  assert.ok(won.length > 0 && won.length < ts.length, 'successes and failures');
  const out = join(root, 'fl-sft.parquet');
  const summary = await exported(['--in', fl.tools, '--format', 'verl-sft', '--out', out]);
  assert.deepEqual([summary.read, summary.trajectories, summary.successful], [12, won.length, won.length]);

  const direction = 'STRUCT("type" VARCHAR, "enum" VARCHAR[])';
  assert.deepEqual(await describe(out), {
    messages:
      'STRUCT("role" VARCHAR, "content" VARCHAR, tool_calls STRUCT(id VARCHAR, "type" VARCHAR, "function" STRUCT("name" VARCHAR, arguments STRUCT(direction VARCHAR)))[], tool_call_id VARCHAR)[]',
    tools: `STRUCT("type" VARCHAR, "function" STRUCT("name" VARCHAR, description VARCHAR, parameters STRUCT("type" VARCHAR, properties STRUCT(direction ${direction}), required VARCHAR[], additionalProperties BOOLEAN)))[]`,
    id: 'VARCHAR',
    task: LAKE_TASK,
    reward: 'DOUBLE',
    success: 'BOOLEAN',
  });

  // Through SQL: each row's roles, and the direction of each assistant message's call — the actions.
  const viaSql = await sql(
    `SELECT id, list_transform(messages, m -> m.role) AS roles, list_transform(list_filter(messages, m -> m.role = 'assistant'), m -> m.tool_calls[1]."function".arguments.direction) AS moves, len(tools) AS tools FROM read_parquet('${out}')`,
  );
  assert.deepEqual(
    viaSql,
    won.map((t) => ({
      id: t.id,
      roles: [
        'system',
        'user',
        ...t.turns.flatMap((_, k) => (k === 0 ? ['assistant'] : ['tool', 'assistant'])),
      ],
      moves: t.turns.map((x) => NAMES[x.action as number]),
      tools: 1,
    })),
  );

  // Every row: all but its last message are the episode's last request, the tools its tools.
  const { rows } = await hyparquet(out);
  const sent = fl.sent[0];
  for (const [i, t] of won.entries()) {
    const row = rows[i] as { messages: Msg[]; tools: unknown[] } & Row;
    assert.deepEqual([row.id, row.task, row.reward, row.success], [t.id, t.task, t.outcome.return, true]);
    const asked = dropNulls(row.messages.slice(0, -1));
    const last = sent.filter((q) => canonical(verlShape(q.messages)) === canonical(asked));
    assert.equal(last.length, 1, `${t.id}: no request carried its conversation`);
    assert.equal(canonical(row.tools), canonical(last[0].tools));
    const answer = row.messages.at(-1) as Msg & { tool_calls: { function: Row }[] };
    assert.deepEqual(answer.tool_calls[0].function, {
      name: 'move',
      arguments: { direction: NAMES[t.turns.at(-1)?.action as number] },
    });
  }

  // --include-failed: every trajectory, in file order.
  const all = join(root, 'fl-sft-all.parquet');
  const s = await exported(['--in', fl.tools, '--format', 'verl-sft', '--include-failed', '--out', all]);
  assert.deepEqual([s.trajectories, s.successful], [12, won.length]);
  assert.deepEqual(
    await sql(`SELECT id, success FROM read_parquet('${all}')`),
    ts.map((t) => ({ id: t.id, success: t.outcome.success })),
  );
});

test('verl-sft of served FrozenLake (text): no tool calls, no tools, the answers as the policy wrote them', async () => {
  const ts = readJsonl<Trajectory>(fl.text);
  const out = join(root, 'fl-text-sft.parquet');
  await exported([
    '--in',
    fl.text,
    '--format',
    'verl-sft',
    '--chat',
    'text',
    '--include-failed',
    '--out',
    out,
  ]);
  const types = await describe(out);
  assert.match(
    types.messages,
    /^STRUCT\("role" VARCHAR, "content" VARCHAR, tool_calls STRUCT\(.*\)\[\], tool_call_id VARCHAR\)\[\]$/,
  );
  const { rows } = await hyparquet(out);
  for (const [i, t] of ts.entries()) {
    const ms = rows[i].messages as Msg[];
    assert.deepEqual(rows[i].tools, []);
    assert.ok(ms.every((m) => m.tool_calls == null && m.tool_call_id == null));
    assert.deepEqual(
      ms.filter((m) => m.role === 'assistant').map((m) => m.content),
      t.turns.map((x) => `<answer>${NAMES[x.action as number]}</answer>`),
    );
    const asked = ms.slice(0, -1).map((m) => ({ role: m.role, content: m.content }));
    assert.ok(
      fl.sent[1].some((q) => canonical(q.messages) === canonical(asked)),
      `${t.id}: no request carried its conversation`,
    );
  }
});

// ── sql episodes of examples/sql-agent.ts, recorded by `turnwise harness run` ─────────────────────
const hs = { file: '' };
before(async () => {
  hs.file = await harnessSql(join(root, 'h'));
});

test('verl of harness-recorded sql: the agent’s first messages as prompt, the gold query as ground truth, tools_kwargs per tool', async () => {
  const ts = readJsonl<Trajectory>(hs.file);
  const groups = byTask(ts);
  const out = join(root, 'sql-verl.parquet');
  const summary = await exported(['--in', hs.file, '--format', 'verl', '--out', out]);
  assert.deepEqual([summary.trajectories, summary.rows], [6, 2]);
  const types = await describe(out);
  assert.equal(types.prompt, PROMPT_TYPE);
  assert.match(
    types.extra_info,
    /^STRUCT\(split VARCHAR, "index" BIGINT, task STRUCT\(env VARCHAR, params STRUCT\(.*\), seed BIGINT\), samples BIGINT, successes BIGINT, mean_return DOUBLE, need_tools_kwargs BOOLEAN, tools_kwargs STRUCT\(list_tables STRUCT\(create_kwargs .*\), describe_table STRUCT\(create_kwargs .*\), execute_sql STRUCT\(create_kwargs .*\), submit STRUCT\(create_kwargs .*\)\)\)$/,
  );
  const { rows } = await hyparquet(out);
  for (const [i, g] of groups.entries()) {
    const row = rows[i] as { prompt: Msg[]; reward_model: Row; extra_info: Row } & Row;
    // Every episode of the task started from these messages, the observation of its first turn.
    for (const t of g) assert.equal(canonical(row.prompt), canonical(t.turns[0].observation));
    const gold = (await described(['sql', '--seed', String(g[0].task.seed)])).gold as { query: string };
    assert.equal(row.data_source, 'turnwise/sql');
    assert.equal(row.ability, 'sql');
    assert.deepEqual(row.reward_model, { style: 'rule', ground_truth: gold.query });
    const kwargs = { create_kwargs: { ground_truth: gold.query, task: g[0].task } };
    assert.deepEqual(row.extra_info, {
      split: 'train',
      index: i,
      task: g[0].task,
      samples: 3,
      successes: g.filter((t) => t.outcome.success).length,
      mean_return: mean(g.map((t) => t.outcome.return)),
      need_tools_kwargs: true,
      tools_kwargs: { list_tables: kwargs, describe_table: kwargs, execute_sql: kwargs, submit: kwargs },
    });
  }
  assert.deepEqual(
    await sql(
      `SELECT extra_info.tools_kwargs.submit.create_kwargs.ground_truth = reward_model.ground_truth AS same FROM read_parquet('${out}')`,
    ),
    [{ same: true }, { same: true }],
  );
});

test('verl-sft of harness-recorded sql: the turns as messages, each call’s arguments a struct of the file’s argument names', async () => {
  const ts = readJsonl<Trajectory>(hs.file).filter((t) => t.outcome.success);
  assert.ok(ts.length > 0);
  const out = join(root, 'sql-sft.parquet');
  await exported(['--in', hs.file, '--format', 'verl-sft', '--out', out]);
  const types = await describe(out);
  assert.match(
    types.messages,
    /tool_calls STRUCT\(id VARCHAR, "type" VARCHAR, "function" STRUCT\("name" VARCHAR, arguments STRUCT\((query VARCHAR, "table" VARCHAR|"table" VARCHAR, query VARCHAR)\)\)\)\[\]/,
  );
  assert.match(types.tools, /properties STRUCT\(.*"table" STRUCT\(.*query STRUCT\(/);
  const { rows } = await hyparquet(out);
  assert.deepEqual(
    rows.map((r) => r.id),
    ts.map((t) => t.id),
  );
  for (const [i, t] of ts.entries()) {
    const expected = verlShape(t.turns.flatMap((x) => [...(x.observation as Msg[]), x.action as Msg]));
    assert.deepEqual(dropNulls(rows[i].messages), dropNulls(expected));
    assert.deepEqual(
      (dropNulls(rows[i].tools) as { function: { name: string } }[]).map((x) => x.function.name),
      ['list_tables', 'describe_table', 'execute_sql', 'submit'],
    );
  }
  // Through SQL: the tools the assistant messages called, in order.
  assert.deepEqual(
    await sql(
      `SELECT list_transform(list_filter(messages, m -> m.role = 'assistant'), m -> m.tool_calls[1]."function"."name") AS calls FROM read_parquet('${out}')`,
    ),
    ts.map((t) => ({
      calls: t.turns.map(
        (x) => (x.action as { tool_calls: { function: { name: string } }[] }).tool_calls[0].function.name,
      ),
    })),
  );
});

test('--format turnwise-parquet writes the bytes `--format verl` wrote before verl had its own formats', async () => {
  const file = join(root, 'r.jsonl');
  const r = await turnwise(
    [
      'rollout',
      '--map',
      '4x4',
      '--slippery',
      '--policy',
      'oracle:eps=0.2',
      '--tasks',
      '4',
      '--samples',
      '4',
    ].concat(['--budget', '30', '--seed', '3', '--out', file]),
  );
  assert.equal(r.code, 0, r.stderr);
  const out = join(root, 'r.parquet');
  const e = await turnwise([
    'export',
    '--in',
    file,
    '--format',
    'turnwise-parquet',
    '--method',
    'gigpo',
    '--out',
    out,
  ]);
  assert.equal(e.code, 0, e.stderr);
  // sha256 of `turnwise export --format verl` at 9cf187c on this file (docs/export.md's example).
  assert.equal(
    createHash('sha256').update(readFileSync(out)).digest('hex'),
    '46b25294b079c6ec2a905575b48b614d92ce17b50b25dbb42249592aea2ca19d',
  );
});

test('bad input for verl and verl-sft: flags of other formats, an empty split, no successful trajectory, prompts and arguments verl cannot hold → one line, exit 2', async () => {
  const ts = readJsonl<Trajectory>(hs.file);
  const write = (name: string, xs: Trajectory[]) => {
    const f = join(root, name);
    writeFileSync(f, xs.map((t) => `${JSON.stringify(t)}\n`).join(''));
    return f;
  };
  const lost = readJsonl<Trajectory>(fl.tools).filter((t) => !t.outcome.success);
  const failed = write('failed.jsonl', lost);
  // A harness that prefilled a tool call before the first action; a call whose arguments are a list.
  const t0 = ts[0];
  const prefilled = write('prefilled.jsonl', [
    {
      ...t0,
      turns: [
        {
          ...t0.turns[0],
          observation: [
            ...(t0.turns[0].observation as Msg[]),
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'pre', type: 'function', function: { name: 'list_tables', arguments: '{}' } },
              ],
            },
            { role: 'tool', tool_call_id: 'pre', content: 'Tables: students' },
          ],
        },
        ...t0.turns.slice(1),
      ],
    },
  ]);
  const won = ts.find((t) => t.outcome.success) as Trajectory;
  const badArgs = write('bad-args.jsonl', [
    {
      ...won,
      turns: won.turns.map((x, k) =>
        k === 0
          ? {
              ...x,
              action: {
                ...(x.action as Msg),
                tool_calls: (x.action as { tool_calls: { function: Row }[] }).tool_calls.map((c) => ({
                  ...c,
                  function: { ...c.function, arguments: '[1]' },
                })),
              },
            }
          : x,
      ),
    },
  ]);
  const y = join(root, 'y.parquet');
  const cases: [string[], RegExp][] = [
    [
      ['--in', hs.file, '--format', 'verl', '--out', y, '--split', ' '],
      /^turnwise: --split: got " "; expected a name, such as train or test\n$/,
    ],
    [
      ['--in', hs.file, '--format', 'openai', '--out', y, '--split', 'test'],
      /^turnwise: --split: got "test"; is read by --format verl only, not openai\n$/,
    ],
    [
      ['--in', hs.file, '--format', 'verl', '--out', y, '--include-failed'],
      /^turnwise: --include-failed: is read by --format verl-sft only, not verl\n$/,
    ],
    [
      ['--in', hs.file, '--format', 'verl-sft', '--out', y, '--method', 'rloo'],
      /^turnwise: --method: got "rloo"; is read by --format openai, tokens and turnwise-parquet only, not verl-sft\n$/,
    ],
    [
      ['--in', hs.file, '--format', 'verl', '--out', y, '--min-advantage', '1'],
      /^turnwise: --min-advantage: got "1"; is read by --format openai and turnwise-parquet only, not verl\n$/,
    ],
    [
      ['--in', failed, '--format', 'verl-sft', '--out', y],
      new RegExp(
        `^turnwise: --in: .*failed\\.jsonl has no successful trajectory to export as verl-sft \\(${lost.length} read; --include-failed exports failed ones too\\)\n$`,
      ),
    ],
    [
      ['--in', prefilled, '--format', 'verl', '--out', y],
      new RegExp(
        `^turnwise: --in: trajectory ${t0.id} cannot be exported: message 2, before the first action, calls tools: verl's prompt holds \\{role, content\\} only \\(--skip-invalid skips such trajectories\\)\n$`,
      ),
    ],
    [
      ['--in', badArgs, '--format', 'verl-sft', '--out', y],
      /^turnwise: --in: trajectory .* cannot be exported: message 2 calls \w+ with arguments that are not a JSON object \(verl-sft stores them as a struct\)/,
    ],
  ];
  const results = await Promise.all(cases.map(([args]) => inProcess(['export', ...args])));
  for (const [k, [args, expected]] of cases.entries()) {
    const e = results[k];
    assert.equal(e.code, 2, `${args.join(' ')}: ${e.stderr}`);
    assert.match(e.stderr, expected);
    assert.equal(e.stdout, '');
  }
});
