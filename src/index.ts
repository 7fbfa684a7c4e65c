// The library's public surface. The CLI (src/cli) is a thin adapter over these.
export * from './core/errors.ts';
export * from './core/policy.ts';
export * from './core/rng.ts';
export { makeTasks } from './core/tasks.ts';
export type * from './core/types.ts';
export * as credit from './credit/index.ts';
export { checkEnv } from './envs/check.ts';
export * as frozenlake from './envs/frozenlake/index.ts';
export { describeEnv, envConfig, envSpec, envs, makeEnv } from './envs/index.ts';
export { evaluatePolicy, TabularOracle } from './envs/tabular.ts';
export { bootstrapMeans, bootstrapPassKT } from './eval/bootstrap.ts';
export { compare } from './eval/compare.ts';
export { evaluate, runPassCounts } from './eval/evaluate.ts';
export { exactPolicyValues, exactSuccess, meanExactSuccess, meanOptimalSuccess } from './eval/exact.ts';
export { failures } from './eval/failures.ts';
export { likelihood } from './eval/likelihood.ts';
export { countsFromFirstSuccess, passAtK, passKT } from './eval/passkt.ts';
export { recovery } from './eval/recovery.ts';
export { collectStates, makeErrorStates } from './eval/states.ts';
export { stepQuality } from './eval/step-quality.ts';
export * as handover from './export/index.ts';
export { budgetAgents, budgetAgentsProvider, traceAgents } from './harness/agents-sdk.ts';
export { traceAiSdk } from './harness/ai-sdk.ts';
export { traceOpenAI } from './harness/openai-sdk.ts';
export { type HarnessOptions, type HarnessResult, runHarness } from './harness/run.ts';
export { TraceSession, TurnBudgetExhausted } from './harness/trace.ts';
export * as nn from './nn/index.ts';
export * as chat from './policies/chat.ts';
export { loadNeuralPolicy, mlpPolicyConfig, NeuralPolicy } from './policies/neural.ts';
export { type OpenAIOptions, OpenAIPolicy } from './policies/openai.ts';
export { OraclePolicy } from './policies/oracle.ts';
export { RandomPolicy } from './policies/random.ts';
export { makeOpenAIPolicy, makePolicy, openPolicy } from './policies/spec.ts';
export { TabularPolicy } from './policies/tabular.ts';
export { rollout } from './rollout/batch.ts';
export { contextAt, contextsOf, decisionContext } from './rollout/context.ts';
export { EnvCache, withEnvs } from './rollout/env-cache.ts';
export { episodeSeeds, runEpisode } from './rollout/episode.ts';
export { runLockstep } from './rollout/lockstep.ts';
export { summarize } from './rollout/summary.ts';
export { type Faults, parseFaults } from './serve/faults.ts';
export { modelIds, type RunningServer, serveApp, startServer } from './serve/openai.ts';
export { ProxyStore, proxyApp, type RunningProxy, startProxy } from './serve/proxy.ts';
export {
  type CallEvent,
  type SessionMeta,
  sessionTrajectory,
  sessionTurns,
} from './serve/proxy-record.ts';
export { type ToolServeOptions, toolServeApp, watchPolicy } from './serve/tool-serve.ts';
export { JsonlWriter, readTrajectories } from './store/jsonl.ts';
export { TrajectorySchema, trajectoryJsonSchema } from './store/schema.ts';
export { RunStore } from './store/sqlite.ts';
export * as budgetStudy from './studies/budget/index.ts';
export { creditFidelity } from './studies/credit-fidelity.ts';
export * as theory from './theory/index.ts';
export { collectDemonstrations, trainBc } from './train/bc.ts';
export { parseTrainConfig, type TrainConfig, TrainConfigSchema } from './train/config.ts';
export { trainEs } from './train/es-train.ts';
export type { Learner, Unit, ViewOf } from './train/learner.ts';
export { pickTargets, turnUnits } from './train/learner.ts';
export { type TrainOptions, type TrainResult, trainPolicyGradient } from './train/loop.ts';
export { policyUpdate } from './train/update.ts';
