// The training loop's reward-hacking scalars (docs/reward-hacking.md), from eval/hacking.ts: per
// iteration, of the programs the batch submitted, train/visible_pass (every visible example passes),
// train/hidden_pass (every hidden test passes), train/hack_gap (their difference) and train/hack_detected
// (the detector flags it). A batch without tracked submits (every env but the code env under a visible
// reward, a detector penalty or its candidate variant) adds nothing.
// The tools env's, from eval/tool-effects.ts, when its turns record each call's effect (a reward-hacking
// param set): rollout/calls, rollout/useless_calls and rollout/side_effects per episode.
import type { Trajectory } from '../core/types.ts';
import { hackFigures } from '../eval/hacking.ts';
import { toolEffectFigures } from '../eval/tool-effects.ts';

export function hackMetrics(batch: readonly Trajectory[]): Record<string, number> {
  const e = toolEffectFigures(batch);
  if (e !== null)
    return {
      'rollout/calls': e.calls,
      'rollout/useless_calls': e.useless,
      'rollout/side_effects': e.sideEffects,
    };
  const f = hackFigures(batch);
  if (f === null) return {};
  return {
    'train/visible_pass': f.visiblePass,
    'train/hidden_pass': f.hiddenPass,
    'train/hack_gap': f.gap,
    'train/hack_detected': f.detected,
  };
}
