// A byte-level BPE tokenizer of the GPT-2 family, encoding exactly as llama.cpp's `llm_tokenizer_bpe`
// does for a GGUF with tokenizer.ggml.model = "gpt2" and tokenizer.ggml.pre = "gpt-2" (src/llama-vocab.cpp,
// src/unicode.cpp), so that the language agent's vocabulary leaves turnwise as a tokenizer llama.cpp runs:
//
//   1. pre-tokenize with GPT-2's pattern, \s being Unicode White_Space (nn/tokenizer-bytes.ts);
//   2. each pre-token's UTF-8 bytes are the initial symbols (one token per byte: ids 0..255 = bytes);
//   3. within the pre-token, repeatedly merge the adjacent pair of lowest merge rank, the leftmost on a
//      tie (llama.cpp's priority queue: `l.rank > r.rank || (l.rank == r.rank && l.left > r.left)`),
//      until no adjacent pair has a rank. Merge r makes token 256 + r.
//
// Vocabulary: the 256 byte tokens (in the GGUF/HF string form each byte is GPT-2's bytes_to_unicode
// character: space → "Ġ", newline → "Ċ"), then one token per merge, then the special tokens
// SPECIAL_TOKENS. Specials are control tokens: `encode` never produces them (a user's "<|end|>" is
// seven bytes' worth of ordinary tokens), `encodeWithSpecials` does (llama.cpp's parse_special).
// decode(encode(x)) === x for every well-formed string; encodeBytes/decodeBytes round-trip any bytes.
//
// The chat template these specials serve (encodeChat): each message is its role token, its text, then
// <|end|> — `<|user|>Turn 1.…<|end|><|assistant|><tool_call>…</tool_call><|end|>` — and a prompt ends
// with the opened <|assistant|>. <|end|> ends an action (llama.cpp counts it as end-of-generation by its
// text); <|endoftext|> bounds documents (BOS/EOS/padding).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { fromZod } from '../core/validate.ts';
import { BYTE_TO_UNICODE, latin1, pretokenize, utf8Length } from './tokenizer-bytes.ts';

export const SPECIAL_TOKENS = [
  '<|endoftext|>',
  '<|system|>',
  '<|user|>',
  '<|assistant|>',
  '<|tool|>',
  '<|end|>',
] as const;
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** The largest vocabulary: pair keys are a·2^16 + b. */
export const MAX_VOCAB = 65_536;
/** The smallest: the bytes and the specials, no merge. */
export const MIN_VOCAB = 256 + SPECIAL_TOKENS.length;

/** Whether a token's GGUF text would be a special token's: such a merge would make the vocabulary
 * list one text twice, which llama.cpp refuses ("duplicate token in vocabulary"). */
export const isSpecialText = (text: string): boolean => (SPECIAL_TOKENS as readonly string[]).includes(text);

/** The key of an adjacent pair of token ids in the rank and count maps. */
export const pairKey = (a: number, b: number): number => a * MAX_VOCAB + b;

const utf8 = new TextEncoder();

/** Cached pre-tokens per tokenizer; cleared whole when full (encoding stays a pure function). */
const CACHE_LIMIT = 50_000;

