// `turnwise rollout`'s run, once rollout.ts has checked the flags: the policy opened, episodes rolled out in
// chunks and streamed to --out, --db and the summary, then printed. Loaded only by a run that gets this
// far, so that a refused command starts no faster than it must.
import { InputError } from '../../core/errors.ts';
import type { EnvConfig, EnvSpec, Task, Trajectory } from '../../core/types.ts';
import { envs } from '../../envs/index.ts';
import { meanExactSuccess } from '../../eval/exact.ts';
import { InvalidCount } from '../../eval/invalid.ts';
import { checksEpisodes } from '../../policies/replay.ts';
import { openPolicy, specFile } from '../../policies/spec.ts';
import { SummaryAccumulator } from '../../rollout/summary.ts';
import { JsonlWriter } from '../../store/jsonl.ts';
import { checkDistinctOutputs, checkOutput } from '../../store/paths.ts';
import { RunStore } from '../../store/sqlite.ts';
import { openCache, requestTotals } from '../cache.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import { connectOptions, type OpenAIFlags, totalsLine } from '../openai-flags.ts';
import type { EnvFlags } from '../options.ts';
import { openQueue, policyRef } from '../queue-run.ts';

export interface RolloutFlags extends EnvFlags, OpenAIFlags {
  env: string;
  policy: string;
  episodes?: string;
  tasks?: string;
  samples?: string;
  budget?: string;
  revealBudget?: boolean;
  seed: string;
  concurrency: string;
  out?: string;
  db?: string;
  run?: string;
  cache?: string;
  queue?: string;
  json?: boolean;
}

/** What the flags were checked into before the run's modules are loaded (a refusal loads none of them). */
export interface RolloutPlan {
  runSeed: number;
  nTasks: number;
  samples: number;
  config: EnvConfig;
  taskRange: (first: number, count: number) => Task[];
  spec: EnvSpec;
  budget: number;
  price: [number, number] | undefined;
  concurrency: number;
}

/** Exact values are computed per distinct map; beyond this many the figure is skipped (null). */
const MAX_EXACT_MAPS = 5000;
/** Episodes per rollout call (the trajectories of a chunk are never all alive at once either). */
const CHUNK_EPISODES = 4096;

/** Every task, made a chunk at a time, for one pass. */
function* lazyTasks(range: (first: number, count: number) => Task[], n: number): Generator<Task> {
  for (let first = 0; first < n; first += CHUNK_EPISODES)
    yield* range(first, Math.min(CHUNK_EPISODES, n - first));
}

