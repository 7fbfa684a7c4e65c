// `turnwise export` end to end, through the real CLI: FrozenLake rolled out by the openai policy against
// `turnwise serve` (token ids on every turn) and in-process (none), and sql episodes of
// examples/sql-agent.ts recorded by `turnwise harness run` (fixtures.ts). The Parquet
// (--format turnwise-parquet; verl's own formats: verl.test.ts) is read back with hyparquet and
// checked row by row against the trajectories and `turnwise credit --json`'s advantages; the JSONL is
// checked against the fine-tuning shape, and FrozenLake's rendered conversation against the very
// requests the policy sent the server.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import type { Trajectory } from '../../src/core/types.ts';
import { makeEnv } from '../../src/envs/index.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import { trlPreference } from '../rewards/fixtures.ts';
import {
  type ChatRequest,
  canonical,
  harnessSql,
  type Msg,
  readJsonl,
  servedFrozenLake,
} from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'turnwise-export-'));
after(() => rmSync(root, { recursive: true, force: true }));

interface Example {
  messages: Msg[];
  tools?: { type: string; function: { name: string; description?: string; parameters: unknown } }[];
}

/** The shape OpenAI's fine-tuning API accepts (chat format with function calling), checked strictly;
 * returns the problems found (none: valid). */
function shapeProblems(e: Example): string[] {
  const p: string[] = [];
  for (const k of Object.keys(e)) if (k !== 'messages' && k !== 'tools') p.push(`top-level key ${k}`);
  if (!Array.isArray(e.messages) || e.messages.length === 0) return [...p, 'no messages'];
  const declared = new Set<string>();
  for (const t of e.tools ?? []) {
    if (
      t.type !== 'function' ||
      typeof t.function?.name !== 'string' ||
      typeof t.function.parameters !== 'object'
    )
      p.push(`bad tool ${JSON.stringify(t)}`);
    declared.add(t.function.name);
  }
  const open = new Set<string>();
  let called = false;
  for (const [i, m] of e.messages.entries()) {
    if (!['system', 'user', 'assistant', 'tool'].includes(m.role)) p.push(`${i}: role ${m.role}`);
    if ('weight' in m && (m.role !== 'assistant' || (m.weight !== 0 && m.weight !== 1)))
      p.push(`${i}: weight ${m.weight} on ${m.role}`);
    if (m.role === 'assistant') {
      if (!('weight' in m)) p.push(`${i}: assistant without weight`);
      const calls = m.tool_calls as {
        id: string;
        type: string;
        function: { name: string; arguments: string };
      }[];
      if (calls === undefined && typeof m.content !== 'string') p.push(`${i}: assistant without content`);
      for (const c of calls ?? []) {
        called = true;
        if (typeof c.id !== 'string' || c.type !== 'function') p.push(`${i}: bad call ${JSON.stringify(c)}`);
        if (!declared.has(c.function.name)) p.push(`${i}: undeclared tool ${c.function.name}`);
        JSON.parse(c.function.arguments);
        open.add(c.id);
      }
    } else if (typeof m.content !== 'string') p.push(`${i}: ${m.role} content ${m.content}`);
    if (m.role === 'tool') {
      if (!open.has(m.tool_call_id as string)) p.push(`${i}: tool result for unknown call ${m.tool_call_id}`);
      open.delete(m.tool_call_id as string);
    } else if ('tool_call_id' in m) p.push(`${i}: tool_call_id on ${m.role}`);
  }
  if (called !== (e.tools !== undefined))
    p.push(`tools ${e.tools === undefined ? 'missing' : 'without calls'}`);
  if (e.messages.at(-1)?.role !== 'assistant') p.push('does not end with the assistant');
  return p;
}

/** The weights of the assistant messages that are turns (all of them, in these trajectories). */
const weights = (e: Example) => e.messages.filter((m) => m.role === 'assistant').map((m) => m.weight);

