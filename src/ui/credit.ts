// The credit columns of one trajectory: for each method, the row `turnwise credit --in FILE --method M`
// gives it over the whole run — computed from its group alone. Every method of the registry credits a
// group (the task's samples) from that group only (credit/index.ts creditBatch; `exact` and GAE's exact
// values a trajectory alone), so the group's lines, read back by their places (run-index.ts), give the
// same numbers as the whole run. Two things span the run and are handled so:
//   - `task-norm` standardises over every group of an env (or task) key: such a column is computed
//     over the whole run once per version of it and method, and kept (bounded, CACHE below);
//   - the refusals of a method that needs the exact oracle come from `credit --in`'s first pass, which
//     tries the first trajectory of each (env, policy, budget, revealBudget): those trajectories are
//     read with the group (run-index.ts keeps them), so the same request is refused with the same line.
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import type { IndexedTrajectories } from '../credit/file.ts';
import type { MethodSpec } from '../credit/index.ts';
import { TrajectoryFile } from '../store/jsonl.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { RunStore } from '../store/sqlite.ts';
import { fileIndex, storeIndex } from './run-index.ts';
import type { Source } from './runs.ts';

/** The credit of a trajectory set as `turnwise credit --in FILE` computes it (studies/credit-file.ts,
 * handed in by the composition layer: it resolves `exact` against the env registry's oracles). */
export type CreditOf = (source: IndexedTrajectories, spec: MethodSpec) => { rows: () => Generator<number[]> };

/** Whole-run columns (task-norm) kept: at most this many advantages in all, and always the last one. */
export const CACHE = { numbers: 8_000_000 };
const columns = new Map<string, { starts: Float64Array; values: Float64Array }>();

/** A trajectory set in memory as credit/file.ts reads a file: place = index. */
function inMemory(ts: readonly Trajectory[]): IndexedTrajectories {
  return {
    *scan() {
      for (let i = 0; i < ts.length; i++) yield [ts[i], i, i, 0] as const;
    },
    open: () => ({ read: (line: number) => ts[line], close: () => {} }),
  };
}

/** A run's trajectories by position (0 … n−1), as credit reads them. */
interface RunPositions {
  /** The run and its version: what a whole-run column is kept under. */
  key: string;
  position: number;
  /** The positions read with a trajectory's group: its members and the probes, in order. */
  nearby: number[];
  subset(positions: readonly number[]): IndexedTrajectories;
  whole(): IndexedTrajectories;
  close(): void;
}

/** The union of two ascending lists. */
function union(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = j >= b.length || (i < a.length && a[i] <= b[j]) ? a[i++] : b[j++];
    if (out.at(-1) !== x) out.push(x);
  }
  return out;
}

function filePositions(path: string, index: number, spacesOf: SpacesOf): RunPositions {
  const { version, index: ix } = fileIndex(path, spacesOf);
  const file = new TrajectoryFile(path, 'run');
  return {
    key: `${path}|${version}`,
    position: index,
    nearby: union(ix.links.members(index), ix.links.probes),
    subset: (positions) => ({
      *scan() {
        const reader = file.open();
        try {
          for (const p of positions) {
            const [line, offset, bytes] = [ix.line[p], ix.offset[p], ix.length[p]];
            yield [reader.read(line, offset, bytes), line, offset, bytes] as const;
          }
        } finally {
          reader.close();
        }
      },
      open: () => file.open(),
    }),
    whole: () => file,
    close: () => {},
  };
}

/** A store run's positions, read through one connection (closed by the caller: `close`). */
function storePositions(path: string, run: string, index: number): RunPositions {
  const store = new RunStore(path, 'run', true);
  try {
    const { version, index: ix } = storeIndex(store, run);
    const position = ix.position(index);
    // A store's trajectory is found by its row: its idx is its place.
    const reader = { read: (idx: number) => store.trajectoryAt(run, idx) as Trajectory, close: () => {} };
    return {
      key: `${path}#${run}|${version}`,
      position,
      nearby: union(ix.links.members(position), ix.links.probes),
      subset: (positions) => ({
        *scan() {
          for (const p of positions) yield [reader.read(ix.idx[p]), ix.idx[p], 0, 0] as const;
        },
        open: () => reader,
      }),
      whole: () => inMemory(store.trajectories(run)),
      close: () => store.close(),
    };
  } catch (e) {
    store.close();
    throw e;
  }
}

/** The rows of a method; the refusals `credit --in FILE` gives (an env with no oracle for `exact`)
 * name the query parameter here. */
function* rowsOf(credit: CreditOf, source: IndexedTrajectories, spec: MethodSpec): Generator<number[]> {
  try {
    yield* credit(source, spec).rows();
  } catch (e) {
    if (e instanceof InputError && /^--(method|values): /.test(e.message))
      throw InputError.raw('credit', e.message.replace(/^--(method|values): /, ''));
    throw e;
  }
}

/** Row `position` of a method computed over the whole run, the run's column kept once computed. */
function wholeRow(run: RunPositions, spec: MethodSpec, credit: CreditOf): number[] {
  const key = `${run.key}|${spec.label}`;
  let column = columns.get(key);
  if (column === undefined) {
    const starts: number[] = [0];
    const values: number[] = [];
    for (const row of rowsOf(credit, run.whole(), spec)) {
      for (const a of row) values.push(a);
      starts.push(values.length);
    }
    column = { starts: Float64Array.from(starts), values: Float64Array.from(values) };
    let held = column.values.length;
    for (const [k, c] of [...columns].reverse()) {
      held += c.values.length;
      if (held > CACHE.numbers) columns.delete(k);
    }
    columns.set(key, column);
  }
  return Array.from(column.values.subarray(column.starts[run.position], column.starts[run.position + 1]));
}

/** Row `position` of a method computed over the trajectory's group (and the probes) alone. */
function groupRow(run: RunPositions, spec: MethodSpec, credit: CreditOf): number[] {
  const at = run.nearby.indexOf(run.position);
  let k = 0;
  for (const row of rowsOf(credit, run.subset(run.nearby), spec)) if (k++ === at) return row;
  throw new Error(`credit gave no row ${at} of ${run.nearby.length}`);
}

/**
 * The credit columns of trajectory `index` of a run (one that exists): per method label, its per-turn
 * advantages — `turnwise credit --in`'s row for it, byte for byte.
 */
export function creditColumns(
  source: Exclude<Source, null>,
  index: number,
  specs: readonly MethodSpec[],
  credit: CreditOf,
  spacesOf: SpacesOf,
): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  if (specs.length === 0) return out;
  const run =
    'file' in source
      ? filePositions(source.file, index, spacesOf)
      : storePositions(source.store, source.run, index);
  try {
    for (const spec of specs)
      out[spec.label] =
        spec.params.taskNorm === undefined ? groupRow(run, spec, credit) : wholeRow(run, spec, credit);
    return out;
  } finally {
    run.close();
  }
}
