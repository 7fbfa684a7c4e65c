// A search task = (params, seed) → a corpus (corpus.ts) and a multi-hop question over it: an anchor
// entity named by a description ("the 1987 novel about a lighthouse keeper"), then `level` relations
// followed from it ("the birthplace of the author of …"); the answer is the last entity's name.
// Params:
//   level   1 | 2 | 3 | 'mixed' (default): the number of hops; mixed draws it per task;
//   misuse  how many malformed calls (unknown tool, bad arguments) end the episode as `invalid-action`
//           (default 3; the earlier ones are tool errors the agent sees);
//   mode    'call' (default: the agent writes tool calls) | 'choose' (choice.ts: each turn the agent picks
//           one of `slots` calls offered as discrete actions — the gold path's next call among
//           distractors — with per-slot features a small policy learns from);
//   slots   how many calls 'choose' offers per turn (default 6; only with it).
// mode and slots appear in the canonical form only when set, so that the default's stays what it was.
//
// The clue chain. For each hop i (entity e_i → e_{i+1} by relation r_i) two clues:
//   locate:e_i    the id of e_i's document was shown (in search results, or by opening it);
//   fact:e_i.r_i  the sentence stating r_i was shown (opening the document, or as a search snippet).
// A task needs 2·level clues; together they name the answer. The gold path takes one clue per call:
// search(the description) → open(e_0) → search(e_1's name) → open(e_1) → … → answer. Every gold query is
// checked at generation to rank its target in the top k, so the path always works.
// Worlds (corpus, BM25 index, question) are cached per (params, seed): they are immutable.
import { z } from 'zod';
import { InputError } from '../../core/errors.ts';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Task, ToolCall } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import {
  buildCorpus,
  type Corpus,
  describeEntity,
  descriptionQuery,
  type Entity,
  RELATIONS,
  type Relation,
} from './corpus.ts';
import { type Hit, Searcher } from './searcher.ts';
import type { ParsedSearchCall } from './tools.ts';

const ParamsSchema = z
  .object({
    level: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal('mixed')]).optional(),
    misuse: z.number().int().min(1).max(100).optional(),
    mode: z.enum(['call', 'choose']).optional(),
    slots: z.number().int().min(2).max(12).optional(),
  })
  .strict();

export type SearchLevel = 1 | 2 | 3;
export interface SearchParams {
  level: SearchLevel | 'mixed';
  misuse: number;
  mode?: 'choose';
  slots?: number;
}

export function searchParams(raw: Record<string, unknown>): SearchParams {
  const p = fromZod(ParamsSchema, raw, 'params');
  if (p.slots !== undefined && p.mode !== 'choose')
    throw new InputError('params.slots', p.slots, "only with mode 'choose'");
  const out: SearchParams = { level: p.level ?? 'mixed', misuse: p.misuse ?? 3 };
  if (p.mode === 'choose') {
    out.mode = 'choose';
    out.slots = p.slots ?? 6;
  }
  return out;
}

export interface Hop {
  from: string;
  relation: Relation;
  to: string;
  /** The gold query that locates `from`'s document. */
  query: string;
}

export interface SearchWorld {
  params: SearchParams;
  level: SearchLevel;
  corpus: Corpus;
  searcher: Searcher;
  question: string;
  answer: string;
  hops: Hop[];
  /** The clue ids in gold order (locate, fact, locate, fact, …). */
  clues: string[];
  /** Every call the random policy may draw: search each title, open each doc, answer each name. */
  menu: readonly ToolCall[];
}

const PHRASE: Record<Relation, (inner: string) => string> = {
  author: (x) => `the author of ${x}`,
  publisher: (x) => `the publisher of ${x}`,
  birthplace: (x) => `the birthplace of ${x}`,
  employer: (x) => `the employer of ${x}`,
  founder: (x) => `the founder of ${x}`,
  headquarters: (x) => `the headquarters city of ${x}`,
  country: (x) => `the country containing ${x}`,
  mayor: (x) => `the mayor of ${x}`,
  capital: (x) => `the capital of ${x}`,
};

export const locateClue = (id: string) => `locate:${id}`;
export const factClue = (id: string, rel: Relation) => `fact:${id}.${rel}`;

