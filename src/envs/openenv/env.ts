// An OpenEnv server's env as a turnwise env: each instance holds one WebSocket session (opened at the
// first reset, closed by close()), resets with the task's seed and steps with the policy's actions.
//
//   reset(envSeed)  {"type": "reset", "data": {"seed": task seed}} — and "env_seed" for a served turnwise
//                   env, so that its random stream is the one the rollout derives (a round trip then
//                   gives the in-process trajectories byte for byte).
//   step(action)    the action as the schema's shape wants it (schema.ts); a discrete action outside the
//                   space, a call of a tool the env does not have, or an action the server refuses as
//                   invalid (VALIDATION_ERROR) is not an error but an observation: nothing moved,
//                   info.valid = false — turnwise's rule for malformed actions. Any other error answer,
//                   or the connection dropping, throws: the rollout ends that episode as `error`.
//
// Observations: a served turnwise env's own observation, info, terminated and text view; any other
// server's observation dict, with reward (null read as 0) and done — done is taken as the task ending,
// and a done episode whose last reward is at least the `success` threshold (default 1) as a success.
// The budget is the rollout's: a served env that truncates first (its own budget smaller) ends the
// episode there; the next step throws, saying so.
import type { EnvSpec, StepInfo, StepResult, Task } from '../../core/types.ts';
import type { OpenEnvDescription } from './client.ts';
import { renderObservation } from './schema.ts';
import { answer, type Reply, ServerError, Session } from './session.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text views of a served turnwise env's observations, by task: the server sends each beside its
 * observation, and a view of an observation seen in this process is found again (contextAt rebuilds
 * prompts from trajectories). At most TEXT_LIMIT entries, the oldest dropped. */
const TEXTS = new Map<string, string>();
const TEXT_LIMIT = 100_000;

export function openEnvSpec(d: OpenEnvDescription): EnvSpec {
  const spec: EnvSpec = {
    id: 'openenv',
    actions: d.action.kind === 'discrete' ? d.action.values.length : 'text',
    oracle: false,
    snapshots: false,
  };
  if (d.observations !== undefined) spec.observations = d.observations;
  if (d.budget !== undefined) spec.maxTurns = d.budget;
  if (d.action.kind === 'discrete') spec.chat = d.action.chat;
  if (d.action.kind === 'tools' && d.tools !== undefined) spec.tools = d.tools;
  if (d.action.kind === 'object') spec.tools = [d.action.tool];
  return spec;
}

export class OpenEnvEnv {
  readonly spec: EnvSpec;
  private readonly d: OpenEnvDescription;
  private readonly task: Task;
  private readonly success: number;
  private session: Session | undefined;
  private last: unknown;
  /** The served env truncated the episode at its budget. */
  private truncated = false;

  constructor(d: OpenEnvDescription, task: Task, success: number) {
    this.d = d;
    this.spec = openEnvSpec(d);
    this.task = task;
    this.success = success;
  }

  async reset(envSeed: number): Promise<unknown> {
    const data: Record<string, unknown> = { seed: this.task.seed };
    if (this.d.turnwise) data.env_seed = envSeed;
    const message = { type: 'reset', data };
    let reply: Reply;
    if (this.session?.alive) reply = await this.session.request(message);
    else {
      this.session?.close();
      const opened = await Session.open(this.d.url, message);
      this.session = opened.session;
      reply = answer(opened.reply);
    }
    this.truncated = false;
    return this.read(reply).observation;
  }

  async step(action: unknown): Promise<StepResult<unknown>> {
    if (this.session === undefined) throw new Error('openenv: step() before reset()');
    if (this.truncated)
      throw new Error(
        `the OpenEnv server truncated the episode at its turn budget${this.d.budget === undefined ? '' : ` of ${this.d.budget}`}; give --budget ≤ that`,
      );
    const payload = this.payload(action);
    // Outside a discrete space: what a turnwise discrete env answers in-process (frozenlake's INVALID).
    if (payload === undefined) return this.refused();
    if (typeof payload === 'string') return this.refused(payload);
    let reply: Reply;
    try {
      reply = await this.session.request({ type: 'step', data: payload });
    } catch (e) {
      if (e instanceof ServerError && e.code === 'VALIDATION_ERROR')
        return this.refused(validationMessage(e));
      throw e;
    }
    return this.read(reply);
  }

  /** The step data of an action, or why the env does not take it (undefined: a discrete action outside
   * the space). */
  private payload(action: unknown): Record<string, unknown> | string | undefined {
    const a = this.d.action;
    if (a.kind === 'discrete') {
      if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action >= a.values.length)
        return undefined;
      return { [a.field]: a.values[action] };
    }
    if (!isObject(action) || typeof action.name !== 'string' || !isObject(action.arguments ?? {}))
      return 'an action is a tool call {"name": TOOL, "arguments": {…}}';
    const args = (action.arguments ?? {}) as Record<string, unknown>;
    if (a.kind === 'tools') {
      const data: Record<string, unknown> = { tool_name: action.name, arguments: args };
      return a.typed ? { type: 'call_tool', ...data } : data;
    }
    if (action.name !== a.tool.name)
      return `unknown tool ${JSON.stringify(action.name)}; the tool is ${a.tool.name}`;
    return args;
  }

  /** A malformed action: nothing moved (info.valid = false, the reason in info.error when there is one
   * to tell). */
  private refused(why?: string): StepResult<unknown> {
    const info: StepInfo = why === undefined ? { valid: false } : { valid: false, error: why };
    return { observation: this.last, reward: 0, terminated: false, info };
  }

  private read(reply: Reply): StepResult<unknown> {
    const data = reply.data;
    if (reply.type !== 'observation' || !isObject(data) || !isObject(data.observation))
      throw new Error(
        `the OpenEnv server answered ${JSON.stringify(reply).slice(0, 120)} instead of an observation`,
      );
    const reward = typeof data.reward === 'number' ? data.reward : data.reward === true ? 1 : 0;
    const done = data.done === true;
    const o = data.observation;
    let observation: unknown;
    let info: StepInfo;
    let terminated: boolean;
    if (this.d.turnwise) {
      observation = o.observation;
      info = isObject(o.info) ? (o.info as StepInfo) : {};
      terminated = o.terminated === true;
      this.truncated = o.truncated === true && !terminated;
      if (typeof o.text === 'string') remember(this.textKey(observation), o.text);
    } else {
      observation = o;
      terminated = done;
      info = terminated ? { success: reward >= this.success } : {};
    }
    this.last = observation;
    return { observation, reward, terminated, info };
  }

  private textKey(o: unknown): string {
    return `${this.d.url}\n${this.task.seed}\n${JSON.stringify(o)}`;
  }

  text(o: unknown): string {
    return (this.d.turnwise ? TEXTS.get(this.textKey(o)) : undefined) ?? renderObservation(o);
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}

function remember(key: string, text: string): void {
  if (TEXTS.has(key)) return;
  TEXTS.set(key, text);
  if (TEXTS.size > TEXT_LIMIT) TEXTS.delete(TEXTS.keys().next().value as string);
}

/** The reference server's VALIDATION_ERROR: its first pydantic error, as `field: message`. */
function validationMessage(e: ServerError): string {
  const errors = e.data.errors;
  const first = Array.isArray(errors) && isObject(errors[0]) ? errors[0] : undefined;
  if (first === undefined) return String(e.data.message ?? 'invalid action');
  const loc = Array.isArray(first.loc) ? first.loc.join('.') : '';
  return `${loc === '' ? '' : `${loc}: `}${String(first.msg ?? 'invalid')}`;
}
