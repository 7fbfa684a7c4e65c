// The tools env's slot variant (params mode 'choose'): tool-call hacking made reachable and learnable by
// a small policy, as the code env's candidate variant does for programs (code/choice.ts). Each turn
// offers TOOL_SLOTS calls as discrete actions 0…5; the action makes that call on the tools env
// (env.ts, whose rewards, checkers and endings apply unchanged). The six calls, rebuilt after every
// call from the API state and the episode's history, then shuffled (by task, episode and turn):
//   finish;
//   the request's next call not yet made (the first pending gold call; when none is left, a read);
//   a read the request does not need (ls, cat, get_balance, …: changes nothing);
//   a repeat: the last read made (a random read before any) — well formed, changes nothing;
//   a write the request does not need that destroys no goal attribute (a deposit of 10, a copy, …);
//   any write the request does not need (possibly destructive: rm, close_account, …).
// (Reads, writes and ticket calls come from the env's menu, env.ts toolsMenu; a slot with nothing to
// offer gets a read.) What the policy reads, SLOT_FEATURES per slot in slot order, then GLOBAL_FEATURES:
//   per slot — is finish; the function writes (by its declaration: cp, mv, append, rm, deposit, …);
//   the share of its argument values the request's text names; how often this very call was made
//   before (/2, at most 1);
//   global — calls that succeeded / the request's numbered steps (at most 1); the last call failed.
// Read from the calls, the request and the history — never a label of usefulness (the env's own
// classification, effects.ts, is in info only). A table policy has nothing to key on (the slots are
// shuffled), so this variant has no finite observation space.
import { Rng, STREAM } from '../../core/rng.ts';
import type { EnvSpec, StepInfo, StepResult, ToolCall } from '../../core/types.ts';
import { execute } from './apis.ts';
import { destroyed } from './checkers.ts';
import { callKey } from './effects.ts';
import { TOOLS_MAX_TURNS, ToolsEnv, type ToolsObservation, toolsMenu } from './env.ts';
import type { ToolsWorld } from './task.ts';
import type { ToolsToolName } from './tools.ts';

export const TOOL_SLOTS = 6;
export const SLOT_FEATURES = 4;
export const GLOBAL_FEATURES = 2;

/** The functions that change the state when they succeed (their declarations say so). */
export const WRITES: ReadonlySet<string> = new Set([
  'cp',
  'mv',
  'append',
  'rm',
  'deposit',
  'withdraw',
  'transfer',
  'close_account',
  'create_ticket',
  'assign_ticket',
  'set_priority',
  'comment_ticket',
  'close_ticket',
]);

export interface ToolsChoiceObservation extends ToolsObservation {
  /** The calls offered, in slot order. */
  slots: ToolCall[];
  /** Per slot: how often this very call was made before in the episode. */
  made: number[];
  /** Calls that succeeded so far (finish excluded). */
  succeeded: number;
  /** Whether the last call failed (a tool error). */
  lastFailed: boolean;
}

