// The deterministic criteria of a rubric, each a pure function of one trajectory: 1 when it holds,
// 0 when it does not — or missing, with the reason, when the trajectory cannot say (side effects of
// an env that records none). Judges (judging.ts) and the group's preference (preference.ts) are
// scored elsewhere.
import type { Trajectory } from '../core/types.ts';
import type { Criterion } from './rubric.ts';
import type { Transcripts } from './transcript.ts';

/** A criterion's result on one trajectory: a score in [0, 1] (and the count it was read from), or why
 * it has none. */
export type Check = { score: number; value?: number } | { missing: string };

/** The side effects of a trajectory counted from its env's state: a count, or why it has none. */
export type SideEffectsOf = (t: Trajectory) => Promise<number | string>;

const holds = (b: boolean): Check => ({ score: b ? 1 : 0 });

/** Whether `args` has each of `want`'s values (compared as JSON). */
const hasArguments = (args: Record<string, unknown>, want: Record<string, unknown>) =>
  Object.entries(want).every(([k, v]) => JSON.stringify(args[k]) === JSON.stringify(v));

/** The place of the first call of `tool` among all the trajectory's calls in order (a turn may make
 * several), or -1. */
function firstCall(t: Trajectory, tool: string, r: Transcripts): number {
  return t.turns.flatMap((_, i) => r.calls(t, i)).findIndex((c) => c.name === tool);
}

/** A deterministic criterion on one trajectory; `effects` is its side-effect count (or why none). */
export function check(
  c: Exclude<Criterion, { kind: 'judge' | 'preference' }>,
  t: Trajectory,
  r: Transcripts,
  effects?: number | string,
): Check {
  switch (c.kind) {
    case 'success':
      return holds(t.outcome.success);
    case 'max-turns':
      return { ...holds(t.outcome.turns <= c.n), value: t.outcome.turns };
    case 'no-invalid': {
      const invalid = t.turns.filter((u) => u.info.valid === false).length;
      return { ...holds(invalid === 0 && t.outcome.failure !== 'invalid-action'), value: invalid };
    }
    case 'tool-order': {
      const after = firstCall(t, c.after, r);
      const before = firstCall(t, c.before, r);
      return holds(after < 0 || (before >= 0 && before < after));
    }
    case 'never-called': {
      const want = c.arguments;
      const made = t.turns.some((_, i) =>
        r
          .calls(t, i)
          .some((x) => x.name === c.tool && (want === undefined || hasArguments(x.arguments, want))),
      );
      return holds(!made);
    }
    case 'final-regex':
      return holds(new RegExp(c.pattern, c.flags).test(r.final(t)));
    case 'side-effects': {
      if (c.count === 'unrequested') {
        const n = t.turns.at(-1)?.info.sideEffects;
        if (typeof n !== 'number')
          return { missing: 'the env recorded no count of unrequested side effects (info.sideEffects)' };
        return { ...holds(n <= c.max), value: n };
      }
      if (typeof effects !== 'number') return { missing: effects ?? 'side effects were not counted' };
      return { ...holds(effects <= c.max), value: effects };
    }
    case 'valid-calls': {
      if (!t.turns.some((u) => typeof u.info.tool === 'string'))
        return { missing: `env ${t.task.env} makes no tool calls` };
      const k = t.turns.filter(
        (u) => typeof u.info.tool === 'string' && u.info.error !== 'schema' && u.info.error !== 'over',
      ).length;
      return { score: Math.min(1, k / c.n), value: k };
    }
  }
}
