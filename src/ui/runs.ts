// The runs under a directory, as the dashboard lists them. A run is what a command leaves on disk:
//   train      a directory with config.json + run.sqlite (run "train"), summary.json once finished
//   harness    a directory with run.sqlite (run "harness"), proxy.sqlite, episodes/, trajectories.jsonl
//   bc         a directory with bc.json (written once, at the end)
//   study      a directory with a budget study's summary.json (written once, at the end)
//   rollout    every run of a store file `rollout --db FILE` wrote (id FILE#RUN)
//   file       a trajectory file (`rollout --out`, an export of trajectories): *.jsonl
// Nothing here writes: stores are opened read-only (store/sqlite.ts) and files only read. A run is
// live while its writer holds the directory's lock (store/lock.ts: {pid, host, started}, a process
// that is alive on this host); a bare file or a --db store has no lock, so its state is what it says.
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import { InputError } from '../core/errors.ts';
import { LOCK_FILE } from '../store/lock.ts';
import { RunStore } from '../store/sqlite.ts';

export type RunKind = 'train' | 'harness' | 'bc' | 'study' | 'rollout' | 'file';
/** finished: the writer said so; live: its writer holds the lock now; stopped: it did not finish and
 * nothing holds it (killed or interrupted: resumable); incomplete: a --db store's run that has not
 * said it finished, whose writer cannot be told (no lock); unknown: a bare file (no lock, no status). */
export type RunStatus = 'finished' | 'live' | 'stopped' | 'incomplete' | 'unknown';

/** Where a run's trajectories live: a run of a store file, or a trajectory file. */
export type Source = { store: string; run: string } | { file: string } | null;

export interface RunInfo {
  id: string;
  kind: RunKind;
  env: { env: string; params?: unknown } | null;
  policy: unknown;
  status: RunStatus;
  started: string | null;
  seconds: number | null;
  headline: Record<string, unknown>;
}

/** A run found on disk: what the list shows, and where its files are (never sent). */
export interface FoundRun {
  info: RunInfo;
  dir: string | null;
  source: Source;
}

const MAX_DEPTH = 6;
const STORE_FILES = new Set(['run.sqlite', 'proxy.sqlite']);

