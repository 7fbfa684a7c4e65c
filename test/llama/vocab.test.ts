// A GGUF vocabulary's token bytes (llama/vocab.ts): hand-derived cases of GPT-2's bytes_to_unicode
// alphabet and SentencePiece's ▁ and <0xXX> byte tokens, and — against llama.cpp itself (node-llama-cpp)
// — a turnwise tokenizer exported as GGUF: for texts of several scripts the bytes of the tokens llama.cpp
// chooses spell the text's UTF-8, and every token that is whole UTF-8 reads as llama.cpp writes it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { transformerGguf } from '../../src/export/gguf.ts';
import { checkGgufModel } from '../../src/llama/gguf-check.ts';
import { LlamaRuntime } from '../../src/llama/runtime.ts';
import { GgufVocab, ggufVocab, TOKEN_TYPE } from '../../src/llama/vocab.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { readGgufHeader } from '../../src/nn/gguf.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';

const dir = mkdtempSync(join(tmpdir(), 'tw-vocab-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const bytes = (v: GgufVocab, id: number) => [...v.bytes(id)];
const utf8 = (s: string) => [...new TextEncoder().encode(s)];
const { NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE } = TOKEN_TYPE;

test('gpt2: a normal token spells bytes in the bytes_to_unicode alphabet; specials and added tokens are their text', () => {
  // "Ġ" U+0120 is byte 0x20 (the 33rd non-printable byte: 0x00..0x20 map to U+0100..U+0120), "Ċ" U+010A
  // byte 0x0A; "é" is C3 A9, printable Latin-1 both, so its token string is "Ã©".
  const v = new GgufVocab(
    'gpt2',
    ['Ġhello', 'Ċ', 'Ã©', 'Ã', '<|end|>', '<tool_call>', '<unused>', 'x', '<|endoftext|>'],
    [NORMAL, NORMAL, NORMAL, NORMAL, CONTROL, USER_DEFINED, UNUSED, BYTE, UNKNOWN],
  );
  assert.deepEqual(bytes(v, 0), utf8(' hello'));
  assert.deepEqual(bytes(v, 1), [0x0a]);
  assert.deepEqual(bytes(v, 2), [0xc3, 0xa9]);
  assert.deepEqual(bytes(v, 3), [0xc3], 'a token can be part of a character');
  assert.deepEqual(bytes(v, 4), utf8('<|end|>'));
  assert.deepEqual(bytes(v, 5), utf8('<tool_call>'));
  assert.deepEqual(bytes(v, 6), []);
  assert.deepEqual(bytes(v, 7), [], 'gpt2 has no byte tokens: llama.cpp writes nothing');
  assert.deepEqual(
    [0, 4, 5, 8].map((i) => v.isSpecial(i)),
    [false, true, false, true],
  );
  assert.equal(v.text(4), '<|end|>');
  assert.throws(() => v.text(9), RangeError);
});

test('llama (SentencePiece): ▁ is a space, <0xXX> a byte; no token_type means all normal', () => {
  const v = new GgufVocab(
    'llama',
    ['▁the', '<0x0A>', '<0xE2>', '<s>', '<unk>', '▁▁x▁'],
    [NORMAL, BYTE, BYTE, CONTROL, UNKNOWN, NORMAL],
  );
  assert.deepEqual(bytes(v, 0), utf8(' the'));
  assert.deepEqual(bytes(v, 1), [0x0a]);
  assert.deepEqual(bytes(v, 2), [0xe2]);
  assert.deepEqual(bytes(v, 3), utf8('<s>'));
  assert.deepEqual(bytes(v, 5), utf8('  x '));
  assert.deepEqual(
    [0, 1, 3, 4].map((i) => v.isSpecial(i)),
    [false, false, true, true],
  );
  const plain = new GgufVocab('llama', ['<0x41>', '▁a']);
  assert.deepEqual(bytes(plain, 0), utf8('<0x41>'), 'a normal token is text, whatever it looks like');
  assert.deepEqual(bytes(plain, 1), utf8(' a'));
});

test("an exported vocabulary against llama.cpp: the bytes of llama.cpp's tokens spell the text; whole tokens read as llama.cpp writes them", async () => {
  const lake = envConfig('frozenlake', {});
  const spec = envs.spec(makeTasks(lake, 1, 0)[0]);
  const texts = [
    'Observation: the agent moves Right, then Down.\n',
    'Ça coûte 5 € — naïve façade, Ж語 ½ Ⅻ',
    '  spaces\t\ttabs\r\n<|end|> is text here',
  ];
  const tok = join(dir, 'tok.json');
  writeFileSync(tok, JSON.stringify(trainBpe([...texts, ...texts], 380).toJSON()));
  const policy = makePolicy(
    `transformer:layers=1,d=16,heads=2,ctx=64,seed=0,tokenizer=${tok}`,
    spec,
  ) as TransformerPolicy;
  const file = join(dir, 'v.gguf');
  writeFileSync(file, transformerGguf(policy.model, policy.tokenizer, { name: 'v', type: 'f32' }));
  const v = ggufVocab(readGgufHeader(file));
  assert.ok(v !== undefined);
  assert.equal(v.kind, 'gpt2');
  const r = await LlamaRuntime.open(
    checkGgufModel(file, '--policy'),
    { ctx: 64, threads: 1, sequences: 1, precise: true },
    'x',
  );
  try {
    for (const text of texts) {
      const ids = r.tokenizeText(text);
      assert.ok(ids.length < utf8(text).length, 'merges are used');
      assert.deepEqual(
        ids.flatMap((id) => bytes(v, id)),
        utf8(text),
      );
    }
    const strict = new TextDecoder('utf-8', { fatal: true });
    let whole = 0;
    for (let id = 0; id < v.size; id++) {
      let s: string;
      try {
        s = strict.decode(v.bytes(id));
      } catch {
        continue; // part of a character: llama.cpp writes U+FFFD
      }
      whole++;
      assert.equal(s, r.tokenText(id), `token ${id}`);
      assert.equal(v.isSpecial(id), r.isSpecial(id), `token ${id} special`);
    }
    assert.ok(whole > 200, `${whole} whole tokens`);
    assert.equal(v.isSpecial(policy.tokenizer.special['<|end|>']), true);
  } finally {
    await r.close();
  }
});
