// Reward shaping in training (`train --shaping`, docs/shaping.md; issue 27 part 2). The learner's reward
// is r + F, F the bonus of theory/shaping.ts — the very function the DP of `turnwise calc shaping` adds —
// while the stored trajectories, every rollout/ metric and the final evaluation stay on the true reward.
// Each iteration's batch gets a shaped copy before its advantages are computed: turn t of a trajectory
// with budget T was taken with h = T − t turns left, from the cell s it observed into the cell s′ its
// step recorded in info.cell, terminal when it is the last turn of an episode that terminated; novelty's
// visited set starts with the first cell. The copy's outcome.return is the sum of its shaped rewards
// (what GRPO's R_i reads; for the potential-based kinds in closed form, see telescoped()); outcome.success
// stays true (what dead groups and guidance count).
// Why info.cell: a trajectory keeps the observation before each action, never the one after its last,
// and progress and novelty need that cell (into which hole? where did the budget run out?). A shaped run
// makes its envs through recordCells, which adds it; an unshaped run's envs and bytes are untouched.
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Env, EnvFactory, MaybePromise, StepResult, Task, Trajectory } from '../core/types.ts';
import { isPromise } from '../rollout/episode.ts';
import {
  DEFAULT_SHAPING_COEF,
  MAX_SHAPING_COEF,
  POTENTIAL_BASED,
  parseShaping,
  SHAPINGS,
  Shaper,
  type Shaping,
  type ShapingWorld,
} from '../theory/shaping.ts';

export const ShapingSchema = z
  .object({
    kind: z
      .enum(SHAPINGS)
      .describe('potential | distance | progress | novelty | step-penalty (docs/shaping.md)'),
    // c > 0: c = 0 is the unshaped run, which needs no flag.
    coef: z.number().gt(0).lte(MAX_SHAPING_COEF).default(DEFAULT_SHAPING_COEF).describe('the coefficient c'),
  })
  .strict();

export type ShapingConfig = z.infer<typeof ShapingSchema>;

/** `kind[:coef]` from the command line, refused in one line naming the flag. */
export function parseShapingFlag(raw: string, flag = '--shaping'): ShapingConfig {
  const s = parseShaping(raw.trim());
  const expected = `expected ${SHAPINGS.join(' | ')}, optionally :c with c in (0, ${MAX_SHAPING_COEF}] (default ${DEFAULT_SHAPING_COEF}), e.g. progress:0.05`;
  if (s === undefined || !(s.coef > 0 && s.coef <= MAX_SHAPING_COEF))
    throw new InputError(flag, raw, expected);
  return s;
}

/** `kind:coef`, as the flag writes it. */
export const showShaping = (s: Shaping): string => `${s.kind}:${s.coef}`;

/** The env ids whose cells shaping can read: FrozenLake (observation = cell, a world with the map). */
export const SHAPING_ENVS = ['frozenlake'] as const;

// ── The cell after each step ────────────────────────────────────────────────────────────────────

type AnyEnv = Env<unknown, unknown>;

function withCell(r: StepResult<unknown>): StepResult<unknown> {
  return { ...r, info: { ...r.info, cell: r.observation } };
}

/** The env with `info.cell` (the observation after the step: FrozenLake's cell) added to every step;
 * everything else is the env's own (a Proxy, so its map, oracle and views stay reachable). */
function recordingCells(env: AnyEnv): AnyEnv {
  const bound = new Map<PropertyKey, unknown>();
  const step = (action: unknown): MaybePromise<StepResult<unknown>> => {
    const r = env.step(action);
    return isPromise(r) ? (r as Promise<StepResult<unknown>>).then(withCell) : withCell(r);
  };
  return new Proxy(env, {
    get(target, prop) {
      if (prop === 'step') return step;
      const v = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      let b = bound.get(prop);
      if (b === undefined) {
        b = (v as (...a: unknown[]) => unknown).bind(target);
        bound.set(prop, b);
      }
      return b;
    },
  });
}

/** A factory whose envs record info.cell. Without `module`: worker threads, which rebuild a factory
 * from its module, would make envs without it. */
export function recordCells(envs: EnvFactory): EnvFactory {
  return {
    make: (task) => {
      const env = envs.make(task);
      return isPromise(env) ? (env as Promise<AnyEnv>).then(recordingCells) : recordingCells(env);
    },
    spec: (task) => envs.spec(task),
    ...(envs.configure === undefined ? {} : { configure: (c) => envs.configure!(c) }),
  };
}

// ── The shaped copy of a batch ──────────────────────────────────────────────────────────────────

