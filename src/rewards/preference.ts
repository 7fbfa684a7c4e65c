// Trajectory preference, the built-in pairwise criterion: of two trajectories of the same task that both
// reached the verified final state (outcome.success: the one final state an env certifies; a trajectory
// does not record the state after its last action), the one with fewer turns is preferred — then, on
// equal turns, fewer side effects (or in the order the rubric's `by` gives). Failed trajectories are not
// compared: reaching a hole sooner is no better.
//
// As a score within a group (the K samples of a task): 1 − the share of the group's other successful
// trajectories that are preferred to it (1 when none is, or it is alone), 0 when it failed. As data:
// the pairs (chosen, rejected) that `export --format preference` writes.

export type PreferenceKey = 'turns' | 'side-effects';

/** What the preference reads of a trajectory: its verdict, turns and side effects (or why none). */
export interface PreferenceFacts {
  success: boolean;
  turns: number;
  effects?: number | string;
}

type Score = { score: number } | { missing: string };

const value = (f: PreferenceFacts, key: PreferenceKey): number | string | undefined =>
  key === 'turns' ? f.turns : f.effects;

/**
 * < 0 when a is preferred to b, > 0 when b is, 0 when neither (a tie, or not comparable: not both
 * successful). Throws the reason as a string when a key's value is missing for either.
 */
export function prefer(a: PreferenceFacts, b: PreferenceFacts, by: readonly PreferenceKey[]): number {
  if (!a.success || !b.success) return 0;
  for (const key of by) {
    const x = value(a, key);
    const y = value(b, key);
    if (typeof x !== 'number' || typeof y !== 'number')
      throw typeof x === 'number'
        ? (y ?? 'side effects were not counted')
        : (x ?? 'side effects were not counted');
    if (x !== y) return x - y;
  }
  return 0;
}

/** The preference criterion's score of each trajectory of a group. */
export function preferenceScores(group: readonly PreferenceFacts[], by: readonly PreferenceKey[]): Score[] {
  return group.map((f, i) => {
    if (!f.success) return { score: 0 };
    let mates = 0;
    let beaten = 0;
    for (let j = 0; j < group.length; j++) {
      if (j === i || !group[j].success) continue;
      mates++;
      try {
        if (prefer(group[j], f, by) < 0) beaten++;
      } catch (reason) {
        return { missing: String(reason) };
      }
    }
    return { score: mates === 0 ? 1 : 1 - beaten / mates };
  });
}

/** The pairs [chosen, rejected] of a group by the preference (indices into the group); pairs whose
 * facts are missing are left out and counted. */
export function preferredPairs(
  group: readonly PreferenceFacts[],
  by: readonly PreferenceKey[],
): { pairs: [number, number][]; unknown: number } {
  const pairs: [number, number][] = [];
  let unknown = 0;
  for (let i = 0; i < group.length; i++)
    for (let j = i + 1; j < group.length; j++) {
      let d: number;
      try {
        d = prefer(group[i], group[j], by);
      } catch {
        unknown++;
        continue;
      }
      if (d < 0) pairs.push([i, j]);
      else if (d > 0) pairs.push([j, i]);
    }
  return { pairs, unknown };
}
