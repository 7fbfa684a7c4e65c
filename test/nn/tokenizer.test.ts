// The byte-level BPE tokenizer against what GPT-2 and llama.cpp do: the byte alphabet, the pre-tokenizer
// (hand-derived splits, and an independent transliteration of llama.cpp's unicode_regex_split_custom_gpt2),
// the merge loop (llama.cpp's llm_tokenizer_bpe_session run on the GGUF strings the tokenizer exports),
// round trips over random text and bytes, specials, streaming decode, and the file's refusals.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { trainBpe } from '../../src/nn/bpe.ts';
import { MIN_VOCAB, readTokenizerFile, SPECIAL_TOKENS, Tokenizer } from '../../src/nn/tokenizer.ts';
import { BYTE_TO_UNICODE, pretokenize } from '../../src/nn/tokenizer-bytes.ts';

const tmp = mkdtempSync(join(tmpdir(), 'turnwise-tokenizer-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

// Characters that exercise every branch of the pre-tokenizer: contractions, the optional space, letters
// and digits of other scripts, punctuation, White_Space that JavaScript's \s misses (U+0085) and
// non-White_Space it matches (U+FEFF), specials' text, and any code point.
const unit = fc.oneof(
  fc.constantFrom(' ', '  ', '\n', '\t', '\r\n', "'", "'s", "'re", "'ll", "'S", 'x', 'é', 'ß', 'Ж', '語'),
  fc.constantFrom('7', '٣', 'Ⅻ', '½', '!', '.', '<|end|>', '{"a":1}', '\u0085', '\uFEFF', '\u00A0', '\u3000'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const text = fc.string({ unit, maxLength: 40 });

const CORPUS = [
  "Turn 1 (20 turns left).\nObservation:\n_P__\n_O_O\n___O\nO__G\nI'll move Right, then Down.",
  'SELECT name FROM students WHERE id = 1; SELECT COUNT(*) FROM courses',
  '<tool_call>\n{"name":"execute_sql","arguments":{"query":"SELECT * FROM t"}}\n</tool_call>',
  'Ünïcödé wörds, 数字 123 ٣٤ and    spaces\n\n\nend',
];
const trained = trainBpe([...CORPUS, ...CORPUS, CORPUS[0]], 400);

test("GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other 68 are U+0100.. in order", () => {
  assert.equal(new Set(BYTE_TO_UNICODE).size, 256);
  assert.equal(BYTE_TO_UNICODE[0x20], 'Ġ');
  assert.equal(BYTE_TO_UNICODE[0x0a], 'Ċ');
  assert.equal(BYTE_TO_UNICODE[0x00], '\u0100');
  assert.equal(BYTE_TO_UNICODE[0x7f], '\u0121');
  assert.equal(BYTE_TO_UNICODE[0xa0], '\u0142');
  assert.equal(BYTE_TO_UNICODE[0xad], '\u0143');
  assert.equal(BYTE_TO_UNICODE[0x21], '!');
  assert.equal(BYTE_TO_UNICODE[0xff], 'ÿ');
});

test("GPT-2's pre-tokenizer splits, derived by hand from the pattern", () => {
  const cases: [string, string[]][] = [
    ['Hello world', ['Hello', ' world']],
    ["I'm here, don't", ['I', "'m", ' here', ',', ' don', "'t"]],
    ["we'll they're I've", ['we', "'ll", ' they', "'re", ' I', "'ve"]],
    ["I'M", ['I', "'", 'M']], // contractions are case-sensitive in GPT-2 (llama3's are not)
    ['x=1;', ['x', '=', '1', ';']],
    ['123abc 45', ['123', 'abc', ' 45']],
    ['hi!!! ?!', ['hi', '!!!', ' ?!']],
    ['a\n\nb', ['a', '\n', '\n', 'b']], // \s+(?!\S) gives back the last whitespace before a letter
    ['a   b', ['a', '  ', ' b']],
    ['end  ', ['end', '  ']],
    ['  \n  x', ['  \n ', ' x']],
    ['tab\tx', ['tab', '\t', 'x']],
    ['"a": [1, 2]', ['"', 'a', '":', ' [', '1', ',', ' 2', ']']],
    ['<|end|>', ['<|', 'end', '|>']],
    ['naïve café', ['naïve', ' café']],
    ['', []],
  ];
  for (const [input, want] of cases) assert.deepEqual(pretokenize(input), want, JSON.stringify(input));
});

test("\\s is Unicode White_Space as in llama.cpp (U+0085 is, U+FEFF is not), not JavaScript's \\s", () => {
  assert.deepEqual(pretokenize('x\u0085\u0085y'), ['x', '\u0085', '\u0085', 'y']);
  assert.deepEqual(pretokenize('x\uFEFF\uFEFFy'), ['x', '\uFEFF\uFEFF', 'y']);
});

// llama.cpp src/unicode.cpp unicode_regex_split_custom_gpt2, transliterated: a scanner over code points
// with its flags (letter = \p{L}, number = \p{N}, whitespace = unicode_set_whitespace's 25 code points).
const WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
function llamaGpt2Split(s: string): string[] {
  const cpts = [...s].map((c) => c.codePointAt(0) as number);
  const n = cpts.length;
  const OUT = -1;
  const cpt = (p: number) => (p >= 0 && p < n ? cpts[p] : OUT);
  const flags = (p: number) => {
    if (p < 0 || p >= n) return { any: false, letter: false, number: false, space: false };
    const c = String.fromCodePoint(cpts[p]);
    return { any: true, letter: /\p{L}/u.test(c), number: /\p{N}/u.test(c), space: WHITESPACE.has(cpts[p]) };
  };
  const out: string[] = [];
  let prevEnd = 0;
  const add = (end: number) => {
    const len = end - prevEnd;
    if (len > 0) out.push(String.fromCodePoint(...cpts.slice(prevEnd, end)));
    prevEnd = end;
    return len;
  };
  for (let pos = 0; pos < n; ) {
    const c = cpt(pos);
    const f = flags(pos);
    if (c === 0x27 && pos + 1 < n) {
      const c1 = String.fromCodePoint(cpt(pos + 1));
      if ('stmd'.includes(c1)) {
        pos += add(pos + 2);
        continue;
      }
      if (pos + 2 < n) {
        const two = c1 + String.fromCodePoint(cpt(pos + 2));
        if (two === 're' || two === 've' || two === 'll') {
          pos += add(pos + 3);
          continue;
        }
      }
    }
    let f2 = c === 0x20 ? flags(pos + 1) : f;
    if (f2.letter || f2.number) {
      const kind = f2.letter ? 'letter' : 'number';
      pos += c === 0x20 ? 1 : 0;
      while (f2[kind]) f2 = flags(++pos);
      add(pos);
      continue;
    }
    if (!(f2.space || f2.letter || f2.number) && f2.any) {
      pos += c === 0x20 ? 1 : 0;
      while (!(f2.space || f2.letter || f2.number) && f2.any) f2 = flags(++pos);
      add(pos);
      continue;
    }
    let ws = 0;
    while (flags(pos + ws).space) ws++;
    if (ws > 1 && cpt(pos + ws) !== OUT) {
      pos += ws - 1;
      add(pos);
      continue;
    }
    if (ws > 0) {
      pos += ws;
      add(pos);
      continue;
    }
    add(++pos);
  }
  return out;
}

test("the pre-tokenizer equals llama.cpp's gpt2 scanner (transliterated) on random text", () => {
  fc.assert(
    fc.property(text, (s) => {
      assert.deepEqual(pretokenize(s), llamaGpt2Split(s));
    }),
    { numRuns: 2000 },
  );
});

// llama.cpp src/llama-vocab.cpp llm_tokenizer_bpe_session::tokenize on the GGUF strings: tokens and
// merges as `ggufMetadata()` exports them, symbols as UTF-8 characters of the byte-encoded pre-token,
// a queue ordered by (rank, left), stale entries detected by their text.
function llamaBpe(meta: Record<string, unknown>, s: string): number[] {
  const tokens = meta['tokenizer.ggml.tokens'] as string[];
  const id = new Map(tokens.map((t, i) => [t, i]));
  const ranks = new Map((meta['tokenizer.ggml.merges'] as string[]).map((m, r) => [m, r]));
  const out: number[] = [];
  for (const word of pretokenize(s)) {
    const encoded = [...new TextEncoder().encode(word)].map((b) => BYTE_TO_UNICODE[b]).join('');
    const sym = [...encoded].map((text, i, all) => ({
      text,
      prev: i - 1,
      next: i + 1 < all.length ? i + 1 : -1,
    }));
    const queue: { left: number; right: number; text: string; rank: number }[] = [];
    const bigram = (l: number, r: number) => {
      if (l < 0 || r < 0) return;
      const rank = ranks.get(`${sym[l].text} ${sym[r].text}`);
      if (rank !== undefined) queue.push({ left: l, right: r, text: sym[l].text + sym[r].text, rank });
    };
    for (let i = 1; i < sym.length; i++) bigram(i - 1, i);
    while (queue.length > 0) {
      queue.sort((x, y) => x.rank - y.rank || x.left - y.left);
      const b = queue.shift() as (typeof queue)[number];
      const l = sym[b.left];
      const r = sym[b.right];
      if (l.text === '' || r.text === '' || l.text + r.text !== b.text) continue;
      l.text += r.text;
      r.text = '';
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      bigram(l.prev, b.left);
      bigram(b.left, l.next);
    }
    for (const x of sym) if (x.text !== '') out.push(id.get(x.text) as number);
  }
  return out;
}

test("encode equals llama.cpp's BPE session run on the exported GGUF tokens and merges", () => {
  const meta = trained.ggufMetadata();
  const long = ['SELECT'.repeat(60), ' '.repeat(200), `${'!'.repeat(150)}x`, 'Observation'.repeat(30)];
  for (const s of [...CORPUS, ...long]) assert.deepEqual(trained.encode(s), llamaBpe(meta, s), s);
  fc.assert(
    fc.property(text, (s) => {
      assert.deepEqual(trained.encode(s), llamaBpe(meta, s));
    }),
    { numRuns: 500 },
  );
});

test('a hand-worked encoding: merges applied by rank within each pre-token, never across', () => {
  // merges: "a t" → 256, "h e" → 257, "t he" → 258, "Ġ c" → 259
  const t = Tokenizer.fromJSON({ ...Tokenizer.bytesOnly().toJSON(), merges: ['a t', 'h e', 't he', 'Ġ c'] });
  const [a, c, e, h, t_, sp] = [97, 99, 101, 104, 116, 32];
  assert.deepEqual(t.encode('the cat'), [258, 259, 256]);
  // "that": h-e is not adjacent; a-t merges; t-h has no rank → t h at
  assert.deepEqual(t.encode('that'), [t_, h, 256]);
  // " the": Ġ-t has no rank, so " the" is Ġ then "the"; "ca t" across pre-tokens does not merge
  assert.deepEqual(t.encode(' the'), [sp, 258]);
  assert.deepEqual(t.encode('c,at'), [c, 44, 256]);
  assert.deepEqual(t.encode('eh'), [e, h]);
  assert.deepEqual(t.encode('aaa'), [a, a, a]);
});

test('decode(encode(x)) === x for any well-formed text; decodeBytes(encodeBytes(b)) for any bytes', () => {
  fc.assert(
    fc.property(text, (s) => {
      assert.equal(trained.decode(trained.encode(s)), s);
      assert.equal(trained.decode(trained.encodeWithSpecials(s)), s);
    }),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (s) => {
      assert.equal(trained.decode(trained.encode(s)), s);
    }),
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 60 }), (b) => {
      assert.deepEqual(trained.decodeBytes(trained.encodeBytes(b)), b);
    }),
    { numRuns: 1000 },
  );
  // A leading U+FEFF is text, not a byte-order mark to drop (TextDecoder's default would drop it).
  assert.equal(trained.decode(trained.encode('\uFEFFx')), '\uFEFFx');
  const every = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(trained.decodeBytes(trained.encodeBytes(every)), every);
  // Well-formed bytes encode as their text does.
  const s = CORPUS.join(' ');
  assert.deepEqual(trained.encodeBytes(new TextEncoder().encode(s)), trained.encode(s));
});

