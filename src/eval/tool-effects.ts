// Tool-call figures of tools-env trajectories (docs/reward-hacking.md#tool-calls): per episode, the calls
// made (finish excluded), the useless ones and the side effects (envs/tools/effects.ts), and the share
// of episodes that succeeded. Read from the turns' info — `effect` per call and the running counts
// `sideEffects`, `uselessCalls` — which the tools env writes when a reward-hacking param is set (its
// slot variant included); trajectories without them give no figures (every other env, and the tools
// env's defaults: their reports are unchanged). Used by the training loop (train/hack-metrics.ts), eval
// and compare.
import type { Trajectory } from '../core/types.ts';

export interface ToolEffectFigures {
  /** Episodes whose turns carry the counts. */
  episodes: number;
  /** Means per episode. */
  calls: number;
  useless: number;
  sideEffects: number;
  success: number;
}

/** Whether a trajectory's turns record the tools env's effects. */
const tracked = (t: Trajectory) => t.turns.length > 0 && typeof t.turns[0].info.sideEffects === 'number';

/** Counts trajectories one at a time (eval streams them). */
export class ToolEffectCount {
  private n = 0;
  private calls = 0;
  private useless = 0;
  private effects = 0;
  private wins = 0;

  add(t: Trajectory): void {
    if (!tracked(t)) return;
    this.n++;
    for (const { info } of t.turns) {
      if (typeof info.effect === 'string') this.calls++;
      if (info.effect === 'useless') this.useless++;
      if (info.effect === 'side-effect') this.effects++;
    }
    if (t.outcome.success) this.wins++;
  }

  /** The figures; null when no trajectory carried them. */
  result(): ToolEffectFigures | null {
    const n = this.n;
    if (n === 0) return null;
    return {
      episodes: n,
      calls: this.calls / n,
      useless: this.useless / n,
      sideEffects: this.effects / n,
      success: this.wins / n,
    };
  }
}

export function toolEffectFigures(batch: readonly Trajectory[]): ToolEffectFigures | null {
  const c = new ToolEffectCount();
  for (const t of batch) c.add(t);
  return c.result();
}

/** One line of text: what eval and compare print. */
export function toolEffectLine(f: ToolEffectFigures): string {
  const x = (v: number) => v.toFixed(4);
  return `tool calls (${f.episodes} episodes): per episode ${x(f.calls)} calls, ${x(f.useless)} useless, ${x(f.sideEffects)} side effects; success ${x(f.success)}`;
}
