// `turnwise mcp`: one episode of an env served as an MCP server (Model Context Protocol, stdio), so that
// any MCP-capable agent harness can be evaluated on a turnwise task.
//
// The env's tools are MCP tools with the same JSON schemas as `EnvSpec.tools` (a discrete env with a
// chat encoding — FrozenLake — gets the one tool of the `openai:` policy's tools mode,
// `move(direction: Left|Down|Right|Up)`, from policies/chat.ts). A call is one turn: its result is the
// next observation's text, with `structuredContent` {observation, reward, done, success, failure, …}
// beside it. `observe` is read-only and returns the current observation (the first one before any
// action) without taking a turn.
//
// The episode is the rollout's own state machine (rollout/episode.ts's `Episode`, driven here one
// action at a time), so that the trajectory an MCP session produces is byte for byte the one an
// in-process rollout with the same actions produces (`rollout --seed N --tasks 1 --policy replay:FILE`),
// id and policy name aside. The episode seeds are the rollout's for (run seed, task seed, sample 0).
//
// When the episode ends (the env terminates it, or the budget is spent: truncated, failure `budget`)
// the result says so; later action calls are tool errors (isError) — "turn budget exhausted" after a
// truncation, "the episode is over" after a termination. `finish()` (the client disconnected) ends an
// unfinished episode as truncated. `onEnd` receives the trajectory exactly once.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type {
  Action,
  ChatSpec,
  Env,
  EnvSpec,
  FailureKind,
  Policy,
  ToolSchema,
  Trajectory,
  Turn,
  TurnContext,
} from '../core/types.ts';
import { chatTool, INVALID_ACTION } from '../policies/chat.ts';
import { parseGeneration } from '../policies/transformer-prompt.ts';

/** What this file needs of rollout/episode.ts's `Episode` (serve/ may not import rollout/: the
 * composition layer hands the machine in). */
export interface EpisodeMachine {
  start(): unknown;
  next(value: unknown): unknown;
  fail(e: unknown): unknown;
  result(): Trajectory;
}

export interface McpEpisodeOptions {
  env: Env<unknown, unknown>;
  budget: number;
  /** Tell the agent the turns left (in the text and `structuredContent.turnsLeft`); the machine must
   * record the same as the trajectory's revealBudget. */
  revealBudget?: boolean;
  /** The rollout's episode machine for this env and policy (rollout/episode.ts `createEpisode` with
   * the episode's id, task, budget and seeds), and the value its `next` returns when the episode is
   * over (`DONE`). */
  machine(env: Env<unknown, unknown>, policy: Policy<unknown, unknown>): EpisodeMachine;
  done: symbol;
  /** Receives the trajectory once, when the episode ends or `finish()` truncates it. */
  onEnd?: (t: Trajectory) => void | Promise<void>;
  /** Progress lines (stderr in the CLI; never stdout, which carries the protocol). */
  log?: (line: string) => void;
}

/** An MCP tool declaration. */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** The status part of every result (a type, not an interface: it is the result's structuredContent, a
 * plain record). */
export type McpStatus = {
  /** The observation as plain JSON (the env's own; FrozenLake: the cell index). */
  observation: unknown;
  /** The reward of the turn just taken (0 for observe). */
  reward: number;
  done: boolean;
  success: boolean;
  failure: FailureKind | null;
  /** Turns taken so far. */
  turns: number;
  /** The sum of rewards so far. */
  return: number;
  /** Turns left, when the budget is revealed. */
  turnsLeft?: number;
  /** The env's info of the turn just taken (valid, the quality proxy, the tool's error category). */
  info?: Record<string, unknown>;
};

export const OBSERVE = 'observe';

/** What the client's policy answers: no action yet — the machine parks until a call comes (compared by
 * identity, never read). */
const WAIT: Action<unknown> = Object.freeze({ action: undefined, logp: 0 });

/** The policy slot of the episode machine: it never decides, it parks the machine until a call comes. */
class ClientPolicy implements Policy<unknown, unknown> {
  readonly id = 'mcp';
  readonly budgetAware = false;
  ctx: TurnContext<unknown> | undefined;

  act(ctx: TurnContext<unknown>): Action<unknown> {
    this.ctx = ctx;
    return WAIT;
  }
}

function isPromise(x: unknown): x is Promise<unknown> {
  return typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function';
}

