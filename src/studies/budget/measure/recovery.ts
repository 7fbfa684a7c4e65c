// The summary's `recovery`: what each policy makes of an error state, sampled and exact, and RL's exact
// gain at error states against its gain at their pre-error states (a difference in differences).
import type { Oracle, Task } from '../../../core/types.ts';
import { exactPolicyValues } from '../../../eval/exact.ts';
import { recovery } from '../../../eval/recovery.ts';
import { type State, turnsLeft } from '../../../eval/states.ts';
import { largestBudget, type StudyConfig } from '../config.ts';
import { finiteOrNull, intervalOf, type RecoveryFigure } from '../figures.ts';
import type { MemoPolicy } from '../memo.ts';
import { namesOf, type PerPolicy, type PolicyName } from '../setup.ts';
import { bootSettings, bootstrapSeries, contrastCoefficients, STUDY_KEY } from '../stats.ts';
import type { Summary } from '../summary.ts';
import type { MakeEnv } from '../world.ts';
import { byMove, pairedContrastWhere, preErrorState } from './states.ts';

/**
 * The summary's `recovery`: from the error states, each variant's and the base's continuation success
 * (`eval.continuations` sampled continuations per state, eval/recovery) and the exact continuation
 * value V^π_h(s) at the same states (h = turns left), differences paired over states.
 */
export async function measureRecovery(
  errorStates: readonly State[],
  policies: PerPolicy<MemoPolicy>,
  config: StudyConfig,
  envs: MakeEnv,
): Promise<Summary['recovery']> {
  const { continuations, resamples } = config.eval;
  const { seed } = config;
  const Tmax = largestBudget(config);
  const names = namesOf(policies);
  const variants = names.filter((n) => n !== 'base');
  const recs: Partial<Record<PolicyName, Awaited<ReturnType<typeof recovery>>>> = {};
  for (const n of variants) {
    recs[n] = await recovery(envs, errorStates, policies[n]!, policies.base, {
      continuations,
      seed,
      resamples,
    });
  }
  // V^π of a policy on a map, computed once per (policy, map) and read at every state of that map.
  const exactValuesCache = new Map<string, Map<Task, Float64Array>>();
  const exactAt = (n: PolicyName, state: State): number => {
    let byTask = exactValuesCache.get(n);
    if (byTask === undefined) {
      byTask = new Map();
      exactValuesCache.set(n, byTask);
    }
    const env = envs.make(state.task);
    const oracle = env.oracle!() as Oracle<unknown>;
    let V = byTask.get(state.task);
    if (V === undefined) {
      const p = policies[n]!;
      V = exactPolicyValues(env, p, Tmax, p.budgetAware)!.V;
      byTask.set(state.task, V);
    }
    return V[turnsLeft(state) * oracle.nS + oracle.state(state.observation)];
  };
  const exactSeries = names.map((n) => Float64Array.from(errorStates, (st) => exactAt(n, st)));
  const recExact = bootstrapSeries(
    exactSeries,
    errorStates.length,
    1,
    [contrastCoefficients(names, 'rl', 'base'), contrastCoefficients(names, 'budgetmix', 'base')],
    { ...bootSettings(config), key: STUDY_KEY.recovery },
  );
  // Difference in differences: RL's exact gain at each error state against its gain at the pre-error
  // state, the same map and one more turn left; clustered by map.
  const [rlAt, baseAt] = [exactSeries[names.indexOf('rl')], exactSeries[names.indexOf('base')]];
  const gE = Float64Array.from(errorStates, (_, i) => rlAt[i] - baseAt[i]);
  const gP = Float64Array.from(errorStates, (st) => {
    const pre = preErrorState(st);
    return exactAt('rl', pre) - exactAt('base', pre);
  });
  const didOf = (keep: (st: State) => boolean) => {
    const dd = pairedContrastWhere(gE, gP, errorStates, keep, bootSettings(config));
    return {
      gainError: { value: finiteOrNull(dd.value[0]), ci95: intervalOf(dd.ci[0]) },
      gainPreError: { value: finiteOrNull(dd.value[1]), ci95: intervalOf(dd.ci[1]) },
      did: { value: finiteOrNull(dd.diff), ci95: intervalOf(dd.diffCi) },
      maps: dd.maps,
    };
  };
  const did = didOf(() => true);
  const side = (n: PolicyName): RecoveryFigure => {
    const s = names.indexOf(n);
    const c = n === 'base' ? recs.rl!.b : recs[n]!.a;
    return {
      value: finiteOrNull(c.success),
      ci95: intervalOf(c.ci95),
      exact: finiteOrNull(recExact.mean[s][0]),
      exactCi95: intervalOf(recExact.ci[s][0]),
    };
  };
  const diff = (n: PolicyName, j: number): RecoveryFigure => ({
    value: finiteOrNull(recs[n]!.diff),
    ci95: intervalOf(recs[n]!.diffCi95),
    exact: finiteOrNull(recExact.contrasts[j].mean[0]),
    exactCi95: intervalOf(recExact.contrasts[j].ci[0]),
  });
  return {
    base: side('base'),
    rl: side('rl'),
    budgetmix: side('budgetmix'),
    ...(policies.gigpo ? { gigpo: side('gigpo') } : {}),
    rlMinusBase: diff('rl', 0),
    budgetmixMinusBase: diff('budgetmix', 1),
    did,
    didByMove: byMove((keep) => ({ ...didOf(keep), states: errorStates.filter(keep).length })),
    states: errorStates.length,
    continuations,
  };
}
