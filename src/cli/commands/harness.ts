// turnwise harness run: an outside agent under a turn budget, once per (task, sample) (harness/run.ts).
// The composition happens here: the tasks from the env registry, and the MCP command line that serves a
// task's env (`turnwise mcp`) for the agent's tools.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Task, Trajectory } from '../../core/types.ts';
import { envSpec, makeTasks } from '../../envs/index.ts';
import type { AgentQueueRun } from '../../harness/remote.ts';
import type { AgentSpec } from '../../harness/run.ts';
import { runHarness, shellQuote } from '../../harness/run.ts';
import { summarize } from '../../rollout/summary.ts';
import { checkOutput } from '../../store/paths.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, num, seed } from '../options.ts';
import { checkQueueFlag } from '../queue.ts';
import { ABOUT } from './about.ts';
import { upstreamUrl } from './proxy.ts';

interface HarnessFlags extends EnvFlags {
  cmd: string;
  env: string;
  tasks: string;
  samples: string;
  budget: string;
  upstream: string;
  out: string;
  reward?: string;
  concurrency: string;
  timeout: string;
  apiKeyEnv?: string;
  revealBudget?: boolean;
  mcp: boolean;
  seed: string;
  queue?: string;
  json?: boolean;
}

const BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../../bin/turnwise.js');

/** An env's params as the flags `turnwise mcp` reads back (envOptions): camelCase → --kebab-case. */
export function paramFlags(params: Record<string, unknown>): string[] {
  const flags: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    const flag = `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    if (v === true) flags.push(flag);
    else if (v !== false && v !== undefined && v !== null) flags.push(flag, String(v));
  }
  return flags;
}

/** The TURNWISE_MCP command line of one episode: sample `sample` of `task` in a run of seed `runSeed`,
 * with the env seeds `rollout --seed runSeed --samples …` gives that (task, sample). */
export function mcpCommand(
  task: Task,
  sample: number,
  o: { runSeed: number; budget: number; revealBudget: boolean; store: string },
): string {
  const { budget, revealBudget, store } = o;
  // An OpenEnv server's env is named by its URL (`openenv:URL#name`); its other params go as JSON.
  const { url, name, ...rest } = task.params as { url?: string; name?: string };
  const env =
    task.env === 'openenv'
      ? [
          `openenv:${url}${name === undefined ? '' : `#${name}`}`,
          ...(Object.keys(rest).length > 0 ? ['--env-params', JSON.stringify(rest)] : []),
        ]
      : [task.env, ...paramFlags(task.params)];
  const words = [
    process.execPath,
    BIN,
    'mcp',
    '--env',
    ...env,
    '--task-seed',
    String(task.seed),
    '--seed',
    String(o.runSeed),
    '--sample',
    String(sample),
    '--budget',
    String(budget),
    ...(revealBudget ? ['--reveal-budget'] : []),
    '--store',
    store,
  ];
  return words.map(shellQuote).join(' ');
}