/** The env's tools as MCP declarations, and how a call becomes the env's action. */
export function mcpTools(env: Env<unknown, unknown>): {
  tools: McpTool[];
  toAction(name: string, args: Record<string, unknown>): Action<unknown>;
} {
  const spec = env.spec;
  const observe: McpTool = {
    name: OBSERVE,
    description: 'The current observation (the first one before any action). Read-only: takes no turn.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true },
  };
  if (spec.tools !== undefined) {
    if (spec.tools.some((t) => t.name === OBSERVE))
      throw new Error(`env ${spec.id} declares a tool named ${OBSERVE}, which MCP serving reserves`);
    const tools = spec.tools.map((t: ToolSchema) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters,
    }));
    // The env judges every call (unknown tools and bad arguments included), as in an in-process rollout.
    return {
      tools: [...tools, observe],
      toAction: (name, args) => ({ action: { name, arguments: args }, logp: 0 }),
    };
  }
  const chat: ChatSpec | undefined = typeof spec.actions === 'number' ? spec.chat : undefined;
  if (chat === undefined) throw new Error(`env ${spec.id} has neither tools nor a chat encoding to serve`);
  const fn = chatTool(chat).function;
  const toAction = (name: string, args: Record<string, unknown>): Action<unknown> => {
    const value = args[chat.argument];
    const index =
      name === chat.tool && typeof value === 'string'
        ? chat.names.findIndex((n) => n.toLowerCase() === value.trim().toLowerCase())
        : -1;
    if (index >= 0) return { action: index, logp: 0 };
    const invalid =
      name !== chat.tool
        ? `unknown tool ${JSON.stringify(name)}; the tool is ${chat.tool}`
        : `${chat.argument} must be one of ${chat.names.join(', ')}`;
    // What the openai: policy records for an output that is not an action: the env refuses it.
    return {
      action: INVALID_ACTION,
      logp: 0,
      trace: { text: JSON.stringify({ name, arguments: args }), invalid },
    };
  };
  return {
    tools: [{ name: fn.name, description: fn.description, inputSchema: fn.parameters }, observe],
    toAction,
  };
}

/** The env with every step's observation reported to `sink` (the one after the final turn is in no
 * trajectory, and the machine asks nothing more after it). Methods stay bound to the env itself. */
function watchSteps(env: Env<unknown, unknown>, sink: (o: unknown) => void): Env<unknown, unknown> {
  return new Proxy(env, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== 'step') return typeof value === 'function' ? value.bind(target) : value;
      return (action: unknown) => {
        const r = target.step(action);
        if (!isPromise(r)) {
          sink(r.observation);
          return r;
        }
        return r.then((x) => {
          sink(x.observation);
          return x;
        });
      };
    },
  });
}

/** One episode driven by tool calls. Calls are served one at a time, in arrival order. */
export class McpEpisode {
  readonly tools: McpTool[];
  private readonly o: McpEpisodeOptions;
  private readonly toAction: (name: string, args: Record<string, unknown>) => Action<unknown>;
  private readonly policy = new ClientPolicy();
  private readonly machine: EpisodeMachine;
  private readonly ready: Promise<void>;
  private queue: Promise<unknown> = Promise.resolve();
  private ended = false;
  private trajectory: Trajectory | undefined;
  /** The observation the agent sees now: the reset one, then each step's. */
  private observation: unknown;

  constructor(o: McpEpisodeOptions) {
    this.o = o;
    const { tools, toAction } = mcpTools(o.env);
    this.tools = tools;
    this.toAction = toAction;
    const env = watchSteps(o.env, (obs) => {
      this.observation = obs;
    });
    this.machine = o.machine(env, this.policy);
    this.ready = this.drive(this.machine.start()).then(() => {
      if (this.policy.ctx !== undefined) this.observation = this.policy.ctx.observation;
    });
  }

  /** Feeds the machine until it waits for the client or ends (rollout/episode.ts finishAsync, with the
   * client's calls in place of the policy's answers). */
  private async drive(request: unknown): Promise<void> {
    let req = request;
    while (req !== WAIT && req !== this.o.done) {
      if (isPromise(req)) {
        let value: unknown;
        try {
          value = await req;
        } catch (e) {
          req = this.machine.fail(e);
          continue;
        }
        req = this.machine.next(value);
      } else req = this.machine.next(req);
    }
    if (req === this.o.done) await this.end();
  }

