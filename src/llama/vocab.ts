// A GGUF vocabulary's tokens as the bytes llama.cpp writes for each one alone (llama-vocab.cpp
// token_to_piece with special = true), read from the file's metadata: tokenizer.ggml.model,
// tokenizer.ggml.tokens and tokenizer.ggml.token_type (1 normal, 2 unknown, 3 control, 4 user-defined,
// 5 unused, 6 byte; absent: all normal).
//
// - Control and unknown tokens (the specials: <|end|>, <|im_end|>, <unk>) and user-defined tokens are
//   their string's UTF-8, as written; unused tokens are no bytes.
// - "gpt2" (byte-level BPE): a normal token's string spells bytes in GPT-2's bytes_to_unicode alphabet
//   (nn/tokenizer-bytes.ts BYTE_TO_UNICODE: "Ġ" is a space, "Ċ" a newline); llama.cpp's
//   llama_decode_text maps each character back to its byte. A character outside the alphabet (no
//   converter writes one) is kept as its UTF-8.
// - "llama" (SentencePiece) and "t5" (Unigram): a normal token's "▁" (U+2581) is a space; a byte token
//   <0xXX> is that byte.
// Other vocabulary kinds (bert, rwkv, plamo2) are not read here: ggufVocab returns undefined.
import type { GgufFile } from '../nn/gguf.ts';
import { BYTE_TO_UNICODE } from '../nn/tokenizer-bytes.ts';

export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

const UNICODE_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_UNICODE.map((c, b) => [c, b]));
const utf8 = new TextEncoder();

/** The vocabulary kinds read here. */
export const VOCAB_KINDS = ['gpt2', 'llama', 't5'] as const;
export type VocabKind = (typeof VOCAB_KINDS)[number];

/** A GGUF vocabulary: each token's bytes, and whether it is a special token (control or unknown). */
export class GgufVocab {
  readonly kind: VocabKind;
  private readonly tokens: readonly string[];
  private readonly types: readonly number[] | undefined;

  constructor(kind: VocabKind, tokens: readonly string[], types?: readonly number[]) {
    this.kind = kind;
    this.tokens = tokens;
    this.types = types;
  }

  get size(): number {
    return this.tokens.length;
  }

  /** The token's string as the vocabulary holds it. */
  text(id: number): string {
    const t = this.tokens[id];
    if (t === undefined) throw new RangeError(`token ${id} is not in the vocabulary of ${this.size}`);
    return t;
  }

  type(id: number): number {
    return this.types?.[id] ?? TOKEN_TYPE.NORMAL;
  }

  /** A control or unknown token: shown by its name, not text the model writes. */
  isSpecial(id: number): boolean {
    const t = this.type(id);
    return t === TOKEN_TYPE.CONTROL || t === TOKEN_TYPE.UNKNOWN;
  }

  /** The bytes llama.cpp writes for the token alone, specials included. */
  bytes(id: number): Uint8Array {
    const text = this.text(id);
    const type = this.type(id);
    if (type === TOKEN_TYPE.UNUSED) return new Uint8Array(0);
    if (type !== TOKEN_TYPE.NORMAL && type !== TOKEN_TYPE.BYTE) return utf8.encode(text);
    if (this.kind === 'gpt2') {
      if (type === TOKEN_TYPE.BYTE) return new Uint8Array(0);
      const out: number[] = [];
      for (const c of text) {
        const b = UNICODE_TO_BYTE.get(c);
        if (b === undefined) out.push(...utf8.encode(c));
        else out.push(b);
      }
      return Uint8Array.from(out);
    }
    if (type === TOKEN_TYPE.BYTE) {
      const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
      return m === null ? new Uint8Array(0) : Uint8Array.of(Number.parseInt(m[1], 16));
    }
    return utf8.encode(text.replaceAll('\u2581', ' '));
  }
}

/** The vocabulary of a GGUF file's header; undefined when it has none or of a kind not read here. */
export function ggufVocab(file: GgufFile): GgufVocab | undefined {
  const kind = file.metadata.get('tokenizer.ggml.model')?.value;
  const tokens = file.metadata.get('tokenizer.ggml.tokens')?.value;
  const types = file.metadata.get('tokenizer.ggml.token_type')?.value;
  if (typeof kind !== 'string' || !(VOCAB_KINDS as readonly string[]).includes(kind)) return undefined;
  if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'string')) return undefined;
  return new GgufVocab(
    kind as VocabKind,
    tokens as string[],
    Array.isArray(types) ? types.map((t) => Number(t)) : undefined,
  );
}
