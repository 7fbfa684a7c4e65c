// `turnwise bc --policy transformer:…` through the real CLI: a run directory whose policy `--policy DIR`
// loads and acts with, its summary, and the refusals of the transformer path.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { envConfig, envs } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-cli-tbc-'));
const tok = join(dir, 'tok.json');
const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const corpus = await expertTranscripts({ envs, config: lake, episodes: 4, seed: 0, eps: 0.1 });
writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), 380).toJSON()));

const bc = (out: string, ...more: string[]) => [
  'bc',
  '--policy',
  `transformer:layers=1,d=16,heads=2,ctx=512,mode=text,tokenizer=${tok}`,
  '--random',
  '--size',
  '4',
  '--train-seeds',
  '0:2',
  '--test-seeds',
  '1000:1002',
  '--expert',
  'oracle',
  '--budget',
  '6',
  '--epochs',
  '2',
  '--eval-samples',
  '2',
  '--out',
  out,
  ...more,
];

test('bc --policy transformer:… writes a run directory whose policy --policy DIR loads; the same seed gives the same bytes', async () => {
  const a = join(dir, 'a');
  const r = await turnwise(bc(a, '--json'));
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  assert.equal(s.student.format.env, 'frozenlake');
  assert.equal(s.student.format.mode, 'text');
  assert.equal(s.student.vocab, 380);
  assert.equal(s.training.losses.length, 2);
  assert.equal(s.training.steps, 2 * Math.ceil(s.train.sequences / 8));
  assert.equal(s.train.turns, 12, 'two maps, one episode each, six moves');
  assert.equal(s.test.success.optimum, 1);
  assert.equal(s.test.success.student.episodes, 4);
  assert.deepEqual(JSON.parse(readFileSync(join(a, 'bc.json'), 'utf8')).training, s.training);
  const b = join(dir, 'b');
  assert.equal((await turnwise(bc(b))).code, 0);
  assert.deepEqual(readFileSync(join(a, 'policy.safetensors')), readFileSync(join(b, 'policy.safetensors')));
  const roll = await turnwise([
    'rollout',
    '--random',
    '--size',
    '4',
    '--policy',
    a,
    '--tasks',
    '2',
    '--budget',
    '3',
    '--out',
    join(dir, 'r.jsonl'),
  ]);
  assert.equal(roll.code, 0, roll.stderr);
  const first = JSON.parse(readFileSync(join(dir, 'r.jsonl'), 'utf8').split('\n')[0]);
  assert.equal(first.policy, a);
  assert.equal(first.turns[0].trace.tokens.length, first.turns[0].trace.logprobs.length);
});

test('bc refuses, in one line with exit 2, a --policy it cannot clone into and soft targets for a text policy', async () => {
  for (const [args, re] of [
    [bc(join(dir, 'x'), '--targets', 'probs'), /--targets: got "probs"; a text policy learns/],
    [
      [...bc(join(dir, 'y')).slice(0, 1), '--policy', 'oracle', ...bc(join(dir, 'y')).slice(3)],
      /--policy: got "oracle"; bc trains/,
    ],
    [bc(join(dir, 'z'), '--eval-samples', '0'), /--eval-samples/],
  ] as [string[], RegExp][]) {
    const r = await turnwise(args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  assert.equal(existsSync(join(dir, 'x')), false);
});

test('bc on a tool env (sql) clones its scripted oracle by default, its calls as Hermes tool calls', async () => {
  const sqlTok = join(dir, 'sql-tok.json');
  const sql = envConfig('sql', { level: 1 });
  const calls = await expertTranscripts({ envs, config: sql, episodes: 6, seed: 0, eps: 0 });
  writeFileSync(sqlTok, JSON.stringify(trainBpe(transcriptTexts(calls), 600).toJSON()));
  const out = join(dir, 'sql');
  const r = await turnwise([
    'bc',
    '--env',
    'sql',
    '--level',
    '1',
    '--policy',
    `transformer:layers=1,d=16,heads=2,ctx=1024,tokenizer=${sqlTok}`,
    '--train-seeds',
    '0:2',
    '--test-seeds',
    '1000:1001',
    '--epochs',
    '1',
    '--eval-samples',
    '1',
    '--out',
    out,
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  assert.equal(s.expert, 'oracle');
  assert.equal(s.student.format.mode, 'tools');
  // Two level-1 episodes of four calls (list_tables, describe_table, execute_sql, submit), every one kept.
  assert.equal(s.train.turns, 8);
  assert.equal(s.train.skipped, 0);
  assert.equal(s.train.expertEpisodeSuccess, 1);
});
