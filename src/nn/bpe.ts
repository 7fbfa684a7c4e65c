// Learning BPE merges from a corpus (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with
// Subword Units", §3.1; GPT-2's byte-level variant, Radford et al. 2019 §2.2): the corpus is cut into
// pre-tokens exactly as the tokenizer cuts text (nn/tokenizer.ts pretokenize), each distinct pre-token
// is a word of byte tokens weighted by its count, and each step merges the most frequent adjacent pair
// of tokens over all words into a new token, until the vocabulary has the size asked for.
//
// - Ties: among pairs of equal count the one with the smaller left id wins, then the smaller right id
//   (ids, not strings: bytes 0..255, then merges in the order they were made). The result is a function
//   of the multiset of texts and the size alone: the same corpus gives the same merges.
// - Within a word a merge applies left to right without overlap ("a a a" → "aa a"), as encoding does,
//   so each training word ends up tokenized exactly as `Tokenizer.encode` tokenizes it.
// - A pair whose joined bytes are already a token (reachable by two merge orders) or a special token's
//   text is never merged: a GGUF vocabulary may not list one text twice. The next pair is taken.
// - The corpus may run out of pairs before the size is reached (every word one token): the vocabulary
//   is then smaller than asked, and `Tokenizer.vocabSize` says so.
// - Incremental counts: a merge revisits only the words that hold the pair (an index pair → words) and
//   updates the counts of the pairs they lose and gain; the most frequent pair comes from a max-heap
//   whose stale entries are skipped when popped. A few MB of transcripts train in seconds.
import { isSpecialText, MAX_VOCAB, MIN_VOCAB, pairKey, Tokenizer } from './tokenizer.ts';
import { latin1, pretokenize } from './tokenizer-bytes.ts';

interface Word {
  ids: number[];
  count: number;
}

/** A max-heap of (count, a, b): count descending, then a, then b ascending (the tie rule above). */
class PairHeap {
  private readonly h: [number, number, number][] = [];
  get size(): number {
    return this.h.length;
  }
  private before(x: [number, number, number], y: [number, number, number]): boolean {
    return x[0] > y[0] || (x[0] === y[0] && (x[1] < y[1] || (x[1] === y[1] && x[2] < y[2])));
  }
  push(e: [number, number, number]): void {
    const h = this.h;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }
  pop(): [number, number, number] {
    const h = this.h;
    const top = h[0];
    const last = h.pop() as [number, number, number];
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        let m = i;
        if (l < h.length && this.before(h[l], h[m])) m = l;
        if (l + 1 < h.length && this.before(h[l + 1], h[m])) m = l + 1;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/** The distinct pre-tokens of the texts with their counts, as words of byte ids (in first-seen order). */
export function corpusWords(texts: Iterable<string>): Word[] {
  const counts = new Map<string, number>();
  for (const text of texts) for (const p of pretokenize(text)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const utf8 = new TextEncoder();
  return [...counts].map(([p, count]) => ({ ids: Array.from(utf8.encode(p)), count }));
}

/** `a b` merged left to right without overlap. */
function mergeWord(ids: readonly number[], a: number, b: number, id: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (i + 1 < ids.length && ids[i] === a && ids[i + 1] === b) {
      out.push(id);
      i++;
    } else out.push(ids[i]);
  }
  return out;
}

/**
 * Merges learned from `texts` for a vocabulary of `vocabSize` tokens in all (256 bytes + merges + the
 * specials), as a Tokenizer. MIN_VOCAB ≤ vocabSize ≤ MAX_VOCAB.
 */
export function trainBpe(texts: Iterable<string>, vocabSize: number): Tokenizer {
  if (!Number.isInteger(vocabSize) || vocabSize < MIN_VOCAB || vocabSize > MAX_VOCAB)
    throw new RangeError(`vocabSize ${vocabSize}: expected an integer from ${MIN_VOCAB} to ${MAX_VOCAB}`);
  const target = vocabSize - MIN_VOCAB;
  const words = corpusWords(texts);
  const counts = new Map<number, number>();
  const where = new Map<number, Set<number>>();
  const add = (w: number, sign: 1 | -1) => {
    const { ids, count } = words[w];
    for (let i = 0; i + 1 < ids.length; i++) {
      const k = pairKey(ids[i], ids[i + 1]);
      counts.set(k, (counts.get(k) ?? 0) + sign * count);
      if (sign > 0) {
        const s = where.get(k);
        if (s === undefined) where.set(k, new Set([w]));
        else s.add(w);
      }
    }
  };
  for (let w = 0; w < words.length; w++) add(w, 1);
  const heap = new PairHeap();
  for (const [k, c] of counts) heap.push([c, Math.floor(k / MAX_VOCAB), k % MAX_VOCAB]);

  const tokens: Uint8Array[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  const known = new Set(tokens.map(latin1));
  const merges: [number, number][] = [];
  const refused = new Set<number>();
  while (merges.length < target && heap.size > 0) {
    const [c, a, b] = heap.pop();
    const k = pairKey(a, b);
    const now = counts.get(k) ?? 0;
    if (now !== c) {
      // Stale: an entry with the current count was pushed when it rose; re-queue only a fall.
      if (now > 0 && now < c) heap.push([now, a, b]);
      continue;
    }
    if (c <= 0 || refused.has(k)) continue;
    const joined = new Uint8Array(tokens[a].length + tokens[b].length);
    joined.set(tokens[a]);
    joined.set(tokens[b], tokens[a].length);
    const key = latin1(joined);
    if (known.has(key) || isSpecialText(key)) {
      refused.add(k);
      continue;
    }
    const id = 256 + merges.length;
    merges.push([a, b]);
    tokens.push(joined);
    known.add(key);
    const before = new Map<number, number>();
    for (const w of [...(where.get(k) ?? [])]) {
      const ids = words[w].ids;
      let holds = false;
      for (let i = 0; i + 1 < ids.length && !holds; i++) holds = ids[i] === a && ids[i + 1] === b;
      if (!holds) continue;
      for (let i = 0; i + 1 < ids.length; i++) {
        const p = pairKey(ids[i], ids[i + 1]);
        if (!before.has(p)) before.set(p, counts.get(p) ?? 0);
      }
      add(w, -1);
      words[w].ids = mergeWord(ids, a, b, id);
      add(w, 1);
      for (let i = 0; i + 1 < words[w].ids.length; i++) {
        const p = pairKey(words[w].ids[i], words[w].ids[i + 1]);
        if (!before.has(p)) before.set(p, 0);
      }
    }
    where.delete(k);
    counts.delete(k);
    for (const [p, was] of before) {
      const cur = counts.get(p) ?? 0;
      if (cur === 0) counts.delete(p);
      if (cur > was && !refused.has(p)) heap.push([cur, Math.floor(p / MAX_VOCAB), p % MAX_VOCAB]);
    }
  }
  return new Tokenizer(merges);
}