async function credit(file: string, method: string): Promise<number[][]> {
  const r = await turnwise(['credit', '--in', file, '--method', method, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { advantages: number[][] }).advantages;
}

async function readParquet(file: string) {
  const buf = await asyncBufferFromFile(file);
  const metadata = await parquetMetadataAsync(buf);
  const rows = (await parquetReadObjects({ file: buf })) as Record<string, unknown>[];
  return { rows, schema: parquetSchema(metadata) };
}

// ── FrozenLake through `turnwise serve`: token ids on every turn ────────────────────────────────
const fl = { file: join(root, 'fl.jsonl'), requests: [] as ChatRequest[] };
before(async () => {
  const args = ['--slippery', '--tasks', '3', '--samples', '4', '--budget', '12', '--seed', '5'];
  [fl.requests] = await servedFrozenLake(
    ['--policy', 'oracle:eps=0.2', '--slippery'],
    [{ file: fl.file, args }],
  );
});

test('turnwise-parquet of served FrozenLake: every column row by row against the trajectories and `credit`', async () => {
  const ts = readJsonl<Trajectory>(fl.file);
  const adv = await credit(fl.file, 'rloo');
  assert.ok(adv.flat().some((a) => a > 0) && adv.flat().some((a) => a < 0), 'a batch with both signs');
  const out = join(root, 'fl.parquet');
  const r = await turnwise([
    'export',
    '--in',
    fl.file,
    '--format',
    'turnwise-parquet',
    '--out',
    out,
    '--method',
    'rloo',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '', 'every turn has token ids: nothing to say');
  const turns = ts.reduce((s, t) => s + t.turns.length, 0);
  const positive = adv.flat().filter((a) => a > 0).length;
  assert.equal(
    r.stdout.trim(),
    `rloo: wrote 12 trajectories (${turns} turns, ${positive} with advantage > 0) to ${out} (turnwise-parquet, 12 with token ids)`,
  );
  const { rows, schema } = await readParquet(out);
  assert.deepEqual(
    schema.children.map((c) => c.element.name),
    [
      'id',
      'task',
      'messages',
      'reward',
      'success',
      'turn_advantages',
      'response_ids',
      'response_mask',
      'token_advantages',
    ],
  );
  assert.equal(schema.children[5].element.converted_type, 'LIST');
  assert.equal(rows.length, ts.length);
  const sft = join(root, 'fl-sft.jsonl');
  const o = await turnwise([
    'export',
    '--in',
    fl.file,
    '--format',
    'openai',
    '--out',
    sft,
    '--method',
    'rloo',
  ]);
  assert.equal(o.code, 0, o.stderr);
  const examples = readJsonl<Example>(sft);
  for (const [i, t] of ts.entries()) {
    const row = rows[i];
    assert.equal(row.id, t.id);
    assert.deepEqual(JSON.parse(row.task as string), t.task);
    assert.equal(row.reward, t.outcome.return);
    assert.equal(row.success, t.outcome.success);
    assert.deepEqual(row.turn_advantages, adv[i]);
    const tokens = t.turns.flatMap((x) => x.trace?.tokens ?? []);
    assert.ok(tokens.length >= t.turns.length, 'at least a token a turn');
    assert.deepEqual(row.response_ids, tokens);
    assert.deepEqual(
      row.response_mask,
      tokens.map(() => 1),
    );
    assert.deepEqual(
      row.token_advantages,
      t.turns.flatMap((x, k) => (x.trace?.tokens ?? []).map(() => adv[i][k])),
    );
    assert.deepEqual(JSON.parse(row.messages as string), examples[i].messages, 'the same conversation');
  }
});

test('openai JSONL of served FrozenLake: the shape, weights = advantage > threshold, the prompts the policy sent', async () => {
  const ts = readJsonl<Trajectory>(fl.file);
  const adv = await credit(fl.file, 'rloo');
  for (const threshold of [0, -0.25]) {
    const out = join(root, `fl-${threshold}.jsonl`);
    const r = await turnwise([
      'export',
      '--in',
      fl.file,
      '--format',
      'openai',
      '--out',
      out,
      '--method',
      'rloo',
      '--min-advantage',
      String(threshold),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const examples = readJsonl<Example>(out);
    assert.equal(examples.length, ts.length);
    for (const [i, e] of examples.entries()) {
      assert.deepEqual(shapeProblems(e), []);
      assert.deepEqual(
        weights(e),
        adv[i].map((a) => (a > threshold ? 1 : 0)),
      );
    }
  }
  // Each trajectory's conversation before its last answer is the prompt its last request carried, and
  // its tools the request's tools: the export renders what the model saw, not a look-alike.
  const examples = readJsonl<Example>(join(root, 'fl-0.jsonl'));
  const strip = (ms: Msg[]) =>
    ms.map(({ weight: _, ...m }) =>
      m.role === 'assistant' && m.tool_calls && m.content == null ? { ...m, content: null } : m,
    );
  assert.equal(
    fl.requests.length,
    ts.reduce((s, t) => s + t.turns.length, 0),
  );
  for (const e of examples) {
    const prompt = strip(e.messages.slice(0, -1));
    const sent = fl.requests.filter((q) => canonical(q.messages) === canonical(prompt));
    assert.equal(sent.length >= 1, true, `no request carried ${JSON.stringify(prompt).slice(0, 200)}`);
    assert.equal(canonical(sent[0].tools), canonical(e.tools));
  }
});

test('in-process FrozenLake (no token ids): token columns null, and stderr says so; text mode renders answers', async () => {
  const file = join(root, 'fl-local.jsonl');
  const r = await turnwise([
    'rollout',
    '--slippery',
    '--tasks',
    '2',
    '--samples',
    '3',
    '--budget',
    '10',
    '--policy',
    'oracle:eps=0.2',
    '--out',
    file,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const ts = readJsonl<Trajectory>(file);
  const adv = await credit(file, 'grpo');
  const out = join(root, 'fl-local.parquet');
  const e = await turnwise(['export', '--in', file, '--format', 'turnwise-parquet', '--out', out]);
  assert.equal(e.code, 0, e.stderr);
  assert.match(e.stderr, /^turnwise: 6 of 6 trajectories have no token ids on every turn .*null\n$/);
  const { rows } = await readParquet(out);
  for (const [i, row] of rows.entries()) {
    assert.deepEqual(row.turn_advantages, adv[i], 'grpo is the default method');
    for (const k of ['response_ids', 'response_mask', 'token_advantages']) assert.equal(row[k] ?? null, null);
  }
  const sft = join(root, 'fl-local-text.jsonl');
  const t = await turnwise(['export', '--in', file, '--format', 'openai', '--out', sft, '--chat', 'text']);
  assert.equal(t.code, 0, t.stderr);
  for (const [i, ex] of readJsonl<Example>(sft).entries()) {
    assert.deepEqual(shapeProblems(ex), []);
    assert.equal(ex.tools, undefined);
    const names = ['Left', 'Down', 'Right', 'Up'];
    assert.deepEqual(
      ex.messages.filter((m) => m.role === 'assistant').map((m) => m.content),
      ts[i].turns.map((x) => `<answer>${names[x.action as number]}</answer>`),
    );
  }
});

// ── sql episodes of examples/sql-agent.ts, recorded by `turnwise harness run` ─────────────────────
const sql = { file: '' };
before(async () => {
  sql.file = await harnessSql(join(root, 'h'));
});

test('harness-recorded sql: the conversation rebuilt from the turns, tool ids matched, weights by gigpo', async () => {
  const ts = readJsonl<Trajectory>(sql.file);
  assert.equal(ts.length, 6);
  const adv = await credit(sql.file, 'gigpo');
  const out = join(root, 'sql.jsonl');
  const r = await turnwise([
    'export',
    '--in',
    sql.file,
    '--format',
    'openai',
    '--out',
    out,
    '--method',
    'gigpo',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const examples = readJsonl<Example>(out);
  for (const [i, e] of examples.entries()) {
    const t = ts[i];
    assert.deepEqual(shapeProblems(e), []);
    assert.deepEqual(
      e.tools?.map((x) => x.function.name),
      ['list_tables', 'describe_table', 'execute_sql', 'submit'],
    );
    assert.deepEqual(
      weights(e),
      adv[i].map((a) => (a > 0 ? 1 : 0)),
    );
    // The conversation is the turns' observations and actions in order, nothing else.
    const expected = t.turns.flatMap((x) => [...(x.observation as Msg[]), x.action as Msg]);
    const bare = e.messages.map(({ weight: _, ...m }) => m);
    assert.equal(bare.length, expected.length);
    for (const [k, m] of expected.entries()) {
      assert.equal(bare[k].role, m.role);
      assert.equal(bare[k].content, m.content ?? undefined);
      assert.deepEqual(bare[k].tool_calls, m.tool_calls);
    }
  }
  const pq = join(root, 'sql.parquet');
  const v = await turnwise([
    'export',
    '--in',
    sql.file,
    '--format',
    'turnwise-parquet',
    '--out',
    pq,
    '--method',
    'gigpo',
  ]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stderr, /6 of 6 trajectories have no token ids/);
  const { rows } = await readParquet(pq);
  assert.deepEqual(
    rows.map((x) => [x.id, x.reward, x.success, x.turn_advantages]),
    ts.map((t, i) => [t.id, t.outcome.return, t.outcome.success, adv[i]]),
  );
});

test('in-process sql (a tool env): each turn its tool call and the result as the tool message; preference pairs as TRL reads them', async () => {
  const file = join(root, 'sql-inprocess.jsonl');
  const roll = await turnwise([
    'rollout',
    '--env',
    'sql',
    '--level',
    '1',
    '--tasks',
    '4',
    '--samples',
    '4',
    '--policy',
    'oracle:eps=0.3',
    '--out',
    file,
  ]);
  assert.equal(roll.code, 0, roll.stderr);
  const ts = readJsonl<Trajectory>(file);
  const out = join(root, 'sql-inprocess-openai.jsonl');
  const r = await turnwise(['export', '--in', file, '--format', 'openai', '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  const examples = readJsonl<Example>(out);
  assert.equal(examples.length, ts.length);
  for (const [i, e] of examples.entries()) {
    const t = ts[i];
    assert.deepEqual(shapeProblems(e), []);
    assert.deepEqual(
      e.tools?.map((x) => x.function.name),
      ['list_tables', 'describe_table', 'execute_sql', 'submit'],
    );
    const env = makeEnv(t.task);
    const text = (o: unknown) => (env.text as (o: unknown) => string)(o);
    // system, the first observation as the user's, then per turn its call and (but the last) its result.
    assert.deepEqual(
      e.messages.map((m) => m.role),
      [
        'system',
        'user',
        ...t.turns.flatMap((_, k) => (k + 1 < t.turns.length ? ['assistant', 'tool'] : ['assistant'])),
      ],
    );
    assert.equal(e.messages[1].content, text(t.turns[0].observation));
    t.turns.forEach((turn, k) => {
      const call = (
        e.messages[2 + 2 * k].tool_calls as { id: string; function: { name: string; arguments: string } }[]
      )[0];
      const action = turn.action as { name: string; arguments: unknown };
      assert.equal(call.function.name, action.name);
      assert.deepEqual(JSON.parse(call.function.arguments), action.arguments);
      if (k + 1 < t.turns.length) {
        const result = e.messages[3 + 2 * k];
        assert.equal(result.tool_call_id, call.id);
        assert.equal(result.content, text(t.turns[k + 1].observation));
      }
    });
    await env.close?.();
  }
  // Preference: among a task's successes, the fewer turns are chosen.
  const prefs = join(root, 'sql-inprocess-prefs.jsonl');
  const p = await turnwise(['export', '--in', file, '--format', 'preference', '--out', prefs]);
  assert.equal(p.code, 0, p.stderr);
  const rows = readJsonl<Record<string, Msg[]>>(prefs);
  assert.ok(rows.length > 0, p.stderr);
  for (const row of rows) {
    trlPreference(row);
    const calls = (ms: Msg[]) => ms.filter((m) => m.role === 'assistant').length;
    assert.ok(calls(row.chosen) <= calls(row.rejected), JSON.stringify(row).slice(0, 300));
  }
});

test('a merge mismatch is refused (one line, exit 2), or skipped and counted with --skip-invalid', async () => {
  const ts = readJsonl<Trajectory>(sql.file);
  const broken = ts.map((t, i) =>
    i === 1
      ? {
          ...t,
          turns: t.turns.map((x, k) => (k === 1 ? { ...x, info: { ...x.info, mergeMismatch: true } } : x)),
        }
      : t,
  );
  const file = join(root, 'mismatch.jsonl');
  writeFileSync(file, broken.map((t) => `${JSON.stringify(t)}\n`).join(''));
  const out = join(root, 'mismatch-out.jsonl');
  const r = await turnwise(['export', '--in', file, '--format', 'openai', '--out', out]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    `turnwise: --in: trajectory ${ts[1].id} cannot be exported: turn 1's prompt does not extend the previous prompt and answer (a merge mismatch): it is not one conversation (--skip-invalid skips such trajectories)\n`,
  );
  const s = await turnwise([
    'export',
    '--in',
    file,
    '--format',
    'openai',
    '--out',
    out,
    '--skip-invalid',
    '--json',
  ]);
  assert.equal(s.code, 0, s.stderr);
  assert.match(s.stderr, /^turnwise: skipped 1 trajectories that cannot be rendered \(first: /);
  assert.equal((JSON.parse(s.stdout) as { trajectories: number }).trajectories, 5);
  assert.deepEqual(readJsonl<Example>(out).length, 5);
});

test('bad input: unknown format, unwritable --out, nothing exportable, exact without an oracle → one line, exit 2', async () => {
  // The code env's candidate variant: discrete actions and neither a chat encoding nor tools.
  const local = join(root, 'code-choose.jsonl');
  const r = await turnwise([
    'rollout',
    '--env',
    'code',
    '--env-params',
    '{"mode":"choose"}',
    '--episodes',
    '2',
    '--policy',
    'random',
    '--out',
    local,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const cases: [string[], RegExp][] = [
    [
      ['--in', fl.file, '--format', 'csv', '--out', join(root, 'x')],
      /^turnwise: --format: got "csv"; expected one of: openai, verl, verl-sft, tokens, turnwise-parquet, preference, gguf\n$/,
    ],
    [['--in', fl.file, '--format', 'verl', '--out', '/dev/null/x'], /^turnwise: --out: /],
    [
      ['--in', fl.file, '--format', 'verl', '--out', join(root, 'missing', 'x.parquet')],
      /^turnwise: --out: .*does not exist\n$/,
    ],
    [
      ['--in', fl.file, '--format', 'openai', '--out', root],
      /^turnwise: --out: .*is a directory; expected a file\n$/,
    ],
    [
      ['--in', local, '--format', 'openai', '--out', join(root, 'y')],
      /^turnwise: --in: trajectory .* cannot be exported: its turns are not recorded chat calls and env "code" has no chat encoding/,
    ],
    [
      ['--in', local, '--format', 'openai', '--out', join(root, 'y'), '--skip-invalid'],
      /^turnwise: --in: .* has nothing to export: 2 trajectories read, none renderable/,
    ],
    [
      ['--in', sql.file, '--format', 'turnwise-parquet', '--out', join(root, 'y'), '--method', 'exact'],
      /^turnwise: --method: got "exact"; needs an env with an exact oracle/,
    ],
    [
      ['--in', fl.file, '--format', 'openai', '--out', join(root, 'y'), '--min-advantage', 'abc'],
      /^turnwise: --min-advantage: got "abc"; expected a number\n$/,
    ],
    [
      ['--in', fl.file, '--format', 'openai', '--out', join(root, 'y'), '--chat', 'voice'],
      /^turnwise: --chat: got "voice"; expected one of: tools, text\n$/,
    ],
  ];
  // Refusals are immediate: the cases run one after another in the shared worker (the merge mismatch
  // above is refused by a process of its own).
  const results = await Promise.all(cases.map(([args]) => inProcess(['export', ...args])));
  for (const [k, [args, expected]] of cases.entries()) {
    const e = results[k];
    assert.equal(e.code, 2, `${args.join(' ')}: ${e.stderr}`);
    assert.match(e.stderr, expected);
    assert.equal(e.stderr.trim().split('\n').length, 1, e.stderr);
    assert.equal(e.stdout, '');
  }
});
