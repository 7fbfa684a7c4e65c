// Groups of a batch: the G samples of one task, found by identical `task` (JSON-equal: same env, params
// and seed, key order ignored). Dead groups — all outcomes equal, so std 0 and no GRPO gradient
// (docs/methods.md §1) — are counted per batch, and DAPO's dynamic sampling (Yu et al. 2025, "DAPO", §3.2)
// drops them and reports how many groups must be sampled again to refill the batch.
import type { Trajectory } from '../core/types.ts';
import { allEqual, type OutcomeFn, outcomeReward } from './common.ts';

/** JSON with object keys sorted, so that two JSON-equal values give the same string. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

export interface Group {
  /** canonicalJson(task). */
  key: string;
  /** Positions of the group's trajectories in the batch, in batch order. */
  indices: number[];
}

/** The batch's groups in order of first appearance; trajectories need not be contiguous. */
export function groupByTask(batch: readonly Trajectory[]): Group[] {
  const byKey = new Map<string, Group>();
  batch.forEach((t, i) => {
    const key = canonicalJson(t.task);
    let g = byKey.get(key);
    if (g === undefined) {
      g = { key, indices: [] };
      byKey.set(key, g);
    }
    g.indices.push(i);
  });
  return [...byKey.values()];
}

export interface DeadGroupCounts {
  groups: number;
  live: number;
  /** Groups whose outcome rewards are all equal (a group of one is always dead). */
  dead: number;
  /** Dead groups in which every trajectory failed / succeeded (by `outcome.success`). */
  allFail: number;
  allSucceed: number;
}

export interface DeadGroupReport {
  counts: DeadGroupCounts;
  /** Per group (same order as groupByTask): whether it is dead. */
  dead: boolean[];
  groups: Group[];
}

export function deadGroups(
  batch: readonly Trajectory[],
  outcome: OutcomeFn = outcomeReward,
): DeadGroupReport {
  const groups = groupByTask(batch);
  const counts: DeadGroupCounts = { groups: groups.length, live: 0, dead: 0, allFail: 0, allSucceed: 0 };
  const dead = groups.map((g) => {
    const isDead = allEqual(g.indices.map((i) => outcome(batch[i])));
    if (isDead) {
      counts.dead++;
      if (g.indices.every((i) => !batch[i].outcome.success)) counts.allFail++;
      else if (g.indices.every((i) => batch[i].outcome.success)) counts.allSucceed++;
    } else counts.live++;
    return isDead;
  });
  return { counts, dead, groups };
}

/** The counts as namespaced metrics (docs/style.md: `credit/dead_groups`). */
export function deadGroupMetrics(counts: DeadGroupCounts): Record<string, number> {
  return {
    'credit/groups': counts.groups,
    'credit/dead_groups': counts.dead,
    'credit/all_fail_groups': counts.allFail,
    'credit/all_succeed_groups': counts.allSucceed,
    'credit/live_share': counts.groups > 0 ? counts.live / counts.groups : 0,
  };
}

export interface DynamicSamplingResult {
  /** The live groups' trajectories, in batch order. */
  kept: Trajectory[];
  /** Their positions in the input batch. */
  keptIndices: number[];
  counts: DeadGroupCounts;
  /** Groups still to sample to reach `targetGroups` live groups (0 when the batch is full). */
  refills: number;
}

/**
 * DAPO's dynamic-sampling filter: keep only groups with outcome contrast. The caller oversamples until
 * `refills` is 0; `targetGroups` defaults to the number of groups given (refills = dead groups).
 */
export function dynamicSampling(
  batch: readonly Trajectory[],
  options: { targetGroups?: number; outcome?: OutcomeFn } = {},
): DynamicSamplingResult {
  const report = deadGroups(batch, options.outcome);
  const target = options.targetGroups ?? report.counts.groups;
  if (!Number.isInteger(target) || target < 0)
    throw new RangeError(`targetGroups must be an integer ≥ 0, got ${target}`);
  const keptIndices: number[] = [];
  report.groups.forEach((g, k) => {
    if (!report.dead[k]) keptIndices.push(...g.indices);
  });
  keptIndices.sort((a, b) => a - b);
  return {
    kept: keptIndices.map((i) => batch[i]),
    keptIndices,
    counts: report.counts,
    refills: Math.max(0, target - report.counts.live),
  };
}