/** A random walk of `n` relations from `start` through distinct entities, or null when it gets stuck. */
function walk(
  rng: Rng,
  corpus: Corpus,
  start: Entity,
  n: number,
): { relation: Relation; to: Entity }[] | null {
  const seen = new Set([start.id]);
  const out: { relation: Relation; to: Entity }[] = [];
  let at = start;
  for (let i = 0; i < n; i++) {
    const options = RELATIONS[at.type].filter(([rel]) => !seen.has(at.links[rel] as string));
    if (options.length === 0) return null;
    const [relation] = options[rng.int(options.length)];
    const to = corpus.byId.get(at.links[relation] as string) as Entity;
    seen.add(to.id);
    out.push({ relation, to });
    at = to;
  }
  return out;
}

/** Builds a task's world from scratch (searchWorld caches it). */
export function buildSearchWorld(params: SearchParams, seed: number): SearchWorld {
  const rng = Rng.derive(seed, STREAM.task, 0x5ea7);
  const level: SearchLevel = params.level === 'mixed' ? ((1 + rng.int(3)) as SearchLevel) : params.level;
  const corpus = buildCorpus(rng);
  const searcher = new Searcher(corpus);
  const { entities } = corpus;
  for (let tries = 0; tries < 500; tries++) {
    const anchor = entities[rng.int(entities.length)];
    // The description must pick out the anchor alone among all entities.
    const desc = describeEntity(anchor);
    if (entities.some((e) => e.id !== anchor.id && describeEntity(e) === desc)) continue;
    const path = walk(rng, corpus, anchor, level);
    if (path === null) continue;
    const chain = [anchor, ...path.map((p) => p.to)];
    const hops: Hop[] = path.map((p, i) => ({
      from: chain[i].id,
      relation: p.relation,
      to: p.to.id,
      query: i === 0 ? descriptionQuery(anchor) : chain[i].name,
    }));
    if (!hops.every((h) => searcher.search(h.query).some((x) => x.id === h.from))) continue;
    const phrase = path.reduce((inner, p) => PHRASE[p.relation](inner), desc);
    const answerType = chain[chain.length - 1].type;
    const clues = hops.flatMap((h) => [locateClue(h.from), factClue(h.from, h.relation)]);
    const menu: ToolCall[] = [
      ...corpus.docs.map((d) => ({ name: 'search', arguments: { query: d.title } })),
      ...corpus.docs.map((d) => ({ name: 'open', arguments: { doc: d.id } })),
      ...corpus.docs.map((d) => ({ name: 'answer', arguments: { text: d.title } })),
    ];
    return {
      params,
      level,
      corpus,
      searcher,
      question: `What is the name of ${phrase}? (Answer with the ${answerType}'s name.)`,
      answer: chain[chain.length - 1].name,
      hops,
      clues,
      menu,
    };
  }
  throw new Error(`search task ${seed}: could not generate a question`);
}

/** The clues (of the task's chain) a well-formed call shows, in chain order. A search's from `results` when
 * given (a world model's answer: train/rehearsal-tools.ts), else from the world's own searcher. */
export function cluesShown(world: SearchWorld, call: ParsedSearchCall, results?: readonly Hit[]): string[] {
  if (!call.ok || call.name === 'answer') return [];
  const out: string[] = [];
  for (const h of world.hops) {
    const factIndex = (world.corpus.docById.get(h.from)?.factAt[h.relation] ?? -1) as number;
    if (call.name === 'open') {
      if (call.doc === h.from) out.push(locateClue(h.from), factClue(h.from, h.relation));
      continue;
    }
    const hit = (results ?? world.searcher.search(call.query)).find((x) => x.id === h.from);
    if (hit === undefined) continue;
    out.push(locateClue(h.from));
    if (hit.sentence === factIndex) out.push(factClue(h.from, h.relation));
  }
  return out;
}

const cache = new Map<string, SearchWorld>();
// A world holds a BM25 index (a few hundred kB): keep fewer than the other envs.
const MAX_WORLDS = 256;

export function searchWorld(task: Task): SearchWorld {
  const params = searchParams(task.params);
  const key = JSON.stringify(
    params.mode === undefined
      ? [params.level, params.misuse, task.seed]
      : [params.level, params.misuse, task.seed, params.slots],
  );
  let world = cache.get(key);
  if (world === undefined) {
    world = buildSearchWorld(params, task.seed);
    if (cache.size >= MAX_WORLDS) cache.delete(cache.keys().next().value as string);
    cache.set(key, world);
  }
  return world;
}
