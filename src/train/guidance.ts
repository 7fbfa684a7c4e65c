// Expert-prefix guidance (docs/methods.md §4; Agent-G2 spirit, BREAD-style fallback): for a task whose group
// is likely dead, the first L turns are played by an expert and the policy continues from there; prefix
// turns are marked `forced` and excluded from the loss. L ~ N(μ_task, σ²), rounded and clipped to
// [0, maxPrefix], with μ_task = maxPrefix · (1 − ŝ_task): the harder a task has proven in the success
// logs already collected, the longer its prefix. ŝ is a smoothed success rate,
// ŝ = (successes + m·prior) / (episodes + m), so an unseen task starts at the prior.
import type { Rng } from '../core/rng.ts';

export interface GuideOptions {
  /** Longest prefix, in turns. */
  maxPrefix: number;
  /** Standard deviation of L, in turns. */
  sigma: number;
  /** Success rate assumed for a task never seen (0 = guide unseen tasks fully). */
  prior: number;
  /** Pseudo-count m of the prior. */
  strength: number;
}

export interface GuideState {
  /** Per task key: [successes, episodes]. */
  log: Record<string, [number, number]>;
}

export class PrefixGuide {
  readonly options: GuideOptions;
  private log: Map<string, [number, number]>;

  constructor(options: GuideOptions, state?: GuideState) {
    this.options = options;
    this.log = new Map(Object.entries(state?.log ?? {}).map(([k, v]) => [k, [v[0], v[1]]]));
  }

  /** Adds outcomes of unguided episodes of a task to its success log. */
  record(task: string, successes: number, episodes: number): void {
    const cur = this.log.get(task) ?? [0, 0];
    this.log.set(task, [cur[0] + successes, cur[1] + episodes]);
  }

  successRate(task: string): number {
    const [s, n] = this.log.get(task) ?? [0, 0];
    const { prior, strength } = this.options;
    return (s + strength * prior) / (n + strength);
  }

  meanPrefix(task: string): number {
    return this.options.maxPrefix * (1 - this.successRate(task));
  }

  samplePrefix(task: string, rng: Rng): number {
    const L = Math.round(this.meanPrefix(task) + this.options.sigma * rng.normal());
    return Math.min(this.options.maxPrefix, Math.max(0, L));
  }

  state(): GuideState {
    return { log: Object.fromEntries([...this.log].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
  }
}
