// `--env openenv:URL[#name]`: any OpenEnv server as a turnwise env. Its params are {url, name?, success?}:
// the server's base URL, the env name its /metadata must give (a guard against the wrong server), and
// the least final reward a done episode counts as a success on a server that does not say success itself
// (default 1). The server is read once, at start (loadOpenEnv, which the CLI awaits before a command
// runs); spec() reads that description, make() opens a session per env instance (env.ts).
import { z } from 'zod';
import { InputError } from '../../core/errors.ts';
import type { EnvSpec, Task } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import { describedAt, describeServer, type OpenEnvDescription } from './client.ts';
import { OpenEnvEnv, openEnvSpec } from './env.ts';

export { OpenEnvEnv, openEnvSpec } from './env.ts';

export const OPENENV_PREFIX = 'openenv:';

const paramsSchema = z
  .object({
    url: z
      .string()
      .regex(
        /^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/,
        'expected an http:// or https:// URL without query or fragment',
      ),
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'expected a name of A-Z a-z 0-9 . _ -')
      .optional(),
    success: z.number().finite().optional(),
  })
  .strict();

export type OpenEnvParams = z.infer<typeof paramsSchema>;

/** Canonical params: the URL without a trailing slash. */
export function openEnvParams(raw: Record<string, unknown>): OpenEnvParams {
  const p = fromZod(paramsSchema, raw, 'params');
  return { ...p, url: p.url.replace(/\/+$/, '') };
}

/** `openenv:URL#name` → {url, name}; undefined when the id is not an openenv one. */
export function parseOpenEnvId(id: string): { url: string; name?: string } | undefined {
  if (!id.startsWith(OPENENV_PREFIX)) return undefined;
  const rest = id.slice(OPENENV_PREFIX.length);
  const hash = rest.indexOf('#');
  return hash < 0 ? { url: rest } : { url: rest.slice(0, hash), name: rest.slice(hash + 1) };
}

/** How a task's params read on the command line: `openenv:URL#name`. */
const written = (p: OpenEnvParams) => `${OPENENV_PREFIX}${p.url}${p.name === undefined ? '' : `#${p.name}`}`;

/** Reads and checks the server (once per process); refuses with an InputError naming --env. */
export async function loadOpenEnv(raw: Record<string, unknown>): Promise<OpenEnvDescription> {
  let p: OpenEnvParams;
  try {
    p = openEnvParams(raw);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    const spec = written(raw as OpenEnvParams);
    if (e.field === 'params.url')
      throw new InputError(
        '--env',
        spec,
        'expected openenv:URL[#name], URL an http:// or https:// address without query',
      );
    if (e.field === 'params.name')
      throw new InputError('--env', spec, 'expected openenv:URL[#name], name of A-Z a-z 0-9 . _ -');
    throw e;
  }
  return describeServer(p.url, p.name, written(p));
}

function described(task: Task): { d: OpenEnvDescription; p: OpenEnvParams } {
  const p = openEnvParams(task.params);
  const d = describedAt(p.url);
  if (d === undefined)
    throw new InputError(
      'task.env',
      written(p),
      'an OpenEnv server is read at start: give it as --env openenv:URL on the command line',
    );
  return { d, p };
}

export function openEnvTaskSpec(task: Task): EnvSpec {
  return openEnvSpec(described(task).d);
}

export function makeOpenEnv(task: Task): OpenEnvEnv {
  const { d, p } = described(task);
  return new OpenEnvEnv(d, task, p.success ?? 1);
}

/** What `turnwise env describe` shows: the server's name, what turnwise reads of it, and its schemas. */
export function describeOpenEnv(task: Task): Record<string, unknown> {
  const { d } = described(task);
  const { schema, ...rest } = d;
  return { ...rest, spec: openEnvSpec(d), schema };
}

/** `turnwise env describe openenv:URL` as lines: the server, its actions, observations and budget. */
export function describeOpenEnvText(raw: Record<string, unknown>): string[] {
  const d = raw as unknown as OpenEnvDescription;
  const a = d.action;
  const lines = [`OpenEnv server ${d.url}: ${d.name} — ${d.description}`];
  if (a.kind === 'discrete')
    lines.push(
      `actions: ${a.values.length} discrete, sent as {"${a.field}": ${a.values.map((v) => JSON.stringify(v)).join(' | ')}}`,
    );
  else if (a.kind === 'tools')
    lines.push(
      `actions: tool calls, sent as CallToolAction {"tool_name", "arguments"}; ${d.tools?.length ?? 0} tools`,
    );
  else lines.push(`actions: the fields of ${a.tool.name}, called as one tool`);
  lines.push(
    d.turnwise
      ? `observations: a served turnwise env's own${d.observations === undefined ? '' : ` (${d.observations} states)`}, with its text view and info`
      : 'observations: the observation dict as sent; done = the task ended, success = a final reward ≥ the success threshold',
  );
  if (d.budget !== undefined) lines.push(`budget: ${d.budget} turns (the server truncates there)`);
  return lines;
}
