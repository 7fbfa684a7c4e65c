// The summary's `reference`: what the optimum, the expert and a random policy reach on the held-out
// maps, exactly (no sampling), to read the studied policies' figures against.
import type { EnvSpec, Task } from '../../../core/types.ts';
import { makePolicy } from '../../../policies/spec.ts';
import type { StudyConfig } from '../config.ts';
import { finiteOrNull } from '../figures.ts';
import type { AnyPolicy } from '../setup.ts';
import type { Summary } from '../summary.ts';
import type { MakeEnv } from '../world.ts';
import { exactByT, optimalByT } from './exact.ts';

const meanOf = (xs: readonly Float64Array[], j: number) => xs.reduce((a, x) => a + x[j], 0) / xs.length;

/** The summary's `reference`: mean exact success within each T on the held-out maps of the optimum
 * (V*_T), the expert and the uniform random policy — no sampling. */
export function measureReference(
  test: readonly Task[],
  expert: AnyPolicy,
  spec: EnvSpec,
  config: StudyConfig,
  envs: MakeEnv,
): Summary['reference'] {
  const { T } = config.eval;
  const optimal = test.map((task) => optimalByT(task, T, envs));
  const expertExact = test.map((task) => exactByT(task, expert, T, envs));
  const random = makePolicy('random', spec);
  const randomExact = test.map((task) => exactByT(task, random, T, envs));
  return {
    T: [...T],
    optimal: T.map((_, j) => finiteOrNull(meanOf(optimal, j))),
    expert: T.map((_, j) => finiteOrNull(meanOf(expertExact, j))),
    random: T.map((_, j) => finiteOrNull(meanOf(randomExact, j))),
  };
}
