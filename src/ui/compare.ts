// Two runs side by side, from their recorded trajectories only (nothing is rolled out again):
// Pass@(K,T) of each as `turnwise eval --in FILE --K … --T …` computes it (eval/recorded.ts, 2000
// bootstrap resamples, seed 0), their difference B − A, failure kinds, the step-quality proxy of
// their own turns, the invalid-output rate, and the tasks whose success differs most.
//
// The difference's interval is paired (the same resampled tasks for both, eval/bootstrap.ts) only when
// both runs hold the same tasks with the same samples per task — two rollouts of one task set. Runs on
// different tasks get no interval: the difference of two unpaired means is shown, said to be unpaired.
import { InputError } from '../core/errors.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { bootstrapPassKT, DEFAULT_RESAMPLES, type Interval } from '../eval/bootstrap.ts';
import type { PassMode, PerTask } from '../eval/evaluate.ts';
import type { Failures } from '../eval/failures.ts';
import { invalidRate } from '../eval/invalid.ts';
import type { PassCounts } from '../eval/passkt.ts';
import { passFromOutcomes } from '../eval/recorded.ts';

/** Budgets offered by default in prefix mode (those ≤ the smallest budget run, and that budget). */
const NICE_T = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
/** Tasks listed as differing most. */
const TOP_TASKS = 12;

export interface CompareSide {
  run: string;
  policies: string[];
  episodes: number;
  tasks: number;
  passKT: number[][];
  ci95: Interval[][];
  failures: Failures;
  /** Mean `info.quality` (the env's per-turn proxy) over the policy's own turns that carry one. */
  stepQuality: { mean: number | null; turns: number };
  /** Own turns whose output did not parse (0 for a policy that writes no text). */
  invalidRate: number;
}

export interface TaskDifference {
  task: Task;
  /** Success rate within the largest T (null: the task is not in that run). */
  a: { n: number; success: number } | null;
  b: { n: number; success: number } | null;
  /** b − a of the success rates; null when the task is in one run only. */
  diff: number | null;
}

export interface RunComparison {
  K: number[];
  T: number[];
  mode: PassMode;
  a: CompareSide;
  b: CompareSide;
  /** B − A per (K, T). */
  diff: number[][];
  /** Paired 95% interval of B − A (null: the runs do not hold the same tasks and samples). */
  diffCi95: Interval[][] | null;
  paired: boolean;
  /** The tasks with the largest |B − A| in success within the largest T, then those in one run only. */
  tasks: TaskDifference[];
}

export interface CompareQuery {
  K?: number[];
  T?: number[];
}

const taskKey = (t: Task) => JSON.stringify(t);

function stepQuality(ts: readonly Trajectory[]): CompareSide['stepQuality'] {
  let sum = 0;
  let turns = 0;
  for (const t of ts)
    for (const turn of t.turns) {
      const q = turn.info.quality;
      if (turn.forced === true || typeof q !== 'number' || !Number.isFinite(q)) continue;
      sum += q;
      turns++;
    }
  return { mean: turns === 0 ? null : sum / turns, turns };
}

function samplesPerTask(ts: readonly Trajectory[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const t of ts) n.set(taskKey(t.task), (n.get(taskKey(t.task)) ?? 0) + 1);
  return n;
}

/** The default grid: K = 1, 2, 4 … up to the fewest samples of a task; T = the budgets run (separate
 * mode) or budgets up to the smallest one run (prefix mode, each sample read at every T ≤ its budget). */
function defaultGrid(a: readonly Trajectory[], b: readonly Trajectory[], mode: PassMode) {
  const n = Math.min(...samplesPerTask(a).values(), ...samplesPerTask(b).values());
  const K: number[] = [];
  for (let k = 1; k <= n; k *= 2) K.push(k);
  if (mode === 'separate') {
    const inB = new Set(b.map((t) => t.budget));
    const T = [...new Set(a.map((t) => t.budget))].filter((x) => inB.has(x)).sort((x, y) => x - y);
    if (T.length === 0) throw new InputError('T', '', 'the two runs share no budget; give T=');
    return { K, T };
  }
  let minBudget = Number.POSITIVE_INFINITY;
  for (const t of [...a, ...b]) minBudget = Math.min(minBudget, t.budget);
  const T = NICE_T.filter((x) => x < minBudget);
  T.push(minBudget);
  return { K, T };
}

