// turnwise rollout: K samples per task under a budget T, summarised, optionally written to JSONL/SQLite.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Task, Trajectory } from '../../core/types.ts';
import { envSpec, envs, makeTasks } from '../../envs/index.ts';
import { meanExactSuccess } from '../../eval/exact.ts';
import { checksEpisodes } from '../../policies/replay.ts';
import { openPolicy, specFile } from '../../policies/spec.ts';
import { rollout } from '../../rollout/batch.ts';
import { SummaryAccumulator } from '../../rollout/summary.ts';
import { JsonlWriter } from '../../store/jsonl.ts';
import { checkOutput } from '../../store/paths.ts';
import { RunStore } from '../../store/sqlite.ts';
import {
  cacheOption,
  connectOptions,
  type OpenAIFlags,
  openaiOptions,
  openCache,
  parsePrice,
  requestTotals,
  totalsLine,
} from '../cache.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, seed } from '../options.ts';

interface RolloutFlags extends EnvFlags, OpenAIFlags {
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
  json?: boolean;
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

export function registerRollout(program: Command): void {
  openaiOptions(
    cacheOption(
      envOptions(
        program
          .command('rollout')
          .description(
            'roll a policy out: --episodes N (N tasks × 1 sample) or --tasks N --samples K, under --budget T',
          ),
      ),
    ),
  )
    .option('--env <id>', 'environment id', 'frozenlake')
    .requiredOption('--policy <spec>', 'random | oracle[:eps=,temp=,horizon=] | tabular | checkpoint path')
    .option('--episodes <n>', 'number of episodes (one sample each of tasks seed, seed+1, …)')
    .option('--tasks <n>', 'number of tasks (task seed = --seed + index)')
    .option('--samples <k>', 'samples per task (with --tasks; default 1)')
    .option('--budget <T>', 'turn budget T (default: the registered episode limit)')
    .option(
      '--reveal-budget',
      'tell the policy the turns left (default: only budget-aware policies are told)',
    )
    .option('--no-reveal-budget', 'never tell the policy the turns left')
    .option('--seed <n>', 'run seed (and first task seed)', '0')
    .option('--concurrency <n>', 'episodes in flight for asynchronous envs/policies', '8')
    .option('--out <file.jsonl>', 'write every trajectory as one JSON line')
    .option('--db <file.sqlite>', 'also record the run in a SQLite run store')
    .option('--run <id>', 'run id in the store (default: rollout-<time>)')
    .option('--json', 'machine-readable output')
    .action(async (flags: RolloutFlags) => {
      const runSeed = seed(flags.seed);
      let nTasks: number;
      let samples: number;
      if (flags.episodes !== undefined) {
        if (flags.tasks !== undefined || flags.samples !== undefined) {
          throw new InputError(
            '--episodes',
            flags.episodes,
            'give either --episodes or --tasks/--samples, not both',
          );
        }
        nTasks = int('--episodes', flags.episodes, 1, 100_000_000);
        samples = 1;
      } else if (flags.tasks !== undefined) {
        nTasks = int('--tasks', flags.tasks, 1, 10_000_000);
        samples = flags.samples === undefined ? 1 : int('--samples', flags.samples, 1, 1_000_000);
      } else {
        throw InputError.raw('--episodes', 'missing; give --episodes N or --tasks N --samples K');
      }
      const config = envConfigFromFlags(flags.env, flags);
      // Tasks are made a chunk at a time: a run of millions of episodes holds neither its tasks nor
      // its trajectories (they stream to --out, --db and the summary).
      const taskRange = (first: number, count: number) => makeTasks(config, count, runSeed + first);
      const spec = envSpec(taskRange(0, 1)[0]);
      const budget =
        flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
      const price = parsePrice(flags.price);
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
      const concurrency = int('--concurrency', flags.concurrency, 1, 4096);
      const inputs = [
        ['--policy', specFile(flags.policy)],
        ['--cache', flags.cache],
      ] as const;
      if (flags.out !== undefined) checkOutput(flags.out, '--out', 'file', inputs);
      if (flags.db !== undefined) checkOutput(flags.db, '--db', 'file', inputs);

      // --out is written as episodes finish (one write each): a run that fails or is killed leaves every
      // trajectory finished before it in the file.
      const writer = flags.out === undefined ? undefined : new JsonlWriter(flags.out, { eager: true });
      const store = flags.db === undefined ? undefined : new RunStore(flags.db);
      const runId = flags.run ?? `rollout-${new Date().toISOString()}`;
      if (store?.run(runId))
        throw new InputError('--run', runId, 'a run with this id already exists in the store');
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
      const pending: Trajectory[] = [];
      const acc = new SummaryAccumulator();
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
        [
          fmt(summary.success),
          fmt(exact),
          fmt(se),
          fmt(summary.meanTurns, 2),
          fmt(summary.meanTurnsSuccess, 2),
        ],
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
    });
}