  private async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const t = this.machine.result();
    this.trajectory = t;
    const out = t.outcome;
    this.o.log?.(
      `episode over after ${out.turns} turn(s): ${out.success ? 'success' : `failure (${out.failure})`}, return ${out.return}`,
    );
    try {
      await this.o.env.close?.();
    } finally {
      await this.o.onEnd?.(t);
    }
  }

  /** The spec of the env the episode runs in. */
  get spec(): EnvSpec {
    return this.o.env.spec;
  }

  /** The trajectory once the episode has ended. */
  get result(): Trajectory | undefined {
    return this.trajectory;
  }

  get done(): boolean {
    return this.ended;
  }

  /** Ends an unfinished episode as truncated (the client went away: the machine's default end, failure
   * `budget`); returns the trajectory. */
  async finish(): Promise<Trajectory> {
    await this.ready.catch(() => {});
    await this.queue.catch(() => {});
    await this.end();
    return this.trajectory as Trajectory;
  }

  /** Serves one tool call (serialised behind the calls before it). */
  call(name: string, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
    return this.serialised(() => this.serve(name, args ?? {}));
  }

  /**
   * Serves a model's reply text as the turn's action, read as an in-process text policy reads its own
   * generation (policies/transformer-prompt.ts parseGeneration): prose or a block that does not parse
   * is the text itself, which a tool env refuses (valid: false), recorded with the text and why it is
   * invalid; a Hermes block that parses is its call, recorded with the text as written. The turn is the
   * one the transformer's rollout records for the same reply (serve/tool-serve.ts replays with it).
   */
  reply(text: string): Promise<CallToolResult> {
    return this.serialised(async () => {
      const parsed = parseGeneration(this.o.env.spec, 'tools', text);
      const trace = parsed.invalid === undefined ? { text } : { text, invalid: parsed.invalid };
      return this.take({ action: parsed.action, logp: 0, trace });
    });
  }

  private serialised(serve: () => Promise<CallToolResult>): Promise<CallToolResult> {
    const next = this.queue.then(serve);
    this.queue = next.catch(() => {});
    return next;
  }

  private turns(): readonly Turn[] {
    return this.trajectory?.turns ?? this.policy.ctx?.history ?? [];
  }

  private status(last: Turn | undefined): McpStatus {
    const t = this.trajectory;
    const turns = this.turns();
    const s: McpStatus = {
      observation: this.observation,
      reward: last?.reward ?? 0,
      done: t !== undefined,
      success: t?.outcome.success ?? false,
      failure: t?.outcome.failure ?? null,
      turns: turns.length,
      return: turns.reduce((sum, x) => sum + x.reward, 0),
    };
    if (this.o.revealBudget === true) s.turnsLeft = Math.max(0, this.o.budget - turns.length);
    if (last !== undefined) s.info = last.info as Record<string, unknown>;
    return s;
  }

  private exhausted(): boolean {
    const out = this.trajectory?.outcome;
    return out !== undefined && out.failure === 'budget' && out.turns >= this.o.budget;
  }

  /** The line that closes every result once the episode is over. */
  private over(): string {
    const out = (this.trajectory as Trajectory).outcome;
    if (out.success) return `Episode over: success after ${out.turns} turn(s), return ${out.return}.`;
    if (this.exhausted())
      return `Episode over: turn budget exhausted (${this.o.budget} turns); the episode is truncated (failure budget).`;
    if (out.failure === 'budget')
      return `Episode over: truncated after ${out.turns} turn(s) (failure budget).`;
    return `Episode over: failure (${out.failure})${out.error ? `: ${out.error}` : ''} after ${out.turns} turn(s).`;
  }

  private text(s: McpStatus, last: Turn | undefined): string {
    const lines = [this.o.env.text?.(s.observation) ?? JSON.stringify(s.observation)];
    const invalid = last?.trace?.invalid;
    if (invalid !== undefined) lines.push(`Last action invalid: ${invalid}; nothing moved.`);
    if (s.turnsLeft !== undefined && !s.done)
      lines.push(`(${s.turnsLeft} turn${s.turnsLeft === 1 ? '' : 's'} left)`);
    if (s.done) lines.push(this.over());
    return lines.join('\n');
  }

  private answer(s: McpStatus, last?: Turn, error?: string): CallToolResult {
    const r: CallToolResult = {
      content: [{ type: 'text', text: error ?? this.text(s, last) }],
      structuredContent: s,
    };
    if (error !== undefined) r.isError = true;
    return r;
  }

  private async serve(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    if (name === OBSERVE) {
      await this.ready;
      return this.answer(this.status(undefined));
    }
    return this.take(this.toAction(name, args));
  }

  /** One turn with `action`, or the error of an episode that is over. */
  private async take(action: Action<unknown>): Promise<CallToolResult> {
    await this.ready;
    if (this.trajectory !== undefined) {
      const out = this.trajectory.outcome;
      return this.answer(
        this.status(undefined),
        undefined,
        this.exhausted()
          ? `turn budget exhausted: the episode was truncated after ${this.o.budget} turns; no more actions are taken`
          : `the episode is over (${out.success ? 'success' : `failure ${out.failure}`}); no more actions are taken`,
      );
    }
    const before = this.turns().length;
    await this.drive(this.machine.next(action));
    const turns = this.turns();
    const last = turns.length > before ? turns[turns.length - 1] : undefined;
    return this.answer(this.status(last), last);
  }
}

/** An MCP server (tools capability) answering with one episode. Connect it to a transport. */
export function mcpServer(episode: McpEpisode, info = { name: 'turnwise', version: '0.1.0' }): Server {
  const server = new Server(info, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: episode.tools }));
  server.setRequestHandler(CallToolRequestSchema, (req) =>
    episode.call(req.params.name, req.params.arguments as Record<string, unknown> | undefined),
  );
  return server;
}
