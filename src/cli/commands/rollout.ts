// turnwise rollout: K samples per task under a budget T, summarised, optionally written to JSONL/SQLite.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envSpec, makeTasks } from '../../envs/index.ts';
import { cacheOption, openaiOptions, parsePrice } from '../openai-flags.ts';
import { envConfigFromFlags, envOptions, int, seed } from '../options.ts';
import { checkQueueFlag, queueOption, refuseWithQueue } from '../queue.ts';
import { ABOUT } from './about.ts';
import type { RolloutFlags } from './rollout-run.ts';

export function registerRollout(program: Command): void {
  queueOption(
    openaiOptions(cacheOption(envOptions(program.command('rollout').description(ABOUT.rollout.description)))),
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
      const concurrency = int('--concurrency', flags.concurrency, 1, 4096);
      await checkQueueFlag(flags.queue);
      refuseWithQueue(flags.queue, [
        ['--cache', flags.cache, 'the replay cache is a file of this process; give it to no queued run'],
      ]);
      const { runRollout } = await import('./rollout-run.ts');
      await runRollout(flags, {
        runSeed,
        nTasks,
        samples,
        config,
        taskRange,
        spec,
        budget,
        price,
        concurrency,
      });
    });
}
