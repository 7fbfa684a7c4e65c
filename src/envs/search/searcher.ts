// BM25 over a corpus (minisearch 7.2.0: BM25+ scoring, title and text fields, title boosted). Built once
// per task corpus (the world caches it; building is the cost, a query is cheap) and read-only afterwards,
// so every env instance of a task shares it. Results are ordered by score, ties broken by doc id, so the
// order is deterministic whatever minisearch's internal order; repeated queries hit a small cache.
import { createRequire } from 'node:module';
import type MiniSearch from 'minisearch';
import type { Corpus, Doc } from './corpus.ts';

// minisearch is loaded when the first index is built, not when the env registry is imported: every
// command imports the registry, few of them search (start-up, docs/cli.md). Its CommonJS build is the
// same code as its ES one, and require() is what loads it synchronously, inside a constructor.
let miniSearch: typeof MiniSearch | undefined;
const MiniSearchClass = () =>
  (miniSearch ??= createRequire(import.meta.url)('minisearch') as typeof MiniSearch);

export interface Hit {
  id: string;
  title: string;
  /** The sentence of the document that shares the most query terms (the first on ties). */
  snippet: string;
  /** Index of that sentence in the document. */
  sentence: number;
}

export const TOP_K = 5;

/** The words of a text as the index sees them: lower case, split at anything not a letter or digit. */
export const searchTokens = (s: string): string[] => tokens(s);

const tokens = (s: string): string[] =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);

export class Searcher {
  private readonly index: MiniSearch<{ id: string; title: string; text: string }>;
  private readonly docs: ReadonlyMap<string, Doc>;
  private readonly memo = new Map<string, Hit[]>();

  constructor(corpus: Corpus) {
    this.docs = corpus.docById;
    this.index = new (MiniSearchClass())({
      fields: ['title', 'text'],
      idField: 'id',
      tokenize: tokens,
      searchOptions: { boost: { title: 3 } },
    });
    this.index.addAll(corpus.docs.map((d) => ({ id: d.id, title: d.title, text: d.sentences.join(' ') })));
  }

  /** The top-k documents for a query (empty for a query without terms). */
  search(query: string, k = TOP_K): Hit[] {
    const key = `${k}\u0000${query}`;
    const cached = this.memo.get(key);
    if (cached !== undefined) return cached;
    const terms = tokens(query);
    const ranked =
      terms.length === 0
        ? []
        : this.index
            .search(terms.join(' '))
            .map((r) => ({ id: String(r.id), score: r.score }))
            .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const hits = ranked.slice(0, k).map(({ id }) => hit(this.docs.get(id) as Doc, terms));
    if (this.memo.size >= 512) this.memo.clear();
    this.memo.set(key, hits);
    return hits;
  }
}

function hit(doc: Doc, terms: readonly string[]): Hit {
  const want = new Set(terms);
  let best = 0;
  let bestN = -1;
  doc.sentences.forEach((s, i) => {
    const n = new Set(tokens(s).filter((w) => want.has(w))).size;
    if (n > bestN) {
      best = i;
      bestN = n;
    }
  });
  return { id: doc.id, title: doc.title, snippet: doc.sentences[best], sentence: best };
}
