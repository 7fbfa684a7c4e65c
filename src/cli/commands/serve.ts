// turnwise serve: an in-process policy as an OpenAI-compatible server (serve/openai.ts) until SIGINT or
// SIGTERM. A tool env (sql, code, tools, search, web) is served by serve/tool-serve.ts over the tasks of
// --tasks/--seed (or --task-seeds), each episode opened as `turnwise mcp` opens it for the agent. A policy
// that loads something (a gguf: model into llama.cpp) is connected before the server listens — a file
// llama.cpp refuses is one line, exit 2 — and closed once the server has stopped.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { EnvConfig, EnvSpec, Policy, Task } from '../../core/types.ts';
import { envs, makeTasks } from '../../envs/index.ts';
import { mcpEpisodeOpener } from '../../harness/mcp-episode.ts';
import { isConnectable, makePolicy } from '../../policies/spec.ts';
import { type Faults, parseFaults } from '../../serve/faults.ts';
import type { EdgeOptions } from '../../serve/guard.ts';
import { modelIds, type RunningServer, startServer } from '../../serve/openai.ts';
import { toolServeApp } from '../../serve/tool-serve.ts';
import { json, untilSignal } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, intList, seed } from '../options.ts';
import { ABOUT } from './about.ts';

interface ServeFlags extends EnvFlags {
  env: string;
  policy: string;
  port: string;
  host: string;
  faults?: string;
  latency?: string;
  apiKeyEnv?: string;
  maxBodyMb?: string;
  json?: boolean;
  tasks?: string;
  seed?: string;
  taskSeeds?: string;
  budget?: string;
  revealBudget?: boolean;
}

/** The tool-env flags, refused on an env served by its text view (they would be silently ignored). */
const TOOL_FLAGS = [
  ['tasks', '--tasks'],
  ['seed', '--seed'],
  ['taskSeeds', '--task-seeds'],
  ['budget', '--budget'],
  ['revealBudget', '--reveal-budget'],
] as const;

/** The served tasks of a tool env: --task-seeds, else --tasks N from --seed (as `harness run` numbers them). */
function servedTasks(config: EnvConfig, flags: ServeFlags): Task[] {
  if (flags.taskSeeds !== undefined) {
    if (flags.tasks !== undefined || flags.seed !== undefined)
      throw new InputError('--task-seeds', flags.taskSeeds, 'give either --task-seeds or --tasks/--seed');
    const seeds = intList('--task-seeds', flags.taskSeeds, 0);
    return seeds.map((s) => ({ env: config.env, params: config.params, seed: s }));
  }
  const n = flags.tasks === undefined ? 1 : int('--tasks', flags.tasks, 1, 100_000);
  return makeTasks(config, n, flags.seed === undefined ? 0 : seed(flags.seed));
}

interface Listen extends EdgeOptions {
  port: number;
  host: string;
  faults?: Faults;
  latencyMs?: number;
}

/** The in-process policy to serve, connected (a gguf: model loaded); an openai: spec is refused. */
async function servedPolicy(flags: ServeFlags, spec: EnvSpec): Promise<Policy<unknown, unknown>> {
  const policy = makePolicy(flags.policy, spec);
  if (policy.id.startsWith('openai:'))
    throw new InputError('--policy', flags.policy, 'serve takes an in-process policy');
  if (isConnectable(policy)) await policy.connect();
  return policy;
}

/** Releases what the policy holds (a gguf: model's llama.cpp context). */
async function closePolicy(policy: Policy<unknown, unknown>): Promise<void> {
  await (policy as { close?: () => Promise<void> | void }).close?.();
}

/** Serves a scripted policy of a tool env; each task's episode is the one `turnwise mcp --task-seed S
 * --budget B [--reveal-budget]` serves (run seed = task seed, sample 0: harness/mcp-episode.ts). */
