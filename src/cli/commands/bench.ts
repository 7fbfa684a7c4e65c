// turnwise bench env|rollout|nn — throughput figures (machine-dependent: printed, never asserted).
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Env, Task } from '../../core/types.ts';
import { ENV_IDS, envEntry, envSpec, envs, makeEnv } from '../../envs/index.ts';
import { envThroughput } from '../../envs/throughput.ts';
import { toolEnvThroughput } from '../../envs/tool-throughput.ts';
import { LLAMA_BENCH, llamaCppBench } from '../../llama/bench.ts';
import { benchNn } from '../../nn/bench.ts';
import { makeOpenAIPolicy, makePolicy } from '../../policies/spec.ts';
import { rolloutThroughput } from '../../rollout/throughput.ts';
import { serveBench } from '../../serve/bench.ts';
import { checkOutput } from '../../store/paths.ts';
import { creditOfFile } from '../../studies/credit-file.ts';
import { UI_BENCH, uiBench } from '../../studies/ui-bench.ts';
import { fmt, json, out, table } from '../io.ts';
import {
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  num,
  seed,
  spacesOfRegistered,
} from '../options.ts';
import { startupBench } from '../startup-bench.ts';
import { ABOUT } from './about.ts';

interface BenchFlags extends EnvFlags {
  steps: string;
  seed: string;
  json?: boolean;
}

const DISCRETE_STEPS = 5_000_000;
const TOOL_STEPS = 20_000;
const BASE_KEYS = new Set(['steps', 'episodes', 'seconds', 'stepsPerSecond']);

/** One env's figure: a discrete env steps pre-drawn random actions; a tool env plays random valid calls
 * from its menu over a cycle of tasks (envs/tool-throughput.ts), plus the env's own figures (the
 * registry's `bench` hook). A warm-up run first, so that the JIT (and the world caches) are warm. */
async function benchEnv(
  task: Task,
  stepsFlag: number | undefined,
  s: number,
): Promise<Record<string, unknown>> {
  const spec = envSpec(task);
  if (typeof spec.actions === 'number') {
    const steps = stepsFlag ?? DISCRETE_STEPS;
    envThroughput(makeEnv(task) as Env<unknown, number>, Math.min(steps, 200_000)); // warm-up (JIT)
    return { ...envThroughput(makeEnv(task) as Env<unknown, number>, steps, s) };
  }
  if (spec.scripted !== true)
    throw new InputError(
      'env',
      task.env,
      'a tool env needs a menu of valid calls (spec.scripted) to be benchmarked',
    );
  const steps = stepsFlag ?? TOOL_STEPS;
  await toolEnvThroughput(envs, task, Math.min(steps, 2_000), s); // warm-up (JIT, generated worlds)
  const r = await toolEnvThroughput(envs, task, steps, s);
  const extra = await envEntry(task.env).bench?.(task, steps, s);
  return { ...r, ...extra };
}

function taskOf(envId: string, flags: BenchFlags): Task {
  return { ...envConfigFromFlags(envId, flags), seed: seed(flags.seed) };
}