/** Counts in the task order of `order` from eval's per-task successes (undefined: a task is missing). */
function countsOf(perTask: readonly PerTask[], order: readonly string[], T: readonly number[]) {
  const byKey = new Map(perTask.map((p) => [taskKey(p.task), p]));
  const n = new Int32Array(order.length);
  const c = new Int32Array(order.length * T.length);
  for (let i = 0; i < order.length; i++) {
    const p = byKey.get(order[i]);
    if (p === undefined) return undefined;
    n[i] = p.n;
    T.forEach((x, j) => {
      c[i * T.length + j] = p.successWithin[String(x)];
    });
  }
  return { T, n, c } satisfies PassCounts;
}

function taskDifferences(a: readonly PerTask[], b: readonly PerTask[], Tmax: number): TaskDifference[] {
  const rate = (p: PerTask | undefined) =>
    p === undefined ? null : { n: p.n, success: p.successWithin[String(Tmax)] / p.n };
  const keys = [...new Set([...a, ...b].map((p) => taskKey(p.task)))];
  const byA = new Map(a.map((p) => [taskKey(p.task), p]));
  const byB = new Map(b.map((p) => [taskKey(p.task), p]));
  const rows = keys.map((k) => {
    const ra = rate(byA.get(k));
    const rb = rate(byB.get(k));
    return {
      task: (byA.get(k) ?? byB.get(k))!.task,
      a: ra,
      b: rb,
      diff: ra === null || rb === null ? null : rb.success - ra.success,
    };
  });
  // Largest |difference| first (ties: the order tasks first appear), then tasks of one run only.
  const rank = (d: number | null) => (d === null ? -1 : Math.abs(d));
  return rows
    .map((r, i) => ({ r, i }))
    .sort((x, y) => rank(y.r.diff) - rank(x.r.diff) || x.i - y.i)
    .slice(0, TOP_TASKS)
    .map(({ r }) => r);
}

/** Compares two runs' trajectories (A first). Throws InputError naming K or T for a grid that does not
 * fit the runs (as `eval --in` refuses it). */
export function compareRuns(
  a: { id: string; trajectories: readonly Trajectory[] },
  b: { id: string; trajectories: readonly Trajectory[] },
  q: CompareQuery,
): RunComparison {
  for (const side of [a, b])
    if (side.trajectories.length === 0)
      throw new InputError(side === a ? 'a' : 'b', side.id, 'has no trajectories to compare');
  // Prefix mode reads success within T off one run at the largest budget: only for runs whose policy
  // was not told its budget (docs/methods.md §5); else each T must have been run.
  const revealed = [...a.trajectories, ...b.trajectories].some((t) => t.revealBudget);
  const mode: PassMode = revealed ? 'separate' : 'prefix';
  const grid = defaultGrid(a.trajectories, b.trajectories, mode);
  const K = q.K ?? grid.K;
  const T = q.T ?? grid.T;
  const side = (s: typeof a, field: string) => {
    try {
      return passFromOutcomes(s.trajectories, s.id, K, T, mode, DEFAULT_RESAMPLES, 0);
    } catch (e) {
      // eval names its flags (--K, --T); here they are query parameters.
      if (e instanceof InputError && e.field.startsWith('--'))
        throw InputError.raw(e.field.slice(2), `${e.message.slice(e.field.length + 2)} (${field})`);
      throw e;
    }
  };
  const ra = side(a, 'run a');
  const rb = side(b, 'run b');
  const describe = (s: typeof a, r: typeof ra): CompareSide => ({
    run: s.id,
    policies: [...new Set(s.trajectories.map((t) => t.policy))],
    episodes: r.trajectories,
    tasks: r.perTask.length,
    passKT: r.passKT,
    ci95: r.ci95,
    failures: r.failures,
    stepQuality: stepQuality(s.trajectories),
    invalidRate: invalidRate(s.trajectories),
  });
  const order = ra.perTask.map((p) => taskKey(p.task));
  const ca = countsOf(ra.perTask, order, T);
  const cb = countsOf(rb.perTask, order, T);
  const paired =
    ca !== undefined &&
    cb !== undefined &&
    rb.perTask.length === order.length &&
    ca.n.every((n, i) => n === cb.n[i]);
  const diffCi95 = paired
    ? (bootstrapPassKT([cb, ca], K, { resamples: DEFAULT_RESAMPLES, seed: 0 }).diffCi ?? null)
    : null;
  return {
    K: [...K],
    T: [...T],
    mode,
    a: describe(a, ra),
    b: describe(b, rb),
    diff: rb.passKT.map((row, k) => row.map((x, j) => x - ra.passKT[k][j])),
    diffCi95,
    paired,
    tasks: taskDifferences(ra.perTask, rb.perTask, T[T.length - 1]),
  };
}
