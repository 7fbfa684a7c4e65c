// Any turnwise env over OpenEnv's protocol, as OpenEnv's reference server implements it
// (meta-pytorch/OpenEnv src/openenv/core/env_server/http_server.py, openenv-core 0.2.3 at commit 685de41,
// May 2026): the same routes, bodies, session handling and errors, so that OpenEnv's own clients
// (EnvClient over WebSocket, GenericEnvClient, anything built on them: TRL, SkyRL, ART) run its episodes.
//
//   GET  /health    {"status": "healthy"}
//   GET  /metadata  EnvironmentMetadata: name (the env id), description, version, …
//   GET  /schema    {"action", "observation", "state"}: JSON schemas (serve/openenv-models.ts)
//   GET  /state     the state of a fresh env: {"episode_id": null, "step_count": 0, "budget": T, …}
//   POST /reset     ResetRequest {seed, episode_id, env_seed} → {"observation", "reward", "done"}
//   POST /step      StepRequest {action, timeout_s, request_id} → {"observation", "reward", "done"}
//   POST /mcp       JSON-RPC 2.0: tools/list (tool envs)
//   WS   /ws        one session per connection: {"type": "reset"|"step"|"state"|"close"|"mcp", "data"}
//
// Sessions as the reference has them: the HTTP /reset and /step are stateless — each makes a fresh env,
// acts once and closes it (so /step steps an env never reset: frozenlake refuses that, a 500; the
// reference's own client never uses them) — and a WebSocket connection is a session with an env of its
// own, closed when the connection ends, up to maxSessions at once (the next is told CAPACITY_REACHED
// and closed). Messages of one session are answered in order; sessions run concurrently.
//
// turnwise's part: reset takes `seed`, the task seed (which map, which question), and `env_seed`, the
// env's random stream (slippery ice) — without it the stream `turnwise rollout --seed 0` gives sample 0
// of that task, so a client that sends only the seed plays that rollout's episode. The turn budget is
// enforced here as truncation: after `budget` steps without the task ending, the observation says
// truncated (done), and a further step is refused until the next reset, as is a step after the task
// ended. Errors are the reference's: HTTP 422 {"detail": [pydantic errors]} for a bad body, 404/405
// {"detail": …} for an unknown route or method, 500 "Internal Server Error" when the env raises; over
// the WebSocket {"type": "error", "data": {"message", "code"}} with the codes of types.py's WSErrorCode.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { Rng, STREAM } from '../core/rng.ts';
import type { Env, EnvConfig, EnvFactory, EnvSpec, StepInfo } from '../core/types.ts';
import { acceptUpgrade, refuseUpgrade, type WebSocketConnection } from '../core/websocket.ts';
import {
  type ActionModel,
  actionModel,
  decodeAction,
  listedTools,
  observationSchema,
  type PydanticError,
  RESET_REQUEST,
  STATE_SCHEMA,
  STEP_REQUEST,
  validate,
  WS_MESSAGES,
} from './openenv-models.ts';

export interface OpenEnvMetadata {
  name: string;
  description: string;
  version?: string | null;
  readme_content?: string | null;
  author?: string | null;
  documentation_url?: string | null;
}

export interface OpenEnvServeOptions {
  /** Makes the env of a task; the server closes every env it makes. */
  envs: EnvFactory;
  /** The env id and its canonical params; a reset's seed makes the task. */
  config: EnvConfig;
  /** The turn budget T: an episode not ended by the env after T steps is truncated. */
  budget: number;
  /** The task seed of a reset without one (and of the fresh envs of /state and /step). */
  seed: number;
  /** WebSocket sessions at once (the reference's max_concurrent_envs). */
  maxSessions: number;
  metadata: OpenEnvMetadata;
  port?: number;
  host?: string;
  /** The largest HTTP body or WebSocket message read, in bytes (default 16 MiB). */
  maxBodyBytes?: number;
  /** Receives what the env raised on a stateless HTTP route (the client gets a bare 500). */
  onInternalError?: (e: Error) => void;
}

export interface RunningOpenEnv {
  /** http://HOST:PORT — what an OpenEnv client takes as base_url. */
  url: string;
  port: number;
  /** WebSocket sessions open now. */
  sessions(): number;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 16 * 1024 * 1024;

/** The env stream of sample 0 of a task in a run of seed 0 (rollout/episode.ts's episodeSeeds). */
export const defaultEnvSeed = (taskSeed: number): number => Rng.derive(0, taskSeed, 0, STREAM.env).uint32();

type Served = { observation: Record<string, unknown>; reward: number | null; done: boolean };

/** What one env in the server plays: episodes of one task at a time, the budget counted from reset. */
class ServedEpisode {
  private readonly o: OpenEnvServeOptions;
  private readonly spec: EnvSpec;
  private env: Env<unknown, unknown> | undefined;
  private taskSeed: number | null = null;
  private envSeed: number | null = null;
  private episodeId: string | null = null;
  private steps = 0;
  private over: 'terminated' | 'truncated' | undefined;

