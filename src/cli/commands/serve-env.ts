// turnwise serve-env --env E --protocol openenv: any env over OpenEnv's HTTP and WebSocket protocol
// (serve/openenv.ts), until SIGINT or SIGTERM. A command of its own, not a flag of `serve`: serve puts a
// policy behind an OpenAI-compatible endpoint (its --policy is required, its routes are /v1/…), this
// puts an env behind an env protocol with no policy at all — as `turnwise mcp` does over MCP.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envEntry, envs } from '../../envs/index.ts';
import { startOpenEnvServer } from '../../serve/openenv.ts';
import { json, untilSignal } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, seed } from '../options.ts';
import { ABOUT } from './about.ts';
import { internalErrors, maxBody } from './serve.ts';

interface ServeEnvFlags extends EnvFlags {
  env: string;
  protocol: string;
  port: string;
  host: string;
  budget?: string;
  seed: string;
  maxSessions: string;
  maxBodyMb: string;
  json?: boolean;
}

const PROTOCOLS = ['openenv'];

export function registerServeEnv(program: Command): void {
  envOptions(program.command('serve-env').description(ABOUT['serve-env'].description))
    .option(
      '--env <id>',
      'environment id (or openenv:URL, to serve another server’s env again)',
      'frozenlake',
    )
    .option('--protocol <p>', `the protocol: ${PROTOCOLS.join(' | ')}`, 'openenv')
    .option('--port <n>', 'port (0 = a free port)', '8000')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--budget <T>', 'turn budget: an episode is truncated after T steps (default: the env limit)')
    .option('--seed <n>', 'the task seed of a reset that gives none', '0')
    .option('--max-sessions <n>', 'WebSocket sessions at once (OpenEnv’s max_concurrent_envs)', '64')
    .option('--max-body-mb <n>', 'the largest request body or WebSocket message, in MiB', '16')
    .option('--json', 'print {"url": …, "port": …} on stdout once listening')
    .action(async (flags: ServeEnvFlags) => {
      if (!PROTOCOLS.includes(flags.protocol))
        throw new InputError('--protocol', flags.protocol, `expected one of: ${PROTOCOLS.join(', ')}`);
      const config = envConfigFromFlags(flags.env, flags);
      const port = int('--port', flags.port, 0, 65535);
      const taskSeed = seed(flags.seed);
      const spec = envs.spec({ ...config, seed: taskSeed });
      const budget =
        flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
      const maxSessions = int('--max-sessions', flags.maxSessions, 1, 100_000);
      const server = await startOpenEnvServer({
        envs,
        config,
        budget,
        seed: taskSeed,
        maxSessions,
        metadata: {
          name: spec.id,
          description: envEntry(config.env).summary,
          version: program.version() ?? null,
        },
        port,
        host: flags.host,
        maxBodyBytes: maxBody(flags.maxBodyMb),
        onInternalError: internalErrors('serve-env'),
      }).catch((e: NodeJS.ErrnoException) => {
        throw new InputError(
          '--port',
          flags.port,
          `cannot listen on ${flags.host}:${port} (${e.code ?? e.message})`,
        );
      });
      process.stderr.write(
        `serving ${spec.id} ${JSON.stringify(config.params)} over OpenEnv (HTTP and WebSocket /ws), budget ${budget}\n`,
      );
      process.stderr.write(`listening on ${server.url}\n`);
      if (flags.json) json({ url: server.url, port: server.port });
      await untilSignal(() => server.close());
    });
}
