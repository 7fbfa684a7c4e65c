// The summary's `temperature`: the temperature control. Is RL's gain more than sharpening the base?
import type { DiscretePolicy, Task, TurnContext } from '../../../core/types.ts';
import type { StudyConfig } from '../config.ts';
import { finiteOrNull, intervalOf } from '../figures.ts';
import type { MemoPolicy } from '../memo.ts';
import type { PerPolicy } from '../setup.ts';
import { bootSettings, bootstrapSeries, STUDY_KEY } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { MakeEnv } from '../world.ts';
import { exactByT } from './exact.ts';

/** The base's temperatures the control tries (τ = 1 is the base itself). */
export const BASE_TEMPERATURES = [0.1, 0.25, 0.5, 1] as const;

/** π_τ(a|s) ∝ π(a|s)^{1/τ}: the same network, sharpened (τ < 1). Exact evaluation only. */
export class TemperedPolicy implements DiscretePolicy {
  readonly id: string;
  readonly budgetAware: boolean;
  constructor(
    readonly inner: MemoPolicy,
    readonly tau: number,
  ) {
    this.id = `${inner.id}@τ=${tau}`;
    this.budgetAware = inner.budgetAware;
  }
  probs(ctx: TurnContext<unknown>): Float64Array {
    return this.temper(this.inner.probs(ctx));
  }
  /** Exact evaluation asks for a map's states at once: the base's batch (memo.ts), each row sharpened. */
  probsBatch(ctxs: readonly TurnContext<unknown>[]): Float64Array[] {
    return this.inner.probsBatch(ctxs).map((p) => this.temper(p));
  }
  /** p^{1/τ}, normalised, in place. */
  private temper(p: Float64Array): Float64Array {
    let z = 0;
    for (let a = 0; a < p.length; a++) {
      p[a] = p[a] ** (1 / this.tau);
      z += p[a];
    }
    for (let a = 0; a < p.length; a++) p[a] /= z;
    return p;
  }
  act(): never {
    throw new Error('TemperedPolicy is for exact evaluation only');
  }
  logProb(ctx: TurnContext<unknown>, action: number): number {
    return Math.log(this.probs(ctx)[action] ?? 0);
  }
}

/**
 * The summary's `temperature`: the base sharpened to each τ of BASE_TEMPERATURES, exact Pass@(1,T) on
 * the held-out maps; the best τ at the training budget; RL − base(best τ) per T, paired over maps —
 * so that RL's gain is split into what sharpening the base alone gives and what it does not.
 */
export function measureTemperature(
  policies: Pick<PerPolicy<MemoPolicy>, 'base' | 'rl'>,
  test: readonly Task[],
  config: StudyConfig,
  envs: MakeEnv,
): Summary['temperature'] {
  const { T } = config.eval;
  const jTrain = T.indexOf(config.rl.budget);
  const byTau = BASE_TEMPERATURES.map((tau) =>
    test.map((task) =>
      exactByT(task, tau === 1 ? policies.base : new TemperedPolicy(policies.base, tau), T, envs),
    ),
  );
  const meanAt = (rows: Float64Array[], j: number) => rows.reduce((a, r) => a + r[j], 0) / rows.length;
  let best = BASE_TEMPERATURES.length - 1;
  BASE_TEMPERATURES.forEach((_, i) => {
    if (meanAt(byTau[i], jTrain) > meanAt(byTau[best], jTrain)) best = i;
  });
  const rl = test.map((task) => exactByT(task, policies.rl, T, envs));
  const flat = (rows: Float64Array[]) => {
    const out = new Float64Array(rows.length * T.length);
    rows.forEach((r, i) => {
      out.set(r, i * T.length);
    });
    return out;
  };
  const b = bootstrapSeries(
    [flat(rl), flat(byTau[best]), flat(byTau[BASE_TEMPERATURES.length - 1])],
    test.length,
    T.length,
    [[1, -1, 0]],
    { ...bootSettings(config), key: STUDY_KEY.temperature },
  );
  return {
    T: [...T],
    temperatures: [...BASE_TEMPERATURES],
    base: byTau.map((rows) => T.map((_, j) => finiteOrNull(meanAt(rows, j)))),
    bestTemperature: BASE_TEMPERATURES[best],
    rlMinusBestBase: T.map((_, j) => ({
      value: finiteOrNull(b.contrasts[0].mean[j]),
      ci95: intervalOf(b.contrasts[0].ci[j]),
    })),
  };
}
