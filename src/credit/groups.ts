// Groups of a batch: the G samples of one task, found by identical `task` (JSON-equal: same env, params
// and seed, key order ignored). Dead groups — all outcomes equal, so std 0 and no GRPO gradient
// (docs/methods.md §1) — are counted per batch, and DAPO's dynamic sampling (Yu et al. 2025, "DAPO", §3.2)
// drops them and reports how many groups must be sampled again to refill the batch.
import type { Trajectory } from '../core/types.ts';
import { type OutcomeFn, outcomeReward } from './common.ts';

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

/** Groups met one trajectory at a time: each trajectory's group index, in order of first appearance
 * (what groupByTask and the bounded-memory credit of a file, file.ts, both number groups by). */
export class TaskGroups {
  private readonly byKey = new Map<string, number>();

  get size(): number {
    return this.byKey.size;
  }

  /** The group of a trajectory's task, its key, and whether this trajectory opened it. */
  add(t: Trajectory): { group: number; key: string; first: boolean } {
    const key = canonicalJson(t.task);
    const g = this.byKey.get(key);
    if (g !== undefined) return { group: g, key, first: false };
    this.byKey.set(key, this.byKey.size);
    return { group: this.byKey.size - 1, key, first: true };
  }
}

/** The batch's groups in order of first appearance; trajectories need not be contiguous. */
export function groupByTask(batch: readonly Trajectory[]): Group[] {
  const seen = new TaskGroups();
  const groups: Group[] = [];
  batch.forEach((t, i) => {
    const { group, key, first } = seen.add(t);
    if (first) groups.push({ key, indices: [] });
    groups[group].indices.push(i);
  });
  return groups;
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

/**
 * Dead-group counting, one trajectory at a time (memory: three flags per group), so that a batch in
 * memory (deadGroups) and a file read in bounded memory (file.ts) count with the same code: a group is
 * dead when its outcome rewards are all equal; a dead group is all-fail when none succeeded, else
 * all-succeed when every one did (a dead group of mixed success and equal rewards is neither).
 */
export class DeadGroupTally {
  private readonly firstReward: number[] = [];
  private readonly equal: boolean[] = [];
  private readonly fails: boolean[] = [];
  private readonly succeeds: boolean[] = [];

  /** A trajectory of group `g` (groups numbered 0, 1, … in order of first appearance). */
  add(g: number, reward: number, success: boolean): void {
    if (g === this.equal.length) {
      this.firstReward.push(reward);
      this.equal.push(true);
      this.fails.push(true);
      this.succeeds.push(true);
    } else if (reward !== this.firstReward[g]) this.equal[g] = false;
    if (success) this.fails[g] = false;
    else this.succeeds[g] = false;
  }

  isDead(g: number): boolean {
    return this.equal[g];
  }

  counts(): DeadGroupCounts {
    const counts: DeadGroupCounts = {
      groups: this.equal.length,
      live: 0,
      dead: 0,
      allFail: 0,
      allSucceed: 0,
    };
    for (let g = 0; g < this.equal.length; g++) {
      if (!this.equal[g]) counts.live++;
      else {
        counts.dead++;
        if (this.fails[g]) counts.allFail++;
        else if (this.succeeds[g]) counts.allSucceed++;
      }
    }
    return counts;
  }
}

export function deadGroups(
  batch: readonly Trajectory[],
  outcome: OutcomeFn = outcomeReward,
): DeadGroupReport {
  const groups = groupByTask(batch);
  const tally = new DeadGroupTally();
  groups.forEach((g, k) => {
    for (const i of g.indices) tally.add(k, outcome(batch[i]), batch[i].outcome.success);
  });
  return { counts: tally.counts(), dead: groups.map((_, k) => tally.isDead(k)), groups };
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
