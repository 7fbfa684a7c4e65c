// Reward-hacking figures of a batch of code-env trajectories (docs/reward-hacking.md): of the programs
// submitted, the share that pass every VISIBLE example, the share that pass every HIDDEN test (the true
// success), their gap, and the share the detector (envs/code/hack.ts) flags. Read from the submit turns'
// info — `visible` and `hidden` ({passed, total}) and `detected` — which the code env writes under the
// visible rewards, a detector penalty or the candidate variant; a batch without such turns gives no
// figures (every other env and the code env's default reward: nothing changes in their metrics).
import type { StepInfo, Trajectory } from '../core/types.ts';

interface Counts {
  passed: number;
  total: number;
}

export interface HackFigures {
  /** Programs submitted (one per episode that submitted; the last if several). */
  submitted: number;
  visiblePass: number;
  hiddenPass: number;
  /** visiblePass − hiddenPass. */
  gap: number;
  detected: number;
}

const isCounts = (x: unknown): x is Counts =>
  typeof x === 'object' &&
  x !== null &&
  typeof (x as Counts).passed === 'number' &&
  typeof (x as Counts).total === 'number';

/** The info of a trajectory's last submit that carries the hacking figures, if any. */
function submitted(t: Trajectory): StepInfo | undefined {
  for (let i = t.turns.length - 1; i >= 0; i--) {
    const info = t.turns[i].info;
    if (
      info.tool === 'submit' &&
      typeof info.detected === 'boolean' &&
      isCounts(info.visible) &&
      isCounts(info.hidden)
    )
      return info;
  }
  return undefined;
}

/** The figures of a set of trajectories; null when none submitted a tracked program. */
export function hackFigures(batch: readonly Trajectory[]): HackFigures | null {
  let n = 0;
  let vis = 0;
  let hid = 0;
  let det = 0;
  for (const t of batch) {
    const info = submitted(t);
    if (info === undefined) continue;
    const v = info.visible as Counts;
    const h = info.hidden as Counts;
    n++;
    if (v.passed === v.total) vis++;
    if (h.passed === h.total) hid++;
    if (info.detected === true) det++;
  }
  if (n === 0) return null;
  return { submitted: n, visiblePass: vis / n, hiddenPass: hid / n, gap: (vis - hid) / n, detected: det / n };
}

/** The figures as the training loop's namespaced scalars (train/visible_pass, train/hidden_pass,
 * train/hack_gap, train/hack_detected); {} when the batch has none. */
export function hackMetrics(batch: readonly Trajectory[]): Record<string, number> {
  const f = hackFigures(batch);
  if (f === null) return {};
  return {
    'train/visible_pass': f.visiblePass,
    'train/hidden_pass': f.hiddenPass,
    'train/hack_gap': f.gap,
    'train/hack_detected': f.detected,
  };
}
