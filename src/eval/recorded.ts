// `turnwise eval --in FILE.jsonl` as a library call: Pass@(K,T) and the failure breakdown of recorded
// trajectories (a harness run, a rollout), streamed — the caller hands the outcomes over one at a time
// (store/outcomes.ts reads them from a file, each line validated).
import { InputError } from '../core/errors.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { bootstrapPassKT } from './bootstrap.ts';
import { type EvalReport, type PassMode, perTask } from './evaluate.ts';
import { type Failures, FailureTally } from './failures.ts';
import { checkKT, type PassCounts, passKT } from './passkt.ts';

/** A trajectory without its turns: all Pass@(K,T) of a record needs. */
export type RecordedOutcome = Omit<Trajectory, 'turns'>;

/** A growable count table: `rows` × `width` integers, a row added per new task. */
class Counts {
  data = new Int32Array(1024);
  constructor(readonly width: number) {}

  addRow(row: number): void {
    const need = (row + 1) * this.width;
    if (need <= this.data.length) return;
    const bigger = new Int32Array(Math.max(need, this.data.length * 2));
    bigger.set(this.data);
    this.data = bigger;
  }

  slice(rows: number): Int32Array {
    return this.data.slice(0, rows * this.width);
  }
}

/**
 * Pass@(K,T) of recorded outcomes with bootstrap intervals over tasks and the failure breakdown.
 * Prefix mode (success within T read off the first-success turn of one run at T_max) needs budget-blind
 * runs: it is refused when any trajectory was run with the budget revealed, since the agent may have
 * played differently for a smaller T (docs/methods.md §5). Separate mode reads, for each T, the
 * trajectories run at budget T.
 *
 * The outcomes are read once (`source` names them in messages): only the per-task counts of both modes
 * are kept — the mode is known only once every outcome has said whether its budget was revealed —
 * never the trajectories.
 */
export function passFromOutcomes(
  outcomes: Iterable<RecordedOutcome>,
  source: string,
  K: readonly number[],
  T: readonly number[],
  mode: PassMode | undefined,
  resamples: number,
  seed: number,
): EvalReport & { failures: Failures; trajectories: number } {
  const nT = T.length;
  // Tasks in the order they first appear, one row of counts each.
  const index = new Map<string, number>();
  const tasks: Task[] = [];
  const prefixN = new Counts(1);
  const prefixC = new Counts(nT);
  const perT = new Counts(nT);
  const separateC = new Counts(nT);
  const fails = new FailureTally();
  let total = 0;
  let revealed = 0;
  let minBudget = Number.POSITIVE_INFINITY;
  for (const t of outcomes) {
    total++;
    if (t.revealBudget) revealed++;
    if (t.budget < minBudget) minBudget = t.budget;
    fails.add(t.outcome);
    const key = JSON.stringify(t.task);
    let i = index.get(key);
    if (i === undefined) {
      i = tasks.length;
      index.set(key, i);
      tasks.push(t.task);
      for (const c of [prefixN, prefixC, perT, separateC]) c.addRow(i);
    }
    prefixN.data[i]++;
    const f = t.outcome.firstSuccessTurn;
    if (f !== null) for (let j = 0; j < nT; j++) if (f <= T[j]) prefixC.data[i * nT + j]++;
    const j = T.indexOf(t.budget);
    if (j >= 0) {
      perT.data[i * nT + j]++;
      if (t.outcome.success) separateC.data[i * nT + j]++;
    }
  }
  const chosen: PassMode = mode ?? (revealed > 0 ? 'separate' : 'prefix');
  if (chosen === 'prefix' && revealed > 0) {
    throw new InputError(
      '--mode',
      'prefix',
      `${revealed} of ${total} trajectories in ${source} were run with the budget revealed, so success within a smaller T cannot be read off their first-success turns; record one run per T and use --mode separate`,
    );
  }
  const keys = [...index.keys()];
  let n: Int32Array;
  let c: Int32Array;
  if (chosen === 'prefix') {
    if (T[nT - 1] > minBudget) {
      throw new InputError(
        '--T',
        T.join(','),
        `expected budgets ≤ ${minBudget}, the smallest budget the trajectories were run at`,
      );
    }
    n = prefixN.slice(keys.length);
    c = prefixC.slice(keys.length);
  } else {
    const p = perT.data;
    n = new Int32Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      for (let j = 0; j < nT; j++) {
        if (p[i * nT + j] !== p[i * nT]) {
          throw new InputError(
            '--T',
            T.join(','),
            `task ${keys[i]} has ${p[i * nT]} samples at T=${T[0]} but ${p[i * nT + j]} at T=${T[j]}; separate mode needs the same samples at every T`,
          );
        }
      }
      n[i] = p[i * nT];
      if (n[i] === 0)
        throw new InputError('--T', T.join(','), `task ${keys[i]} has no trajectory run at budget ${T[0]}`);
    }
    c = separateC.slice(keys.length);
  }
  const counts: PassCounts = { T, n, c };
  checkKT(K, counts);
  const { ci } = bootstrapPassKT([counts], K, { resamples, seed });
  return {
    K: [...K],
    T: [...T],
    mode: chosen,
    passKT: passKT(counts, K),
    ci95: ci[0],
    perTask: perTask(tasks, counts),
    failures: fails.result(),
    trajectories: total,
  };
}
