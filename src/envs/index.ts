// The registry of environment ids. A new env adds one entry here and a folder beside frozenlake/.
import { InputError } from '../core/errors.ts';
import type { Env, EnvConfig, EnvFactory, EnvSpec, MaybePromise, Task } from '../core/types.ts';
import {
  benchCode,
  codeParams,
  codeTaskSpec,
  describeCode,
  describeCodeText,
  makeCodeTaskEnv,
} from './code/index.ts';
import {
  frozenLakeParams,
  frozenLakeSpec,
  frozenLakeWorld,
  makeFrozenLake,
  transitionTable,
} from './frozenlake/index.ts';
import {
  describeOpenEnv,
  describeOpenEnvText,
  loadOpenEnv,
  makeOpenEnv,
  openEnvParams,
  openEnvTaskSpec,
  parseOpenEnvId,
} from './openenv/index.ts';
import {
  describeSearch,
  describeSearchText,
  makeSearchTaskEnv,
  searchParams,
  searchTaskSpec,
} from './search/index.ts';
import { describeSql, exportSqlDatabase, makeSqlEnv, sqlParams, sqlSpec } from './sql/index.ts';
import {
  describeTools,
  describeToolsText,
  makeToolsTaskEnv,
  toolsParams,
  toolsTaskSpec,
} from './tools/index.ts';
import { describeWeb, describeWebText, makeWebEnv, webEnvParams, webSpec } from './web/index.ts';

export interface EnvEntry {
  id: string;
  summary: string;
  /** Validates raw parameters and returns their canonical form (throws InputError). */
  params(raw: Record<string, unknown>): Record<string, unknown>;
  /** A fresh env instance for a task; cheap (shared immutable parts are cached). */
  make(task: Task): Env<unknown, unknown>;
  /** The spec of a task's env without building an instance. */
  spec(task: Task): EnvSpec;
  /** Plain data describing the task's env in full (FrozenLake: the map and Gymnasium's P table; a tool
   * env: the task, and its gold solution with `gold`). */
  describe(task: Task, options?: { gold?: boolean }): Record<string, unknown>;
  /** A tool env's description as lines of text (`turnwise env describe`); absent: the sql layout. */
  describeText?(description: Record<string, unknown>): string[];
  /** Writes the task's data to a file (sql: the SQLite database); returns the bytes written. */
  export?(task: Task, path: string): number;
  /** Env-specific throughput figures that `turnwise bench env` adds to its JSON (code: the sandbox's
   * test runs/s), measured on the task's env for about `steps` units of work. */
  bench?(task: Task, steps: number, seed: number): MaybePromise<Record<string, number>>;
}

const ENVS: Record<string, EnvEntry> = {
  frozenlake: {
    id: 'frozenlake',
    summary:
      'Gymnasium FrozenLake-v1 (built-in, custom or random maps; slippery or not) with an exact oracle',
    params: (raw) => ({ ...frozenLakeParams(raw) }),
    make: (task) => makeFrozenLake(task) as Env<unknown, unknown>,
    spec: (task) => frozenLakeSpec(task),
    describe: (task) => {
      const world = frozenLakeWorld(task);
      return { desc: [...world.desc], nS: world.nS, nA: world.nA, P: transitionTable(world.config) };
    },
  },
  sql: {
    id: 'sql',
    summary:
      'InterCode-SQL-like: questions about a generated SQLite database, answered with tool calls (level 1–3)',
    params: (raw) => ({ ...sqlParams(raw) }),
    make: (task) => makeSqlEnv(task) as unknown as Env<unknown, unknown>,
    spec: () => sqlSpec(),
    describe: (task, options) => describeSql(task, options?.gold === true),
    export: exportSqlDatabase,
  },
  tools: {
    id: 'tools',
    summary:
      'BFCL-multi-turn-like: multi-step requests over a simulated file system, bank and ticketing system, with state and response checkers (level 1–3)',
    params: (raw) => ({ ...toolsParams(raw) }),
    make: (task) => makeToolsTaskEnv(task) as unknown as Env<unknown, unknown>,
    spec: (task) => toolsTaskSpec(task),
    describe: (task, options) => describeTools(task, options?.gold === true),
    describeText: describeToolsText,
  },
  search: {
    id: 'search',
    summary:
      'ABSeeker/BrowseComp-like: multi-hop questions over a generated corpus with BM25 search, clue accounting per turn (level = hops 1–3)',
    params: (raw) => ({ ...searchParams(raw) }),
    make: (task) => makeSearchTaskEnv(task) as unknown as Env<unknown, unknown>,
    spec: (task) => searchTaskSpec(task),
    describe: (task, options) => describeSearch(task, options?.gold === true),
    describeText: describeSearchText,
  },
  code: {
    id: 'code',
    summary:
      'DeepCoder-MT-like: write a JavaScript function (string, array, arithmetic, parsing; level 1–3), run_tests then submit, in a QuickJS sandbox',
    params: (raw) => ({ ...codeParams(raw) }),
    make: (task) => makeCodeTaskEnv(task) as unknown as Env<unknown, unknown>,
    spec: (task) => codeTaskSpec(task),
    describe: (task, options) => describeCode(task, options?.gold === true),
    describeText: describeCodeText,
    bench: async (task, steps, seed) => {
      const r = await benchCode({ steps, seed, params: task.params });
      return { sandboxTestRunsPerSecond: r.testRunsPerSecond, sandboxLive: r.liveSandboxes };
    },
  },
  web: {
    id: 'web',
    summary:
      'WebArena/BrowserGym-like: a shop, a booking form and an admin table, pages as accessibility trees with element ids, goals checked on the app state (level 1–3, --variant, --browser)',
    params: (raw) => ({ ...webEnvParams(raw) }),
    make: (task) => makeWebEnv(task) as unknown as Env<unknown, unknown>,
    spec: () => webSpec(),
    describe: (task, options) => describeWeb(task, options?.gold === true),
    describeText: describeWebText,
  },
};