async function serveTools(
  config: EnvConfig,
  flags: ServeFlags,
  listen: Listen,
): Promise<{ server: RunningServer; models: string[]; policy: Policy<unknown, unknown> }> {
  const tasks = servedTasks(config, flags);
  const spec = envs.spec(tasks[0]);
  const policy = await servedPolicy(flags, spec);
  const budget =
    flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
  const revealBudget = flags.revealBudget === true;
  const open = mcpEpisodeOpener(envs.make, budget, revealBudget);
  const served = await toolServeApp({ policy, tasks, open, envParams: config.params, ...listen });
  const seeds = tasks.map((t) => t.seed);
  const listed = seeds.length <= 8 ? seeds.join(', ') : `${seeds[0]}, …, ${seeds.at(-1)}`;
  process.stderr.write(
    `serving ${policy.id} on ${tasks.length} ${config.env} task(s) (seeds ${listed}; budget ${budget}${revealBudget ? ', revealed' : ''})\n`,
  );
  const server = await startServer({ served, port: listen.port, host: listen.host }).catch(
    (e: NodeJS.ErrnoException) => {
      throw new InputError(
        '--port',
        flags.port,
        `cannot listen on ${listen.host}:${listen.port} (${e.code ?? e.message})`,
      );
    },
  );
  return { server, models: modelIds(policy), policy };
}

/** Prints where it listens, then serves until SIGINT or SIGTERM. */
async function untilStopped(server: RunningServer, asJson: boolean, models: string[]): Promise<void> {
  process.stderr.write(`listening on ${server.url}\n`);
  if (asJson) json({ url: server.url, port: server.port, models });
  await untilSignal(() => server.close());
}

/** `--latency 20ms` (or `1s`, or bare milliseconds): a delay in ms; bench queue reads its flag alike. */
export function latency(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(raw.trim());
  const ms = m === null ? Number.NaN : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  if (!(ms >= 0 && ms <= 600_000))
    throw new InputError('--latency', raw, 'expected a delay such as 20ms or 1s');
  return ms;
}

/** The key in the variable `flag` names; refused when it is unset or empty. */
export function keyFrom(name: string, flag = '--api-key-env'): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new InputError(flag, name, 'expected the name of an environment variable');
  const key = process.env[name];
  if (key === undefined || key === '')
    throw new InputError(flag, name, 'this environment variable is not set');
  return key;
}

/** `--max-body-mb N`: the largest request body the server reads, in MiB. */
export function maxBody(raw: string | undefined): number | undefined {
  return raw === undefined ? undefined : int('--max-body-mb', raw, 1, 4096) * 1024 * 1024;
}

/** Where a server's internal errors go: stderr, one line each (the client gets a bare 500). */
export const internalErrors = (command: string) => (e: Error) =>
  process.stderr.write(`turnwise ${command}: internal error: ${e.message}\n`);