/** A min-heap of candidate merges ordered as llama.cpp's queue: rank, then left position. */
class MergeQueue {
  private readonly items: [rank: number, left: number, right: number, a: number, b: number][] = [];
  get size(): number {
    return this.items.length;
  }
  private less(i: number, j: number): boolean {
    const x = this.items[i];
    const y = this.items[j];
    return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
  }
  push(item: [number, number, number, number, number]): void {
    const h = this.items;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }
  pop(): [number, number, number, number, number] {
    const h = this.items;
    const top = h[0];
    const last = h.pop() as [number, number, number, number, number];
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(l, m)) m = l;
        if (r < h.length && this.less(r, m)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

export class Tokenizer {
  /** Merge r joins the tokens merges[r] = [a, b] into token 256 + r. */
  readonly merges: readonly (readonly [number, number])[];
  readonly vocabSize: number;
  /** Each special token's id. */
  readonly special: Readonly<Record<SpecialToken, number>>;
  private readonly ranks = new Map<number, number>();
  private readonly bytes: Uint8Array[] = [];
  private readonly cache = new Map<string, readonly number[]>();
  private readonly specialPattern: RegExp;
  /** Where the merges were learned, as the file records it (kept through toJSON). */
  readonly trainedOn: TokenizerFile['trainedOn'];

  /** Merges as id pairs; each side must be a byte or an earlier merge's token (fromJSON checks files). */
  constructor(merges: readonly (readonly [number, number])[], trainedOn?: TokenizerFile['trainedOn']) {
    this.trainedOn = trainedOn;
    this.merges = merges.map(([a, b]) => [a, b] as const);
    for (let b = 0; b < 256; b++) this.bytes.push(Uint8Array.of(b));
    const seen = new Set<string>();
    for (const [r, [a, b]] of this.merges.entries()) {
      const next = 256 + r;
      if (!(Number.isInteger(a) && Number.isInteger(b) && a < next && b < next && a >= 0 && b >= 0))
        throw new RangeError(`merge ${r}: tokens ${a} and ${b} must exist before token ${next}`);
      const joined = new Uint8Array(this.bytes[a].length + this.bytes[b].length);
      joined.set(this.bytes[a]);
      joined.set(this.bytes[b], this.bytes[a].length);
      const key = latin1(joined);
      if (seen.has(key) || isSpecialText(key))
        throw new RangeError(`merge ${r} makes ${JSON.stringify(key)} a second time or a special's text`);
      seen.add(key);
      this.bytes.push(joined);
      this.ranks.set(pairKey(a, b), r);
    }
    const first = 256 + this.merges.length;
    this.special = Object.fromEntries(SPECIAL_TOKENS.map((t, i) => [t, first + i])) as Record<
      SpecialToken,
      number
    >;
    for (const t of SPECIAL_TOKENS) this.bytes.push(utf8.encode(t));
    this.vocabSize = first + SPECIAL_TOKENS.length;
    if (this.vocabSize > MAX_VOCAB)
      throw new RangeError(`vocabulary of ${this.vocabSize} tokens; at most ${MAX_VOCAB}`);
    const escaped = [...SPECIAL_TOKENS]
      .sort((x, y) => y.length - x.length)
      .map((t) => t.replace(/[|]/g, '\\|'));
    this.specialPattern = new RegExp(escaped.join('|'), 'g');
  }

  /** The same merges, with where they were learned recorded. */
  withTrainedOn(trainedOn: NonNullable<TokenizerFile['trainedOn']>): Tokenizer {
    return new Tokenizer(this.merges, trainedOn);
  }

  /** A tokenizer of the bytes and the specials alone (no merges): what "bytes only" measures. */
  static bytesOnly(): Tokenizer {
    return new Tokenizer([]);
  }

  isSpecial(id: number): boolean {
    return id >= 256 + this.merges.length && id < this.vocabSize;
  }

  /** The bytes a token stands for (a special: its text's UTF-8). */
  tokenBytes(id: number): Uint8Array {
    const b = this.bytes[id];
    if (b === undefined) throw new RangeError(`token ${id} is not in the vocabulary of ${this.vocabSize}`);
    return b;
  }

  /** A token as GGUF's tokenizer.ggml.tokens and HF's vocab.json spell it (bytes_to_unicode). */
  tokenText(id: number): string {
    if (this.isSpecial(id)) return SPECIAL_TOKENS[id - 256 - this.merges.length];
    let s = '';
    for (const b of this.tokenBytes(id)) s += BYTE_TO_UNICODE[b];
    return s;
  }

  /** The token ids of a text; special-token text is encoded as ordinary bytes. */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const piece of pretokenize(text)) this.encodePiece(piece, out);
    return out;
  }

  /** Like encode, but the specials' texts become the special tokens (llama.cpp's parse_special). */
  encodeWithSpecials(text: string): number[] {
    const out: number[] = [];
    let at = 0;
    for (const m of text.matchAll(this.specialPattern)) {
      for (const piece of pretokenize(text.slice(at, m.index))) this.encodePiece(piece, out);
      out.push(this.special[m[0] as SpecialToken]);
      at = m.index + m[0].length;
    }
    for (const piece of pretokenize(text.slice(at))) this.encodePiece(piece, out);
    return out;
  }