  constructor(o: OpenEnvServeOptions, spec: EnvSpec) {
    this.o = o;
    this.spec = spec;
  }

  /** The env of task `seed`: the current one, or a new one (the old closed). */
  private async envFor(seed: number): Promise<Env<unknown, unknown>> {
    if (this.env !== undefined && this.taskSeed === seed) return this.env;
    await this.close();
    this.env = await this.o.envs.make({ ...this.o.config, seed });
    this.taskSeed = seed;
    return this.env;
  }

  async reset(data: Record<string, unknown>): Promise<Served> {
    const seed = seedOf(data.seed, 'seed') ?? this.o.seed;
    const envSeed = seedOf(data.env_seed, 'env_seed') ?? defaultEnvSeed(seed);
    const episodeId = data.episode_id;
    if (episodeId !== undefined && episodeId !== null && typeof episodeId !== 'string')
      throw new Error(`episode_id: expected a string, got ${JSON.stringify(episodeId)}`);
    const env = await this.envFor(seed);
    const observation = await env.reset(envSeed);
    this.envSeed = envSeed;
    this.episodeId = episodeId ?? null;
    this.steps = 0;
    this.over = undefined;
    return this.served(env, observation, null, {}, false, false);
  }

  async step(action: unknown): Promise<Served> {
    if (this.over !== undefined)
      throw new Error(
        this.over === 'truncated'
          ? `the episode is over: truncated at the turn budget of ${this.o.budget}; send a reset`
          : 'the episode is over: the task ended; send a reset',
      );
    const env = await this.envFor(this.taskSeed ?? this.o.seed);
    const r = await env.step(action);
    this.steps++;
    const truncated = !r.terminated && this.steps >= this.o.budget;
    if (r.terminated) this.over = 'terminated';
    else if (truncated) this.over = 'truncated';
    return this.served(env, r.observation, r.reward, r.info, r.terminated, truncated);
  }

  private served(
    env: Env<unknown, unknown>,
    observation: unknown,
    reward: number | null,
    info: StepInfo,
    terminated: boolean,
    truncated: boolean,
  ): Served {
    return {
      observation: {
        observation,
        text: env.text === undefined ? null : env.text(observation),
        info,
        terminated,
        truncated,
        turns_left: Math.max(0, this.o.budget - this.steps),
      },
      reward,
      done: terminated || truncated,
    };
  }

  state(): Record<string, unknown> {
    return {
      episode_id: this.episodeId,
      step_count: this.steps,
      env: this.spec.id,
      seed: this.taskSeed,
      env_seed: this.envSeed,
      budget: this.o.budget,
      done: this.over !== undefined,
    };
  }

  async close(): Promise<void> {
    const env = this.env;
    this.env = undefined;
    this.taskSeed = null;
    await env?.close?.();
  }
}

/** A reset's seed: absent or null, or an integer ≥ 0 that a double holds exactly. */
function seedOf(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new Error(`${name}: expected an integer from 0 to 2^53−1, got ${JSON.stringify(v)}`);
  return v;
}

/** How Python's str() writes a JSON value in the reference's messages (`Unknown message type: None`). */
function pyStr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Python's type name of a JSON value (the reference's `'list' object has no attribute 'get'`). */
function pyType(v: unknown): string {
  if (v === null) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return 'dict';
}

const isDict = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------------
// HTTP.