export function toolsChoiceSpec(): EnvSpec {
  return {
    id: 'tools',
    actions: TOOL_SLOTS,
    oracle: false,
    snapshots: true,
    features: TOOL_SLOTS * SLOT_FEATURES + GLOBAL_FEATURES,
    maxTurns: TOOLS_MAX_TURNS,
  };
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The share of a call's argument values that the text names (as a whole token); 0 without arguments. */
export function mentioned(call: ToolCall, text: string): number {
  const values = Object.values(call.arguments ?? {}).map(String);
  if (values.length === 0) return 0;
  const hit = values.filter((v) => new RegExp(`(?<![A-Za-z0-9])${escapeRegex(v)}(?![A-Za-z0-9])`).test(text));
  return hit.length / values.length;
}

/** The request's numbered steps (lines "1. …"). */
export const requestSteps = (request: string): number =>
  request.split('\n').filter((l) => /^\d+\. /.test(l)).length;

/** The feature vector of an observation (see the header). */
export function choiceFeatures(o: ToolsChoiceObservation): Float32Array {
  const out = new Float32Array(TOOL_SLOTS * SLOT_FEATURES + GLOBAL_FEATURES);
  o.slots.forEach((c, i) => {
    const b = i * SLOT_FEATURES;
    out[b] = c.name === 'finish' ? 1 : 0;
    out[b + 1] = WRITES.has(c.name) ? 1 : 0;
    out[b + 2] = mentioned(c, o.request);
    out[b + 3] = Math.min(1, o.made[i] / 2);
  });
  const g = TOOL_SLOTS * SLOT_FEATURES;
  out[g] = Math.min(1, o.succeeded / Math.max(1, requestSteps(o.request)));
  out[g + 1] = o.lastFailed ? 1 : 0;
  return out;
}

interface ChoiceSnapshot {
  inner: unknown;
  obs: ToolsChoiceObservation;
  made: Record<string, number>;
  lastRead: ToolCall | null;
  turn: number;
  seed: number;
}

export class ToolsChoiceEnv {
  readonly spec: EnvSpec = toolsChoiceSpec();
  readonly world: ToolsWorld;
  readonly inner: ToolsEnv;
  private obs: ToolsChoiceObservation;
  private made: Record<string, number> = {};
  private lastRead: ToolCall | null = null;
  private turn = 0;
  private seed = 0;
  private readonly taskSeed: number;

  constructor(world: ToolsWorld, taskSeed: number) {
    this.world = world;
    this.taskSeed = taskSeed;
    this.inner = new ToolsEnv(world);
    this.obs = this.observe(this.inner.reset(0), 0, false);
  }

  /** The six calls of this turn, shuffled (see the header). */
  slots(): ToolCall[] {
    const rng = Rng.derive(this.taskSeed, this.seed, this.turn, STREAM.env, 0x7c01);
    const state = this.inner.state;
    const menu = toolsMenu(state).filter((c) => c.name !== 'finish' && !this.inner.isPending(c));
    const reads = menu.filter((c) => !WRITES.has(c.name));
    const writes = menu.filter((c) => WRITES.has(c.name));
    const pick = (xs: readonly ToolCall[]) => xs[rng.int(xs.length)];
    // The first write, in a random order, that destroys no goal attribute (or a read).
    const harmless = (): ToolCall => {
      const order = rng.shuffle([...writes]);
      const ok = order.find((c) => {
        const r = execute(state, c.name as ToolsToolName, c.arguments as Record<string, string | number>);
        return r.ok && destroyed(r.state, this.world.goal, this.world.attrs).length === 0;
      });
      return ok ?? pick(reads);
    };
    const out: ToolCall[] = [
      { name: 'finish', arguments: {} },
      this.inner.nextPending() ?? pick(reads),
      pick(reads),
      this.lastRead ?? pick(reads),
      harmless(),
      writes.length > 0 ? pick(writes) : pick(reads),
    ];
    for (let i = out.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  private observe(o: ToolsObservation, succeeded: number, lastFailed: boolean): ToolsChoiceObservation {
    const slots = this.slots();
    return {
      ...o,
      slots,
      made: slots.map((c) => this.made[callKey(c.name, c.arguments)] ?? 0),
      succeeded,
      lastFailed,
    };
  }

  reset(seed: number): ToolsChoiceObservation {
    this.seed = seed;
    this.turn = 0;
    this.made = {};
    this.lastRead = null;
    this.obs = this.observe(this.inner.reset(seed), 0, false);
    return this.obs;
  }

  step(action: number): StepResult<ToolsChoiceObservation> {
    if (!Number.isInteger(action) || action < 0 || action >= TOOL_SLOTS)
      return { observation: this.obs, reward: 0, terminated: false, info: { valid: false, error: 'action' } };
    const call = this.obs.slots[action];
    const r = this.inner.step(call);
    const key = callKey(call.name, call.arguments);
    this.made[key] = (this.made[key] ?? 0) + 1;
    const failed = r.info.valid === false;
    if (!failed && call.name !== 'finish' && !WRITES.has(call.name)) this.lastRead = call;
    this.turn++;
    const succeeded = this.obs.succeeded + (failed || call.name === 'finish' ? 0 : 1);
    this.obs = this.observe(r.observation, succeeded, failed);
    const info: StepInfo = { ...r.info, slot: action, arguments: call.arguments };
    return { observation: this.obs, reward: r.reward, terminated: r.terminated, info };
  }

  features(o: ToolsChoiceObservation): Float32Array {
    return choiceFeatures(o);
  }

  stateKey(o: ToolsChoiceObservation): string {
    return JSON.stringify([o.state, o.slots, o.made]);
  }

  text(o: ToolsChoiceObservation): string {
    const lines = [o.request];
    const last = o.last;
    if (last !== null)
      lines.push(
        last.ok
          ? `${last.tool} returned: ${JSON.stringify(last.output)}`
          : `${last.tool} failed: ${last.error}`,
      );
    lines.push('Calls offered (make one by its number):');
    o.slots.forEach((c, i) => {
      lines.push(
        `#${i} ${c.name}(${JSON.stringify(c.arguments)})${o.made[i] > 0 ? ` — made ${o.made[i]}×` : ''}`,
      );
    });
    return lines.join('\n');
  }

  snapshot(): ChoiceSnapshot {
    return JSON.parse(
      JSON.stringify({
        inner: this.inner.snapshot(),
        obs: this.obs,
        made: this.made,
        lastRead: this.lastRead,
        turn: this.turn,
        seed: this.seed,
      }),
    ) as ChoiceSnapshot;
  }

  restore(snapshot: unknown): void {
    const s = JSON.parse(JSON.stringify(snapshot)) as ChoiceSnapshot;
    this.inner.restore(s.inner);
    this.obs = s.obs;
    this.made = s.made;
    this.lastRead = s.lastRead;
    this.turn = s.turn;
    this.seed = s.seed;
  }

  close(): void {
    this.inner.close();
  }
}
