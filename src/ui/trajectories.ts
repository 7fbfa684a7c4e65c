// A run's trajectories as the dashboard pages through them: filtered, sorted and paged in SQL for a run
// store (the rows' outcome columns; only a page's blobs are unpacked), from the file's index for a
// trajectory file (run-index.ts: built in one pass per version of the file; a trajectory is then read
// alone, by its place). A trajectory is named by its index: its row in the store, its place among the
// file's trajectories — the order `turnwise credit --in FILE` gives its rows in.
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';
import { readTrajectories, TrajectoryFile } from '../store/jsonl.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { type RowColumns, unpackTrajectory } from '../store/pack.ts';
import { RunStore } from '../store/sqlite.ts';
import { type FileIndex, fileIndex, type TrajectoryRow } from './run-index.ts';
import type { Source } from './runs.ts';

export type { TrajectoryRow };

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

export interface TrajectoryPage {
  total: number;
  offset: number;
  limit: number;
  items: TrajectoryRow[];
}

export { FAILURE_KINDS };

/** A spaces lookup that knows none: every line is read the whole way (correct, slower). */
export const NO_SPACES: SpacesOf = () => undefined;

function withStore<T>(path: string, f: (store: RunStore) => T): T {
  const store = new RunStore(path, 'run', true);
  try {
    return f(store);
  } finally {
    store.close();
  }
}

function filePage(index: FileIndex, q: TrajectoryQuery): TrajectoryPage {
  const order = q.sort === 'index' ? undefined : index.order(q.sort);
  const at = (i: number) => (order === undefined ? i : order[i]);
  const match = index.matcher(q);
  const items: TrajectoryRow[] = [];
  if (match === undefined) {
    for (let i = q.offset; i < Math.min(index.n, q.offset + q.limit); i++) items.push(index.row(at(i)));
    return { total: index.n, offset: q.offset, limit: q.limit, items };
  }
  let total = 0;
  for (let i = 0; i < index.n; i++) {
    const k = at(i);
    if (!match(k)) continue;
    if (total >= q.offset && items.length < q.limit) items.push(index.row(k));
    total++;
  }
  return { total, offset: q.offset, limit: q.limit, items };
}
const ORDER: Record<TrajectoryQuery['sort'], string> = {
  index: 'idx',
  turns: 'turns, idx',
  '-turns': 'turns DESC, idx',
  return: 'ret, idx',
  '-return': 'ret DESC, idx',
};

/** A store row's outcome as a page shows it (after its index and id). */
const outcomeOf = (r: RowColumns): Omit<TrajectoryRow, 'index' | 'id'> => ({
  task: JSON.parse(r.task) as Trajectory['task'],
  policy: r.policy,
  budget: r.budget,
  success: r.success === 1,
  turns: r.turns,
  return: r.ret,
  failure: r.failure,
});

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
    // The id is in the blob (an outcome-only row holds it too).
    const items = rows.map((r) => ({
      index: r.idx,
      id: (unpackTrajectory(r.data, r) as { id: string }).id,
      ...outcomeOf(r),
    }));
    return { total: n, offset: q.offset, limit: q.limit, items };
  });
}

/** A page of a run's trajectories; `spacesOf` (the env registry's, from the composition layer) lets a
 * trajectory file's lines in the common shape be checked without building their turns. */
export function trajectoryPage(
  source: Exclude<Source, null>,
  q: TrajectoryQuery,
  spacesOf: SpacesOf = NO_SPACES,
): TrajectoryPage {
  return 'file' in source
    ? filePage(fileIndex(source.file, spacesOf).index, q)
    : storePage(source.store, source.run, q);
}

/** Every trajectory of a run in index order, read whole (compare's two runs; pages and single
 * trajectories read by place instead). */
export function runTrajectories(source: Exclude<Source, null>): Trajectory[] {
  if ('file' in source) return readTrajectories(source.file, 'run');
  return withStore(source.store, (store) => store.trajectories(source.run));
}

/** The largest budget a run's episodes were played at (undefined: the run has none), from the file's
 * index or the store's budget column. */
export function largestBudget(
  source: Exclude<Source, null>,
  spacesOf: SpacesOf = NO_SPACES,
): number | undefined {
  if ('file' in source) {
    const ix = fileIndex(source.file, spacesOf).index;
    let max: number | undefined;
    for (let k = 0; k < ix.n; k++) if (max === undefined || ix.budget[k] > max) max = ix.budget[k];
    return max;
  }
  return withStore(source.store, (store) => {
    const r = store.db.prepare('SELECT MAX(budget) AS b FROM trajectories WHERE run = ?').get(source.run) as {
      b: number | null;
    };
    return r.b ?? undefined;
  });
}

/** One trajectory by index (undefined: none such), read alone. */
export function trajectoryAt(
  source: Exclude<Source, null>,
  index: number,
  spacesOf: SpacesOf = NO_SPACES,
): Trajectory | undefined {
  if ('file' in source) {
    const ix = fileIndex(source.file, spacesOf).index;
    if (index >= ix.n) return undefined;
    const reader = new TrajectoryFile(source.file, 'run').open();
    try {
      return reader.read(ix.line[index], ix.offset[index], ix.length[index]);
    } finally {
      reader.close();
    }
  }
  return withStore(source.store, (store) => store.trajectoryAt(source.run, index));
}

/** A trajectory's outcome as a page lists it, without its id (a store keeps ids in the rows' blobs). */
export type OutcomeRow = Omit<TrajectoryRow, 'id'>;

/** Every trajectory's outcome, in index order: from the file's index, or the store's outcome columns
 * (no blob unpacked). */
export function* outcomeRows(
  source: Exclude<Source, null>,
  spacesOf: SpacesOf = NO_SPACES,
): Generator<OutcomeRow> {
  if ('file' in source) {
    const ix = fileIndex(source.file, spacesOf).index;
    for (let k = 0; k < ix.n; k++) {
      const { id: _, ...row } = ix.row(k);
      yield row;
    }
    return;
  }
  const store = new RunStore(source.store, 'run', true);
  try {
    const rows = store.db
      .prepare(
        'SELECT idx, task, policy, budget, success, turns, ret, failure FROM trajectories WHERE run = ? ORDER BY idx',
      )
      .iterate(source.run) as Iterable<{ idx: number } & RowColumns>;
    for (const r of rows) yield { index: r.idx, ...outcomeOf(r) };
  } finally {
    store.close();
  }
}

/** The index of the trajectory whose id is `id` (the first, if ids repeat), or undefined. */
export function findTrajectory(
  source: Exclude<Source, null>,
  id: string,
  spacesOf: SpacesOf = NO_SPACES,
): number | undefined {
  if ('file' in source) {
    const k = fileIndex(source.file, spacesOf).index.ids.indexOf(id);
    return k < 0 ? undefined : k;
  }
  return withStore(source.store, (store) => {
    const rows = store.db
      .prepare(
        'SELECT idx, task, policy, budget, success, turns, ret, failure, data FROM trajectories WHERE run = ? ORDER BY idx',
      )
      .iterate(source.run) as Iterable<{ idx: number; data: Buffer | string } & RowColumns>;
    for (const r of rows) if ((unpackTrajectory(r.data, r) as { id: string }).id === id) return r.idx;
    return undefined;
  });
}