export function registerHarness(program: Command): void {
  const harness = program.command('harness').description(ABOUT.harness.description);
  envOptions(
    harness
      .command('run')
      .description(
        'run --cmd once per (task, sample) with OPENAI_BASE_URL at a recording proxy, under --budget',
      )
      .addHelpText(
        'after',
        `
The agent gets OPENAI_BASE_URL (its session at the proxy), OPENAI_API_KEY (a placeholder unless
--api-key-env NAME), TURNWISE_TASK (the task as JSON), TURNWISE_SESSION (the session root: POST
…/reward {"value", "reason"}, POST …/end), TURNWISE_MCP (a command line serving the task's env over
MCP on stdio), TURNWISE_SAMPLE, and TURNWISE_BUDGET with --reveal-budget. The reward: the env's
verifier at the end of the MCP episode, else --reward CMD (the trajectory as JSON on stdin, a number on
stdout), else the session's posted reward. Output in --out: trajectories.jsonl, run.sqlite (run
"harness"), proxy.sqlite (every call), agents.pids (the agents running now); a killed run resumes with
the same flags. No agent outlives the harness: each runs in a process group of its own, stopped on
SIGINT/SIGTERM (the interrupted episodes are left for the resume) or, if the harness is killed
(kill -9), by the run's watchdog process.`,
      ),
  )
    .requiredOption('--cmd <command>', 'the agent, a shell command line')
    .requiredOption('--env <id>', 'environment id')
    .option('--tasks <n>', 'number of tasks (task seed = --seed + index)', '1')
    .option('--samples <n>', 'samples per task', '1')
    .requiredOption('--budget <T>', 'turn budget: model calls per episode')
    .requiredOption('--upstream <url>', 'the model API base the proxy forwards to')
    .requiredOption('--out <dir>', 'run directory (created; resumed when it holds the same run)')
    .option('--reward <command>', 'scorer: the trajectory JSON on stdin, a number on stdout')
    .option('--concurrency <n>', 'episodes at once', '4')
    .option('--timeout <s>', 'seconds per episode before the agent is stopped (error)', '300')
    .option('--api-key-env <name>', 'pass this environment variable as OPENAI_API_KEY')
    .option('--reveal-budget', 'tell the agent the budget (TURNWISE_BUDGET, turns left over MCP)')
    .option('--no-mcp', 'do not set TURNWISE_MCP (agents that bring their own tools)')
    .option('--seed <n>', 'first task seed', '0')
    .option(
      '--queue <url>',
      'play the episodes on `turnwise worker --agents` processes through this Redis (redis://HOST:PORT)',
    )
    .option('--json', 'machine-readable output')
    .action(async (flags: HarnessFlags, cmd: Command) => {
      if (flags.cmd.trim() === '') throw new InputError('--cmd', flags.cmd, 'expected a command line');
      const config = envConfigFromFlags(flags.env, flags);
      const first = seed(flags.seed);
      const tasks = makeTasks(config, int('--tasks', flags.tasks, 1, 1_000_000), first);
      envSpec(tasks[0]);
      const samples = int('--samples', flags.samples, 1, 100_000);
      const budget = int('--budget', flags.budget, 1, 1_000_000);
      const upstream = upstreamUrl('--upstream', flags.upstream);
      const concurrency = int('--concurrency', flags.concurrency, 1, 256);
      const timeout = num('--timeout', flags.timeout, (x) => x > 0 && x <= 86_400, 'seconds in (0, 86400]');
      let apiKey: string | undefined;
      if (flags.apiKeyEnv !== undefined) {
        apiKey = process.env[flags.apiKeyEnv];
        if (apiKey === undefined || apiKey === '')
          throw new InputError(
            '--api-key-env',
            flags.apiKeyEnv,
            'names an environment variable that is not set',
          );
      }
      if (flags.reward !== undefined && flags.reward.trim() === '')
        throw new InputError('--reward', flags.reward, 'expected a command line');
      checkOutput(flags.out, '--out', 'dir');
      await checkQueueFlag(flags.queue);
      if (flags.queue !== undefined && cmd.getOptionValueSource('concurrency') === 'cli')
        throw new InputError(
          '--concurrency',
          flags.concurrency,
          "cannot go with --queue: each worker's own --concurrency says how many agents it runs",
        );
      const revealBudget = flags.revealBudget === true;
      // The queue is reached now (an unreachable Redis refused in one line) and closed on every path.
      const queue = flags.queue === undefined ? undefined : await openAgentQueue(flags.queue);
      const progress = new Progress('harness', tasks.length * samples);
      // SIGINT/SIGTERM: the harness stops its agents and records nothing half-done, then this process
      // ends by the same signal (its exit status says so); a second signal kills it at once (the
      // watchdog then stops the agents).
      const abort = new AbortController();
      let stopped: NodeJS.Signals | undefined;
      const onSignal = (sig: NodeJS.Signals) => {
        stopped = sig;
        abort.abort();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const mcp = flags.mcp
        ? (task: Task, sample: number, store: string) =>
            mcpCommand(task, sample, { runSeed: first, budget, revealBudget, store })
        : undefined;
      const r = await runHarness({
        cmd: flags.cmd,
        tasks,
        samples,
        budget,
        revealBudget,
        upstream,
        out: flags.out,
        reward: flags.reward,
        concurrency,
        timeoutMs: timeout * 1000,
        apiKey,
        mcpCommand: mcp,
        queue:
          queue === undefined
            ? undefined
            : (pending, spec, created, record) =>
                queue.run(
                  {
                    tasks,
                    samples,
                    upstream,
                    apiKeyEnv: flags.apiKeyEnv,
                    mcp: flags.mcp,
                    runSeed: first,
                    dir: resolve(flags.out),
                    signal: abort.signal,
                  },
                  pending,
                  spec,
                  created,
                  record,
                  progress,
                ),
        config: {
          cmd: flags.cmd,
          ...config,
          tasks: tasks.length,
          samples,
          budget,
          revealBudget,
          seed: first,
          upstream,
          reward: flags.reward ?? null,
          mcp: flags.mcp,
        },
        onProgress: (done) => progress.update(done),
        signal: abort.signal,
      }).finally(async () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await queue?.close();
      });
      progress.done();
      if (r.swept.length > 0)
        process.stderr.write(`stopped ${r.swept.length} agent(s) a killed harness had left running\n`);
      if (r.interrupted && stopped !== undefined) {
        process.stderr.write(
          `interrupted by ${stopped}: ${r.trajectories.length} of ${tasks.length * samples} episodes recorded; run the same command to resume\n`,
        );
        process.kill(process.pid, stopped);
        return;
      }
      const s = summarize(r.trajectories);
      const result = {
        ...s,
        ran: r.ran,
        resumed: r.resumed,
        dir: r.dir,
        budget,
        tasks: tasks.length,
        samples,
      };
      if (flags.json) return json(result);
      out(
        `${flags.cmd} on ${config.env} ${JSON.stringify(config.params)}: ${s.episodes} episodes (${tasks.length} tasks × ${samples}), budget ${budget}; ran ${r.ran}, resumed ${r.resumed}`,
      );
      out(
        table([
          ['success', 'mean turns', 'failures'],
          [
            fmt(s.success),
            fmt(s.meanTurns, 2),
            Object.entries(s.failures)
              .filter(([, n]) => n)
              .map(([k, n]) => `${k} ${n}`)
              .join(', ') || '-',
          ],
        ]),
      );
      out(`wrote ${r.dir}/trajectories.jsonl and ${r.dir}/run.sqlite (run harness)`);
    });
}

/** The agents' queue of `--queue URL`, opened (Redis reached, or refused in one line) before any work. */
async function openAgentQueue(raw: string) {
  const { AGENT_QUEUE_NAME } = await import('../../rollout/queue-redis.ts');
  const { queueAgentEpisodes } = await import('../../harness/remote.ts');
  const { openRedisQueue } = await import('../queue-run.ts');
  const { q, show, close } = await openRedisQueue(raw, 'harness', AGENT_QUEUE_NAME);
  return {
    run: (
      o: AgentQueueRun,
      pending: readonly number[],
      spec: AgentSpec,
      created: string,
      record: (idx: number, t: Trajectory) => void,
      p: Progress,
    ) => {
      show(p);
      return queueAgentEpisodes(q, o, pending, spec, created, record);
    },
    close,
  };
}
