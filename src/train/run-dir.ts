// A training run on disk:
//   config.json             the resolved config (what --resume reads back)
//   run.sqlite              the run store: one run row, trajectories and metrics keyed by iteration
//   metrics.jsonl           one line per iteration, rebuilt from the store on resume
//   checkpoint.safetensors  the full training state (train/state.ts), written atomically
//   policy.safetensors      the policy alone, loadable anywhere with `--policy <run dir>`
//   summary.json            the final evaluation, when the run completed
// With a rubric reward (train --reward), run.sqlite's `judgements` table holds, beside each trajectory's
// row, what the rubric gave it: the score, every criterion's, every judge call (train/reward.ts).
//   lock                    {pid, host, started} while a process writes the run (store/lock.ts)
// config.json and summary.json are written whole and atomically (store/atomic.ts), the checkpoints by
// rename too; metrics.jsonl is derived — rewritten from the store on every resume — so a crash at any
// byte of it costs nothing; the store is SQLite (WAL), whose transactions survive a crash whole or not
// at all. What a crash cannot cause but damage can (a truncated or corrupt file) is refused on resume
// naming the file; `--restart` starts the run over deliberately.
// Order of writes per iteration: the store transaction (trajectories + metrics) first, then — every
// checkpointEvery iterations — the checkpoint. A kill between the two leaves rows newer than the
// checkpoint, which resume deletes before recomputing them.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import { writeCheckpoint } from '../nn/checkpoint.ts';
import { writeFileAtomic } from '../store/atomic.ts';
import { JsonlWriter, readText } from '../store/jsonl.ts';
import { DirLock } from '../store/lock.ts';
import { RunStore } from '../store/sqlite.ts';
import { parseTrainConfig, type TrainConfig } from './config.ts';
import { loadTrainState, type RunState, saveTrainState, type TrainParts } from './state.ts';

export const RUN_ID = 'train';
export const FILES = {
  config: 'config.json',
  store: 'run.sqlite',
  metrics: 'metrics.jsonl',
  checkpoint: 'checkpoint.safetensors',
  policy: 'policy.safetensors',
  summary: 'summary.json',
} as const;

export class RunDir {
  readonly dir: string;
  readonly store: RunStore;
  private metrics: JsonlWriter;
  private readonly lock: DirLock;
  /** The run's clock: seconds of its earlier parts (those a resume continues) and when this part started. */
  clock = { before: 0, started: performance.now() };

  private constructor(dir: string, store: RunStore, metrics: JsonlWriter, lock: DirLock) {
    this.dir = dir;
    this.store = store;
    this.metrics = metrics;
    this.lock = lock;
  }

  path(file: keyof typeof FILES): string {
    return join(this.dir, FILES[file]);
  }

  /** A new run: refuses a directory that already holds one. */
  static create(dir: string, config: TrainConfig): RunDir {
    if (existsSync(join(dir, FILES.store)) || existsSync(join(dir, FILES.config))) {
      throw new InputError(
        '--out',
        dir,
        'already holds a run; give another directory, --resume it, or replace it with --restart',
      );
    }
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new InputError('--out', dir, `cannot create it (${(e as NodeJS.ErrnoException).code})`);
    }
    const lock = DirLock.acquire(dir, '--out');
    // Checked again under the lock: another process may have created the run meanwhile.
    if (existsSync(join(dir, FILES.store)) || existsSync(join(dir, FILES.config))) {
      lock.release();
      throw new InputError(
        '--out',
        dir,
        'already holds a run; give another directory, --resume it, or replace it with --restart',
      );
    }
    writeFileAtomic(join(dir, FILES.config), `${JSON.stringify(config, null, 2)}\n`);
    const store = new RunStore(join(dir, FILES.store));
    store.createRun(RUN_ID, 'train', config);
    return new RunDir(dir, store, new JsonlWriter(join(dir, FILES.metrics)), lock);
  }

  /**
   * Removes the run in `dir` (if any) to start over: under its lock, so a live run is refused, not
   * destroyed. Only the files a run writes are removed; anything else in the directory stays.
   */
  static restart(dir: string): void {
    if (!existsSync(dir)) return;
    const lock = DirLock.acquire(dir, '--restart');
    try {
      for (const f of [...Object.values(FILES), `${FILES.store}-wal`, `${FILES.store}-shm`])
        rmSync(join(dir, f), { force: true });
    } finally {
      lock.release();
    }
  }

  /** The last iteration the store of a run recorded (−1: none), read without changing it. */
  static lastRecorded(storePath: string): number {
    const store = new RunStore(storePath, '--resume');
    try {
      const rows = store.metrics(RUN_ID);
      return rows.length > 0 ? rows[rows.length - 1].iter : -1;
    } finally {
      store.close();
    }
  }

  /** The lock of a run to resume, taken before any of its files is read or written. */
  static lockForResume(dir: string): DirLock {
    return DirLock.acquire(dir, '--resume');
  }

  /** The config of an existing run (validated). */
  static readConfig(dir: string): TrainConfig {
    const path = join(dir, FILES.config);
    if (!existsSync(path))
      throw new InputError('--resume', dir, `holds no ${FILES.config}; not a training run`);
    let raw: unknown;
    try {
      raw = JSON.parse(readText(path, '--resume'));
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw InputError.raw(path, `not valid JSON (${(e as Error).message})`);
    }
    return parseTrainConfig(raw, path);
  }

  /**
   * Reopens a run to continue after iteration `iter` (the checkpoint's): deletes every row written
   * after it and rewrites metrics.jsonl from the store, so nothing is lost or counted twice.
   */
  static reopen(dir: string, iter: number, lock: DirLock): RunDir {
    const store = new RunStore(join(dir, FILES.store), '--resume');
    if (store.run(RUN_ID) === undefined)
      throw new InputError('--resume', dir, 'the run store holds no training run');
    store.truncateAfter(RUN_ID, iter);
    const metrics = new JsonlWriter(join(dir, FILES.metrics));
    for (const [i, values] of groupMetrics(store.metrics(RUN_ID))) metrics.write({ iter: i, ...values });
    metrics.flush();
    store.setStatus(RUN_ID, 'running');
    return new RunDir(dir, store, metrics, lock);
  }

  /** One iteration's rows (with a rubric reward, its judgements beside), atomically, then its metrics line. */
  record(
    iter: number,
    firstIdx: number,
    trajectories: readonly Trajectory[],
    metrics: Record<string, number>,
    full: boolean,
    judgements?: readonly unknown[],
  ): void {
    this.store.addIteration(RUN_ID, iter, firstIdx, trajectories, metrics, full, judgements);
    // Keys in the store's order, so that a resumed run's metrics.jsonl is the same bytes.
    const sorted = Object.fromEntries(
      Object.entries(metrics).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    this.metrics.write({ iter, ...sorted });
    this.metrics.flush();
  }

  /** Wall-clock seconds of the whole run so far: its earlier parts and this one. */
  seconds(): number {
    return this.clock.before + (performance.now() - this.clock.started) / 1000;
  }

  /** The training state (written atomically), with the run's seconds so far (what a resume adds its
   * own to), and beside it the policy alone for `--policy <run dir>`. */
  saveCheckpoint(parts: TrainParts, state: RunState, seed: number, policy: Uint8Array): void {
    saveTrainState(this.path('checkpoint'), parts, { ...state, seconds: this.seconds() }, seed);
    writeCheckpoint(this.path('policy'), policy);
  }

  writeSummary(summary: unknown): void {
    writeFileAtomic(this.path('summary'), `${JSON.stringify(summary, null, 2)}\n`);
  }

  close(status: string): void {
    this.metrics.close();
    this.store.setStatus(RUN_ID, status);
    this.store.close();
    this.lock.release();
  }
}

