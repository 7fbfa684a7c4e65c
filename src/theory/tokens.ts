// Token budget of an RL run: decode tokens per trajectory × batch × steps (docs/methods.md §1), against a
// 500-token single-turn baseline (500 × 64 × 1000 = 32M). Prefill of the growing multi-turn context
// makes real compute worse than this count.

export interface TokenBudget {
  totalTokens: number;
  /** totalTokens / baselineTokens = perTrajectory / baseline. */
  vsBaseline: number;
  baselineTokens: number;
  perTrajectory: number;
  batch: number;
  steps: number;
  baseline: number;
}

export const DEFAULT_BASELINE_TOKENS = 500;

export function tokenBudget(
  perTrajectory: number,
  batch: number,
  steps: number,
  baseline = DEFAULT_BASELINE_TOKENS,
): TokenBudget {
  for (const [name, x] of [
    ['perTrajectory', perTrajectory],
    ['batch', batch],
    ['steps', steps],
    ['baseline', baseline],
  ] as const) {
    if (!Number.isSafeInteger(x) || x < 1) throw new RangeError(`${name} must be an integer ≥ 1, got ${x}`);
  }
  const totalTokens = perTrajectory * batch * steps;
  const baselineTokens = baseline * batch * steps;
  return {
    totalTokens,
    vsBaseline: totalTokens / baselineTokens,
    baselineTokens,
    perTrajectory,
    batch,
    steps,
    baseline,
  };
}