export function readJson(path: string): Record<string, unknown> | undefined {
  try {
    const x = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return typeof x === 'object' && x !== null && !Array.isArray(x)
      ? (x as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process on this host holds the lock of `dir` now. */
export function lockHeld(dir: string): boolean {
  const lock = readJson(join(dir, LOCK_FILE));
  if (lock === undefined || typeof lock.pid !== 'number') return false;
  if (lock.host !== hostname()) return true; // another host's writer: taken at its word
  try {
    process.kill(lock.pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const seconds = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 1000;

/** The outcome columns of a store run: episodes, success rate, mean turns. */
function storeFigures(store: RunStore, run: string): Record<string, number | null> {
  const r = store.db
    .prepare('SELECT COUNT(*) AS n, AVG(success) AS s, AVG(turns) AS t FROM trajectories WHERE run = ?')
    .get(run) as { n: number; s: number | null; t: number | null };
  return { episodes: r.n, success: r.s, meanTurns: r.t };
}

/** The env and policy of a store run's first trajectory (what every kind records). */
function firstTrajectory(store: RunStore, run: string): { env: RunInfo['env']; policy: string | null } {
  const r = store.db
    .prepare('SELECT task, policy FROM trajectories WHERE run = ? ORDER BY idx LIMIT 1')
    .get(run) as { task: string; policy: string } | undefined;
  if (r === undefined) return { env: null, policy: null };
  const task = JSON.parse(r.task) as { env: string; params?: unknown };
  return { env: { env: task.env, params: task.params }, policy: r.policy };
}

/** A store run's status: the store's word, or the lock's when it has not finished. */
function storeStatus(status: string, dir: string | null): RunStatus {
  if (status === 'done') return 'finished';
  if (dir === null) return 'incomplete';
  return lockHeld(dir) ? 'live' : 'stopped';
}

function trainRun(id: string, dir: string): FoundRun {
  const store = new RunStore(join(dir, 'run.sqlite'), '--runs', true);
  try {
    const row = store.run('train');
    const config = (row?.config ?? readJson(join(dir, 'config.json')) ?? {}) as Record<string, unknown>;
    const summary = readJson(join(dir, 'summary.json'));
    const metrics = store.db.prepare('SELECT MAX(iter) AS last FROM metrics WHERE run = ?').get('train') as {
      last: number | null;
    };
    const status = row === undefined ? 'stopped' : storeStatus(row.status, dir);
    return {
      info: {
        id,
        kind: 'train',
        env: (config.env as RunInfo['env']) ?? null,
        policy: config.policy ?? null,
        status,
        started: row?.created ?? null,
        seconds: row === undefined ? null : seconds(row.created, row.updated),
        headline: {
          iterations: metrics.last === null ? 0 : metrics.last + 1,
          of: config.iters ?? null,
          ...((summary?.final as Record<string, unknown> | undefined) ?? {}),
        },
      },
      dir,
      source: { store: join(dir, 'run.sqlite'), run: 'train' },
    };
  } finally {
    store.close();
  }
}

function harnessRun(id: string, dir: string): FoundRun | undefined {
  const store = new RunStore(join(dir, 'run.sqlite'), '--runs', true);
  try {
    const row = store.run('harness');
    if (row === undefined) return undefined;
    const first = firstTrajectory(store, 'harness');
    return {
      info: {
        id,
        kind: 'harness',
        ...first,
        status: storeStatus(row.status, dir),
        started: row.created,
        seconds: seconds(row.created, row.updated),
        headline: storeFigures(store, 'harness'),
      },
      dir,
      source: { store: join(dir, 'run.sqlite'), run: 'harness' },
    };
  } finally {
    store.close();
  }
}

/** A document written once at the end (bc.json, a study's summary.json): started = written − seconds. */
function written(path: string, secs: unknown): { started: string | null; seconds: number | null } {
  const s = typeof secs === 'number' ? secs : null;
  const end = statSync(path).mtimeMs;
  return { started: new Date(end - (s ?? 0) * 1000).toISOString(), seconds: s };
}

function bcRun(id: string, dir: string): FoundRun {
  const path = join(dir, 'bc.json');
  const bc = readJson(path) ?? {};
  const at = (k: string) => bc[k] as Record<string, Record<string, unknown>> | undefined;
  return {
    info: {
      id,
      kind: 'bc',
      env: (bc.env as RunInfo['env']) ?? null,
      policy: bc.student ?? null,
      status: 'finished',
      ...written(path, bc.seconds),
      headline: {
        expert: bc.expert ?? null,
        trainSuccess: at('train')?.success?.student ?? null,
        testSuccess: at('test')?.success?.student ?? null,
        loss: at('training')?.loss ?? null,
      },
    },
    dir,
    source: null,
  };
}

function studyRun(id: string, dir: string, summary: Record<string, unknown>): FoundRun {
  const worlds = Array.isArray(summary.worlds) ? summary.worlds : [];
  return {
    info: {
      id,
      kind: 'study',
      env: null,
      policy: null,
      status: 'finished',
      ...written(join(dir, 'summary.json'), summary.seconds),
      headline: {
        study: summary.study,
        profile: summary.profile ?? null,
        worlds: worlds.length,
        seeds: summary.seeds ?? null,
        findings: Array.isArray(summary.findings) ? summary.findings.length : null,
      },
    },
    dir,
    source: null,
  };
}

/** Every run of a store file (`rollout --db`): id FILE#RUN. */
function storeRuns(id: string, path: string): FoundRun[] {
  let store: RunStore;
  try {
    store = new RunStore(path, '--runs', true);
  } catch {
    return []; // not a run store (a replay cache, another program's database)
  }
  try {
    const rows = store.db.prepare('SELECT id FROM runs ORDER BY created, id').all() as { id: string }[];
    return rows.map(({ id: run }) => {
      const row = store.run(run)!;
      const first = firstTrajectory(store, run);
      const config = row.config as Record<string, unknown>;
      return {
        info: {
          id: `${id}#${run}`,
          kind: 'rollout' as const,
          env:
            first.env ?? (typeof config.env === 'string' ? { env: config.env, params: config.params } : null),
          policy: first.policy ?? config.policy ?? null,
          status: storeStatus(row.status, null),
          started: row.created,
          seconds: seconds(row.created, row.updated),
          headline: storeFigures(store, run),
        },
        dir: null,
        source: { store: path, run },
      };
    });
  } finally {
    store.close();
  }
}

/** A trajectory file: listed when its first line is a trajectory (other JSONL files are skipped). */
function fileRun(id: string, path: string, first: string): FoundRun | undefined {
  let t: { task?: { env?: string; params?: unknown }; policy?: unknown; outcome?: unknown; turns?: unknown };
  try {
    t = JSON.parse(first) as typeof t;
  } catch {
    return undefined;
  }
  if (typeof t?.task?.env !== 'string' || typeof t.outcome !== 'object' || !Array.isArray(t.turns))
    return undefined;
  const st = statSync(path);
  return {
    info: {
      id,
      kind: 'file',
      env: { env: t.task.env, params: t.task.params },
      policy: t.policy ?? null,
      status: 'unknown',
      started: st.mtime.toISOString(),
      seconds: null,
      headline: { bytes: st.size },
    },
    dir: null,
    source: { file: path },
  };
}

/** The first line of a file (up to 1 MB: enough to tell a trajectory file). */
function firstLine(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    const text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
    const nl = text.indexOf('\n');
    return nl < 0 ? text : text.slice(0, nl);
  } finally {
    closeSync(fd);
  }
}

/** The run a directory holds, if it is one. */
function dirRun(id: string, dir: string): FoundRun | undefined {
  const has = (f: string) => existsSync(join(dir, f));
  if (has('run.sqlite') && has('config.json')) return trainRun(id, dir);
  if (has('run.sqlite')) return harnessRun(id, dir);
  if (has('bc.json')) return bcRun(id, dir);
  const summary = has('summary.json') ? readJson(join(dir, 'summary.json')) : undefined;
  if (summary?.study !== undefined) return studyRun(id, dir, summary);
  return undefined;
}

/** Every run under `root`, by id (its path relative to root, `/`-separated), in path order. A run that
 * cannot be read now (a damaged file, one being replaced) is left out of this listing, not the others. */
export function findRuns(root: string): FoundRun[] {
  const found: FoundRun[] = [];
  const idOf = (p: string) => relative(root, p).split(sep).join('/');
  const visit = (dir: string, depth: number) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const path = join(dir, e.name);
      try {
        if (e.isDirectory()) {
          const run = dirRun(idOf(path), path);
          if (run !== undefined) found.push(run);
          else if (depth < MAX_DEPTH) visit(path, depth + 1);
        } else if (e.isFile() && e.name.endsWith('.jsonl')) {
          const run = fileRun(idOf(path), path, firstLine(path));
          if (run !== undefined) found.push(run);
        } else if (
          e.isFile() &&
          (e.name.endsWith('.sqlite') || e.name.endsWith('.db')) &&
          !STORE_FILES.has(e.name)
        ) {
          found.push(...storeRuns(idOf(path), path));
        }
      } catch {
        // Gone or unreadable meanwhile (a writer replacing a file): not listed this time.
      }
    }
  };
  visit(root, 0);
  return found;
}

/** The path an id names under `root`, refused (400) when it could leave it: `..` or `.` segments, an
 * absolute path, a backslash or NUL, an empty segment, or — once resolved — a link out of `root`. */
function pathOf(root: string, path: string, id: string): string | undefined {
  const segments = path.split('/');
  if (
    path === '' ||
    isAbsolute(path) ||
    /[\\\0]/.test(path) ||
    segments.some((s) => s === '' || s === '.' || s === '..')
  )
    throw new InputError('id', id, 'expected a run path under the runs directory (no .., no absolute path)');
  const abs = join(root, ...segments);
  if (!existsSync(abs)) return undefined;
  const real = realpathSync(abs);
  const base = realpathSync(root);
  if (real !== base && !real.startsWith(base + sep))
    throw new InputError('id', id, 'leads out of the runs directory (a link); refused');
  return abs;
}

/** The run of one id (what findRuns lists it as), read alone; undefined when there is none. */
export function findRun(root: string, id: string): FoundRun | undefined {
  const hash = id.indexOf('#');
  const path = hash < 0 ? id : id.slice(0, hash);
  const abs = pathOf(root, path, id);
  if (abs === undefined) return undefined;
  const st = statSync(abs);
  if (hash >= 0) return st.isFile() ? storeRuns(path, abs).find((r) => r.info.id === id) : undefined;
  if (st.isDirectory()) return dirRun(id, abs);
  if (st.isFile() && abs.endsWith('.jsonl')) return fileRun(id, abs, firstLine(abs));
  return undefined;
}

/** The run at a path of its own (a directory, or a trajectory file), named by its last segment:
 * what `turnwise report RUN` reads. */
export function runAt(path: string): FoundRun | undefined {
  const st = statSync(path);
  if (st.isDirectory()) return dirRun(basename(path), path);
  if (st.isFile() && path.endsWith('.jsonl')) return fileRun(basename(path), path, firstLine(path));
  return undefined;
}

/** The metrics of a store run, one object per iteration ({iter, key: value, …}, keys sorted: the
 * lines of a training run's metrics.jsonl); digests checked by the store. */
export function storeMetrics(path: string, run: string): { iter: number; [key: string]: number | null }[] {
  const store = new RunStore(path, 'run', true);
  try {
    const out: { iter: number; [key: string]: number | null }[] = [];
    for (const r of store.metrics(run)) {
      if (out.at(-1)?.iter !== r.iter) out.push({ iter: r.iter });
      out[out.length - 1][r.key] = r.value;
    }
    return out;
  } finally {
    store.close();
  }
}
