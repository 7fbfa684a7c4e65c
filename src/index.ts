// The library's public surface. The CLI (src/cli) is a thin adapter over these.
export * from './core/errors.ts';
export * from './core/rng.ts';
export type * from './core/types.ts';
export { checkEnv } from './envs/check.ts';
export * as frozenlake from './envs/frozenlake/index.ts';
export { describeEnv, envConfig, envSpec, makeEnv, makeTasks } from './envs/index.ts';
export { evaluatePolicy, TabularOracle } from './envs/tabular.ts';
export { exactPolicyValues, exactSuccess } from './eval/exact.ts';
export { OraclePolicy } from './policies/oracle.ts';
export { RandomPolicy } from './policies/random.ts';
export { makePolicy } from './policies/spec.ts';
export { TabularPolicy } from './policies/tabular.ts';
export { rollout } from './rollout/batch.ts';
export { episodeSeeds, runEpisode } from './rollout/episode.ts';
export { summarize } from './rollout/summary.ts';
export { JsonlWriter, readTrajectories } from './store/jsonl.ts';
export { RunStore } from './store/sqlite.ts';