export function registerBench(program: Command): void {
  const bench = program.command('bench').description(ABOUT.bench.description);

  envOptions(
    bench
      .command('env')
      .argument('<env>', `environment id, or all (every registered env: ${ENV_IDS.join(', ')})`)
      .description(
        'raw steps/s through the public Env API (tool envs: uniformly random valid tool calls from the env menu)',
      ),
  )
    .option(
      '--steps <n>',
      `steps to time (default ${DISCRETE_STEPS} for discrete envs, ${TOOL_STEPS} for tool envs)`,
    )
    .option('--seed <n>', 'seed (and first task seed)', '0')
    .option('--json', 'machine-readable output')
    .action(async (envId: string, flags: Omit<BenchFlags, 'steps'> & { steps?: string }) => {
      const ids = envId === 'all' ? ENV_IDS : [envId];
      const tasks = ids.map((id) => taskOf(id, flags as BenchFlags));
      const steps = flags.steps === undefined ? undefined : int('--steps', flags.steps, 1, 1e10);
      const results: Record<string, Record<string, unknown>> = {};
      for (const task of tasks) results[task.env] = await benchEnv(task, steps, seed(flags.seed));
      if (flags.json) return json(envId === 'all' ? results : results[envId]);
      for (const [id, r] of Object.entries(results)) {
        const rate = r.stepsPerSecond as number;
        const extra = Object.entries(r)
          .filter(([k]) => !BASE_KEYS.has(k))
          .map(([k, v]) => `, ${k} ${typeof v === 'number' ? fmt(v, 1) : String(v)}`)
          .join('');
        out(
          `${id}: ${rate >= 1e6 ? `${fmt(rate / 1e6, 2)} M` : fmt(rate, 0)} steps/s (${r.steps} steps, ${r.episodes} episodes, ${fmt(r.seconds as number, 2)} s${extra})`,
        );
      }
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
      rolloutThroughput(makeEnv, task, policy, Math.min(steps, 100_000), budget, 0, batch); // warm-up (JIT)
      const r = rolloutThroughput(makeEnv, task, policy, steps, budget, seed(flags.seed), batch);
      if (flags.json) return json(r);
      out(
        `${fmt(r.stepsPerSecond / 1e6, 2)} M steps/s, ${fmt(r.episodesPerSecond / 1e3, 1)} K episodes/s (${r.steps} steps, ${fmt(r.seconds, 2)} s)`,
      );
    });

  bench
    .command('nn')
    .description(
      'nn engine: square float32 matmul GFLOP/s (one core), MLP train steps/s, transformer train and generate tokens/s with mfu, and its generation beside llama.cpp on the same model',
    )
    .option('--trial-seconds <s>', 'length of each of the 3 timed trials per figure (best is kept)', '0.2')
    .option('--json', 'machine-readable output')
    .action(async (flags: { json?: boolean; trialSeconds: string }) => {
      const trial = num('--trial-seconds', flags.trialSeconds, (x) => x > 0 && x <= 60, 'seconds in (0, 60]');
      const r = benchNn([64, 256, 512], trial);
      const llamaCpp = await llamaCppBench({ ...LLAMA_BENCH, trialSeconds: trial });
      if (flags.json) return json({ ...r, llamaCpp });
      out(
        table([
          ['matmul n', 'GFLOP/s', `scalar`],
          ...Object.keys(r.matmul).map((n) => [n, fmt(r.matmul[n], 2), fmt(r.matmulScalar[n], 2)]),
        ]),
      );
      out(`kernel ${r.kernel}; MLP 48-64-64-4 Adam steps on batches of 256: ${r.mlpTrainStepsPerSecond}/s`);
      const t = r.transformer;
      const c = t.config;
      out(
        `transformer layers ${c.layers}, d ${c.d}, heads ${c.heads}, ctx ${c.ctx}, vocab ${c.vocab} (${t.params} params): train ${t.trainTokensPerSecond} tokens/s (${fmt(t.trainGflops, 2)} GFLOP/s, mfu ${fmt(t.mfu, 3)} of ${fmt(t.peakGflops, 2)}); generate ${t.generateTokensPerSecond['1']} tokens/s at batch 1, ${t.generateTokensPerSecond['64']} at batch 64`,
      );
      const g = llamaCpp.generateTokensPerSecond;
      out(
        `the same model greedy, ${llamaCpp.promptTokens}-token prompts + ${llamaCpp.newTokens} tokens, ${llamaCpp.threads} thread each: ours ${g.ours['1']} / ${g.ours['16']} tokens/s at batch 1 / 16, llama.cpp ${g.llamaCpp['1']} / ${g.llamaCpp['16']} (its decode alone ${g.llamaCppDecode['1']} / ${g.llamaCppDecode['16']}); ratio ${fmt(llamaCpp.ratio['1'], 2)} / ${fmt(llamaCpp.ratio['16'], 2)} (goal ≥ 0.5 at batch 1); greedy tokens ${llamaCpp.greedyTokensEqual ? 'equal' : 'DIFFER'}`,
      );
    });

  bench
    .command('cli')
    .description("the CLI's start-up (help, a light command, a refusal) against bare `node -e 0`, in one run")
    .option('--rounds <n>', 'rounds; each starts every command once, in turn', '15')
    .option('--json', 'machine-readable output')
    .action((flags: { rounds: string; json?: boolean }) => {
      const r = startupBench(process.argv[1]!, int('--rounds', flags.rounds, 1, 1000));
      if (flags.json) return json(r);
      const ms = (x: number | undefined) => (x === undefined ? '–' : fmt(x, 0));
      out(
        table([
          ['command', 'wall ms', 'cpu ms', '× node (wall)', '× node (cpu)'],
          ['node -e 0', ms(r.bare.wallMs), ms(r.bare.cpuMs), '1', '1'],
          ...Object.entries(r.commands).map(([name, c]) => [
            `turnwise ${name}`,
            ms(c.wallMs),
            ms(c.cpuMs),
            fmt(c.ratio, 2),
            c.ratioCpu === undefined ? '–' : fmt(c.ratioCpu, 2),
          ]),
        ]),
      );
      out(`medians of wall time and means of CPU time over ${r.rounds} rounds; goal ≤ 3× node`);
    });

  bench
    .command('queue')
    .description(
      "episodes/s of a latency-bound policy (served with --latency) in process, with 1 and with 2 `turnwise worker` processes, in one run; the queue's own overhead per episode",
    )
    .option('--tasks <n>', 'tasks of the timed batch', '40')
    .option('--samples <k>', 'samples per task', '2')
    .option('--budget <T>', 'turn budget of each episode', '20')
    .option('--concurrency <n>', 'episodes in flight, in process and in each worker', '4')
    .option('--latency <delay>', 'the served policy waits this long before every answer', '20ms')
    .option('--overhead-episodes <n>', 'episodes of the overhead batch (a policy that takes no time)', '1000')
    .option('--queue <url>', 'an existing Redis with no other worker on it (default: a private redis-server)')
    .option('--json', 'machine-readable output')
    .action(
      async (flags: {
        tasks: string;
        samples: string;
        budget: string;
        concurrency: string;
        latency: string;
        overheadEpisodes: string;
        queue?: string;
        json?: boolean;
      }) => {
        const o = {
          tasks: int('--tasks', flags.tasks, 1, 100_000),
          samples: int('--samples', flags.samples, 1, 1000),
          budget: int('--budget', flags.budget, 1, 1000),
          concurrency: int('--concurrency', flags.concurrency, 1, 256),
          latencyMs: (await import('./serve.ts')).latency(flags.latency),
          overheadEpisodes: int('--overhead-episodes', flags.overheadEpisodes, 1, 100_000),
        };
        const { parseQueueUrl } = await import('../../rollout/queue-redis.ts');
        const queue = flags.queue === undefined ? undefined : parseQueueUrl(flags.queue);
        const { queueBench } = await import('../queue-bench.ts');
        const r = await queueBench({ ...o, queue, bin: process.argv[1]! });
        if (flags.json) return json(r);
        out(
          `${r.episodes} episodes of ${r.policy}, budget ${r.budget}, ${r.concurrency} in flight per process: in process ${fmt(r.local.episodesPerSecond, 1)} episodes/s, 1 worker ${fmt(r.workers1.episodesPerSecond, 1)}, 2 workers ${fmt(r.workers2.episodesPerSecond, 1)} (${fmt(r.speedup, 2)}× one; goal ≥ 1.8); the same trajectories: ${r.sameTrajectories ? 'yes' : 'NO'}`,
        );
        const h = r.overhead;
        out(
          `queue overhead: ${fmt(h.msPerEpisode, 2)} ms per episode (goal ≤ 2; ${h.episodes} episodes of random, one at a time on one worker: ${fmt(h.queueSeconds, 2)} s queued, ${fmt(h.localSeconds, 2)} s in process); a one-episode batch's round trip ${fmt(h.roundTrip.queueMs, 2)} ms (in process ${fmt(h.roundTrip.localMs, 2)} ms)`,
        );
      },
    );

  envOptions(
    bench
      .command('serve')
      .description(
        'turns/s through an openai: policy and turnwise serve on loopback, beside a bare node:http round-trip loop',
      ),
  )
    .option('--env <id>', 'environment id', 'frozenlake')
    .option('--policy <spec>', 'the served in-process policy', 'oracle:eps=0.2')
    .option('--concurrency <n>', 'requests in flight', '64')
    .option('--seconds <s>', 'timed seconds of each figure', '3')
    .option('--budget <T>', 'turn budget of each episode', '100')
    .option('--json', 'machine-readable output')
    .action(
      async (
        flags: EnvFlags & {
          env: string;
          policy: string;
          concurrency: string;
          seconds: string;
          budget: string;
          json?: boolean;
        },
      ) => {
        const task = { ...envConfigFromFlags(flags.env, flags), seed: 0 };
        const concurrency = int('--concurrency', flags.concurrency, 1, 4096);
        const seconds = num('--seconds', flags.seconds, (x) => x > 0 && x <= 600, 'seconds in (0, 600]');
        const budget = int('--budget', flags.budget, 1, 1_000_000);
        const env = makeEnv(task);
        const policy = makePolicy(flags.policy, env.spec);
        const r = await serveBench({
          policy,
          env,
          task,
          makeEnv,
          client: (url) =>
            makeOpenAIPolicy(`openai:${url}#${policy.id},concurrency=${concurrency},retries=0`, env.spec),
          concurrency,
          seconds,
          budget,
        });
        await env.close?.();
        if (flags.json) return json(r);
        out(
          `served: ${fmt(r.served.turnsPerSecond, 0)} turns/s; bare loops (the same ${r.requestBytes}-byte requests on average): fetch ${fmt(r.bare.roundTripsPerSecond, 0)}, node:http keep-alive ${fmt(r.bareNodeHttp.roundTripsPerSecond, 0)} round trips/s; ratio to the faster ${fmt(r.ratio, 3)} (goal ≥ 0.3; by CPU time ${fmt(r.ratioCpu, 3)}), to fetch ${fmt(r.ratioFetch, 3)}, at concurrency ${r.concurrency}, ${r.rounds} alternating rounds`,
        );
      },
    );

  bench
    .command('ui')
    .description(
      'turnwise ui on a generated run of a million turns (file and store): first page of its trajectories (cold and warm) and random trajectories with credit, over HTTP',
    )
    .option('--turns <n>', 'turns of the generated run (at least)', '1000000')
    .option('--opens <n>', 'random trajectories opened, with credit=grpo,exact', '50')
    .option('--seed <n>', 'seed of the run and of the trajectories opened', '0')
    .option('--dir <dir>', 'write the run there and keep it (default: a temporary directory, removed)')
    .option('--json', 'machine-readable output')
    .action(async (flags: { turns: string; opens: string; seed: string; dir?: string; json?: boolean }) => {
      const turns = int('--turns', flags.turns, 1, 100_000_000);
      const opens = int('--opens', flags.opens, 1, 100_000);
      const s = seed(flags.seed);
      if (flags.dir !== undefined) {
        checkOutput(flags.dir, '--dir', 'dir');
        if (existsSync(flags.dir) && readdirSync(flags.dir).length > 0)
          throw new InputError('--dir', flags.dir, 'is not empty; expected a new or empty directory');
      }
      const dir = flags.dir ?? mkdtempSync(join(tmpdir(), 'turnwise-bench-ui-'));
      try {
        const r = await uiBench({
          turns,
          opens,
          seed: s,
          dir,
          credit: creditOfFile,
          spacesOf: spacesOfRegistered,
        });
        if (flags.json) return json(r);
        const ms = (x: number) => `${fmt(x, 1)} ms`;
        out(
          `${r.run.trajectories} trajectories, ${r.run.turns} turns (${fmt(r.run.fileBytes / 1e6, 1)} MB file, ${fmt(r.run.storeBytes / 1e6, 1)} MB store)`,
        );
        out(
          table([
            [
              'run',
              'first page cold',
              'warm (median)',
              `open with ${UI_BENCH.credit} (median / max)`,
              'index',
            ],
            ...(['file', 'store'] as const).map((k) => [
              k,
              ms(r[k].firstPage.coldMs),
              ms(r[k].firstPage.warm.medianMs),
              `${ms(r[k].open.rest.medianMs)} / ${ms(Math.max(r[k].open.firstMs, r[k].open.rest.maxMs))}`,
              `${fmt(r[k].indexBytes / 1e6, 2)} MB`,
            ]),
          ]),
        );
        out(
          `reference: a bare round trip ${ms(r.reference.roundTrip.medianMs)}; the whole file read ${ms(r.reference.wholeFileReadMs)}; goal < ${r.goalMs} ms`,
        );
      } finally {
        if (flags.dir === undefined) rmSync(dir, { recursive: true, force: true });
      }
    });
}
