// The byte level of the tokenizer (nn/tokenizer.ts): GPT-2's byte alphabet, its pre-tokenizer as
// llama.cpp runs it, and the UTF-8 facts the encoder needs.
//
// The pre-tokenizer is GPT-2's pattern (openai/gpt-2 src/encoder.py)
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with \s = Unicode White_Space, the 25 code points of llama.cpp's unicode_set_whitespace (generated from
// Python `regex`'s \s by scripts/gen-unicode-data.py): U+0085 is one and U+FEFF is not — JavaScript's \s
// says the opposite of both, so the pattern spells \p{White_Space}. llama.cpp runs it as a hand-written
// scanner (src/unicode.cpp unicode_regex_split_custom_gpt2) that splits every text as this regex does
// (test/nn/tokenizer.test.ts runs a transliteration of it against this); \p{L} and \p{N} follow the
// Unicode version of Node's ICU, llama.cpp's that of its generated table — they differ only on code
// points assigned in between.

/** GPT-2's bytes_to_unicode (openai/gpt-2 src/encoder.py; llama.cpp unicode_byte_to_utf8_map): printable
 * Latin-1 bytes stand for themselves, the other 68 map to U+0100.. in byte order. */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : 256 + n++));
  return out;
})();

/** GPT-2's pre-tokenizer with \s as White_Space (above). */
const PRETOKEN =
  /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;

/** The pre-tokens of a text, in order; their concatenation is the text. */
export function pretokenize(text: string): string[] {
  return text.match(PRETOKEN) ?? [];
}

/** Bytes as a string of code points 0..255: a token's identity (and, for ASCII, its text). */
export function latin1(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

/** The length of the well-formed UTF-8 sequence at `i` (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when the bytes there are not one. */
export function utf8Length(s: Uint8Array, i: number): number {
  const b0 = s[i];
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < s.length && s[i + k] >= lo && s[i + k] <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}