class HttpError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super(`HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    req.on('data', (chunk: Buffer) => {
      n += chunk.length;
      if (n > max) {
        reject(new HttpError(413, { detail: `the request body is larger than ${max} bytes` }));
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** FastAPI's reading of a JSON body: absent is `undefined`, malformed a 422 json_invalid. */
function parseBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError(422, {
      detail: [
        {
          type: 'json_invalid',
          loc: ['body', 0],
          msg: 'JSON decode error',
          input: {},
          ctx: { error: (e as Error).message },
        },
      ],
    });
  }
}

/** A request body checked by a model as FastAPI checks it: errors at ["body", …], without docs links. */
function requestModel(
  model: typeof RESET_REQUEST,
  body: unknown,
  required: boolean,
): Record<string, unknown> {
  if (body === undefined) {
    if (required)
      throw new HttpError(422, {
        detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }],
      });
    return validate(model, {}, ['body'], false).value;
  }
  if (!isDict(body))
    throw new HttpError(422, {
      detail: [
        {
          type: 'model_attributes_type',
          loc: ['body'],
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input: body,
        },
      ],
    });
  const r = validate(model, body, ['body'], false);
  if (r.errors.length > 0) throw new HttpError(422, { detail: r.errors });
  return r.value;
}

const ROUTES: Record<string, string> = {
  '/health': 'GET',
  '/metadata': 'GET',
  '/schema': 'GET',
  '/state': 'GET',
  '/reset': 'POST',
  '/step': 'POST',
  '/mcp': 'POST',
};

/** JSON-RPC 2.0 (mcp_types.py): a response with either result or error, and the request's id. */
function rpc(
  id: unknown,
  result: unknown,
  error?: { code: number; message: string },
): Record<string, unknown> {
  return error === undefined
    ? { jsonrpc: '2.0', id, result }
    : { jsonrpc: '2.0', id, error: { ...error, data: null } };
}

const RPC = { parse: -32700, invalidRequest: -32600, methodNotFound: -32601, internal: -32603 } as const;

/** tools/list as the reference answers it for an env whose tools come from an MCP server; tools/call is
 * not served (call tools with step actions, which count as turns). */
function mcpAnswer(spec: EnvSpec, request: unknown): Record<string, unknown> {
  const id =
    isDict(request) && (typeof request.id === 'string' || typeof request.id === 'number') ? request.id : null;
  if (
    !isDict(request) ||
    request.jsonrpc !== '2.0' ||
    typeof request.method !== 'string' ||
    (request.params !== undefined && !isDict(request.params))
  )
    return rpc(id, undefined, {
      code: RPC.invalidRequest,
      message: 'Invalid request: expected a JSON-RPC 2.0 request',
    });
  if (request.method === 'tools/list') {
    if (spec.tools === undefined)
      return rpc(id, undefined, { code: RPC.internal, message: 'Environment does not support MCP' });
    return rpc(id, {
      tools: spec.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
    });
  }
  return rpc(id, undefined, { code: RPC.methodNotFound, message: `Method not found: ${request.method}` });
}

/** Starts the server on host:port (0 = a free port); resolves once it listens. */
export function startOpenEnvServer(o: OpenEnvServeOptions): Promise<RunningOpenEnv> {
  const spec = o.envs.spec({ ...o.config, seed: o.seed });
  const actions = actionModel(spec);
  const schema = { action: actions.model.schema, observation: observationSchema(spec), state: STATE_SCHEMA };
  const metadata = {
    name: o.metadata.name,
    description: o.metadata.description,
    readme_content: o.metadata.readme_content ?? null,
    version: o.metadata.version ?? null,
    author: o.metadata.author ?? null,
    documentation_url: o.metadata.documentation_url ?? null,
  };
  const maxBody = o.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const sessions = new Set<WebSocketSession>();

  /** A fresh env for one stateless call, closed after it. */
  const fresh = async <T>(act: (e: ServedEpisode) => Promise<T>): Promise<T> => {
    const e = new ServedEpisode(o, spec);
    try {
      return await act(e);
    } finally {
      await e.close();
    }
  };

  const routes = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const allowed = ROUTES[path];
    if (allowed === undefined) throw new HttpError(404, { detail: 'Not Found' });
    if (req.method !== allowed) return send(res, 405, { detail: 'Method Not Allowed' }, { allow: allowed });
    if (path === '/health') return send(res, 200, { status: 'healthy' });
    if (path === '/metadata') return send(res, 200, metadata);
    if (path === '/schema') return send(res, 200, schema);
    if (path === '/state') return send(res, 200, await fresh(async (e) => e.state()));
    const body = parseBody(await readBody(req, maxBody));
    if (path === '/mcp') return send(res, 200, mcpAnswer(spec, body));
    if (path === '/reset') {
      const request = requestModel(RESET_REQUEST, body, false);
      return send(res, 200, await fresh((e) => e.reset(request)));
    }
    const request = requestModel(STEP_REQUEST, body, true);
    const decoded = decodeAction(actions, request.action as Record<string, unknown>);
    if ('errors' in decoded) throw new HttpError(422, { detail: decoded.errors });
    if ('listTools' in decoded)
      return send(res, 200, {
        observation: { tools: listedTools(actions.listTools ?? []) },
        reward: null,
        done: false,
      });
    return send(res, 200, await fresh((e) => e.step(decoded.action)));
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    routes(req, res, path).catch((e: unknown) => {
      if (res.headersSent) return res.destroy();
      if (e instanceof HttpError) return send(res, e.status, e.body);
      o.onInternalError?.(e instanceof Error ? e : new Error(String(e)));
      const text = 'Internal Server Error';
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', 'content-length': text.length });
      res.end(text);
    });
  });

  // Upgraded sockets are no longer the HTTP server's to close: kept here for close().
  const sockets = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    // Starlette refuses a WebSocket on a route it does not have with a 403 during the handshake.
    if (path !== '/ws') return refuseUpgrade(socket, { status: 403, message: 'Forbidden' });
    const ws = acceptUpgrade(req, socket, head, { maxMessageBytes: maxBody });
    if (ws === undefined) return;
    if (sessions.size >= o.maxSessions) {
      ws.send(
        JSON.stringify({
          type: 'error',
          data: {
            message: `Server at capacity: ${sessions.size}/${o.maxSessions} sessions active. Cannot accept new connections.`,
            code: 'CAPACITY_REACHED',
            active_sessions: sessions.size,
            max_sessions: o.maxSessions,
          },
        }),
      );
      ws.close();
      return;
    }
    const session = new WebSocketSession(ws, new ServedEpisode(o, spec), actions, spec, () =>
      sessions.delete(session),
    );
    sessions.add(session);
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => {
      const info = server.address() as AddressInfo;
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        sessions: () => sessions.size,
        close: async () => {
          // Each session's close frame is sent and its env closed; a client that does not answer the
          // close is not waited for.
          await Promise.all([...sessions].map((s) => s.end()));
          for (const socket of sockets) socket.destroy();
          await new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          });
        },
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------------
// WebSocket sessions.

/** One connection's session: its messages answered in order, its env closed when it ends. */
class WebSocketSession {
  private readonly ws: WebSocketConnection;
  private readonly episode: ServedEpisode;
  private readonly actions: ActionModel;
  private readonly spec: EnvSpec;
  private chain: Promise<void> = Promise.resolve();
  private ended: Promise<void> | undefined;
  private readonly onEnd: () => void;

  constructor(
    ws: WebSocketConnection,
    episode: ServedEpisode,
    actions: ActionModel,
    spec: EnvSpec,
    onEnd: () => void,
  ) {
    this.ws = ws;
    this.episode = episode;
    this.actions = actions;
    this.spec = spec;
    this.onEnd = onEnd;
    ws.on('message', (data: string | Buffer, binary: boolean) => {
      this.chain = this.chain.then(() => this.handle(data, binary));
    });
    ws.on('close', () => void this.end());
  }

  /** Closes the connection (if open) and, once the messages in hand are answered, the env. */
  end(): Promise<void> {
    this.ended ??= this.chain.then(async () => {
      this.ws.close();
      this.onEnd();
      await this.episode.close();
    });
    return this.ended;
  }

  private reply(body: unknown): void {
    if (this.ws.open) this.ws.send(JSON.stringify(body));
  }

  private error(code: string, message: string, extra: Record<string, unknown> = {}): void {
    this.reply({ type: 'error', data: { message, code, ...extra } });
  }

  private async handle(data: string | Buffer, binary: boolean): Promise<void> {
    if (this.ended !== undefined) return;
    if (binary) {
      // receive_text() fails on a binary message; the reference answers SESSION_ERROR and closes.
      this.error('SESSION_ERROR', "'text'");
      void this.end();
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(data as string);
    } catch (e) {
      this.error('INVALID_JSON', `Invalid JSON: ${(e as Error).message}`);
      return;
    }
    if (!isDict(message)) {
      this.error('SESSION_ERROR', `'${pyType(message)}' object has no attribute 'get'`);
      void this.end();
      return;
    }
    const type = message.type ?? '';
    const model =
      typeof type === 'string' && Object.hasOwn(WS_MESSAGES, type) ? WS_MESSAGES[type] : undefined;
    if (model === undefined) {
      this.error('UNKNOWN_TYPE', `Unknown message type: ${pyStr(type)}`);
      return;
    }
    const checked = validate(model, message);
    if (checked.errors.length > 0) return this.invalid(checked.errors);
    const body = checked.value.data as Record<string, unknown>;
    try {
      if (type === 'reset') this.reply({ type: 'observation', data: await this.episode.reset(body) });
      else if (type === 'step') {
        const decoded = decodeAction(this.actions, body);
        if ('errors' in decoded) return this.invalid(decoded.errors);
        if ('listTools' in decoded)
          this.reply({
            type: 'observation',
            data: {
              observation: { tools: listedTools(this.actions.listTools ?? []) },
              reward: null,
              done: false,
            },
          });
        else this.reply({ type: 'observation', data: await this.episode.step(decoded.action) });
      } else if (type === 'state') this.reply({ type: 'state', data: this.episode.state() });
      else if (type === 'mcp') this.reply({ type: 'mcp', data: mcpAnswer(this.spec, body) });
      else void this.end(); // close
    } catch (e) {
      this.error('EXECUTION_ERROR', e instanceof Error ? e.message : String(e));
    }
  }

  private invalid(errors: PydanticError[]): void {
    this.error('VALIDATION_ERROR', 'Invalid message', { errors });
  }
}
