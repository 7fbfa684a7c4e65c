// A run's trajectories as the dashboard pages through them: filtered, sorted and paged in SQL for a run
// store (the rows' outcome columns; only a page's blobs are unpacked), in memory for a trajectory file
// (read once per version of the file). A trajectory is named by its index: its row in the store, its
// place among the file's trajectories — the order `turnwise credit --in FILE` gives its rows in.
import { statSync } from 'node:fs';
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';
import { readTrajectories } from '../store/jsonl.ts';
import { type RowColumns, unpackTrajectory } from '../store/pack.ts';
import { RunStore } from '../store/sqlite.ts';
import type { Source } from './runs.ts';

export const SORTS = ['index', 'turns', '-turns', 'return', '-return'] as const;
export const OUTCOMES = ['success', 'failure'] as const;
export const MAX_LIMIT = 1000;

export interface TrajectoryQuery {
  offset: number;
  limit: number;
  task?: number;
  outcome?: (typeof OUTCOMES)[number];
  failure?: FailureKind;
  policy?: string;
  /** Length: turns from minTurns to maxTurns, both included. */
  minTurns?: number;
  maxTurns?: number;
  sort: (typeof SORTS)[number];
}

/** One trajectory of a page: its outcome, without its turns. */
export interface TrajectoryRow {
  index: number;
  id: string;
  task: Trajectory['task'];
  policy: string;
  budget: number;
  success: boolean;
  turns: number;
  return: number;
  failure: string | null;
}

export interface TrajectoryPage {
  total: number;
  offset: number;
  limit: number;
  items: TrajectoryRow[];
}

export { FAILURE_KINDS };

/** The last file read, by path and version (size, mtime): a dashboard pages through one at a time. */
let cached: { key: string; trajectories: Trajectory[] } | undefined;

function fileTrajectories(path: string): Trajectory[] {
  const st = statSync(path);
  const key = `${path}|${st.size}|${st.mtimeMs}`;
  if (cached?.key !== key) cached = { key, trajectories: readTrajectories(path, 'run') };
  return cached.trajectories;
}

function withStore<T>(path: string, f: (store: RunStore) => T): T {
  const store = new RunStore(path, 'run', true);
  try {
    return f(store);
  } finally {
    store.close();
  }
}

const rowOf = (t: Trajectory, index: number): TrajectoryRow => ({
  index,
  id: t.id,
  task: t.task,
  policy: t.policy,
  budget: t.budget,
  success: t.outcome.success,
  turns: t.outcome.turns,
  return: t.outcome.return,
  failure: t.outcome.failure,
});

function filePage(path: string, q: TrajectoryQuery): TrajectoryPage {
  const rows = fileTrajectories(path)
    .map(rowOf)
    .filter(
      (r) =>
        (q.task === undefined || r.task.seed === q.task) &&
        (q.outcome === undefined || r.success === (q.outcome === 'success')) &&
        (q.failure === undefined || r.failure === q.failure) &&
        (q.policy === undefined || r.policy === q.policy) &&
        (q.minTurns === undefined || r.turns >= q.minTurns) &&
        (q.maxTurns === undefined || r.turns <= q.maxTurns),
    );
  if (q.sort !== 'index') {
    const key = q.sort.replace('-', '') as 'turns' | 'return';
    const sign = q.sort.startsWith('-') ? -1 : 1;
    rows.sort((a, b) => sign * (a[key] - b[key]) || a.index - b.index);
  }
  return {
    total: rows.length,
    offset: q.offset,
    limit: q.limit,
    items: rows.slice(q.offset, q.offset + q.limit),
  };
}

const ORDER: Record<TrajectoryQuery['sort'], string> = {
  index: 'idx',
  turns: 'turns, idx',
  '-turns': 'turns DESC, idx',
  return: 'ret, idx',
  '-return': 'ret DESC, idx',
};

function storePage(path: string, run: string, q: TrajectoryQuery): TrajectoryPage {
  const where = ['run = ?'];
  const args: (string | number)[] = [run];
  if (q.task !== undefined) {
    where.push("json_extract(task, '$.seed') = ?");
    args.push(q.task);
  }
  if (q.outcome !== undefined) {
    where.push('success = ?');
    args.push(q.outcome === 'success' ? 1 : 0);
  }
  if (q.failure !== undefined) {
    where.push('failure = ?');
    args.push(q.failure);
  }
  if (q.policy !== undefined) {
    where.push('policy = ?');
    args.push(q.policy);
  }
  if (q.minTurns !== undefined) {
    where.push('turns >= ?');
    args.push(q.minTurns);
  }
  if (q.maxTurns !== undefined) {
    where.push('turns <= ?');
    args.push(q.maxTurns);
  }
  const cond = where.join(' AND ');
  return withStore(path, (store) => {
    const { n } = store.db.prepare(`SELECT COUNT(*) AS n FROM trajectories WHERE ${cond}`).get(...args) as {
      n: number;
    };
    const rows = store.db
      .prepare(
        `SELECT idx, task, policy, budget, success, turns, ret, failure, data FROM trajectories WHERE ${cond} ORDER BY ${ORDER[q.sort]} LIMIT ? OFFSET ?`,
      )
      .all(...args, q.limit, q.offset) as ({ idx: number; data: Buffer | string } & RowColumns)[];
    const items = rows.map((r) => {
      // The id is in the blob (an outcome-only row holds it too).
      const { id } = unpackTrajectory(r.data, r) as { id: string };
      return {
        index: r.idx,
        id,
        task: JSON.parse(r.task) as Trajectory['task'],
        policy: r.policy,
        budget: r.budget,
        success: r.success === 1,
        turns: r.turns,
        return: r.ret,
        failure: r.failure,
      };
    });
    return { total: n, offset: q.offset, limit: q.limit, items };
  });
}

export function trajectoryPage(source: Exclude<Source, null>, q: TrajectoryQuery): TrajectoryPage {
  return 'file' in source ? filePage(source.file, q) : storePage(source.store, source.run, q);
}

/** Every trajectory of a run in index order, with the position of `index` among them (-1: none). */
export function runTrajectories(
  source: Exclude<Source, null>,
  index: number,
): { trajectories: Trajectory[]; at: number } {
  if ('file' in source) {
    const trajectories = fileTrajectories(source.file);
    return { trajectories, at: index < trajectories.length ? index : -1 };
  }
  return withStore(source.store, (store) => {
    const idx = (
      store.db.prepare('SELECT idx FROM trajectories WHERE run = ? ORDER BY idx').all(source.run) as {
        idx: number;
      }[]
    ).map((r) => r.idx);
    return { trajectories: store.trajectories(source.run), at: idx.indexOf(index) };
  });
}

/** One trajectory by index (undefined: none such). */
export function trajectoryAt(source: Exclude<Source, null>, index: number): Trajectory | undefined {
  if ('file' in source) return fileTrajectories(source.file)[index];
  return withStore(source.store, (store) => store.trajectoryAt(source.run, index));
}