export async function runRollout(flags: RolloutFlags, plan: RolloutPlan): Promise<void> {
  const { runSeed, nTasks, samples, config, taskRange, spec, budget, price, concurrency } = plan;
  const cache = openCache(flags.cache, [flags.policy]);
  const policy = await openPolicy(flags.policy, spec, '--policy', cache, connectOptions(flags, config));
  if (checksEpisodes(policy))
    policy.checkEpisodes(
      Array.from({ length: nTasks }, (_, i) => runSeed + i),
      samples,
    );
  const revealBudget = flags.revealBudget ?? policy.budgetAware;
  if (policy.budgetAware && !revealBudget) {
    throw new InputError(
      '--no-reveal-budget',
      true,
      `policy ${policy.id} acts on the turns left; use oracle:horizon=H`,
    );
  }
  const inputs = [
    ['--policy', specFile(flags.policy)],
    ['--cache', flags.cache],
  ] as const;
  checkDistinctOutputs([
    ['--out', flags.out],
    ['--db', flags.db],
  ]);
  if (flags.out !== undefined) checkOutput(flags.out, '--out', 'file', inputs);
  if (flags.db !== undefined) checkOutput(flags.db, '--db', 'file', inputs);
  // Without --queue, rollout() in this process; with it, Redis is reached now, before any output is opened.
  const queue = await openQueue(flags.queue, 'rollout');
  const rollout = queue.runner({ policy: policyRef(flags.queue, flags.policy, policy) });

  // --out is written as episodes finish (one write each): a run that fails or is killed leaves every
  // trajectory finished before it in the file.
  let writer: JsonlWriter | undefined;
  let store: RunStore | undefined;
  const runId = flags.run ?? `rollout-${new Date().toISOString()}`;
  try {
    writer = flags.out === undefined ? undefined : new JsonlWriter(flags.out, { eager: true });
    store = flags.db === undefined ? undefined : new RunStore(flags.db);
    if (store?.run(runId))
      throw new InputError('--run', runId, 'a run with this id already exists in the store');
  } catch (e) {
    await queue.close();
    throw e;
  }
  store?.createRun(runId, 'rollout', {
    ...config,
    policy: policy.id,
    tasks: nTasks,
    samples,
    budget,
    revealBudget,
    seed: runSeed,
  });
  const progress = new Progress('rollout', nTasks * samples);
  queue.show(progress);
  const pending: Trajectory[] = [];
  const acc = new SummaryAccumulator();
  const invalid = new InvalidCount();
  let stored = 0;
  let finished = false;
  const t0 = performance.now();
  const chunk = Math.max(1, Math.floor(CHUNK_EPISODES / samples));
  try {
    for (let first = 0; first < nTasks; first += chunk) {
      const offset = first * samples;
      await rollout({
        tasks: taskRange(first, Math.min(chunk, nTasks - first)),
        samples,
        budget,
        revealBudget,
        runSeed,
        policy,
        concurrency,
        makeEnv: envs.make,
        keep: false,
        onTrajectory: (t, i) => {
          acc.add(t);
          invalid.add(t);
          writer?.write(t);
          if (store) {
            pending.push(t);
            if (pending.length >= 1000) {
              store.addTrajectories(runId, stored, pending);
              stored += pending.length;
              pending.length = 0;
            }
          }
          progress.update(offset + i + 1);
        },
      });
    }
    finished = true;
  } finally {
    await queue.close();
    // Also when the run failed: the file and the store keep what was finished.
    writer?.close();
    if (store) {
      store.addTrajectories(runId, stored, pending);
      if (finished) store.setStatus(runId, 'done');
      store.close();
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  progress.done();
  cache?.close();

  const summary = acc.result();
  const totals = requestTotals([policy], price);
  const exact = await meanExactSuccess(
    envs,
    lazyTasks(taskRange, nTasks),
    policy,
    budget,
    revealBudget,
    MAX_EXACT_MAPS,
  );
  const n = summary.episodes;
  const se = Math.sqrt((summary.success * (1 - summary.success)) / n);
  const result = {
    ...summary,
    // A policy that writes text: the turns whose output did not parse (eval/invalid.ts).
    ...(invalid.text ? invalid.report() : {}),
    exact,
    successStdErr: se,
    policy: policy.id,
    env: config,
    tasks: nTasks,
    samples,
    budget,
    revealBudget,
    seed: runSeed,
    seconds,
    ...(cache === undefined
      ? {}
      : { cache: { file: cache.file, replayed: cache.hits, recorded: cache.writes } }),
    ...(totals === undefined ? {} : { requests: totals }),
  };
  if (flags.json) return json(result);
  out(
    `${policy.id} on ${config.env} ${JSON.stringify(config.params)}: ${n} episodes (${nTasks} tasks × ${samples}), budget ${budget}`,
  );
  const rows: (string | number)[][] = [
    ['success', 'exact', 'std.err', 'mean turns', 'turns (success)'],
    [fmt(summary.success), fmt(exact), fmt(se), fmt(summary.meanTurns, 2), fmt(summary.meanTurnsSuccess, 2)],
  ];
  out(table(rows));
  out(
    `failures: ${Object.entries(summary.failures)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  if (flags.out) out(`wrote ${n} trajectories to ${flags.out}`);
  if (flags.db) out(`recorded run ${runId} in ${flags.db}`);
  if (cache !== undefined)
    out(`cache ${cache.file}: ${cache.hits} responses replayed, ${cache.writes} recorded`);
  if (totals !== undefined) out(totalsLine(totals));
}
