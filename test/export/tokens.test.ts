// `turnwise export --format tokens` end to end, through the real CLI: trajectory files rolled out by
// transformer policies (a tiny one cloned until it writes FrozenLake's actions, untrained ones on
// FrozenLake's text view and on sql's tools), exported, and read back with hyparquet — an independent
// reader of the Parquet spec, not hyparquet-writer. Every row is checked against the trajectory file
// and `turnwise credit --json`'s advantages: the mask-1 tokens are the replies' token ids in order
// (their count the trace token counts), their log-probs the sampling log-probs, their advantages the
// turn's; mask-0 tokens carry 0; and the policy itself, teacher-forced over prompt_ids + response_ids,
// gives each mask-1 token the log-prob it was sampled with — each row is what the model saw.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { Env, EnvSpec, Task, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { type TokenRow, tokenRows } from '../../src/export/tokens.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { scoreTokens } from '../../src/nn/sampling.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { cloningSequences, trainCloning } from '../../src/train/transformer-bc.ts';
import { inProcess, turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-export-tokens-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const readJsonl = (path: string): Trajectory[] =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

/** A row as hyparquet gives it, int64 turned into numbers: the columns export/tokens.ts declares. */
type Row = TokenRow;

/** The file's rows as hyparquet reads them (int64 as bigint, turned into numbers here), and its
 * schema as name:type:repetition:converted. */
async function readRows(file: string): Promise<{ rows: Row[]; schema: string[] }> {
  const buf = await asyncBufferFromFile(file);
  const md = await parquetMetadataAsync(buf);
  const raw = (await parquetReadObjects({ file: buf })) as Record<string, unknown>[];
  const num = (v: unknown): unknown =>
    typeof v === 'bigint' ? Number(v) : Array.isArray(v) ? v.map(num) : v;
  const rows = raw.map(
    (r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, num(v)])) as unknown as Row,
  );
  const schema = md.schema.map((s) =>
    [s.name, s.type ?? '', s.repetition_type ?? '', s.converted_type ?? ''].join(':'),
  );
  return { rows, schema };
}

/** The task column as read back — a struct whose params hold every key a task of the file has (null
 * where this task has none), int64 as bigint — as the task it is. */
function taskRead(x: unknown): unknown {
  if (typeof x === 'bigint') return Number(x);
  if (Array.isArray(x)) return x.map(taskRead);
  if (x === null || typeof x !== 'object') return x;
  return Object.fromEntries(
    Object.entries(x)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, taskRead(v)]),
  );
}

/** `turnwise rollout --policy POLICY … --out FILE`, and the trajectories it wrote. */
async function rolledOut(file: string, policy: string, args: string[]): Promise<Trajectory[]> {
  const r = await turnwise(['rollout', ...args, '--policy', policy, '--out', file]);
  assert.equal(r.code, 0, r.stderr);
  return readJsonl(file);
}