function isShapingWorld(w: unknown): w is ShapingWorld {
  const x = w as Partial<ShapingWorld> | undefined;
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof x.nrow === 'number' &&
    typeof x.ncol === 'number' &&
    x.kind instanceof Uint8Array &&
    typeof x.model === 'object'
  );
}

/** One Shaper per map (one for a fixed map, one per task for random maps), V*_h computed once each. */
export class BatchShaper {
  readonly shaping: ShapingConfig;
  /** The largest budget of the run: the horizon of potential's V*_h. */
  readonly horizon: number;
  private readonly byWorld = new WeakMap<ShapingWorld, Shaper>();

  constructor(shaping: ShapingConfig, horizon: number) {
    this.shaping = shaping;
    this.horizon = horizon;
  }

  /** The Shaper of the map an env plays (its `world`: FrozenLake's map and transition table). */
  shaperOf(view: unknown): Shaper {
    const world = (view as { world?: unknown }).world;
    if (!isShapingWorld(world))
      throw new InputError(
        'shaping',
        showShaping(this.shaping),
        'needs a FrozenLake env (its map and cells)',
      );
    let s = this.byWorld.get(world);
    if (s === undefined) {
      s = new Shaper(world, this.shaping, this.horizon);
      this.byWorld.set(world, s);
    }
    return s;
  }

  /** F of every turn of one trajectory, in order. */
  bonuses(t: Trajectory, shaper: Shaper): number[] {
    const turns = t.turns;
    const visited = new Set<number>();
    if (turns.length > 0) visited.add(turns[0].observation as number);
    return turns.map((turn, i) => {
      const s = turn.observation as number;
      const next = turn.info.cell;
      if (typeof next !== 'number')
        throw new Error(
          `shaping: turn ${turn.t} of ${t.id} has no info.cell (its env was not made by recordCells)`,
        );
      const terminal = i === turns.length - 1 && t.outcome.end === 'terminated';
      const isNew = !visited.has(next);
      visited.add(next);
      return shaper.bonus(t.budget - turn.t, s, next, terminal, isNew);
    });
  }

  /** Copies of the trajectories with r + F on every turn and their shaped return as outcome.return. */
  shape(batch: readonly Trajectory[], viewOf: (task: Task) => unknown): Trajectory[] {
    return batch.map((t) => {
      const shaper = this.shaperOf(viewOf(t.task));
      const f = this.bonuses(t, shaper);
      let ret = 0;
      const turns = t.turns.map((turn, i) => {
        const reward = turn.reward + f[i];
        ret += reward;
        return { ...turn, reward };
      });
      if (POTENTIAL_BASED[this.shaping.kind] && turns.length > 0)
        ret = t.outcome.return + this.telescoped(t, shaper);
      return { ...t, turns, outcome: { ...t.outcome, return: ret } };
    });
  }

  /**
   * Σ F of a potential-based kind in closed form, c·(Φ(end) − Φ_T(s₀)) — 0 at the end unless the
   * episode stopped on an error. The float sum of the per-turn F equals it up to the last bits, but
   * that dust matters: the equal true returns of a dead group (no contrast, no gradient) would differ
   * by ~1e-16 once shaped, GRPO's (x − μ)/(σ + ε) would make advantages of ~1e-10 of them, and Adam,
   * whose step does not depend on the gradient's scale down to its ε = 1e-8, turns those into small
   * real steps on the parameters only dead groups touch — enough, on 8x8, to move one GRPO seed of
   * three from the unshaped run's 0.61 to 0.83. In closed form every trajectory of a group (one start,
   * one budget) gets R − c·Φ_T(s₀) exactly, as the theorem says, and GRPO's advantages are the
   * unshaped ones.
   */
  private telescoped(t: Trajectory, shaper: Shaper): number {
    const first = t.turns[0];
    const last = t.turns[t.turns.length - 1];
    const start = shaper.potential(t.budget - first.t, first.observation as number);
    const terminal = t.outcome.end === 'terminated';
    const end = terminal ? 0 : shaper.potential(t.budget - last.t - 1, last.info.cell as number);
    return this.shaping.coef * (end - start);
  }
}

/** train/shaped_return (mean shaped return of the batch) and train/shaping_gap (its mean shaped minus
 * true return), per iteration. */
export function shapingMetrics(
  batch: readonly Trajectory[],
  shaped: readonly Trajectory[],
): Record<string, number> {
  let s = 0;
  let gap = 0;
  shaped.forEach((t, i) => {
    s += t.outcome.return;
    gap += t.outcome.return - batch[i].outcome.return;
  });
  const n = Math.max(1, shaped.length);
  return { 'train/shaped_return': s / n, 'train/shaping_gap': gap / n };
}