test('specials: never produced from text; produced with encodeWithSpecials; ids after the merges', () => {
  const ids = trained.encode('<|user|>hi<|end|>');
  assert.ok(ids.every((id) => !trained.isSpecial(id)));
  const first = 256 + trained.merges.length;
  assert.deepEqual(
    SPECIAL_TOKENS.map((t) => trained.special[t]),
    SPECIAL_TOKENS.map((_, i) => first + i),
  );
  const withSpecials = trained.encodeWithSpecials('<|user|>hi<|end|>');
  assert.deepEqual(withSpecials, [
    trained.special['<|user|>'],
    ...trained.encode('hi'),
    trained.special['<|end|>'],
  ]);
  assert.equal(trained.vocabSize, first + SPECIAL_TOKENS.length);
  assert.deepEqual(trained.encodeChat([{ role: 'user', text: 'hi' }], 'assistant'), [
    ...withSpecials,
    trained.special['<|assistant|>'],
  ]);
});

test('streaming decode holds a character split across tokens until its last byte', () => {
  const bytesOnly = Tokenizer.bytesOnly();
  assert.equal(bytesOnly.vocabSize, MIN_VOCAB);
  const d = bytesOnly.streamDecoder();
  const ids = bytesOnly.encode('é語');
  assert.deepEqual(ids, [0xc3, 0xa9, 0xe8, 0xaa, 0x9e]);
  assert.deepEqual(
    ids.map((id) => d.push(id)),
    ['', 'é', '', '', '語'],
  );
  assert.equal(d.end(), '');
  fc.assert(
    fc.property(text, (s) => {
      const stream = trained.streamDecoder();
      const parts = trained.encode(s).map((id) => stream.push(id));
      assert.equal(parts.join('') + stream.end(), s);
    }),
  );
});

