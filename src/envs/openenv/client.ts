// Reading an OpenEnv server at start: GET /health, /metadata, /schema and /state, and for a tool env the
// MCP tools/list (POST /mcp) — the routes of the reference server (http_server.py). A server that does not
// answer, or answers as something else than OpenEnv, is refused with one line naming `--env`; what it
// says is kept per URL for the process (the env factory's spec() is synchronous and reads it from here).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { InputError } from '../../core/errors.ts';
import type { ToolSchema } from '../../core/types.ts';
import { type ActionShape, actionShape, observationShape } from './schema.ts';
import { CONNECT_TIMEOUT_MS } from './session.ts';

/** What turnwise knows of an OpenEnv server. */
export interface OpenEnvDescription {
  url: string;
  /** /metadata's name and description. */
  name: string;
  description: string;
  action: ActionShape;
  /** The observation has turnwise's shape (a served turnwise env): its `observation` field is the env's. */
  turnwise: boolean;
  /** Size of a finite observation space, when the schema bounds it. */
  observations?: number;
  /** The server's turn budget, when its /state says it (a served turnwise env). */
  budget?: number;
  /** A tool env's tools (tools/list). */
  tools?: readonly ToolSchema[];
  /** The raw schemas, for `turnwise env describe`. */
  schema: { action: unknown; observation: unknown; state: unknown };
}

const DESCRIPTIONS = new Map<string, OpenEnvDescription>();

/** The description read earlier in this process, if any. */
export const describedAt = (url: string): OpenEnvDescription | undefined => DESCRIPTIONS.get(url);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `--env openenv:URL#name` refused: the value as written, and why. */
const refuse = (spec: string, why: string) => new InputError('--env', spec, why);

/** One HTTP exchange with node:http (not fetch: fetch refuses some ports outright, 9 and 6000 among them). */
function exchange(url: string, body?: string): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {
        method: body === undefined ? 'GET' : 'POST',
        headers:
          body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: CONNECT_TIMEOUT_MS,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function json(url: string, path: string, spec: string, body?: unknown): Promise<unknown> {
  let res: { status: number; text: string };
  try {
    res = await exchange(`${url}${path}`, body === undefined ? undefined : JSON.stringify(body));
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw refuse(spec, `expected an OpenEnv server; ${url} does not answer (${why})`);
  }
  if (res.status < 200 || res.status >= 300)
    throw refuse(
      spec,
      `expected an OpenEnv server; ${body === undefined ? 'GET' : 'POST'} ${path} answered HTTP ${res.status}`,
    );
  try {
    return JSON.parse(res.text);
  } catch {
    throw refuse(spec, `expected an OpenEnv server; ${path} answered something else than JSON`);
  }
}

/**
 * Reads the server at `url` (once per process) and checks it is OpenEnv: /health says a status,
 * /schema has action, observation and state schemas, /metadata a name (equal to `name` when given).
 */
export async function describeServer(
  url: string,
  name: string | undefined,
  spec: string,
): Promise<OpenEnvDescription> {
  const known = DESCRIPTIONS.get(url);
  if (known !== undefined) {
    checkName(known, name, spec);
    return known;
  }
  const health = await json(url, '/health', spec);
  if (!isObject(health) || typeof health.status !== 'string')
    throw refuse(spec, 'expected an OpenEnv server; GET /health did not answer {"status": …}');
  const schema = await json(url, '/schema', spec);
  if (
    !isObject(schema) ||
    !isObject(schema.action) ||
    !isObject(schema.observation) ||
    !isObject(schema.state)
  )
    throw refuse(
      spec,
      'expected an OpenEnv server; GET /schema did not answer {"action", "observation", "state"}',
    );
  const metadata = await json(url, '/metadata', spec);
  if (!isObject(metadata) || typeof metadata.name !== 'string')
    throw refuse(spec, 'expected an OpenEnv server; GET /metadata did not answer {"name": …}');
  const description = typeof metadata.description === 'string' ? metadata.description : metadata.name;
  const state = await json(url, '/state', spec).catch(() => ({}));
  const action = actionShape(schema.action, description);
  const obs = observationShape(schema.observation);
  const d: OpenEnvDescription = {
    url,
    name: metadata.name,
    description,
    action,
    turnwise: obs.turnwise,
    schema: { action: schema.action, observation: schema.observation, state: schema.state },
  };
  if (obs.observations !== undefined) d.observations = obs.observations;
  if (isObject(state) && Number.isSafeInteger(state.budget) && (state.budget as number) > 0)
    d.budget = state.budget as number;
  if (action.kind === 'tools') d.tools = await listTools(url, spec);
  checkName(d, name, spec);
  DESCRIPTIONS.set(url, d);
  return d;
}

function checkName(d: OpenEnvDescription, name: string | undefined, spec: string): void {
  if (name !== undefined && d.name !== name)
    throw refuse(
      spec,
      `the server at ${d.url} serves ${JSON.stringify(d.name)}, not ${JSON.stringify(name)}`,
    );
}

/** MCP tools/list over POST /mcp: the tools of a CallToolAction env, as {name, description, parameters}. */
async function listTools(url: string, spec: string): Promise<ToolSchema[]> {
  const r = await json(url, '/mcp', spec, { jsonrpc: '2.0', method: 'tools/list', params: {}, id: 1 });
  const tools = isObject(r) && isObject(r.result) ? r.result.tools : undefined;
  if (!Array.isArray(tools)) {
    const error = isObject(r) && isObject(r.error) ? `: ${String(r.error.message)}` : '';
    throw refuse(spec, `its actions are tool calls, but POST /mcp tools/list gave no tools${error}`);
  }
  return tools.filter(isObject).map((t) => ({
    name: String(t.name),
    description: typeof t.description === 'string' ? t.description : '',
    parameters: (isObject(t.inputSchema)
      ? t.inputSchema
      : isObject(t.input_schema)
        ? t.input_schema
        : {}) as Record<string, unknown>,
  }));
}