async function credit(file: string, method: string): Promise<number[][]> {
  const r = await turnwise(['credit', '--in', file, '--method', method, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { advantages: number[][] }).advantages;
}

interface Exported {
  rows: Row[];
  schema: string[];
  summary: { rows: number; trajectories: number; splits: { context: number; rewritten: number } };
}

async function exportTokens(file: string, policy: string, method: string): Promise<Exported> {
  const out = `${file}.parquet`;
  const r = await turnwise([
    'export',
    '--in',
    file,
    '--format',
    'tokens',
    '--policy',
    policy,
    '--method',
    method,
    '--out',
    out,
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  return { ...(await readRows(out)), summary: JSON.parse(r.stdout) };
}

/** The start of each run of 1s in a mask, and its length. */
function runs(mask: readonly number[]): { at: number; n: number }[] {
  const out: { at: number; n: number }[] = [];
  mask.forEach((m, j) => {
    if (m !== 1) return;
    if (j > 0 && mask[j - 1] === 1) out[out.length - 1].n++;
    else out.push({ at: j, n: 1 });
  });
  return out;
}

/**
 * Every check that holds for any file: rows cover each trajectory's turns in order; the four token
 * columns have one length; mask-1 tokens are the trace tokens (log-probs, turn advantages as float32),
 * mask-0 tokens carry 0; num_turns counts the user, assistant and tool role tokens; and the policy,
 * teacher-forced over the row, gives each reply the log-probs it was sampled with.
 */
function checkRows(
  rows: Row[],
  trajectories: Trajectory[],
  advantages: number[][],
  policy: TransformerPolicy,
) {
  const f = Math.fround;
  const roles = new Set(
    ['<|user|>', '<|assistant|>', '<|tool|>'].map((s) => policy.tokenizer.encodeWithSpecials(s)[0]),
  );
  const sampling = { temperature: policy.format.temperature, topP: policy.format.topP };
  trajectories.forEach((t, i) => {
    const rs = rows.filter((r) => r.id === t.id);
    assert.ok(rs.length > 0, t.id);
    rs.forEach((r, s) => {
      assert.equal(r.segment, s);
      assert.equal(r.first_turn, s === 0 ? 0 : rs[s - 1].last_turn + 1);
      const n = r.response_ids.length;
      assert.deepEqual([r.response_mask.length, r.response_logprobs.length, r.advantages.length], [n, n, n]);
      assert.ok(r.response_mask.every((m) => m === 0 || m === 1));
      r.response_mask.forEach((m, j) => {
        if (m === 0) assert.deepEqual([r.response_logprobs[j], r.advantages[j]], [0, 0], `${t.id} ${j}`);
      });
      assert.deepEqual(taskRead(r.task), t.task);
      assert.equal(r.reward, t.outcome.return);
      assert.equal(r.success, t.outcome.success);
      const ids = [...r.prompt_ids, ...r.response_ids];
      // The messages' role tokens (a reply may write role tokens of its own: not messages).
      const read = [...r.prompt_ids, ...r.response_ids.filter((_, j) => r.response_mask[j] === 0)];
      assert.equal(r.num_turns, read.filter((id) => roles.has(id)).length);
      // Each reply scored after exactly the tokens before it: the log-probs it was sampled with.
      for (const run of runs(r.response_mask)) {
        const scored = scoreTokens(
          policy.model,
          ids.slice(0, r.prompt_ids.length + run.at),
          r.response_ids.slice(run.at, run.at + run.n),
          sampling,
        );
        scored.forEach((x, k) => {
          assert.ok(Math.abs(x - r.response_logprobs[run.at + k]) < 1e-4, `${t.id} ${run.at + k}: ${x}`);
        });
      }
    });
    assert.equal(rs[rs.length - 1].last_turn, t.turns.length - 1);
    const own = (r: Row, col: 'response_ids' | 'response_logprobs' | 'advantages') =>
      r[col].filter((_, j) => r.response_mask[j] === 1);
    const tokens = t.turns.flatMap((x) => x.trace?.tokens ?? []);
    assert.deepEqual(
      rs.flatMap((r) => own(r, 'response_ids')),
      tokens,
    );
    assert.equal(
      rs.reduce((s, r) => s + r.response_mask.reduce((a, b) => a + b, 0), 0),
      t.turns.reduce((s, x) => s + (x.trace?.tokens?.length ?? 0), 0),
    );
    assert.deepEqual(
      rs.flatMap((r) => own(r, 'response_logprobs')),
      t.turns.flatMap((x) => (x.trace?.logprobs ?? []).map(f)),
    );
    assert.deepEqual(
      rs.flatMap((r) => own(r, 'advantages')),
      t.turns.flatMap((x, k) => (x.trace?.tokens ?? []).map(() => f(advantages[i][k]))),
    );
  });
  assert.equal(new Set(rows.map((r) => r.id)).size, trajectories.length);
}

/** How many times a trajectory's next row starts because turns were dropped (the new prompt does not
 * extend the last turn's prompt) or because the reply was written otherwise (it does). */
function boundaries(rows: Row[]): { context: number; rewritten: number } {
  const out = { context: 0, rewritten: 0 };
  rows.forEach((r, k) => {
    if (r.segment === 0) return;
    const prev = rows[k - 1];
    const lastReply = runs(prev.response_mask).at(-1)?.at ?? 0;
    const before = [...prev.prompt_ids, ...prev.response_ids.slice(0, lastReply)];
    const extends_ = before.every((id, j) => r.prompt_ids[j] === id);
    out[extends_ ? 'rewritten' : 'context']++;
  });
  return out;
}

// A tiny transformer cloned on one map until it walks it (the overfit of test/train/transformer-bc.ts),
// saved as a checkpoint: its replies are the actions as the prompt writes them.
const tok = join(dir, 'tok.json');
const corpus = await expertTranscripts({ envs, config: lake, episodes: 8, seed: 0, eps: 0.1 });
writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), 400).toJSON()));
const shortMap: Task = makeTasks(lake, 40, 0).filter((task) => {
  const o = (envs.make(task) as Env<unknown, unknown>).oracle?.();
  return o !== undefined && o.v(6, o.starts[0]) === 1;
})[0];
const lakeSpec: EnvSpec = envs.spec(shortMap);
const view = (task: Task) => envs.make(task) as Env<unknown, unknown>;
const ckpt = join(dir, 'lake.safetensors');
{
  const student = (
    makePolicy(
      `transformer:layers=1,d=32,heads=2,ctx=1024,seed=0,mode=text,temperature=0.5,tokenizer=${tok}`,
      lakeSpec,
    ) as TransformerPolicy
  ).trainedOn(lakeSpec);
  const demo = await rollout({
    tasks: [shortMap],
    samples: 1,
    budget: 6,
    runSeed: 1,
    policy: makePolicy('oracle', lakeSpec),
    makeEnv: envs.make,
  });
  trainCloning(student, cloningSequences(student, demo, view), {
    epochs: 100,
    batchSize: 1,
    lr: 0.01,
    weightDecay: 0,
    seed: 0,
  });
  student.save(ckpt);
}