/** Where a resumed run took up: the iterations it had completed and the seconds they had taken (as of
 * the checkpoint; iterations recorded after it are recomputed, and their time is not counted). */
export interface Resumed {
  iterations: number;
  seconds: number;
}

/** The whole run's seconds: those before the resume (if any) and this call's since `started`. */
export function runSeconds(started: number, resumed: Resumed | undefined): number {
  return (resumed?.seconds ?? 0) + (performance.now() - started) / 1000;
}

/**
 * The run directory of a training call: a new run, or one resumed from its checkpoint (whose state is
 * loaded into `parts`, and whose store must hold exactly the rows the checkpoint counts); no directory
 * when `out` is undefined. `started` (performance.now() when the call began) starts the run's clock.
 */
export function openRun(
  out: string | undefined,
  resume: boolean | undefined,
  config: TrainConfig,
  parts: TrainParts,
  initial: RunState,
  started: number = performance.now(),
): { run?: RunDir; state: RunState; resumed?: Resumed } {
  if (out === undefined) return { state: initial };
  if (!resume) {
    const run = RunDir.create(out, config);
    run.clock = { before: 0, started };
    return { run, state: initial };
  }
  // The lock first: a live run (or a second resume) is refused before any file is touched.
  const lock = RunDir.lockForResume(out);
  try {
    const ck = join(out, FILES.checkpoint);
    const storePath = join(out, FILES.store);
    if (!existsSync(storePath))
      throw InputError.raw(storePath, 'is missing: the run cannot resume; start it over with --restart');
    if (!existsSync(ck)) {
      // No checkpoint is right only if the run was stopped before its first one — the first is written
      // after iteration checkpointEvery, or after the last of a shorter run.
      const last = RunDir.lastRecorded(storePath);
      if (last >= firstCheckpoint(config)) {
        throw InputError.raw(
          ck,
          `is missing though iteration ${last + 1} was recorded (one is written every ${config.checkpointEvery} iterations and after the last): the run cannot resume exactly; start it over with --restart`,
        );
      }
    }
    const state = existsSync(ck) ? loadTrainState(ck, parts) : initial;
    const run = RunDir.reopen(out, state.iter, lock);
    const stored = run.store.trajectoryCount(RUN_ID);
    if (stored !== state.nextIndex) {
      throw InputError.raw(
        out,
        `the store holds ${stored} trajectories after iteration ${state.iter}, the checkpoint ${state.nextIndex}`,
      );
    }
    const resumed = { iterations: state.iter + 1, seconds: state.seconds ?? 0 };
    run.clock = { before: resumed.seconds, started };
    return { run, state, resumed };
  } catch (e) {
    lock.release();
    if (e instanceof InputError && !e.message.includes('--restart'))
      e.message += `; to start the run over: train --resume ${out} --restart`;
    throw e;
  }
}

/** Whether iteration `iter` (from 0) ends with a checkpoint: every checkpointEvery iterations, and the last. */
export function checkpointDue(config: TrainConfig, iter: number): boolean {
  return (iter + 1) % config.checkpointEvery === 0 || iter === config.iters - 1;
}

/** The first iteration that ends with a checkpoint. */
function firstCheckpoint(config: TrainConfig): number {
  return Math.min(config.checkpointEvery, config.iters) - 1;
}

/** Metric rows of the store, grouped per iteration in order. */
export function groupMetrics(
  rows: readonly { iter: number; key: string; value: number | null }[],
): Map<number, Record<string, number | null>> {
  const out = new Map<number, Record<string, number | null>>();
  for (const r of rows) {
    let m = out.get(r.iter);
    if (m === undefined) {
      m = {};
      out.set(r.iter, m);
    }
    m[r.key] = r.value;
  }
  return out;
}
