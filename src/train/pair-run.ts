// `turnwise train-pair` as a library call: the two agents made or loaded, trained together
// (train/pair.ts), evaluated on held-out maps, and a run directory written — both networks, and the
// held-out episodes in turnwise's trajectory format (both agents' turns, `info.agent` on each).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../core/errors.ts';
import type { EnvFactory, EnvSpec, Trajectory } from '../core/types.ts';
import { loadNeuralPolicy, type NeuralPolicy } from '../policies/neural.ts';
import { writeFileAtomic } from '../store/atomic.ts';
import { JsonlWriter } from '../store/jsonl.ts';
import {
  evaluatePair,
  freshAgents,
  type PairAgents,
  type PairConfig,
  type PairEvaluation,
  type PairMetrics,
  pairSpecs,
  trainPair,
} from './pair.ts';
import {
  evaluateSearchPair,
  type FixedPlan,
  freshSearchAgents,
  type SearchPairAgents,
  type SearchPairConfig,
  type SearchPairEnvs,
  type SearchPairEvaluation,
  type SearchPairMetrics,
  searchPairSpecs,
  trainSearchPair,
} from './pair-search.ts';

/** An agent trained from scratch (`mlp`), fixed to the goal (`goal`, the planner only), or a network
 * written by an earlier run (a file: frozen, not trained). */
export type AgentSource = 'mlp' | 'goal' | { file: string };

export interface PairRunOptions {
  config: PairConfig;
  planner: AgentSource;
  executor: Exclude<AgentSource, 'goal'>;
  /** Held-out maps of the evaluation, and episodes per map. */
  evalMaps: number;
  evalSamples: number;
  /** A run directory: planner.safetensors, executor.safetensors, trajectories.jsonl, summary.json. */
  out?: string;
  onIter?: (m: PairMetrics) => void;
}

export interface PairReport {
  config: PairConfig;
  planner: string;
  executor: string;
  trained: { planner: boolean; executor: boolean };
  /** The last iteration's metrics. */
  final: PairMetrics | undefined;
  envSteps: number;
  replaySteps: number;
  evaluation: Omit<PairEvaluation, 'trajectories'>;
  seconds: number;
  files: string[];
}

/** A network file of one agent, refused in one line unless it is that agent's network for this setting
 * (`what`: "4x4 maps", "search questions"; `fixed`: the fixed planner the flag also takes). */
function loadAgent(
  flag: '--planner' | '--executor',
  file: string,
  spec: EnvSpec,
  what: string,
  fixed: string,
): NeuralPolicy {
  const allowed = `expected mlp${flag === '--planner' ? `, ${fixed}` : ''} or a network file written by train-pair --out`;
  if (!existsSync(file)) throw new InputError(flag, file, `${allowed} (no such file)`);
  const wanted = `expected ${flag === '--planner' ? 'a planner' : 'an executor'} network of ${what}`;
  let p: NeuralPolicy | undefined;
  try {
    p = loadNeuralPolicy(file, spec);
  } catch (e) {
    // The loader names the file; the user named the flag: the reason goes after it.
    if (e instanceof InputError)
      throw new InputError(flag, file, `${wanted} (${e.message.slice(e.field.length + 2)})`);
    throw e;
  }
  if (p === undefined) throw new InputError(flag, file, allowed);
  if (p.config.env !== spec.id) throw new InputError(flag, file, `${wanted}, not a ${p.config.env}`);
  return p;
}

/** Both agents from their sources; a file is refused (one line) unless it is a network of that agent
 * on maps of this size. */
export function pairAgents(o: Pick<PairRunOptions, 'config' | 'planner' | 'executor'>): PairAgents {
  const nS = o.config.size * o.config.size;
  const fresh = freshAgents(nS, o.config.hidden, o.config.seed);
  const specs = pairSpecs(nS);
  const load = (flag: '--planner' | '--executor', file: string) =>
    loadAgent(
      flag,
      file,
      flag === '--planner' ? specs.planner : specs.executor,
      `${o.config.size}x${o.config.size} maps`,
      'goal',
    );
  const planner =
    o.planner === 'goal' ? null : o.planner === 'mlp' ? fresh.planner : load('--planner', o.planner.file);
  const executor = o.executor === 'mlp' ? fresh.executor : load('--executor', o.executor.file);
  return { planner, executor, trainPlanner: o.planner === 'mlp', trainExecutor: o.executor === 'mlp' };
}