test("a cloned transformer's FrozenLake episodes: one row each, the chat it read and wrote, its tokens, log-probs and each turn's advantage", async () => {
  const file = join(dir, 'lake.jsonl');
  const trajectories = await rolledOut(file, ckpt, [
    ...['--random', '--size', '4', '--seed', String(shortMap.seed)],
    ...['--tasks', '1', '--samples', '3', '--budget', '6'],
  ]);
  assert.ok(trajectories.every((t) => t.outcome.success));
  const { rows, schema, summary } = await exportTokens(file, ckpt, 'discounted');
  // The column types verl's datasets read through pyarrow: list<int64> and list<float>.
  for (const c of ['prompt_ids', 'response_ids', 'response_mask'])
    assert.deepEqual(
      schema.slice(schema.indexOf(`${c}::OPTIONAL:LIST`), schema.indexOf(`${c}::OPTIONAL:LIST`) + 3),
      [`${c}::OPTIONAL:LIST`, 'list::REPEATED:', 'element:INT64:REQUIRED:'],
    );
  for (const c of ['response_logprobs', 'advantages'])
    assert.equal(schema[schema.indexOf(`${c}::OPTIONAL:LIST`) + 2], 'element:FLOAT:REQUIRED:');
  assert.ok(schema.includes('num_turns:INT64:REQUIRED:'));
  // Every prompt extends the last: one row per trajectory.
  assert.equal(rows.length, trajectories.length);
  assert.deepEqual(summary.splits, { context: 0, rewritten: 0 });
  const policy = makePolicy(ckpt, lakeSpec) as TransformerPolicy;
  const advantages = await credit(file, 'discounted');
  assert.ok(advantages.flat().some((a) => a !== 0));
  checkRows(rows, trajectories, advantages, policy);
  // prompt_ids + response_ids decode to the conversation `export --format openai --chat text` writes
  // (the openai: policy's messages), each message as <|role|>text<|end|>.
  const sft = join(dir, 'lake-sft.jsonl');
  const r = await turnwise(['export', '--in', file, '--format', 'openai', '--chat', 'text', '--out', sft]);
  assert.equal(r.code, 0, r.stderr);
  const chats = readFileSync(sft, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { messages: { role: string; content: string }[] });
  rows.forEach((row, i) => {
    const text = chats[i].messages.map((m) => `<|${m.role}|>${m.content}<|end|>`).join('');
    assert.equal(policy.tokenizer.decode([...row.prompt_ids, ...row.response_ids]), text);
    assert.equal(policy.tokenizer.decode(row.prompt_ids), text.slice(0, text.indexOf('<|assistant|>') + 13));
    assert.equal(row.num_turns, chats[i].messages.length - 1);
  });
});

