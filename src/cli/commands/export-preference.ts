// What `turnwise export --format preference` pairs (export/preference.ts writes the rows): within each
// group of a file (the trajectories of one task), every pair one of which is preferred —
//   --by turns[,side-effects]  the preference criterion (rewards/preference.ts): both successful, the
//                              chosen with fewer turns (then fewer side effects, the tools env's, counted
//                              by replay as the rubric counts them);
//   --by rubric                a scored file's rubric scores (`eval --reward rubric:R --scores FILE`):
//                              the chosen with the higher score; unscored trajectories left out.
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
import { type PreferenceKey, preferredPairs } from '../../rewards/preference.ts';
import { groupsOf } from '../../rewards/score.ts';
import { fileLines } from '../../store/jsonl.ts';
import { toolsSideEffects } from '../rubric.ts';

export type PreferenceBy = { rubric: true } | { keys: PreferenceKey[] };

const KEYS: readonly PreferenceKey[] = ['turns', 'side-effects'];

/** `--by`: rubric, or preference keys in order (turns, side-effects). */
export function readBy(raw: string): PreferenceBy {
  if (raw.trim() === 'rubric') return { rubric: true };
  const keys = raw.split(',').map((k) => k.trim());
  if (keys.some((k) => !(KEYS as readonly string[]).includes(k)) || new Set(keys).size !== keys.length)
    throw new InputError(
      '--by',
      raw,
      'expected rubric (a scored file), or what a preferred trajectory has fewer of: turns, side-effects, in order (e.g. turns,side-effects)',
    );
  return { keys: keys as PreferenceKey[] };
}

/** The rubric scores of a scored file's lines, by trajectory id; refused when a line carries none. */
export function readRubricScores(path: string): Map<string, number | null> {
  const scores = new Map<string, number | null>();
  for (const [line, number] of fileLines(path, '--in')) {
    let value: { id?: unknown; rubric?: { score?: unknown } };
    try {
      value = JSON.parse(line);
    } catch {
      continue; // the trajectory reader refuses (or skips) it
    }
    const score = value?.rubric?.score;
    if (score !== null && typeof score !== 'number')
      throw InputError.raw(
        `${path}:${number}`,
        'has no rubric score: --by rubric reads a scored file (eval --reward rubric:FILE --scores OUT)',
      );
    if (typeof value.id === 'string') {
      if (scores.has(value.id))
        throw InputError.raw(`${path}:${number}`, `trajectory id ${JSON.stringify(value.id)} is given twice`);
      scores.set(value.id, score);
    }
  }
  return scores;
}

export interface Pairs {
  /** [chosen, rejected]. */
  pairs: [Trajectory, Trajectory][];
  groups: number;
  /** Pairs left out: a fact missing (side effects, a rubric score). */
  unknown: number;
}

/** The preferred pairs of each group of `batch`. */
export async function preferencePairs(
  batch: readonly Trajectory[],
  by: PreferenceBy,
  scores?: ReadonlyMap<string, number | null>,
): Promise<Pairs> {
  const groups = groupsOf(batch);
  const out: Pairs = { pairs: [], groups: groups.length, unknown: 0 };
  if ('rubric' in by) {
    for (const g of groups)
      for (let a = 0; a < g.length; a++)
        for (let b = a + 1; b < g.length; b++) {
          const [x, y] = [batch[g[a]], batch[g[b]]];
          const [sx, sy] = [scores?.get(x.id) ?? null, scores?.get(y.id) ?? null];
          if (sx === null || sy === null) out.unknown++;
          else if (sx > sy) out.pairs.push([x, y]);
          else if (sy > sx) out.pairs.push([y, x]);
        }
    return out;
  }
  const effects = by.keys.includes('side-effects');
  for (const g of groups) {
    const facts = [];
    for (const i of g) {
      const t = batch[i];
      facts.push({
        success: t.outcome.success,
        turns: t.outcome.turns,
        effects: effects ? await toolsSideEffects(t) : undefined,
      });
    }
    const r = preferredPairs(facts, by.keys);
    out.unknown += r.unknown;
    for (const [c, d] of r.pairs) out.pairs.push([batch[g[c]], batch[g[d]]]);
  }
  return out;
}
