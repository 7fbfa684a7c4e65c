// Hand-made trajectories for the estimator tests: only what credit reads is filled in.
import type { Outcome, StepInfo, Trajectory } from '../../src/core/types.ts';

export interface TurnSpec {
  obs?: unknown;
  reward?: number;
  action?: unknown;
  info?: StepInfo;
}

let counter = 0;

export function traj(
  turns: readonly (TurnSpec | number)[],
  opts: { seed?: number; end?: Outcome['end']; success?: boolean; params?: Record<string, unknown> } = {},
): Trajectory {
  const specs = turns.map((t) => (typeof t === 'number' ? { reward: t } : t));
  const ret = specs.reduce((s, t) => s + (t.reward ?? 0), 0);
  const success = opts.success ?? ret > 0;
  const end = opts.end ?? 'terminated';
  return {
    id: `h${counter++}`,
    task: { env: 'frozenlake', params: opts.params ?? { map: '4x4', slippery: true }, seed: opts.seed ?? 0 },
    policy: 'random',
    budget: 100,
    revealBudget: false,
    turns: specs.map((s, t) => ({
      t,
      observation: s.obs ?? t,
      action: s.action ?? 0,
      reward: s.reward ?? 0,
      logp: Math.log(0.25),
      info: s.info ?? {},
    })),
    outcome: {
      success,
      return: ret,
      turns: specs.length,
      firstSuccessTurn: success ? specs.length : null,
      end,
      failure: success ? null : end === 'truncated' ? 'budget' : 'irreversible',
    },
  };
}

/** Asserts two advantage tables agree entry by entry within tol. */
export function close(
  actual: readonly (readonly number[])[],
  expected: readonly (readonly number[])[],
  tol = 1e-6,
) {
  if (actual.length !== expected.length) throw new Error(`rows: ${actual.length} vs ${expected.length}`);
  actual.forEach((row, i) => {
    if (row.length !== expected[i].length)
      throw new Error(`row ${i}: ${row.length} vs ${expected[i].length} turns (${JSON.stringify(actual)})`);
    row.forEach((x, t) => {
      if (!(Math.abs(x - expected[i][t]) <= tol))
        throw new Error(`[${i}][${t}] = ${x}, expected ${expected[i][t]} (${JSON.stringify(actual)})`);
    });
  });
}