test('the context rule: a new row where the context dropped turns, or where the next prompt writes the reply otherwise', async () => {
  // An untrained model: its replies are bytes the chat writes back otherwise (U+FFFD), and at ctx 512
  // the prompt keeps no earlier turn.
  for (const [ctx, cause] of [
    [512, 'context'],
    [1024, 'rewritten'],
  ] as const) {
    const spec = `transformer:layers=1,d=16,heads=2,ctx=${ctx},mode=text,seed=4`;
    const file = join(dir, `raw-${ctx}.jsonl`);
    const trajectories = await rolledOut(file, spec, [
      ...['--random', '--size', '4'],
      ...['--tasks', '2', '--samples', '2', '--budget', '3'],
    ]);
    const { rows, summary } = await exportTokens(file, spec, 'grpo');
    assert.ok(summary.splits[cause] > 0, JSON.stringify(summary.splits));
    assert.equal(rows.length, trajectories.length + summary.splits.context + summary.splits.rewritten);
    assert.deepEqual(boundaries(rows), summary.splits);
    const policy = makePolicy(spec, envs.spec(trajectories[0].task)) as TransformerPolicy;
    checkRows(rows, trajectories, await credit(file, 'grpo'), policy);
  }
});

test("sql's tools: an untrained transformer's replies (cut at max_tokens, written back otherwise) in rows of their own", async () => {
  const spec = 'transformer:layers=1,d=16,heads=2,ctx=2048,seed=1';
  const file = join(dir, 'sql.jsonl');
  const trajectories = await rolledOut(file, spec, [
    ...['--env', 'sql', '--level', '1'],
    ...['--tasks', '1', '--samples', '2', '--budget', '3'],
  ]);
  const { rows, summary } = await exportTokens(file, spec, 'gigpo');
  assert.deepEqual(boundaries(rows), summary.splits);
  const policy = makePolicy(spec, envs.spec(trajectories[0].task)) as TransformerPolicy;
  checkRows(rows, trajectories, await credit(file, 'gigpo'), policy);
});

