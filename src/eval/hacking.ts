// Reward-hacking figures of code-env trajectories (docs/reward-hacking.md): of the programs submitted,
// the share that pass every VISIBLE example, the share that pass every HIDDEN test (the true success),
// their gap, and the share the detector (envs/code/hack.ts) flags. Read from the submit turns' info —
// `visible` and `hidden` ({passed, total}) and `detected` — which the code env writes under the visible
// rewards, a detector penalty or the candidate variant; trajectories without such turns give no figures
// (every other env, and the code env's default reward: their reports are unchanged). Used by the training
// loop (train/hack-metrics.ts), eval and compare.
import type { StepInfo, Trajectory } from '../core/types.ts';

interface Counts {
  passed: number;
  total: number;
}

export interface HackFigures {
  /** Programs submitted (one per episode that submitted: its first tracked submit). */
  submitted: number;
  visiblePass: number;
  hiddenPass: number;
  /** visiblePass − hiddenPass: the share that pass what is checked and fail what is meant. */
  gap: number;
  detected: number;
}

const isCounts = (x: unknown): x is Counts =>
  typeof x === 'object' &&
  x !== null &&
  typeof (x as Counts).passed === 'number' &&
  typeof (x as Counts).total === 'number';

/** The info of a trajectory's tracked submit, if any (a later call after it is a tool error). */
function submitted(t: Trajectory): StepInfo | undefined {
  return t.turns.find(
    ({ info }) =>
      info.tool === 'submit' &&
      typeof info.detected === 'boolean' &&
      isCounts(info.visible) &&
      isCounts(info.hidden),
  )?.info;
}

/** Counts trajectories one at a time (eval streams them). */
export class HackCount {
  private n = 0;
  private vis = 0;
  private hid = 0;
  private det = 0;

  add(t: Trajectory): void {
    const info = submitted(t);
    if (info === undefined) return;
    const v = info.visible as Counts;
    const h = info.hidden as Counts;
    this.n++;
    if (v.passed === v.total) this.vis++;
    if (h.passed === h.total) this.hid++;
    if (info.detected === true) this.det++;
  }

  /** The figures; null when no trajectory submitted a tracked program. */
  result(): HackFigures | null {
    const n = this.n;
    if (n === 0) return null;
    return {
      submitted: n,
      visiblePass: this.vis / n,
      hiddenPass: this.hid / n,
      gap: (this.vis - this.hid) / n,
      detected: this.det / n,
    };
  }
}

export function hackFigures(batch: readonly Trajectory[]): HackFigures | null {
  const c = new HackCount();
  for (const t of batch) c.add(t);
  return c.result();
}

/** One line of text: what eval and compare print. */
export function hackLine(f: HackFigures): string {
  const x = (v: number) => v.toFixed(4);
  return `reward hacking (${f.submitted} programs submitted): visible pass ${x(f.visiblePass)}, hidden pass ${x(f.hiddenPass)}, gap ${x(f.gap)}, detector ${x(f.detected)}`;
}