/** The envs of this process: what ENV_IDS lists, envs a trajectory file can be checked and rebuilt
 * against without a server. */
export const ENV_IDS: readonly string[] = Object.keys(ENVS);

/** `openenv`: an OpenEnv server's env (`--env openenv:URL[#name]`, envs/openenv/), read at start by
 * prepareEnv. Not in ENV_IDS: its spec needs the server. */
const OPENENV: EnvEntry = {
  id: 'openenv',
  summary: "any OpenEnv server's env over its HTTP and WebSocket protocol: --env openenv:URL[#name]",
  params: (raw) => ({ ...openEnvParams(raw) }),
  make: (task) => makeOpenEnv(task) as unknown as Env<unknown, unknown>,
  spec: openEnvTaskSpec,
  describe: describeOpenEnv,
  describeText: describeOpenEnvText,
};

export function envEntry(id: string, field = '--env'): EnvEntry {
  if (id === OPENENV.id) return OPENENV;
  const entry = Object.hasOwn(ENVS, id) ? ENVS[id] : undefined;
  if (entry === undefined)
    throw new InputError(field, id, `expected one of: ${ENV_IDS.join(', ')}, or openenv:URL[#name]`);
  return entry;
}

/** A validated env configuration (canonical params); `openenv:URL#name` gives {url, name} as params. */
export function envConfig(id: string, rawParams: Record<string, unknown>): EnvConfig {
  const remote = parseOpenEnvId(id);
  if (remote !== undefined) return { env: OPENENV.id, params: OPENENV.params({ ...rawParams, ...remote }) };
  if (id === OPENENV.id && rawParams.url === undefined)
    throw new InputError('--env', id, 'expected openenv:URL[#name], e.g. openenv:http://127.0.0.1:8000');
  const entry = envEntry(id);
  return { env: entry.id, params: entry.params(rawParams) };
}

/** What an env id needs before its spec can be read: an OpenEnv server is asked for its schema (refused
 * in one line, an InputError, when it does not answer as OpenEnv). Nothing for the built-in envs. */
export async function prepareEnv(id: string, rawParams: Record<string, unknown> = {}): Promise<void> {
  const remote = parseOpenEnvId(id);
  if (remote !== undefined) await loadOpenEnv({ ...rawParams, ...remote });
  else if (id === OPENENV.id) await loadOpenEnv(rawParams);
}

export function makeEnv(task: Task): Env<unknown, unknown> {
  return envEntry(task.env, 'task.env').make(task);
}

export function envSpec(task: Task): EnvSpec {
  return envEntry(task.env, 'task.env').spec(task);
}

/** The registry as an env factory: what the composition layers hand to rollout, train and eval.
 * `module` lets worker threads (ES) import it back as `envs`. */
export const envs = {
  make: makeEnv,
  spec: envSpec,
  configure: (c: EnvConfig) => envConfig(c.env, c.params),
  module: import.meta.url,
} satisfies EnvFactory;

export { makeTasks } from '../core/tasks.ts';

export function describeEnv(task: Task, options?: { gold?: boolean }): Record<string, unknown> {
  return envEntry(task.env, 'task.env').describe(task, options);
}