test("sql's tools, replies written as the policy writes them: one row per episode, each tool result between two calls as context", async () => {
  // The oracle's episodes with each turn's trace as an untrained transformer records it had it sampled
  // the oracle's call: its canonical tokens and their log-probs after its prompt (teacher forcing
  // gives the sampling log-probs, test/policies/transformer.test.ts). Every prompt then extends the last.
  const spec = 'transformer:layers=1,d=16,heads=2,ctx=4096,seed=1';
  const tasks = makeTasks(envConfig('sql', { level: 1 }), 2, 0);
  const sqlSpec = envs.spec(tasks[0]);
  const policy = makePolicy(spec, sqlSpec) as TransformerPolicy;
  const episodes = await rollout({
    tasks,
    samples: 1,
    budget: 4,
    runSeed: 0,
    policy: makePolicy('oracle', sqlSpec),
    makeEnv: envs.make,
  });
  const sampling = { temperature: 1, topP: 1 };
  for (const t of episodes) {
    const env = view(t.task);
    t.policy = spec;
    t.turns.forEach((turn, k) => {
      const prompt = policy.prompt(contextAt(t, k, env)).tokens;
      const tokens = policy.actionTokens(sqlSpec, turn.action) as number[];
      const logprobs = scoreTokens(policy.model, prompt, tokens, sampling);
      turn.logp = logprobs.reduce((a, b) => a + b, 0);
      turn.trace = {
        text: policy.tokenizer.decode(tokens.slice(0, -1)),
        tokens,
        logprobs,
        usage: { prompt: prompt.length, completion: tokens.length },
        finishReason: 'stop',
      };
    });
    env.close?.();
  }
  assert.ok(episodes.every((t) => t.turns.length >= 2));
  const file = join(dir, 'sql-oracle.jsonl');
  writeFileSync(file, episodes.map((t) => JSON.stringify(t)).join('\n'));
  const { rows, summary } = await exportTokens(file, spec, 'discounted');
  assert.equal(rows.length, episodes.length);
  assert.deepEqual(summary.splits, { context: 0, rewritten: 0 });
  checkRows(rows, episodes, await credit(file, 'discounted'), policy);
  const textOf = view(tasks[0]).text as (o: unknown) => string;
  rows.forEach((r, i) => {
    const t = episodes[i];
    const first = `<|user|>${textOf(t.turns[0].observation)}<|end|><|assistant|>`;
    assert.ok(policy.tokenizer.decode(r.prompt_ids).endsWith(first));
    // Between reply k and reply k+1: the tool result of call k (turn k+1's observation), as a message.
    const context = runs(r.response_mask.map((m) => 1 - m)).map((x) =>
      policy.tokenizer.decode(r.response_ids.slice(x.at, x.at + x.n)),
    );
    assert.deepEqual(
      context,
      t.turns.slice(1).map((turn) => `<|tool|>${textOf(turn.observation)}<|end|><|assistant|>`),
    );
  });
});

