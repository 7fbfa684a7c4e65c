// Training BPE merges: two corpora worked by hand, an independent reference (every pair recounted from
// scratch at every step) on random corpora, determinism, and the encoder agreeing with training.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { corpusWords, trainBpe } from '../../src/nn/bpe.ts';
import { MIN_VOCAB } from '../../src/nn/tokenizer.ts';
import { pretokenize } from '../../src/nn/tokenizer-bytes.ts';

test('hand-worked: "aaabdaaabac" (one pre-token) gives aa, ab, aaab, ac, daaab', () => {
  // counts: aa 4, ab 2, bd 1, da 1, ba 1, ac 1                → a a   (256)
  // aa a b d aa a b a c: (aa,a) 2, (a,b) 2 — tie, left 97 < 256 → a b   (257)
  // aa ab d aa ab a c: (aa,ab) 2                               → aa ab (258)
  // aaab d aaab a c: all 1; smallest left id is a (97)         → a c   (259)
  // aaab d aaab ac: (258,100) (100,258) (258,259); left 100    → d aaab (260)
  const t = trainBpe(['aaabdaaabac'], MIN_VOCAB + 5);
  assert.deepEqual(t.toJSON().merges, ['a a', 'a b', 'aa ab', 'a c', 'd aaab']);
  assert.deepEqual(t.merges, [
    [97, 97],
    [97, 98],
    [256, 257],
    [97, 99],
    [100, 258],
  ]);
  assert.deepEqual(t.encode('aaabdaaabac'), [258, 260, 259]);
  assert.equal(t.vocabSize, MIN_VOCAB + 5);
});

test('hand-worked: "the cat" and "the hat" — pre-tokens carry their space (Ġ) and never merge across', () => {
  // words: the ×2, Ġcat ×1, Ġhat ×1. Counts: th 2, he 2, at 2 (cat, hat), Ġc 1, ca 1, Ġh 1, ha 1.
  // tie at 2: left ids a 97 < h 104 < t 116                     → a t  (256)
  // th 2, he 2, Ġc, c·at, Ġh, h·at 1: h 104 < t 116               → h e  (257)
  // t·he 2                                                       → t he (258)
  // Ġc (32,99), Ġh (32,104), c·at (99,256), h·at (104,256): (32,99) → Ġ c (259)
  const t = trainBpe(['the cat', 'the hat'], MIN_VOCAB + 4);
  assert.deepEqual(t.toJSON().merges, ['a t', 'h e', 't he', 'Ġ c']);
  assert.deepEqual(t.encode('the cat'), [258, 259, 256]);
});

const utf8 = new TextDecoder();

/** Reference: at every step count every adjacent pair of every word again, take the most frequent
 * (ties: smaller left id, then smaller right id), skip one that would make an existing token. */
function referenceBpe(texts: string[], vocabSize: number) {
  const words = corpusWords(texts).map((w) => ({ ...w, text: utf8.decode(Uint8Array.from(w.ids)) }));
  const bytes: string[] = Array.from({ length: 256 }, (_, b) => String.fromCharCode(b));
  const merges: [number, number][] = [];
  const refused = new Set<string>();
  while (merges.length < vocabSize - MIN_VOCAB) {
    const counts = new Map<string, number>();
    for (const { ids, count } of words)
      for (let i = 0; i + 1 < ids.length; i++) {
        const k = `${ids[i]},${ids[i + 1]}`;
        counts.set(k, (counts.get(k) ?? 0) + count);
      }
    let best: [number, number, number] | undefined;
    for (const [k, c] of counts) {
      if (refused.has(k)) continue;
      const [a, b] = k.split(',').map(Number);
      if (
        best === undefined ||
        c > best[0] ||
        (c === best[0] && (a < best[1] || (a === best[1] && b < best[2])))
      )
        best = [c, a, b];
    }
    if (best === undefined) break;
    const [, a, b] = best;
    const joined = bytes[a] + bytes[b];
    if (bytes.includes(joined)) {
      refused.add(`${a},${b}`);
      continue;
    }
    const id = 256 + merges.length;
    merges.push([a, b]);
    bytes.push(joined);
    for (const w of words) {
      const out: number[] = [];
      for (let i = 0; i < w.ids.length; i++) {
        if (w.ids[i] === a && w.ids[i + 1] === b) {
          out.push(id);
          i++;
        } else out.push(w.ids[i]);
      }
      w.ids = out;
    }
  }
  return { merges, words };
}

const corpus = fc.array(
  fc.string({
    unit: fc.constantFrom('a', 'b', 'ab', ' ', 'the', ' a', '\n', '1', '22', '!', 'é', '語', "'s", 'aaa'),
    maxLength: 30,
  }),
  { maxLength: 12 },
);

test('incremental training equals the from-scratch reference; each word encodes as training left it', () => {
  fc.assert(
    fc.property(corpus, fc.integer({ min: MIN_VOCAB, max: MIN_VOCAB + 60 }), (texts, size) => {
      const t = trainBpe(texts, size);
      const ref = referenceBpe(texts, size);
      assert.deepEqual(t.merges, ref.merges);
      for (const w of ref.words) assert.deepEqual(t.encode(w.text), w.ids, w.text);
    }),
    { numRuns: 300 },
  );
});

test('deterministic: the same corpus (in any order) and size give the same merges', () => {
  const texts = [
    'Turn 1.\nObservation:\nP___',
    'SELECT * FROM t WHERE id = 1',
    'Turn 2.\nObservation:\n_P__',
  ];
  const a = JSON.stringify(trainBpe(texts, 300));
  assert.equal(JSON.stringify(trainBpe(texts, 300)), a);
  assert.equal(JSON.stringify(trainBpe([...texts].reverse(), 300)), a);
});

test('a corpus that runs out of pairs gives a smaller vocabulary; sizes outside the range are refused', () => {
  const t = trainBpe(['ab ab'], 1000);
  // "ab", " ab": a b → ab, then Ġ ab → Ġab; no pair is left.
  assert.deepEqual(t.toJSON().merges, ['a b', 'Ġ ab']);
  assert.equal(t.vocabSize, MIN_VOCAB + 2);
  assert.deepEqual(pretokenize('ab ab'), ['ab', ' ab']);
  assert.throws(() => trainBpe([], MIN_VOCAB - 1), /vocabSize 261: expected an integer from 262 to 65536/);
  assert.equal(trainBpe(['anything'], MIN_VOCAB).merges.length, 0);
});
