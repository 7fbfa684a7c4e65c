// `turnwise export --format gguf` through the real CLI: a saved agent becomes a GGUF file that
// `eval --policy gguf:FILE` runs in llama.cpp with exactly the in-process transformer's results (greedy
// and sampled), F32 and Q8_0; bad input is refused in one line, exit 2, before anything is written.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { gguf } from '@huggingface/gguf';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { type ClonedAgent, clonedAgent } from '../fixtures/gguf-agent.ts';
import { turnwise } from './run.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
const dir = mkdtempSync(join(tmpdir(), 'tw-export-gguf-'));
let agent: ClonedAgent;
before(async () => {
  agent = await clonedAgent(lake, {
    shape: 'layers=2,d=32,heads=4,ctx=512,seed=0',
    vocab: 400,
    demos: 3,
    epochs: 20,
    budget: 8,
  });
});

/** `turnwise export --format gguf --in RUN --out OUT …` */
const exportGguf = (from: string, out: string, ...more: string[]) =>
  turnwise(['export', '--format', 'gguf', '--in', from, '--out', out, ...more]);

const EVAL = [
  'eval',
  '--env',
  'frozenlake',
  '--random',
  '--size',
  '4',
  '--slippery',
  '--tasks',
  '6',
  '--samples',
  '2',
  '--T',
  '12',
  '--K',
  '1,2',
  '--seed',
  '4000',
];

test('export --format gguf writes the agent; eval through gguf: prints what eval in process prints', async () => {
  const out = join(dir, 'agent.gguf');
  const r = await exportGguf(agent.checkpoint, out);
  assert.equal(r.code, 0, r.stderr);
  const params = agent.policy.model.namedParameters().reduce((s, [, t]) => s + t.size, 0);
  assert.match(
    r.stdout.trim(),
    new RegExp(
      `^wrote ${out}: GGUF v3, llama, F32, ${params} parameters \\(layers 2, d 32, heads 4, ctx 512, vocab 400, tied head\\), \\d+ bytes$`,
    ),
  );
  const header = await gguf(out, { allowLocalFile: true });
  assert.equal((header.metadata as Record<string, unknown>)['general.architecture'], 'llama');
  assert.equal(
    JSON.parse(String((header.metadata as Record<string, unknown>)['turnwise.policy'])).mode,
    'tools',
  );
  for (const sampling of ['temperature=0', 'temperature=1']) {
    const a = await turnwise([...EVAL, '--policy', `transformer:from=${agent.checkpoint},${sampling}`]);
    const b = await turnwise([...EVAL, '--policy', `gguf:${out},${sampling}`]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const body = (s: string) => s.split('\n').slice(1).join('\n');
    assert.equal(body(b.stdout), body(a.stdout), sampling);
    assert.match(body(a.stdout), /own NLL/);
  }
});

test('--type q8_0 writes a quarter-size file that llama.cpp runs; --json says what was written', async () => {
  const out = join(dir, 'agent-q8.gguf');
  const r = await exportGguf(agent.checkpoint, out, '--type', 'q8_0', '--json');
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(s), [
    'out',
    'architecture',
    'type',
    'bytes',
    'params',
    'layers',
    'd',
    'heads',
    'kvHeads',
    'ctx',
    'vocab',
    'tiedHead',
  ]);
  assert.equal(s.type, 'q8_0');
  const f32 = JSON.parse((await exportGguf(agent.checkpoint, join(dir, 'f.gguf'), '--json')).stdout);
  assert.ok(s.bytes < f32.bytes / 2, `${s.bytes} vs ${f32.bytes}`);
  const e = await turnwise([...EVAL, '--policy', `gguf:${out},temperature=0`]);
  assert.equal(e.code, 0, e.stderr);
  assert.match(e.stdout, /own NLL/);
});

test('bad input: one line, exit 2, nothing written', async () => {
  const notes = join(dir, 'notes.txt');
  writeFileSync(notes, 'not a checkpoint');
  const spec = envs.spec(makeTasks(lake, 1, 0)[0]);
  const odd = join(dir, 'odd.safetensors');
  (makePolicy('transformer:layers=1,d=48,heads=4,ctx=64,seed=0', spec) as TransformerPolicy).save(odd);
  const out = join(dir, 'never.gguf');
  const cases: [string[], RegExp][] = [
    [['--in', notes], /^turnwise: --in: got ".*notes\.txt"; not a saved transformer policy/],
    [
      ['--in', agent.checkpoint, '--type', 'q4_k'],
      /^turnwise: --type: got "q4_k"; expected one of: f32, q8_0$/,
    ],
    [
      ['--in', odd, '--type', 'q8_0'],
      /^turnwise: --type: got "q8_0"; Q8_0 stores rows in blocks of 32 values; this model's width is 48/,
    ],
    [
      ['--in', agent.checkpoint, '--method', 'rloo'],
      /^turnwise: --method: got "rloo"; reads trajectories; --format gguf writes a model/,
    ],
    [[], /^turnwise: --in: .*give the run directory or checkpoint of a transformer policy/],
  ];
  for (const [args, why] of cases) {
    const r = await turnwise(['export', '--format', 'gguf', '--out', out, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr.trim(), why);
    assert.equal(existsSync(out), false);
  }
  const same = await exportGguf(agent.checkpoint, agent.checkpoint);
  assert.equal(same.code, 2, same.stderr);
  const t = await turnwise([
    'export',
    '--format',
    'verl',
    '--in',
    notes,
    '--out',
    join(dir, 'x.parquet'),
    '--type',
    'f32',
  ]);
  assert.equal(t.code, 2);
  assert.match(t.stderr.trim(), /^turnwise: --type: got "f32"; is read by --format gguf only$/);
});