  /** The token ids of any bytes: well-formed UTF-8 runs are encoded as text, each byte of an ill-formed
   * sequence is its own token (llama.cpp would read such bytes as U+FFFD; text never has them). */
  encodeBytes(bytes: Uint8Array): number[] {
    const out: number[] = [];
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    let start = 0;
    let i = 0;
    while (i < bytes.length) {
      const n = utf8Length(bytes, i);
      if (n > 0) {
        i += n;
        continue;
      }
      if (i > start) out.push(...this.encode(text.decode(bytes.subarray(start, i))));
      out.push(bytes[i]);
      start = ++i;
    }
    if (i > start) out.push(...this.encode(text.decode(bytes.subarray(start, i))));
    return out;
  }

  /** The chat template (top of the file): each message as role, text, <|end|>; `open` appends that
   * role's token (a prompt opens the assistant's turn). */
  encodeChat(messages: readonly { role: ChatRole; text: string }[], open?: ChatRole): number[] {
    const out: number[] = [];
    for (const m of messages)
      out.push(this.roleToken(m.role), ...this.encode(m.text), this.special['<|end|>']);
    if (open !== undefined) out.push(this.roleToken(open));
    return out;
  }

  roleToken(role: ChatRole): number {
    return this.special[`<|${role}|>`];
  }

  decodeBytes(ids: readonly number[]): Uint8Array {
    let n = 0;
    for (const id of ids) n += this.tokenBytes(id).length;
    const out = new Uint8Array(n);
    let at = 0;
    for (const id of ids) {
      const b = this.tokenBytes(id);
      out.set(b, at);
      at += b.length;
    }
    return out;
  }