test('JSON round trip: the same merges, the same encodings', () => {
  const back = Tokenizer.fromJSON(JSON.parse(JSON.stringify(trained)));
  assert.deepEqual(back.merges, trained.merges);
  for (const s of CORPUS) assert.deepEqual(back.encode(s), trained.encode(s));
  const recorded = trained.withTrainedOn({ env: 'sql', episodes: 3 });
  const again = Tokenizer.fromJSON(JSON.parse(JSON.stringify(recorded)));
  assert.deepEqual(again.trainedOn, { env: 'sql', episodes: 3 });
  assert.deepEqual(again.toJSON(), recorded.toJSON());
  const file = join(tmp, 'tok.json');
  writeFileSync(file, JSON.stringify(trained));
  assert.deepEqual(readTokenizerFile(file).merges, trained.merges);
});

test('a damaged tokenizer file is refused in one line naming the field', () => {
  const good = trained.toJSON();
  const cases: [unknown, RegExp][] = [
    [{ ...good, format: 'other' }, /^f tokenizer\.format: got "other"; expected "turnwise-tokenizer"/],
    [
      { ...good, merges: ['a b', 'a'] },
      /^f tokenizer\.merges\.1: got "a"; expected two tokens joined by one space/,
    ],
    [{ ...good, merges: ['a b', 'x yz'] }, /^f tokenizer\.merges\.1: got "x yz"/],
    [{ ...good, merges: ['a b', 'a b'] }, /^f tokenizer\.merges\.1: got "a b"; makes "ab", a token already/],
    [
      { ...good, merges: ['< |', 'e n', 'en d', '| >', '<| end', '<|end |>'] },
      /^f tokenizer\.merges\.5: got "<\|end \|>"; makes "<\|end\|>", a token already/,
    ],
    [
      { ...good, specials: ['<|end|>'] },
      /^f tokenizer\.specials: got \["<\|end\|>"\]; expected \["<\|endoftext\|>"/,
    ],
    [{ ...good, merges: 'a b' }, /^f tokenizer\.merges: got "a b"; expected array/],
    [{ ...good, extra: 1 }, /^f tokenizer: unknown field\(s\) "extra"/],
    [[], /^f tokenizer: got \[\]; expected object/],
  ];
  for (const [raw, want] of cases) {
    assert.throws(
      () => Tokenizer.fromJSON(raw, 'f'),
      (e: Error) => e.name === 'InputError' && want.test(e.message) && !e.message.includes('\n'),
      JSON.stringify(raw).slice(0, 80),
    );
  }
  const notJson = join(tmp, 'bad.json');
  writeFileSync(notJson, '{"format": "turnwise-tok');
  assert.throws(() => readTokenizerFile(notJson), {
    message: /^\/.*bad\.json: not a tokenizer file: not JSON/,
  });
  assert.throws(() => readTokenizerFile(join(tmp, 'missing.json')), {
    message: /^--tokenizer: got ".*missing\.json"; cannot read it \(ENOENT\)$/,
  });
});

test('GGUF metadata: the gpt2 model, the gpt-2 pre-tokenizer, unique tokens, control specials', () => {
  const meta = trained.ggufMetadata();
  const tokens = meta['tokenizer.ggml.tokens'] as string[];
  assert.equal(meta['tokenizer.ggml.model'], 'gpt2');
  assert.equal(meta['tokenizer.ggml.pre'], 'gpt-2');
  assert.equal(tokens.length, trained.vocabSize);
  assert.equal(new Set(tokens).size, tokens.length);
  assert.deepEqual(tokens.slice(0, 256), BYTE_TO_UNICODE);
  assert.deepEqual(tokens.slice(-SPECIAL_TOKENS.length), [...SPECIAL_TOKENS]);
  const types = meta['tokenizer.ggml.token_type'] as number[];
  assert.deepEqual(
    types.map((t, i) => (t === 3) === trained.isSpecial(i)),
    types.map(() => true),
  );
  assert.ok(types.every((t) => t === 1 || t === 3));
  // Each merge's token is its two sides' texts joined (what llama.cpp's text_to_token looks up).
  for (const [r, m] of (meta['tokenizer.ggml.merges'] as string[]).entries())
    assert.equal(tokens[256 + r], m.replace(' ', ''));
  assert.equal(tokens[meta['tokenizer.ggml.eot_token_id'] as number], '<|end|>');
  assert.equal(tokens[meta['tokenizer.ggml.eos_token_id'] as number], '<|endoftext|>');
});
