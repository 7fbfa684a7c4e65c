// The search env as a registered env: params, tasks → worlds (cached), env construction, and the task's
// description (with its clue chain and answer).
import type { EnvSpec, Task } from '../../core/types.ts';
import { SearchChoiceEnv, SLOT_FEATURES, searchChoiceSpec } from './choice.ts';
import { SearchEnv, searchSpec } from './env.ts';
import { searchTokens } from './searcher.ts';
import { searchParams, searchWorld } from './task.ts';

export * from './choice.ts';
export * from './corpus.ts';
export * from './env.ts';
export * from './searcher.ts';
export * from './task.ts';
export * from './tools.ts';

export function makeSearchEnv(task: Task): SearchEnv {
  return new SearchEnv(searchWorld(task));
}

/** The env of a task: the tool-call env, or the choice variant (params mode 'choose'). */
export function makeSearchTaskEnv(task: Task): SearchEnv | SearchChoiceEnv {
  const world = searchWorld(task);
  return world.params.mode === 'choose' ? new SearchChoiceEnv(world) : new SearchEnv(world);
}

/** The spec of a task's env (the choice variant's is discrete). */
export function searchTaskSpec(task: Task): EnvSpec {
  const p = searchParams(task.params);
  return p.mode === 'choose' ? searchChoiceSpec(p.slots ?? 6) : searchSpec();
}

/** Plain data describing a task: its level, question and corpus size; with `gold` the answer, the hops
 * (with their gold queries) and the clue ids. */
export function describeSearch(task: Task, gold = false): Record<string, unknown> {
  const w = searchWorld(task);
  const out: Record<string, unknown> = {
    level: w.level,
    question: w.question,
    documents: w.corpus.docs.length,
  };
  if (gold) {
    const name = (id: string) => w.corpus.byId.get(id)?.name ?? id;
    out.gold = {
      answer: w.answer,
      hops: w.hops.map((h) => ({ ...h, fromName: name(h.from), toName: name(h.to) })),
      clues: w.clues,
    };
  }
  return out;
}

/** The description as lines of text (turnwise env describe). */
export function describeSearchText(d: Record<string, unknown>): string[] {
  const lines = [`level ${d.level} (${d.level} hops), ${d.documents} documents`, `question: ${d.question}`];
  const gold = d.gold as
    | {
        answer: string;
        hops: {
          from: string;
          fromName: string;
          relation: string;
          to: string;
          toName: string;
          query: string;
        }[];
        clues: string[];
      }
    | undefined;
  if (gold !== undefined) {
    lines.push('gold:');
    gold.hops.forEach((h, i) => {
      lines.push(
        `  ${i + 1}. search(${JSON.stringify(h.query)}) → ${h.from} ${h.fromName}; open(${h.from}): ${h.relation} = ${h.toName}`,
      );
    });
    lines.push(`  answer(${JSON.stringify(gold.answer)})`);
    lines.push(`clues: ${gold.clues.join(', ')}`);
  }
  return lines;
}

/** The choice variant as the two-agent setting reads it (train/pair-search.ts's SearchPairEnvs, handed in
 * by the composition layer): a task's env, its question and hops, the search's words, and the layout of
 * the offered calls' features (choice.ts: feature 9 is documents opened / (2·hops)). */
export const searchPairEnvs = {
  make(task: Task): SearchChoiceEnv {
    const env = makeSearchTaskEnv(task);
    if (!(env instanceof SearchChoiceEnv))
      throw new Error('the two-agent setting plays the choice variant (mode choose)');
    return env;
  },
  question: (task: Task): string => searchWorld(task).question,
  level: (task: Task): number => searchWorld(task).level,
  tokens: searchTokens,
  slots: 6,
  slotFeatures: SLOT_FEATURES,
  progress: 9,
};