export function registerServe(program: Command): void {
  envOptions(
    program
      .command('serve')
      .description(ABOUT.serve.description)
      .addHelpText(
        'after',
        `
The last user or tool message carries the observation: the env's text view as \`turnwise mcp\` gives
it (observe, or an action's result, verbatim or within other text; its "(N turns left)" line gives the
turns left), or the chat encoding of policies/chat.ts that --policy openai:URL#MODEL sends ("Turn t (N
turns left).", an optional "Last action: …" line, then "Observation:" and the view). Without a turn
header the turn is counted from the conversation, and the turns left are the last ones said less the
turns since. Models: the policy spec and its bare kind (oracle for oracle:eps=0.2; transformer for a
transformer checkpoint; gguf for a GGUF model). Random maps (--random) are served over the tasks of --tasks/--seed (or
--task-seeds), numbered as eval and rollout number theirs: the board in a message names its map.

A transformer (transformer:… or its checkpoint) or a GGUF model (gguf:PATH[,…], run by llama.cpp,
loaded before the server listens) answers with its own generation: the text as content, or a Hermes
<tool_call> block as tool_calls when the request offers the tool; per token its log-prob, top_logprobs,
bytes and id, the end token last (<|end|>, a GGUF model's end-of-generation token; not in the content;
the log-probs sum to the turn's logp in process); return_token_ids as vLLM; usage in model tokens.
temperature and top_p are honoured (absent: the policy's own); max_tokens is capped at its reply limit.

Tool envs (sql, code, tools, search, web) serve a scripted policy (oracle, oracle:eps=ε, random), a
transformer or a GGUF model to an agent that takes its tools from \`turnwise mcp\`: the first user message must be the
task's first observation as MCP observe returned it, the tool messages the MCP results verbatim. Each
request replays the conversation's tool calls on that task's episode and answers the policy's next call
as a tool call with its log-prob; a text model answers its generation (a tool call, or its text when it
is no call: a conversation that goes on after such a reply replays the text as that turn's invalid
action, as in process, answered by the user message after it). Serve the tasks the harness runs (--tasks/--seed as given to harness run, same --budget
and --reveal-budget).`,
      ),
  )
    .option('--env <id>', 'environment id', 'frozenlake')
    .requiredOption(
      '--policy <spec>',
      'the in-process policy to serve (random | oracle[:…] | tabular | checkpoint | transformer:… or its run | gguf:PATH)',
    )
    .option('--port <n>', 'port (0 = a free port)', '8000')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option(
      '--faults <spec>',
      'inject faults deterministically, e.g. 429=0.1,500=0.05,hang=0.01,malformed=0.02,seed=7',
    )
    .option('--latency <delay>', 'added before every answer, e.g. 20ms')
    .option(
      '--api-key-env <name>',
      'require the key in this environment variable on every route (else HTTP 401)',
    )
    .option('--max-body-mb <n>', 'the largest request body read, in MiB (else HTTP 413)', '32')
    .option('--json', 'print {"url": …} on stdout once listening')
    .option(
      '--tasks <n>',
      'tool envs and --random maps: the number of served tasks (task seed = --seed + index)',
    )
    .option('--seed <n>', 'tool envs and --random maps: first task seed (default 0)')
    .option('--task-seeds <list>', 'tool envs and --random maps: the served task seeds, e.g. 3,5,8')
    .option(
      '--budget <T>',
      "tool envs: the MCP episodes' budget, as given to harness run (default: the env limit)",
    )
    .option(
      '--reveal-budget',
      'tool envs: the MCP episodes reveal the turns left (as harness run --reveal-budget)',
    )
    .action(async (flags: ServeFlags) => {
      const config = envConfigFromFlags(flags.env, flags);
      const port = int('--port', flags.port, 0, 65535);
      const faults = flags.faults === undefined ? undefined : parseFaults(once(flags.faults));
      const latencyMs = flags.latency === undefined ? undefined : latency(flags.latency);
      const apiKey = flags.apiKeyEnv === undefined ? undefined : keyFrom(flags.apiKeyEnv);
      const edge = {
        apiKey,
        maxBodyBytes: maxBody(flags.maxBodyMb),
        onInternalError: internalErrors('serve'),
      };
      if (envs.spec({ ...config, seed: 0 }).tools !== undefined) {
        const { server, models, policy } = await serveTools(config, flags, {
          port,
          host: flags.host,
          faults,
          latencyMs,
          ...edge,
        });
        await untilStopped(server, flags.json === true, models);
        await closePolicy(policy);
        return;
      }
      // A random map shows in its board: the served tasks' maps (--tasks/--seed, as eval numbers them).
      const random = config.params.random === true;
      for (const [key, flag] of TOOL_FLAGS) {
        if (flags[key] === undefined) continue;
        const tasksFlag = key === 'tasks' || key === 'seed' || key === 'taskSeeds';
        if (!(random && tasksFlag))
          throw new InputError(
            flag,
            flags[key],
            tasksFlag
              ? `only for tool envs and --random maps; ${flags.env} is served from its text view of one fixed map`
              : `only for tool envs; ${flags.env} is served from its text view`,
          );
      }
      const env = random
        ? await Promise.all(servedTasks(config, flags).map((task) => envs.make(task)))
        : [await envs.make({ ...config, seed: 0 })];
      const policy = await servedPolicy(flags, env[0].spec);
      const server = await startServer({
        policy,
        env,
        faults,
        latencyMs,
        port,
        host: flags.host,
        envParams: config.params,
        ...edge,
      }).catch((e: NodeJS.ErrnoException) => {
        throw new InputError(
          '--port',
          flags.port,
          `cannot listen on ${flags.host}:${port} (${e.code ?? e.message})`,
        );
      });
      await untilStopped(server, flags.json === true, modelIds(policy));
      await closePolicy(policy);
      for (const e of env) await e.close?.();
    });
}

/** `--faults 429=0.5,429=0.1` says two things of one fault: refused, not the last silently kept. */
function once(raw: string): string {
  const keys = raw.split(',').map((part) => part.slice(0, Math.max(0, part.indexOf('='))).trim());
  const twice = keys.find((k, i) => k !== '' && keys.indexOf(k) !== i);
  if (twice !== undefined) throw new InputError('--faults', raw, `${twice} is given twice; give each once`);
  return raw;
}