test('tokenRows: a forced turn is context (mask 0), a reply cut at max_tokens gets its <|end|> as context, num_turns counts messages', () => {
  const t = {
    id: 'x',
    task: { env: 'e', params: {}, seed: 0 },
    policy: 'p',
    budget: 3,
    revealBudget: false,
    turns: [0, 1, 2].map((k) => ({ t: k, observation: k, action: k, reward: 0, logp: 0, info: {} })),
    outcome: { success: true, return: 1, turns: 3, firstSuccessTurn: 2, end: 'terminated' },
  } as unknown as Trajectory;
  (t.turns[1] as { forced?: boolean }).forced = true;
  // Prompts: [S U0 A] → reply [7 9] (cut: no <|end|>) → [S U0 A 7 9 E U1 A] → forced [8 E] →
  // [S U0 A 7 9 E U1 A 8 E U2 A] → reply [6 E]. S=1 U=2 A=3 E=4.
  const turns = [
    { prompt: [1, 2, 3], kept: 0, reply: [7, 9], logprobs: [-0.5, -0.25] },
    { prompt: [1, 2, 3, 7, 9, 4, 2, 3], kept: 1, reply: [8, 4] },
    { prompt: [1, 2, 3, 7, 9, 4, 2, 3, 8, 4, 2, 3], kept: 2, reply: [6, 4], logprobs: [-1, -2] },
  ];
  const { rows, splits } = tokenRows(t, turns, [0.5, 0.75, 1.5]);
  assert.deepEqual(splits, []);
  assert.equal(rows.length, 1);
  const r = rows[0];
  assert.deepEqual(r.prompt_ids, [1, 2, 3]);
  assert.deepEqual(r.response_ids, [7, 9, 4, 2, 3, 8, 4, 2, 3, 6, 4]);
  assert.deepEqual(r.response_mask, [1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
  assert.deepEqual(r.response_logprobs, [-0.5, -0.25, 0, 0, 0, 0, 0, 0, 0, -1, -2]);
  assert.deepEqual(r.advantages, [0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 1.5, 1.5]);
  assert.equal(r.num_turns, 6);
  // Turn 2's prompt keeping no earlier turn: a new row with its own prompt.
  const dropped = tokenRows(t, [turns[0], turns[1], { ...turns[2], prompt: [1, 2, 3], kept: 0 }], [0, 0, 0]);
  assert.deepEqual(dropped.splits, [{ turn: 2, cause: 'context' }]);
  assert.deepEqual(
    dropped.rows.map((x) => [x.segment, x.first_turn, x.last_turn, x.prompt_ids, x.response_ids]),
    [
      [0, 0, 1, [1, 2, 3], [7, 9, 4, 2, 3, 8, 4]],
      [1, 2, 2, [1, 2, 3], [6, 4]],
    ],
  );
});

test('bad input: one line, exit 2, before any work', async () => {
  const lakeFile = join(dir, 'bad-lake.jsonl');
  const oracleFile = join(dir, 'oracle.jsonl');
  const made = {
    'transformer:layers=1,d=16,heads=2,ctx=1024,mode=text,seed=4': lakeFile,
    oracle: oracleFile,
  };
  for (const [policy, file] of Object.entries(made)) {
    const r = await inProcess([
      'rollout',
      '--random',
      '--size',
      '4',
      '--tasks',
      '1',
      '--budget',
      '2',
      '--policy',
      policy,
      '--out',
      file,
    ]);
    assert.equal(r.code, 0, r.stderr);
  }
  const out = join(dir, 'bad.parquet');
  const bpe = `transformer:layers=1,d=16,heads=2,ctx=1024,mode=text,seed=4,tokenizer=${tok}`;
  const cases: [string[], RegExp][] = [
    [['--in', lakeFile], /^turnwise: --policy: missing; --format tokens needs the transformer policy/],
    [
      ['--in', lakeFile, '--policy', 'random'],
      /^turnwise: --policy: got "random"; expected a transformer policy/,
    ],
    [
      ['--in', lakeFile, '--policy', 'transformer:layers=1,d=16,heads=2,ctx=1024,mode=tools,seed=4'],
      /^turnwise: --policy: got .*trajectory r0-0-0 turn 0: its prompt had \d+ tokens, this policy writes that prompt in \d+; not the tokenizer and prompt format that made the file$/,
    ],
    [
      ['--in', lakeFile, '--policy', bpe],
      /^turnwise: --policy: got .*trajectory r0-0-0 turn 0: .*; not the tokenizer and prompt format that made the file$/,
    ],
    [
      ['--in', oracleFile, '--policy', 'transformer:layers=1,d=16,heads=2,ctx=1024,mode=text'],
      /^turnwise: --in: trajectory r0-0-0 cannot be exported: turn 0 has no token ids and log-probs .*not a text policy’s turn/,
    ],
    [
      ['--in', lakeFile, '--policy', ckpt, '--chat', 'tools'],
      /^turnwise: --chat: got "tools"; is read by --format openai, verl, verl-sft, turnwise-parquet and preference only, not tokens$/,
    ],
    [
      ['--in', lakeFile, '--policy', ckpt, '--min-advantage', '0'],
      /^turnwise: --min-advantage: got "0"; is read by --format openai and turnwise-parquet only, not tokens$/,
    ],
  ];
  for (const [args, re] of cases) {
    const r = await inProcess(['export', '--format', 'tokens', '--out', out, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr.trim(), re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(r.stdout, '');
  }
  const verl = await inProcess([
    'export',
    '--format',
    'verl',
    '--in',
    lakeFile,
    '--policy',
    ckpt,
    '--out',
    out,
  ]);
  assert.equal(verl.code, 2);
  assert.match(verl.stderr, /^turnwise: --policy: got .*; only --format tokens reads a policy\n$/);
  assert.throws(() => readFileSync(out), /ENOENT/);
});
