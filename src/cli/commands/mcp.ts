// turnwise mcp: one episode of an env as an MCP server on stdio (serve/mcp.ts, harness/mcp-episode.ts). stdout carries only the
// protocol; logs go to stderr. The trajectory goes to --store when the episode ends or the client
// disconnects: FILE.jsonl gets exactly one line appended, FILE.sqlite (or .db) a run of one trajectory.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Task, Trajectory } from '../../core/types.ts';
import { envConfig, envs } from '../../envs/index.ts';
import { mcpEpisode } from '../../harness/mcp-episode.ts';
import { mcpServer, mcpTools } from '../../serve/mcp.ts';
import { JsonlWriter } from '../../store/jsonl.ts';
import { checkOutput } from '../../store/paths.ts';
import { RunStore } from '../../store/sqlite.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, seed } from '../options.ts';
import { ABOUT } from './about.ts';

interface McpFlags extends EnvFlags {
  env: string;
  taskSeed: string;
  seed?: string;
  sample?: string;
  budget?: string;
  revealBudget?: boolean;
  store?: string;
  run?: string;
  rows?: string;
  reward?: string;
  examples?: string;
  misuse?: string;
}

/** The tool envs' own params beyond envOptions' flags: `harness run` passes every param of its tasks
 * (cli/commands/harness.ts paramFlags), these included, and the episode must be that very task. */
function toolParams(flags: McpFlags): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  if (flags.rows !== undefined) p.rows = int('--rows', flags.rows, 1, 1000);
  if (flags.reward !== undefined) p.reward = flags.reward;
  if (flags.examples !== undefined) p.examples = int('--examples', flags.examples, 1, 6);
  if (flags.misuse !== undefined) p.misuse = int('--misuse', flags.misuse, 1, 100);
  return p;
}

type Sink = (t: Trajectory) => void;

/** Where the trajectory goes, checked before the server starts. */
function storeSink(path: string, runId: string, config: Record<string, unknown>): Sink {
  checkOutput(path, '--store', 'file');
  if (path.endsWith('.jsonl')) {
    return (t) => {
      const w = new JsonlWriter(path, { append: true });
      w.write(t);
      w.close();
    };
  }
  if (path.endsWith('.sqlite') || path.endsWith('.db')) {
    const probe = new RunStore(path, '--store');
    const taken = probe.run(runId) !== undefined;
    probe.close();
    if (taken) throw new InputError('--run', runId, 'a run with this id already exists in the store');
    return (t) => {
      const store = new RunStore(path, '--store');
      store.createRun(runId, 'mcp', config);
      store.addTrajectories(runId, 0, [t]);
      store.setStatus(runId, 'done');
      store.close();
    };
  }
  throw new InputError(
    '--store',
    path,
    'expected a FILE.jsonl (one line appended) or FILE.sqlite (a run store)',
  );
}

export function registerMcp(program: Command): void {
  envOptions(
    program
      .command('mcp')
      .description(ABOUT.mcp.description)
      .addHelpText(
        'after',
        `
Each action tool call is one turn; its result is the next observation's text with structuredContent
{observation, reward, done, success, failure, turns, return, info}. observe is read-only. After the
episode ended, action calls are tool errors; after the budget, "turn budget exhausted". Nothing but the
protocol is written on stdout. The episode seeds are those of sample K of the task in \`rollout --seed S
--samples …\`, S the --seed (default: the task seed) and K the --sample (default 0).`,
      ),
  )
    .requiredOption('--env <id>', 'environment id')
    .requiredOption('--task-seed <n>', 'task seed')
    .option('--seed <n>', 'run seed of the episode seeds (default: the task seed)')
    .option('--sample <k>', 'sample index of the episode seeds (default 0)')
    .option('--budget <T>', 'turn budget T (default: the registered episode limit)')
    .option('--reveal-budget', 'tell the agent the turns left in every result')
    .option('--store <file>', 'FILE.jsonl: append the trajectory as one line; FILE.sqlite: a run store')
    .option('--run <id>', 'run id in a SQLite store (default: mcp-<time>)')
    .option('--rows <n>', 'sql: result rows a tool result shows (default 20)')
    .option('--reward <mode>', 'sql: intercode | exact; code: binary | fraction')
    .option('--examples <n>', 'code: visible examples (default 3)')
    .option('--misuse <n>', 'tools, search: malformed calls that end the episode (default 3)')
    .action(async (flags: McpFlags) => {
      const base = envConfigFromFlags(flags.env, flags);
      const extra = toolParams(flags);
      const config =
        Object.keys(extra).length === 0 ? base : envConfig(flags.env, { ...base.params, ...extra });
      const task: Task = { ...config, seed: int('--task-seed', flags.taskSeed, 0, 2 ** 53 - 1) };
      const runSeed = flags.seed === undefined ? task.seed : seed(flags.seed);
      const sample = flags.sample === undefined ? 0 : int('--sample', flags.sample, 0, 1_000_000);
      const spec = envs.spec(task);
      const budget =
        flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
      const revealBudget = flags.revealBudget === true;
      const runId = flags.run ?? `mcp-${new Date().toISOString()}`;
      const sink =
        flags.store === undefined
          ? undefined
          : storeSink(flags.store, runId, {
              ...config,
              task: task.seed,
              seed: runSeed,
              budget,
              revealBudget,
            });
      const env = await envs.make(task);
      try {
        mcpTools(env);
      } catch (e) {
        await env.close?.();
        throw new InputError('--env', flags.env, (e as Error).message);
      }
      const log = (line: string) => process.stderr.write(`turnwise mcp: ${line}\n`);
      const episode = mcpEpisode(env, task, {
        runSeed,
        sample,
        budget,
        revealBudget,
        onEnd: (t) => {
          if (sink !== undefined) {
            sink(t);
            log(`trajectory ${t.id} written to ${flags.store}`);
          }
        },
        log,
      });
      const server = mcpServer(episode);
      const transport = new StdioServerTransport();
      // The stdio transport does not notice the end of stdin: the client closing its side (or dying)
      // is the disconnect that truncates an unfinished episode.
      const closed = new Promise<void>((resolve) => {
        process.stdin.once('end', resolve);
        process.stdin.once('close', resolve);
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
        transport.onclose = () => resolve();
      });
      await server.connect(transport);
      log(`serving ${task.env} task ${task.seed} (budget ${budget}) on stdio`);
      await closed;
      const t = await episode.finish();
      await server.close().catch(() => {});
      log(
        `closed: ${t.outcome.success ? 'success' : `failure ${t.outcome.failure}`} in ${t.outcome.turns} turn(s)`,
      );
    });
}
