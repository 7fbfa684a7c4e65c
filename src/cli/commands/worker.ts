// turnwise worker --queue redis://HOST:PORT: plays the episodes that `rollout|eval|compare|train --queue`
// put on the queue (src/rollout/queue-worker.ts), until SIGINT or SIGTERM (episodes in flight finish).
// Policies are opened from the jobs' specs with this machine's environment (an openai: policy reads its
// key here); checkpoints come from Redis by hash. Envs come from the registry. With --agents it also
// plays `harness run --queue`'s episodes (src/harness/remote.ts): the job's agent command run here.
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envSpec, envs, prepareEnv } from '../../envs/index.ts';
import { makePolicy, openPolicy } from '../../policies/spec.ts';
import { parseQueueUrl } from '../../rollout/queue-redis.ts';
import { QueueWorker } from '../../rollout/queue-worker.ts';
import { untilSignal } from '../io.ts';
import { int } from '../options.ts';
import { ABOUT } from './about.ts';
import { mcpCommand } from './harness.ts';

interface WorkerFlags {
  queue: string;
  concurrency: string;
  name?: string;
  lockMs: string;
  apiKeyEnv?: string;
  agents?: boolean;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description(ABOUT.worker.description)
    .requiredOption('--queue <url>', 'the Redis the producers use (redis://HOST:PORT[/DB])')
    .option('--concurrency <n>', 'episodes in flight at once', '4')
    .option('--name <w>', 'this worker in `turnwise queue status` and progress (default HOST-PID)')
    .option(
      '--lock-ms <ms>',
      'lock of an episode being played, renewed while this worker lives: if it dies, its episodes are rerun elsewhere after about this',
      '30000',
    )
    .option(
      '--api-key-env <name>',
      'read the API key of openai: policies from this variable (default OPENAI_API_KEY)',
    )
    .option(
      '--agents',
      "also play `harness run --queue` episodes: each runs the job's agent command (a shell command line) on this machine",
    )
    .action(async (flags: WorkerFlags) => {
      const url = parseQueueUrl(flags.queue);
      const concurrency = int('--concurrency', flags.concurrency, 1, 4096);
      const lockMs = int('--lock-ms', flags.lockMs, 100, 3_600_000);
      const name = flags.name ?? `${hostname()}-${process.pid}`;
      if (!NAME.test(name)) throw new InputError('--name', name, 'expected 1 to 64 of A-Z a-z 0-9 . _ -');
      const keyEnv = flags.apiKeyEnv;
      if (keyEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv))
        throw new InputError('--api-key-env', keyEnv, 'expected the name of an environment variable');
      const agents =
        flags.agents === true
          ? new (await import('../../harness/remote.ts')).AgentStation(mcpCommand)
          : undefined;
      const worker = await QueueWorker.start(
        {
          url,
          name,
          concurrency,
          lockMs,
          onJob: (id, failure) => {
            if (failure !== undefined)
              process.stderr.write(`turnwise worker ${name}: ${id} failed: ${failure}\n`);
          },
        },
        {
          openPolicy: async (ref, task) => {
            // A job's OpenEnv server is read once per process, as the producer's was at its start.
            await prepareEnv(task.env, task.params);
            const spec = envSpec(task);
            if ('file' in ref) return makePolicy(ref.file, spec);
            return openPolicy(ref.spec, spec, 'policy', undefined, {
              keyEnv,
              env: { id: task.env, params: task.params },
            });
          },
          makeEnv: async (task) => {
            await prepareEnv(task.env, task.params);
            return envs.make(task);
          },
          agents,
        },
      );
      process.stderr.write(
        `turnwise worker ${name}: listening on ${url.url} (concurrency ${concurrency}${agents === undefined ? '' : ', agents too'})\n`,
      );
      await untilSignal(() => worker.close());
    });
}
