// `turnwise tokenizer train | stats`: the file it writes is the library's tokenizer for the same
// transcripts, stats on the training seeds repeats train's numbers, and bad input is refused in one line
// (exit 2) before any episode, writing nothing.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { envConfig, envs } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { readTokenizerFile, SPECIAL_TOKENS } from '../../src/nn/tokenizer.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { inProcess, turnwise } from './run.ts';

const tmp = mkdtempSync(join(tmpdir(), 'turnwise-cli-tokenizer-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const LAKE = ['--env', 'frozenlake', '--random', '--size', '4', '--slippery'];

test('tokenizer train writes the merges the library learns from the same transcripts; stats repeats its numbers', async () => {
  const out = join(tmp, 'lake.json');
  const args = [...LAKE, '--episodes', '12', '--seed', '5', '--eps', '0.2'];
  const r = await turnwise(['tokenizer', 'train', ...args, '--vocab', '320', '--out', out, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const train = JSON.parse(r.stdout);
  assert.deepEqual(train.vocab, { requested: 320, size: 320, merges: 320 - 262 });
  assert.deepEqual(train.env, {
    env: 'frozenlake',
    params: envConfig('frozenlake', { random: true, size: 4, slippery: true }).params,
  });
  const tok = readTokenizerFile(out);
  const transcripts = await expertTranscripts({
    envs,
    config: envConfig('frozenlake', { random: true, size: 4, slippery: true }),
    episodes: 12,
    seed: 5,
    eps: 0.2,
  });
  assert.deepEqual(tok.merges, trainBpe(transcriptTexts(transcripts), 320).merges);
  assert.equal(train.corpus.episodes, 12);
  assert.equal(
    train.corpus.turns,
    transcripts.reduce((n, t) => n + t.actions.length, 0),
  );
  assert.ok(train.tokensPerTurn.trained.prompt < train.tokensPerTurn.bytes.prompt);
  assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')).trainedOn, {
    env: 'frozenlake',
    params: JSON.stringify(train.env.params),
    episodes: 12,
    seed: 5,
    eps: 0.2,
    vocab: 320,
  });

  const s = await turnwise(['tokenizer', 'stats', ...args, '--tokenizer', out, '--json']);
  assert.equal(s.code, 0, s.stderr);
  const stats = JSON.parse(s.stdout);
  assert.deepEqual(stats.tokensPerTurn, train.tokensPerTurn);
  assert.deepEqual(stats.corpus, train.corpus);
  assert.equal(stats.vocab, 320);
  assert.deepEqual(stats.trainedOn, JSON.parse(readFileSync(out, 'utf8')).trainedOn);

  const text = await turnwise(['tokenizer', 'stats', ...args, '--tokenizer', out]);
  assert.equal(text.code, 0, text.stderr);
  const lines = text.stdout.trim().split('\n');
  assert.match(
    lines[0],
    /^frozenlake \{.*\}: 12 expert episodes \(oracle:eps=0\.2, task seeds 5\.\.16\), \d+ turns/,
  );
  assert.match(lines[2], /^vocabulary\s+prompt\s+observation\s+action\s+max prompt\s+episode$/);
  const t = train.tokensPerTurn;
  const row = (name: string, x: typeof t.bytes) =>
    new RegExp(
      `^${name.replace(/[()]/g, '\\$&')}\\s+${x.prompt.toFixed(1)}\\s+${x.observation.toFixed(1)}\\s+${x.action.toFixed(1)}\\s+${x.maxPrompt}\\s+${x.episode.toFixed(1)}$`,
    );
  assert.match(lines[4], row('bytes (262)', t.bytes));
  assert.match(lines[5], row('trained (320)', t.trained));
  assert.equal(
    lines[6],
    `its merges were learned on frozenlake ${JSON.stringify(train.env.params)}: 12 episodes from task seed 5, eps 0.2`,
  );
});

test('a corpus that runs out of pairs says so, and the file holds the smaller vocabulary', async () => {
  const out = join(tmp, 'small.json');
  const r = await turnwise([
    'tokenizer',
    'train',
    '--env',
    'frozenlake',
    '--episodes',
    '1',
    '--eps',
    '0',
    '--vocab',
    '65536',
    '--out',
    out,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const size = readTokenizerFile(out).vocabSize;
  assert.ok(size < 65536);
  assert.match(r.stdout, new RegExp(`: ${size} tokens \\(the transcripts ran out of pairs before 65536\\)`));
});

test('bad input: one line, exit 2, before any episode, nothing written', async () => {
  const dir = join(tmp, 'refusals');
  mkdirSync(dir);
  const out = join(dir, 'tok.json');
  const damaged = join(dir, 'damaged.json');
  writeFileSync(
    damaged,
    JSON.stringify({
      format: 'turnwise-tokenizer',
      version: 1,
      model: 'gpt2',
      pre: 'gpt-2',
      merges: ['a b', 'zz q'],
      specials: [...SPECIAL_TOKENS],
    }),
  );
  const notJson = join(dir, 'not.json');
  writeFileSync(notJson, 'merges: a b');
  const train = ['tokenizer', 'train', '--env', 'frozenlake', '--episodes', '2'];
  const stats = ['tokenizer', 'stats', '--env', 'frozenlake', '--episodes', '2'];
  const cases: [string[], RegExp][] = [
    [
      [...train, '--vocab', '261', '--out', out],
      /^turnwise: --vocab: got "261"; expected an integer from 262 to 65536$/,
    ],
    [
      [...train, '--vocab', '65537', '--out', out],
      /^turnwise: --vocab: got "65537"; expected an integer from 262 to 65536$/,
    ],
    [[...train, '--vocab', '1e3', '--out', out], /^turnwise: --vocab: got "1e3"; expected an integer/],
    [[...train, '--out', out], /^turnwise: required option '--vocab <n>' not specified$/],
    [[...train, '--vocab', '300'], /^turnwise: required option '--out <file.json>' not specified$/],
    [
      ['tokenizer', 'train', '--env', 'chess', '--vocab', '300', '--out', out],
      /^turnwise: --env: got "chess"; expected one of: frozenlake, sql, tools, search, code, web, or openenv:URL\[#name\]$/,
    ],
    [
      [...train, '--vocab', '300', '--out', join(dir, 'no', 'such', 'dir', 'x.json')],
      /^turnwise: --out: got ".*x\.json"; its directory .* does not exist$/,
    ],
    [
      [...train, '--vocab', '300', '--out', dir],
      /^turnwise: --out: got ".*refusals"; is a directory; expected a file$/,
    ],
    [
      [...train, '--vocab', '300', '--out', '/proc/turnwise.json'],
      /^turnwise: --out: got "\/proc\/turnwise\.json"; is under \/proc/,
    ],
    [
      ['tokenizer', 'train', '--env', 'frozenlake', '--episodes', '0', '--vocab', '300', '--out', out],
      /^turnwise: --episodes: got "0"; expected an integer from 1 to 100000$/,
    ],
    [
      [...train, '--eps', '1.5', '--vocab', '300', '--out', out],
      /^turnwise: --eps: got "1\.5"; expected a probability in \[0, 1\]$/,
    ],
    [[...train, '--level', '9', '--vocab', '300', '--out', out], /^turnwise: --level: got "9"/],
    [
      [...train, '--mode', 'sideways', '--vocab', '300', '--out', out],
      /^turnwise: --mode: got "sideways"; expected one of: tools, text$/,
    ],
    [
      ['tokenizer', 'train', '--env', 'sql', '--mode', 'text', '--vocab', '300', '--out', out],
      /^turnwise: --mode: got "text"; needs a discrete env with a chat encoding; sql has tools$/,
    ],
    [[...stats], /^turnwise: required option '--tokenizer <file\.json>' not specified$/],
    [
      [...stats, '--tokenizer', join(dir, 'missing.json')],
      /^turnwise: --tokenizer: got ".*missing\.json"; cannot read it \(ENOENT\)$/,
    ],
    [[...stats, '--tokenizer', notJson], /^turnwise: .*not\.json: not a tokenizer file: not JSON \(.*\)$/],
    [
      [...stats, '--tokenizer', damaged],
      /^turnwise: .*damaged\.json tokenizer\.merges\.1: got "zz q"; expected two tokens joined by one space/,
    ],
    [['tokenizer', 'stats', '--env', 'nope', '--tokenizer', damaged], /^turnwise: --env: got "nope"/],
  ];
  const results = await Promise.all(cases.map(([argv]) => inProcess(argv, dir)));
  for (const [i, r] of results.entries()) {
    const [argv, want] = cases[i];
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', argv.join(' '));
    assert.match(r.stderr.replace(/\n$/, ''), want, argv.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, argv.join(' '));
  }
  assert.equal(existsSync(out), false);
  // One of them through the binary, as a user runs it.
  const bin = await turnwise(cases[0][0]);
  assert.deepEqual([bin.code, bin.stdout, bin.stderr], [2, '', results[0].stderr]);
});
