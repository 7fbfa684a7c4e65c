// The budget study's sampled episodes on the held-out maps: `eval.samples` per map and policy at T_max.
// Everything sampled is measured from them: Pass@(K,T) (pass.ts), the failure kinds (tallied here), and
// the diagnostic pools the step-quality, recovery and likelihood diagnostics draw from.
import type { Task } from '../../../core/types.ts';
import { type PassMode, runPassCounts } from '../../../eval/evaluate.ts';
import type { Failures } from '../../../eval/failures.ts';
import type { PassCounts } from '../../../eval/passkt.ts';
import type { Recorded } from '../../../eval/states.ts';
import type { StudyConfig } from '../config.ts';
import type { MemoPolicy } from '../memo.ts';
import { namesOf, type PerPolicy, type PolicyName } from '../setup.ts';
import type { MakeEnv } from '../world.ts';

export interface Episodes {
  /** Per policy: success counts c(T) per map for every T, and the mode they were counted in. */
  counts: PerPolicy<{ mode: PassMode; counts: PassCounts }>;
  /** The diagnostic pools: the first diagnosticSamples episodes per map of the base and of RL at
   * T_max, task-major (the rest would only hold memory). */
  pools: { base: Recorded[]; rl: Recorded[] };
  /** The summary's `failures` section: how every sampled episode at T_max ended, per policy. */
  failures: PerPolicy<Failures>;
}

/**
 * `eval.samples` episodes per held-out map and policy at T_max (prefix mode, like `turnwise eval`).
 * The failure tally (eval/failures) is taken over all of a policy's episodes as they are played;
 * only the diagnostic pools are kept.
 */
export async function sampleEpisodes(
  envs: MakeEnv,
  policies: PerPolicy<MemoPolicy>,
  test: readonly Task[],
  config: StudyConfig,
  onProgress: (done: number, total: number) => void,
): Promise<Episodes> {
  const { T, samples, diagnosticSamples } = config.eval;
  const names = namesOf(policies);
  const counts: Partial<Record<PolicyName, { mode: PassMode; counts: PassCounts }>> = {};
  const failed: Partial<Record<PolicyName, Failures>> = {};
  const pools: Partial<Record<PolicyName, Recorded[]>> = {};
  const total = names.length * test.length * samples;
  for (const [i, n] of names.entries()) {
    const run = await runPassCounts({
      envs,
      tasks: test,
      samples,
      T,
      policy: policies[n]!,
      runSeed: config.seed,
      // Only the diagnostic pools are kept (the base's and RL's first samples per map): holding every
      // episode of a policy until it is done held tens of thousands of trajectories at once.
      keep: n === 'base' || n === 'rl' ? (s) => s < diagnosticSamples : false,
      onProgress: (done) => onProgress(i * test.length * samples + done, total),
    });
    counts[n] = { mode: run.mode, counts: run.counts };
    failed[n] = run.failures;
    if (n === 'base' || n === 'rl') pools[n] = run.atTmax;
  }
  return {
    counts: counts as Episodes['counts'],
    pools: { base: pools.base!, rl: pools.rl! },
    failures: failed as PerPolicy<Failures>,
  };
}
