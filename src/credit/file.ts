// Credit of a trajectory file in bounded memory, byte for byte what creditBatch (or any per-group
// method) gives over the whole batch in memory. Pass 1 indexes the file (CreditIndex): each valid
// line's place, its group (groups.ts TaskGroups), the dead-group tally (groups.ts DeadGroupTally) and
// the --task-norm key of each group — no trajectory is held. The later passes compute one group at a
// time from its lines read back by place and give the rows in file order; task normalisation is
// task-norm.ts's own taskNormRows over those rows. The file itself is read by store/ (TrajectoryFile);
// credit/ sees only the two operations below.
import type { Trajectory } from '../core/types.ts';
import type { Advantages } from './common.ts';
import { outcomeReward } from './common.ts';
import { type DeadGroupCounts, DeadGroupTally, TaskGroups } from './groups.ts';
import { TASK_NORM_DEFAULTS, taskNormKey, taskNormRows } from './task-norm.ts';

/** A reader of trajectories back by the place the scan gave (one pass; closed by its user). */
export interface TrajectoryReader {
  read(line: number, offset: number, bytes: number): Trajectory;
  close(): void;
}

/** A trajectory file as credit reads it: a scan of its valid trajectories with each one's place (line
 * number, byte offset and length; the scan refuses a file that holds none), and readers by place. */
export interface IndexedTrajectories {
  scan(): Iterable<readonly [trajectory: Trajectory, line: number, offset: number, bytes: number]>;
  open(): TrajectoryReader;
}

/** Advantages (numbers) that groups computed ahead of their rows may hold before they are dropped —
 * and computed again when their next row comes: memory stays bounded whatever the file's order
 * (exported for the test of that path). */
export const CREDIT_CACHE = { numbers: 4_000_000 };

/** A growable typed array. */
function grow<A extends Float64Array | Int32Array>(a: A, need: number): A {
  if (need <= a.length) return a;
  const bigger = new (a.constructor as new (n: number) => A)(Math.max(need, a.length * 2));
  bigger.set(a);
  return bigger;
}

/**
 * Pass 1 of the credit of a file: only what the later passes need — each valid line's place in the
 * file and group, the groups (by identical task, in order of first appearance) with their dead-group
 * tally, and each group's --task-norm key (`by`; none without). `visit` sees each valid trajectory
 * (a caller's refusals to find before any output, the widths of a table).
 */
export class CreditIndex {
  n = 0;
  offsets = new Float64Array(1024);
  bytes = new Int32Array(1024);
  lines = new Int32Array(1024);
  group = new Int32Array(1024);
  /** The next line of the same group, or −1. */
  next = new Int32Array(1024);
  readonly first: number[] = [];
  readonly last: number[] = [];
  readonly size: number[] = [];
  /** Per group: the index of its --task-norm key. */
  readonly normKey: number[] = [];
  normKeys = 0;
  readonly counts: DeadGroupCounts;

  constructor(
    readonly source: IndexedTrajectories,
    by: 'env' | 'task' | undefined,
    visit?: (t: Trajectory) => void,
  ) {
    const groups = new TaskGroups();
    const tally = new DeadGroupTally();
    const normOf = taskNormKey(by ?? TASK_NORM_DEFAULTS.by);
    const norms = new Map<string, number>();
    for (const [t, line, offset, bytes] of source.scan()) {
      visit?.(t);
      const k = this.n++;
      this.offsets = grow(this.offsets, this.n);
      this.bytes = grow(this.bytes, this.n);
      this.lines = grow(this.lines, this.n);
      this.group = grow(this.group, this.n);
      this.next = grow(this.next, this.n);
      this.offsets[k] = offset;
      this.bytes[k] = bytes;
      this.lines[k] = line;
      this.next[k] = -1;
      const { group: g, first } = groups.add(t);
      if (first) {
        this.first.push(k);
        this.last.push(k);
        this.size.push(0);
        // Every trajectory of a group has the same task, so the same key.
        const nk = normOf(t);
        let ni = norms.get(nk);
        if (ni === undefined) {
          ni = norms.size;
          norms.set(nk, ni);
        }
        this.normKey.push(ni);
      } else {
        this.next[this.last[g]] = k;
        this.last[g] = k;
      }
      this.group[k] = g;
      this.size[g]++;
      tally.add(g, outcomeReward(t), t.outcome.success);
    }
    this.normKeys = norms.size;
    this.counts = tally.counts();
  }

  /** The trajectories in file order, read back one at a time. */
  *trajectories(): Generator<Trajectory> {
    const reader = this.source.open();
    try {
      for (let k = 0; k < this.n; k++) yield reader.read(this.lines[k], this.offsets[k], this.bytes[k]);
    } finally {
      reader.close();
    }
  }

  /** The rows of advantages in file order, each group's computed by `compute` when its first row
   * is due (its lines read back by place) and kept until its last — unless CREDIT_CACHE is full. */
  *rows(compute: (group: Trajectory[]) => Advantages): Generator<number[]> {
    const reader = this.source.open();
    try {
      const cache = new Map<number, { rows: Advantages; left: number; numbers: number }>();
      let held = 0;
      const seen = new Int32Array(this.first.length);
      for (let k = 0; k < this.n; k++) {
        const g = this.group[k];
        const pos = seen[g]++;
        let c = cache.get(g);
        if (c === undefined) {
          const members: Trajectory[] = [];
          for (let m = this.first[g]; m !== -1; m = this.next[m])
            members.push(reader.read(this.lines[m], this.offsets[m], this.bytes[m]));
          const rows = compute(members);
          let numbers = 0;
          for (const r of rows) numbers += r.length;
          if (held + numbers > CREDIT_CACHE.numbers) {
            cache.clear();
            held = 0;
          }
          c = { rows, left: this.size[g] - pos, numbers };
          cache.set(g, c);
          held += numbers;
        }
        const row = c.rows[pos];
        if (--c.left === 0) {
          cache.delete(g);
          held -= c.numbers;
        }
        yield row;
      }
    } finally {
      reader.close();
    }
  }
}

/**
 * The rows of a file's credit in file order: `compute` per group (a method without its --task-norm),
 * then, with `by`, task normalisation as taskNorm() applies it to the whole batch — taskNormRows over
 * the rows, which are computed again for each of its three passes.
 */
export function creditRows(
  ix: CreditIndex,
  compute: (group: Trajectory[]) => Advantages,
  by: 'env' | 'task' | undefined,
): Generator<number[]> {
  if (by === undefined) return ix.rows(compute);
  return taskNormRows(
    () => ix.rows(compute),
    (k) => ix.normKey[ix.group[k]],
    ix.normKeys,
  );
}
