// A group: the K samples of one task side by side (the dashboard's lanes), and where they part. Two
// samples agree at turn t when they saw the same observation and took the same action there (their
// JSON): samples of one task start in the same state, so the first turn where they do not agree is
// where their paths split — a different action, or the same action with a different result (slippery
// ice, a tool's answer). Same-state samples branched from one snapshot share the turns before their
// branch point; an injected error is a turn marked `forced`.
import type { Trajectory, Turn } from '../core/types.ts';

const key = (turn: Turn) => JSON.stringify([turn.observation, turn.action]);

/** The first turn at which `a` and `b` differ (one ended, or their observation or action differ);
 * null when they are the same turn for turn. */
export function firstDifference(a: Trajectory, b: Trajectory): number | null {
  const n = Math.max(a.turns.length, b.turns.length);
  for (let t = 0; t < n; t++) {
    const x = a.turns[t];
    const y = b.turns[t];
    if (x === undefined || y === undefined || key(x) !== key(y)) return t;
  }
  return null;
}

export interface Divergence {
  /** The first turn at which not every sample agrees (null: all identical, or fewer than two). */
  divergedAt: number | null;
  /** Per sample, the first turn at which it differs from the first sample (null for the first, and for
   * a sample identical to it). */
  fromFirst: (number | null)[];
  /** Per sample, its forced turns (injected errors, expert prefixes). */
  forced: number[][];
}

export function divergence(samples: readonly Trajectory[]): Divergence {
  const fromFirst = samples.map((s, i) => (i === 0 ? null : firstDifference(samples[0], s)));
  const parted = fromFirst.filter((t): t is number => t !== null);
  return {
    divergedAt: parted.length === 0 ? null : Math.min(...parted),
    fromFirst,
    forced: samples.map((s) => s.turns.flatMap((turn) => (turn.forced === true ? [turn.t] : []))),
  };
}
