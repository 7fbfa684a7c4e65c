// turnwise serve: an in-process policy as an OpenAI-compatible server (serve/openai.ts) until SIGINT or
// SIGTERM.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envs } from '../../envs/index.ts';
import { makePolicy } from '../../policies/spec.ts';
import { parseFaults } from '../../serve/faults.ts';
import { modelIds, startServer } from '../../serve/openai.ts';
import { json } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int } from '../options.ts';

interface ServeFlags extends EnvFlags {
  env: string;
  policy: string;
  port: string;
  host: string;
  faults?: string;
  latency?: string;
  apiKeyEnv?: string;
  json?: boolean;
}

function latency(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(raw.trim());
  const ms = m === null ? Number.NaN : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  if (!(ms >= 0 && ms <= 600_000))
    throw new InputError('--latency', raw, 'expected a delay such as 20ms or 1s');
  return ms;
}

/** The key in the variable `--api-key-env` names; refused when it is unset or empty. */
export function keyFrom(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new InputError('--api-key-env', name, 'expected the name of an environment variable');
  const key = process.env[name];
  if (key === undefined || key === '')
    throw new InputError('--api-key-env', name, 'this environment variable is not set');
  return key;
}

export function registerServe(program: Command): void {
  envOptions(
    program
      .command('serve')
      .description(
        'serve an in-process policy as an OpenAI-compatible endpoint (/v1/models, /v1/chat/completions with streaming, /v1/completions for scoring, /health)',
      )
      .addHelpText(
        'after',
        `
The conversation is the chat encoding of policies/chat.ts (what --policy openai:URL#MODEL sends): the
last user or tool message reads "Turn t (N turns left)." (the turns left only when the budget is
revealed), an optional "Last action: …" line, then "Observation:" and the env's text view. Models: the
policy spec and its bare kind (oracle for oracle:eps=0.2).`,
      ),
  )
    .option('--env <id>', 'environment id', 'frozenlake')
    .requiredOption(
      '--policy <spec>',
      'the in-process policy to serve (random | oracle[:…] | tabular | checkpoint)',
    )
    .option('--port <n>', 'port (0 = a free port)', '8000')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option(
      '--faults <spec>',
      'inject faults deterministically, e.g. 429=0.1,500=0.05,hang=0.01,malformed=0.02,seed=7',
    )
    .option('--latency <delay>', 'added before every answer, e.g. 20ms')
    .option('--api-key-env <name>', 'require the key in this environment variable (else HTTP 401)')
    .option('--json', 'print {"url": …} on stdout once listening')
    .action(async (flags: ServeFlags) => {
      const config = envConfigFromFlags(flags.env, flags);
      if (config.params.random === true) {
        throw new InputError(
          '--random',
          true,
          'serve needs one fixed map (the observation is read from its text view)',
        );
      }
      const env = await envs.make({ ...config, seed: 0 });
      const policy = makePolicy(flags.policy, env.spec);
      if (policy.id.startsWith('openai:'))
        throw new InputError('--policy', flags.policy, 'serve takes an in-process policy');
      const port = int('--port', flags.port, 0, 65535);
      const faults = flags.faults === undefined ? undefined : parseFaults(once(flags.faults));
      const latencyMs = flags.latency === undefined ? undefined : latency(flags.latency);
      const apiKey = flags.apiKeyEnv === undefined ? undefined : keyFrom(flags.apiKeyEnv);
      const server = await startServer({
        policy,
        env,
        faults,
        latencyMs,
        port,
        host: flags.host,
        envParams: config.params,
        apiKey,
      }).catch((e: NodeJS.ErrnoException) => {
        throw new InputError(
          '--port',
          flags.port,
          `cannot listen on ${flags.host}:${port} (${e.code ?? e.message})`,
        );
      });
      process.stderr.write(`listening on ${server.url}\n`);
      if (flags.json) json({ url: server.url, port: server.port, models: modelIds(policy) });
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          server.close().then(resolve, resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await env.close?.();
    });
}

/** `--faults 429=0.5,429=0.1` says two things of one fault: refused, not the last silently kept. */
function once(raw: string): string {
  const keys = raw.split(',').map((part) => part.slice(0, Math.max(0, part.indexOf('='))).trim());
  const twice = keys.find((k, i) => k !== '' && keys.indexOf(k) !== i);
  if (twice !== undefined) throw new InputError('--faults', raw, `${twice} is given twice; give each once`);
  return raw;
}
