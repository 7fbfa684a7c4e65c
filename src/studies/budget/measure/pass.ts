// The summary's `passKT`: sampled Pass@(K,T) from the episodes' success counts, as `turnwise eval` and
// `turnwise compare` compute it.
import { bootstrapPassKT } from '../../../eval/bootstrap.ts';
import { passKT } from '../../../eval/passkt.ts';
import type { StudyConfig } from '../config.ts';
import { finiteOrNull, intervalOf, type PassGrid } from '../figures.ts';
import { namesOf, type PolicyName } from '../setup.ts';
import { bootSettings } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { Episodes } from './episodes.ts';

const nullGrid = (g: readonly (readonly number[])[]) => g.map((row) => row.map(finiteOrNull));
const ciGrid = (g: readonly (readonly (readonly [number, number])[])[]) =>
  g.map((row) => row.map(intervalOf));

/**
 * The summary's `passKT`: sampled Pass@(K,T) per policy from the episodes' counts, with bootstrap
 * intervals over maps; RL − base and BudgetMix − base paired over the same resampled maps.
 */
export function measurePass(episodes: Episodes, tasks: number, config: StudyConfig): Summary['passKT'] {
  const { K, T, samples } = config.eval;
  const boot = bootSettings(config);
  const c = episodes.counts;
  const names = namesOf(c);
  const grid = (ci: [number, number][][], n: PolicyName): PassGrid => ({
    K: [...K],
    T: [...T],
    passKT: nullGrid(passKT(c[n]!.counts, K)),
    ci95: ciGrid(ci),
  });
  const bootRl = bootstrapPassKT([c.rl.counts, c.base.counts], K, boot);
  const bootMix = bootstrapPassKT([c.budgetmix.counts, c.base.counts], K, boot);
  const bootGigpo = c.gigpo ? bootstrapPassKT([c.gigpo.counts], K, boot) : undefined;
  const diffOf = (a: PolicyName, b: PolicyName) => {
    const pa = passKT(c[a]!.counts, K);
    const pb = passKT(c[b]!.counts, K);
    return nullGrid(pa.map((row, k) => row.map((x, j) => x - pb[k][j])));
  };
  return {
    base: grid(bootRl.ci[1], 'base'),
    rl: grid(bootRl.ci[0], 'rl'),
    budgetmix: grid(bootMix.ci[0], 'budgetmix'),
    ...(bootGigpo ? { gigpo: grid(bootGigpo.ci[0], 'gigpo') } : {}),
    diff: diffOf('rl', 'base'),
    diffCi95: ciGrid(bootRl.diffCi!),
    budgetmixDiff: diffOf('budgetmix', 'base'),
    budgetmixDiffCi95: ciGrid(bootMix.diffCi!),
    mode: [...new Set(names.map((n) => c[n]!.mode))].join(', '),
    samples,
    tasks,
  };
}
