// turnwise bench env|rollout — throughput figures (machine-dependent: printed, never asserted).
import type { Command } from 'commander';
import type { Env, Task } from '../../core/types.ts';
import { envSpec, makeEnv } from '../../envs/index.ts';
import { envThroughput } from '../../envs/throughput.ts';
import { makePolicy } from '../../policies/spec.ts';
import { rolloutThroughput } from '../../rollout/throughput.ts';
import { fmt, json, out } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, seed } from '../options.ts';

interface BenchFlags extends EnvFlags {
  steps: string;
  seed: string;
  json?: boolean;
}

function taskOf(envId: string, flags: BenchFlags): Task {
  return { ...envConfigFromFlags(envId, flags), seed: seed(flags.seed) };
}

export function registerBench(program: Command): void {
  const bench = program.command('bench').description('throughput benchmarks (JSON with --json)');

  envOptions(
    bench
      .command('env')
      .argument('<env>', 'environment id')
      .description('raw steps/s through the public Env API'),
  )
    .option('--steps <n>', 'steps to time', '5000000')
    .option('--seed <n>', 'seed', '0')
    .option('--json', 'machine-readable output')
    .action((envId: string, flags: BenchFlags) => {
      const task = taskOf(envId, flags);
      const steps = int('--steps', flags.steps, 1, 1e10);
      envThroughput(makeEnv(task) as Env<unknown, number>, Math.min(steps, 200_000)); // warm-up (JIT)
      const r = envThroughput(makeEnv(task) as Env<unknown, number>, steps, seed(flags.seed));
      if (flags.json) return json(r);
      out(
        `${fmt(r.stepsPerSecond / 1e6, 2)} M steps/s (${r.steps} steps, ${r.episodes} episodes, ${fmt(r.seconds, 2)} s)`,
      );
    });

  envOptions(
    bench
      .command('rollout')
      .argument('<env>', 'environment id')
      .description('recorded trajectories with a policy in the loop: steps/s and episodes/s'),
  )
    .option('--steps <n>', 'steps to time', '2000000')
    .option('--policy <spec>', 'policy in the loop', 'random')
    .option('--budget <T>', 'turn budget', '100')
    .option('--batch <n>', 'episodes per recorded batch', '256')
    .option('--seed <n>', 'seed', '0')
    .option('--json', 'machine-readable output')
    .action((envId: string, flags: BenchFlags & { policy: string; budget: string; batch: string }) => {
      const task = taskOf(envId, flags);
      const steps = int('--steps', flags.steps, 1, 1e10);
      const budget = int('--budget', flags.budget, 1, 1_000_000);
      const policy = makePolicy(flags.policy, envSpec(task));
      const batch = int('--batch', flags.batch, 1, 1_000_000);
      rolloutThroughput(task, policy, Math.min(steps, 100_000), budget, 0, batch); // warm-up (JIT)
      const r = rolloutThroughput(task, policy, steps, budget, seed(flags.seed), batch);
      if (flags.json) return json(r);
      out(
        `${fmt(r.stepsPerSecond / 1e6, 2)} M steps/s, ${fmt(r.episodesPerSecond / 1e3, 1)} K episodes/s (${r.steps} steps, ${fmt(r.seconds, 2)} s)`,
      );
    });
}
