// Scripted policies for tool envs (envs with `spec.scripted`), acting from the env's ScriptedView:
// - `oracle`: the gold path's next action, always;
// - `oracle:eps=ε`: with probability 1−ε the gold action, else a uniformly drawn menu action other than
//   the gold one (a wrong but valid call: a detour, or a wrong submit that ends the episode);
// - `random`: uniform over the menu of valid calls.
// logp is the log-probability of the chosen action under this draw: log(1−ε) for the gold action,
// log(ε/|W|) for a detour (W = menu minus the gold action), −log|menu| for random; all randomness comes
// from ctx.rng.
import type { Action, Policy, ScriptedView, TurnContext } from '../core/types.ts';

/** A tool call's identity: its name and arguments (key order of the call object aside). */
const keyOf = (a: unknown) =>
  JSON.stringify(
    typeof a === 'object' && a !== null && 'name' in a
      ? [a.name, (a as { arguments?: unknown }).arguments]
      : a,
  );

function view(ctx: TurnContext<unknown>, id: string): ScriptedView {
  const v = ctx.env.scripted?.();
  if (v === undefined) throw new Error(`policy ${id}: env ${ctx.env.spec.id} has no scripted view`);
  return v;
}

/** The menu without the gold action (by JSON). */
function detours(v: ScriptedView, ctx: TurnContext<unknown>): { gold: unknown; wrong: readonly unknown[] } {
  const gold = v.goldAction(ctx.history);
  const g = keyOf(gold);
  return { gold, wrong: v.validActions(ctx.history).filter((a) => keyOf(a) !== g) };
}

export class ScriptedOraclePolicy implements Policy<unknown, unknown> {
  readonly id: string;
  readonly budgetAware = false;
  readonly eps: number;

  constructor(eps = 0, id = eps > 0 ? `oracle:eps=${eps}` : 'oracle') {
    this.eps = eps;
    this.id = id;
  }

  act(ctx: TurnContext<unknown>): Action<unknown> {
    const { gold, wrong } = detours(view(ctx, this.id), ctx);
    if (this.eps > 0 && wrong.length > 0 && ctx.rng.float() < this.eps) {
      return { action: wrong[ctx.rng.int(wrong.length)], logp: Math.log(this.eps / wrong.length) };
    }
    return { action: gold, logp: wrong.length > 0 ? Math.log(1 - this.eps) : 0 };
  }

  logProb(ctx: TurnContext<unknown>, action: unknown): number {
    const { gold, wrong } = detours(view(ctx, this.id), ctx);
    const k = keyOf(action);
    if (k === keyOf(gold)) return wrong.length > 0 ? Math.log(1 - this.eps) : 0;
    if (wrong.some((a) => keyOf(a) === k)) return Math.log(this.eps / wrong.length);
    return Number.NEGATIVE_INFINITY;
  }
}

export class ScriptedRandomPolicy implements Policy<unknown, unknown> {
  readonly id = 'random';
  readonly budgetAware = false;

  act(ctx: TurnContext<unknown>): Action<unknown> {
    const menu = view(ctx, this.id).validActions(ctx.history);
    return { action: menu[ctx.rng.int(menu.length)], logp: -Math.log(menu.length) };
  }

  logProb(ctx: TurnContext<unknown>, action: unknown): number {
    const menu = view(ctx, this.id).validActions(ctx.history);
    const k = keyOf(action);
    return menu.some((a) => keyOf(a) === k) ? -Math.log(menu.length) : Number.NEGATIVE_INFINITY;
  }
}