export function runPair(envs: EnvFactory, o: PairRunOptions): PairReport {
  const t0 = performance.now();
  const agents = pairAgents(o);
  if (o.out !== undefined) mkdirSync(o.out, { recursive: true });
  const run = trainPair(envs, o.config, agents, o.onIter);
  const ev = evaluatePair(envs, o.config, agents, o.evalMaps, o.evalSamples, 777);
  const { trajectories, ...evaluation } = ev;
  const report: PairReport = {
    config: o.config,
    planner: agents.planner?.id ?? 'goal',
    executor: agents.executor.id,
    trained: { planner: agents.trainPlanner && agents.planner !== null, executor: agents.trainExecutor },
    final: run.metrics.at(-1),
    envSteps: run.envSteps,
    replaySteps: run.replaySteps,
    evaluation,
    seconds: (performance.now() - t0) / 1000,
    files: [],
  };
  if (o.out !== undefined)
    report.files = writePairRun(o.out, agents.planner, agents.executor, trajectories, report);
  return report;
}

/** Writes a pair's run directory: the networks (a fixed planner has none), the held-out episodes and
 * the summary. Returns the files written. */
function writePairRun(
  out: string,
  planner: NeuralPolicy | null,
  executor: NeuralPolicy,
  trajectories: readonly Trajectory[],
  report: { seconds: number; files: string[] },
): string[] {
  const files: string[] = [];
  if (planner !== null) {
    planner.save(join(out, 'planner.safetensors'));
    files.push('planner.safetensors');
  }
  executor.save(join(out, 'executor.safetensors'));
  files.push('executor.safetensors');
  const w = new JsonlWriter(join(out, 'trajectories.jsonl'));
  for (const t of trajectories) w.write(t);
  w.close();
  files.push('trajectories.jsonl', 'summary.json');
  writeFileAtomic(join(out, 'summary.json'), `${JSON.stringify({ ...report, files, seconds: undefined })}\n`);
  return files;
}

/** The search pair's agents: the planner trained (`mlp`), fixed (the question's hops or a constant
 * plan), or a network file; the executor trained or a file. */
export type SearchPlannerSource = 'mlp' | FixedPlan | { file: string };

export interface SearchPairRunOptions {
  config: SearchPairConfig;
  planner: SearchPlannerSource;
  executor: 'mlp' | { file: string };
  /** Held-out questions of the evaluation, and episodes per question. */
  evalQuestions: number;
  evalSamples: number;
  out?: string;
  onIter?: (m: SearchPairMetrics) => void;
}

export interface SearchPairReport {
  config: SearchPairConfig;
  planner: string;
  executor: string;
  trained: { planner: boolean; executor: boolean };
  final: SearchPairMetrics | undefined;
  envSteps: number;
  replaySteps: number;
  evaluation: Omit<SearchPairEvaluation, 'trajectories'>;
  seconds: number;
  files: string[];
}

export function searchPairAgents(
  envs: SearchPairEnvs,
  o: Pick<SearchPairRunOptions, 'config' | 'planner' | 'executor'>,
): SearchPairAgents {
  const fresh = freshSearchAgents(envs, o.config.hidden, o.config.seed);
  const specs = searchPairSpecs(envs);
  const load = (flag: '--planner' | '--executor', file: string) =>
    loadAgent(
      flag,
      file,
      flag === '--planner' ? specs.planner : specs.executor,
      'search questions',
      'level, 1, 2, 3',
    );
  const planner =
    o.planner === 'mlp'
      ? fresh.planner
      : typeof o.planner === 'object'
        ? load('--planner', o.planner.file)
        : o.planner;
  const executor = o.executor === 'mlp' ? fresh.executor : load('--executor', o.executor.file);
  return { planner, executor, trainPlanner: o.planner === 'mlp', trainExecutor: o.executor === 'mlp' };
}

export function runSearchPair(envs: SearchPairEnvs, o: SearchPairRunOptions): SearchPairReport {
  const t0 = performance.now();
  const agents = searchPairAgents(envs, o);
  if (o.out !== undefined) mkdirSync(o.out, { recursive: true });
  const run = trainSearchPair(envs, o.config, agents, o.onIter);
  const { trajectories, ...evaluation } = evaluateSearchPair(
    envs,
    o.config,
    agents,
    o.evalQuestions,
    o.evalSamples,
    777,
  );
  const net = typeof agents.planner === 'object' ? agents.planner : null;
  const report: SearchPairReport = {
    config: o.config,
    planner: net?.id ?? (agents.planner === 'level' ? 'level' : `plan=${agents.planner}`),
    executor: agents.executor.id,
    trained: { planner: agents.trainPlanner && net !== null, executor: agents.trainExecutor },
    final: run.metrics.at(-1),
    envSteps: run.envSteps,
    replaySteps: run.replaySteps,
    evaluation,
    seconds: (performance.now() - t0) / 1000,
    files: [],
  };
  if (o.out !== undefined) report.files = writePairRun(o.out, net, agents.executor, trajectories, report);
  return report;
}
