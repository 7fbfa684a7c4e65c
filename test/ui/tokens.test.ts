// Token chips as text: a transformer policy saved with a tokenizer whose tokens are known by
// construction (merges spelling " the", "\n\n", "é"), read back as `turnwise ui` reads a run's
// policy.safetensors (studies/ui-policies.ts), and each token labelled as docs/ui.md says: bytes decoded,
// whitespace visible, a piece of a character as its bytes, a special token by its name.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { envSpec } from '../../src/envs/index.ts';
import { Tokenizer } from '../../src/nn/tokenizer.ts';
import { freshTransformerPolicy } from '../../src/policies/transformer.ts';
import { uiVocabularies } from '../../src/studies/ui-policies.ts';
import type { FoundRun } from '../../src/ui/runs.ts';
import { tokenLabel, tokenTextOf } from '../../src/ui/tokens.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-ui-tokens-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// 256 " t", 257 " th", 258 " the", 259 "\n\n", 260 "é" (its two UTF-8 bytes), then the specials.
const tokenizer = new Tokenizer([
  [32, 116],
  [256, 104],
  [257, 101],
  [10, 10],
  [0xc3, 0xa9],
]);
const run = join(dir, 'run');
mkdirSync(run);
writeFileSync(join(dir, 'tok.json'), JSON.stringify(tokenizer.toJSON()));
const spec = envSpec({ env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 });
freshTransformerPolicy(
  { layers: 1, d: 8, heads: 2, ctx: 64, tokenizer: join(dir, 'tok.json') },
  spec,
  't',
).save(join(run, 'policy.safetensors'));

const found = (d: string | null, kind: FoundRun['info']['kind'] = 'train'): FoundRun => ({
  info: {
    id: 'r',
    kind,
    env: null,
    policy: null,
    status: 'finished',
    started: null,
    seconds: null,
    headline: {},
  },
  dir: d,
  source: null,
});
const withTokens = (tokens: number[]): Trajectory =>
  ({ turns: [{ trace: { tokens, logprobs: tokens.map(() => -1) } }] }) as unknown as Trajectory;

test('each token of the saved tokenizer labelled by its text, specials by name, ids outside it left out', () => {
  const end = tokenizer.special['<|end|>'];
  const ids = [258, 259, 260, 0xc3, 9, 0x1b, 65, 32, end, tokenizer.vocabSize];
  const text = tokenTextOf(found(run), withTokens(ids), uiVocabularies());
  assert.deepEqual(text, {
    from: 'policy.safetensors',
    reason: null,
    labels: {
      9: '⇥',
      27: '\\x1B',
      32: '·',
      65: 'A',
      195: '\\xC3',
      258: '·the',
      259: '↵↵',
      260: 'é',
      [end]: '<|end|>',
    },
    special: [end],
  });
});

test('labels: what the bytes spell, whitespace visible, a piece of a character as its bytes', () => {
  const bytes = (...b: number[]) => ({ bytes: Uint8Array.from(b) });
  assert.equal(tokenLabel(bytes(0x20, 0x74, 0x68, 0x65)), '·the');
  assert.equal(tokenLabel(bytes(0x0a, 0x09, 0x0d, 0x7f)), '↵⇥\\x0D\\x7F');
  assert.equal(tokenLabel(bytes(0xe2, 0x82, 0xac)), '€');
  // The first two bytes of "€" and a space: not whole UTF-8, so byte by byte.
  assert.equal(tokenLabel(bytes(0x20, 0xe2, 0x82)), '·\\xE2\\x82');
  assert.equal(tokenLabel({ special: '<|tool|>' }), '<|tool|>');
});

test('no tokenizer: the chips keep their ids, and the answer says why', () => {
  const vocab = uiVocabularies();
  const traj = withTokens([1, 2]);
  assert.equal(tokenTextOf(found(run), withTokens([]), vocab), null, 'no tokens, nothing to label');
  assert.deepEqual(tokenTextOf(found(null, 'file'), traj, vocab), {
    from: null,
    reason: 'a trajectory file records token ids, not the tokenizer',
    labels: {},
    special: [],
  });
  const empty = join(dir, 'empty');
  mkdirSync(empty);
  assert.equal(
    tokenTextOf(found(empty), traj, vocab)?.reason,
    'the run holds no saved policy (policy.safetensors)',
  );
  const damaged = join(dir, 'damaged');
  mkdirSync(damaged);
  writeFileSync(join(damaged, 'policy.safetensors'), 'not a checkpoint');
  assert.match(
    tokenTextOf(found(damaged), traj, vocab)?.reason ?? '',
    /^the run has a policy that cannot be read \(policy\.safetensors: /,
  );
});