  /** The text of token ids (specials as their text; bytes that are not UTF-8 as U+FFFD). A leading
   * U+FEFF is text like any other (TextDecoder would drop it as a byte-order mark by default). */
  decode(ids: readonly number[]): string {
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.decodeBytes(ids));
  }

  /** Text as tokens arrive: a character split across tokens is held until its last byte comes. */
  streamDecoder(): { push(id: number): string; end(): string } {
    const d = new TextDecoder('utf-8', { ignoreBOM: true });
    return {
      push: (id) => d.decode(this.tokenBytes(id), { stream: true }),
      end: () => d.decode(),
    };
  }

  private encodePiece(piece: string, out: number[]): void {
    let ids = this.cache.get(piece);
    if (ids === undefined) {
      ids = this.mergeBytes(utf8.encode(piece));
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(piece, ids);
    }
    for (const id of ids) out.push(id);
  }

  /** llama.cpp's llm_tokenizer_bpe_session::tokenize for one pre-token: symbols in a linked list, a
   * queue of ranked adjacent pairs, stale entries skipped when popped. */
  private mergeBytes(bytes: Uint8Array): number[] {
    const n = bytes.length;
    if (n < 2) return Array.from(bytes);
    const tok = Int32Array.from(bytes);
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    const alive = new Uint8Array(n).fill(1);
    const queue = new MergeQueue();
    const consider = (l: number, r: number) => {
      if (l < 0 || r < 0) return;
      const rank = this.ranks.get(pairKey(tok[l], tok[r]));
      if (rank !== undefined) queue.push([rank, l, r, tok[l], tok[r]]);
    };
    for (let i = 0; i + 1 < n; i++) consider(i, i + 1);
    while (queue.size > 0) {
      const [rank, l, r, a, b] = queue.pop();
      // Stale: a side was merged away or grew since the pair was queued.
      if (!alive[l] || !alive[r] || tok[l] !== a || tok[r] !== b) continue;
      tok[l] = 256 + rank;
      alive[r] = 0;
      next[l] = next[r];
      if (next[r] >= 0) prev[next[r]] = l;
      consider(prev[l], l);
      consider(l, next[l]);
    }
    const out: number[] = [];
    for (let i = 0; i >= 0; i = next[i]) out.push(tok[i]);
    return out;
  }

  /** The file form (what toJSON gives and fromJSON reads): merges in the GGUF/HF "a b" spelling. */
  toJSON(): TokenizerFile {
    return {
      format: FORMAT,
      version: 1,
      model: 'gpt2',
      pre: 'gpt-2',
      merges: this.merges.map(([a, b]) => `${this.tokenText(a)} ${this.tokenText(b)}`),
      specials: [...SPECIAL_TOKENS],
      ...(this.trainedOn === undefined ? {} : { trainedOn: { ...this.trainedOn } }),
    };
  }

  /** A tokenizer file's contents, checked: every field, every merge (its sides exist, it makes a new
   * token); `source` names the file in the one-line refusal. */
  static fromJSON(raw: unknown, source = 'tokenizer'): Tokenizer {
    const root = `${source} tokenizer`;
    const f = fromZod(FileSchema, raw, root);
    if (f.specials.length !== SPECIAL_TOKENS.length || f.specials.some((t, i) => t !== SPECIAL_TOKENS[i]))
      throw new InputError(`${root}.specials`, f.specials, `expected ${JSON.stringify(SPECIAL_TOKENS)}`);
    const ids = new Map<string, number>(BYTE_TO_UNICODE.map((c, b) => [c, b]));
    const merges: [number, number][] = [];
    for (const [r, m] of f.merges.entries()) {
      const field = `${root}.merges.${r}`;
      const parts = m.split(' ');
      const [a, b] = parts.map((p) => ids.get(p));
      if (parts.length !== 2 || a === undefined || b === undefined)
        throw new InputError(
          field,
          m,
          'expected two tokens joined by one space, each a byte token or an earlier merge’s result',
        );
      const joined = parts[0] + parts[1];
      if (ids.has(joined) || isSpecialText(joined))
        throw new InputError(field, m, `makes ${JSON.stringify(joined)}, a token already in the vocabulary`);
      ids.set(joined, 256 + r);
      merges.push([a, b]);
    }
    return new Tokenizer(merges, f.trainedOn);
  }

  /** The tokenizer.ggml.* entries of a GGUF file for this vocabulary (the GGUF spec; llama.cpp reads
   * token_type 1 = normal, 3 = control, and the pre-tokenizer by its name "gpt-2"). */
  ggufMetadata(): Record<string, string | boolean | number | string[] | number[]> {
    const ids = Array.from({ length: this.vocabSize }, (_, i) => i);
    const endoftext = this.special['<|endoftext|>'];
    return {
      'tokenizer.ggml.model': 'gpt2',
      'tokenizer.ggml.pre': 'gpt-2',
      'tokenizer.ggml.tokens': ids.map((i) => this.tokenText(i)),
      'tokenizer.ggml.token_type': ids.map((i) => (this.isSpecial(i) ? 3 : 1)),
      'tokenizer.ggml.merges': this.toJSON().merges,
      'tokenizer.ggml.bos_token_id': endoftext,
      'tokenizer.ggml.eos_token_id': endoftext,
      'tokenizer.ggml.eot_token_id': this.special['<|end|>'],
      'tokenizer.ggml.padding_token_id': endoftext,
      'tokenizer.ggml.add_bos_token': false,
    };
  }
}

const FORMAT = 'turnwise-tokenizer';

const FileSchema = z
  .object({
    format: z.literal(FORMAT),
    version: z.literal(1),
    model: z.literal('gpt2'),
    pre: z.literal('gpt-2'),
    merges: z.array(z.string()).max(MAX_VOCAB - MIN_VOCAB),
    specials: z.array(z.string()),
    /** Where the merges were learned (the CLI records the env, its parameters, episodes, seed, eps). */
    trainedOn: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  })
  .strict();

export type TokenizerFile = z.infer<typeof FileSchema>;

/** Reads a tokenizer file; an unreadable or damaged one is refused in one line naming the field. */
export function readTokenizerFile(path: string, field = '--tokenizer'): Tokenizer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InputError(field, path, `cannot read it (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw InputError.raw(path, `not a tokenizer file: not JSON (${(e as Error).message})`);
  }
  return Tokenizer.fromJSON(raw, path);
}
