// The index of a run's trajectories, so that a run of a million turns pages and opens one trajectory
// without reading the rest (docs/ui.md, "Large runs"):
//   a trajectory file  one validated pass (store/outcomes.ts: each line checked as readTrajectories
//                      checks it, without building its turns) records each trajectory's place (line
//                      number, byte offset and length) and the fields a page shows, filters and sorts
//                      on, in typed arrays; kept in memory per version of the file (path, inode, size,
//                      mtime). A trajectory is then read back alone, by its place.
//   a run store        its rows already are such an index (SQL pages them); what is kept here is only
//                      which rows share a task, per version of the run (its row count and last idx).
// Both know each trajectory's group — the samples of the same task (credit/groups.ts: JSON-equal task,
// key order ignored) — as a linked list, and the first trajectory of each (env config, policy, budget,
// revealBudget): what `credit --in` probes for the exact oracle's refusals (studies/credit-file.ts).
import { statSync } from 'node:fs';
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';
import { canonicalJson } from '../credit/groups.ts';
import { outcomePlaces, type SpacesOf } from '../store/outcomes.ts';
import type { RunStore } from '../store/sqlite.ts';

/** Which trajectories share a group, as CreditIndex (credit/file.ts) links them: per trajectory its
 * group and the next trajectory of that group (−1 at the end); and the first of each probe key. */
class GroupLinks {
  n = 0;
  group = new Int32Array(1024);
  next = new Int32Array(1024);
  private readonly first: number[] = [];
  private readonly last: number[] = [];
  private readonly groups = new Map<string, number>();
  private readonly probed = new Set<string>();
  /** The first trajectory of each probe key, in order. */
  readonly probes: number[] = [];

  add(groupKey: string, probeKey: string): void {
    const k = this.n++;
    if (k === this.group.length) {
      this.group = grow(this.group);
      this.next = grow(this.next);
    }
    this.next[k] = -1;
    let g = this.groups.get(groupKey);
    if (g === undefined) {
      g = this.first.length;
      this.groups.set(groupKey, g);
      this.first.push(k);
      this.last.push(k);
    } else {
      this.next[this.last[g]] = k;
      this.last[g] = k;
    }
    this.group[k] = g;
    if (!this.probed.has(probeKey)) {
      this.probed.add(probeKey);
      this.probes.push(k);
    }
  }

  /** The trajectories of k's group, in order. */
  members(k: number): number[] {
    const out: number[] = [];
    for (let m = this.first[this.group[k]]; m !== -1; m = this.next[m]) out.push(m);
    return out;
  }

  /** Groups are known only once the last trajectory is added: the maps that found them go. */
  done(): void {
    this.groups.clear();
    this.probed.clear();
    this.group = this.group.slice(0, this.n);
    this.next = this.next.slice(0, this.n);
  }

  get bytes(): number {
    return this.group.byteLength + this.next.byteLength + 8 * (this.first.length * 2 + this.probes.length);
  }
}

function grow<A extends Float64Array | Int32Array | Uint8Array | Int8Array>(a: A, need = a.length + 1): A {
  if (need <= a.length) return a;
  const bigger = new (a.constructor as new (n: number) => A)(Math.max(need, a.length * 2));
  bigger.set(a);
  return bigger;
}

/** A task's env configuration (env and params), interned: its text as written and its canonical key. */
interface EnvConfigEntry {
  env: string;
  params: Record<string, unknown>;
  /** canonicalJson({env, params}): the group key of a task is this and its seed. */
  canonical: string;
}

/** A string of its own: a field read from a line is a slice of the chunk of the file it was read from
 * (V8 keeps a slice of 13 characters or more as a view of its parent, and store/jsonl.ts reads 1 MiB
 * at a time), so an id kept as it is would keep its whole chunk alive — the file in memory. */
const own = (s: string): string => (s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string));

/** The group key of a task, as canonicalJson(task) orders it (env, params, seed: already sorted). */
const groupKeyOf = (canonical: string, seed: number) => `${canonical}|${seed}`;

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

export type SortKey = 'turns' | '-turns' | 'return' | '-return';

/** The index of a trajectory file (see the top of this file). Trajectory k is the k-th valid line. */
export class FileIndex {
  n = 0;
  line = new Int32Array(1024);
  offset = new Float64Array(1024);
  length = new Int32Array(1024);
  readonly ids: string[] = [];
  /** Per trajectory: its env configuration (`configs`), seed, policy (`policies`), budget and outcome. */
  config = new Int32Array(1024);
  seed = new Float64Array(1024);
  policy = new Int32Array(1024);
  budget = new Float64Array(1024);
  success = new Uint8Array(1024);
  turns = new Float64Array(1024);
  ret = new Float64Array(1024);
  /** Index in FAILURE_KINDS; −1: none. */
  failure = new Int8Array(1024);
  readonly configs: EnvConfigEntry[] = [];
  readonly policies: string[] = [];
  readonly links = new GroupLinks();
  private readonly sorted = new Map<SortKey, Int32Array>();

  /** One pass over the file (refusing it as readTrajectories(path, 'run') would). */
  constructor(
    readonly path: string,
    spacesOf: SpacesOf,
  ) {
    const configIds = new Map<string, number>();
    const policyIds = new Map<string, number>();
    // Consecutive lines nearly always share their params object (store/outcomes.ts): its texts are
    // computed once per object.
    let lastParams: unknown;
    let lastEnv = '';
    let lastConfig = -1;
    for (const [o, line, offset, length] of outcomePlaces(path, 'run', spacesOf, { counted: false })) {
      const k = this.n++;
      if (k === this.line.length) this.growTo(k + 1);
      this.line[k] = line;
      this.offset[k] = offset;
      this.length[k] = length;
      this.ids.push(own(o.id));
      if (o.task.params !== lastParams || o.task.env !== lastEnv) {
        lastParams = o.task.params;
        lastEnv = o.task.env;
        // As written (a page shows the task as the line has it), and canonical (its group).
        const text = `${JSON.stringify(o.task.env)}:${JSON.stringify(o.task.params)}`;
        let c = configIds.get(text);
        if (c === undefined) {
          c = this.configs.length;
          configIds.set(text, c);
          this.configs.push({
            env: own(o.task.env),
            params: o.task.params,
            canonical: canonicalJson({ env: o.task.env, params: o.task.params }),
          });
        }
        lastConfig = c;
      }
      this.config[k] = lastConfig;
      this.seed[k] = o.task.seed;
      let p = policyIds.get(o.policy);
      if (p === undefined) {
        p = this.policies.length;
        policyIds.set(o.policy, p);
        this.policies.push(own(o.policy));
      }
      this.policy[k] = p;
      this.budget[k] = o.budget;
      this.success[k] = o.outcome.success ? 1 : 0;
      this.turns[k] = o.outcome.turns;
      this.ret[k] = o.outcome.return;
      this.failure[k] = o.outcome.failure === null ? -1 : FAILURE_KINDS.indexOf(o.outcome.failure);
      const canonical = this.configs[lastConfig].canonical;
      this.links.add(groupKeyOf(canonical, o.task.seed), `${canonical}|${p}|${o.budget}|${o.revealBudget}`);
    }
    this.growTo(this.n, true);
    this.links.done();
  }

  private growTo(need: number, exact = false): void {
    const fit = <A extends Float64Array | Int32Array | Uint8Array | Int8Array>(a: A): A =>
      exact ? (a.slice(0, need) as A) : grow(a, need);
    this.line = fit(this.line);
    this.offset = fit(this.offset);
    this.length = fit(this.length);
    this.config = fit(this.config);
    this.seed = fit(this.seed);
    this.policy = fit(this.policy);
    this.budget = fit(this.budget);
    this.success = fit(this.success);
    this.turns = fit(this.turns);
    this.ret = fit(this.ret);
    this.failure = fit(this.failure);
  }

  row(k: number): TrajectoryRow {
    const c = this.configs[this.config[k]];
    return {
      index: k,
      id: this.ids[k],
      task: { env: c.env, params: c.params, seed: this.seed[k] },
      policy: this.policies[this.policy[k]],
      budget: this.budget[k],
      success: this.success[k] === 1,
      turns: this.turns[k],
      return: this.ret[k],
      failure: this.failure[k] < 0 ? null : FAILURE_KINDS[this.failure[k]],
    };
  }

  /** The trajectories in `sort` order (ties by index), computed once per key. */
  order(sort: SortKey): Int32Array {
    let o = this.sorted.get(sort);
    if (o === undefined) {
      const key = sort.endsWith('turns') ? this.turns : this.ret;
      const sign = sort.startsWith('-') ? -1 : 1;
      o = Int32Array.from({ length: this.n }, (_, i) => i).sort((a, b) => sign * (key[a] - key[b]) || a - b);
      this.sorted.set(sort, o);
    }
    return o;
  }

  /** The trajectories whose fields match (a failure kind, a policy id, a task seed, an outcome). */
  matcher(q: {
    task?: number;
    outcome?: 'success' | 'failure';
    failure?: FailureKind;
    policy?: string;
    minTurns?: number;
    maxTurns?: number;
  }): ((k: number) => boolean) | undefined {
    if (
      q.task === undefined &&
      q.outcome === undefined &&
      q.failure === undefined &&
      q.policy === undefined &&
      q.minTurns === undefined &&
      q.maxTurns === undefined
    )
      return undefined;
    const failure = q.failure === undefined ? undefined : FAILURE_KINDS.indexOf(q.failure);
    const policy = q.policy === undefined ? undefined : this.policies.indexOf(q.policy);
    const success = q.outcome === undefined ? undefined : q.outcome === 'success' ? 1 : 0;
    return (k) =>
      (q.task === undefined || this.seed[k] === q.task) &&
      (success === undefined || this.success[k] === success) &&
      (failure === undefined || this.failure[k] === failure) &&
      (policy === undefined || this.policy[k] === policy) &&
      (q.minTurns === undefined || this.turns[k] >= q.minTurns) &&
      (q.maxTurns === undefined || this.turns[k] <= q.maxTurns);
  }

  /** What the index holds, in bytes (typed arrays exactly; strings as UTF-16, 2 bytes a character,
   * plus V8's ~16-byte header; the sort orders computed so far). */
  get bytes(): number {
    let b = this.links.bytes;
    for (const a of [
      this.line,
      this.offset,
      this.length,
      this.config,
      this.seed,
      this.policy,
      this.budget,
      this.success,
      this.turns,
      this.ret,
      this.failure,
      ...this.sorted.values(),
    ])
      b += a.byteLength;
    for (const id of this.ids) b += 16 + 2 * id.length;
    for (const p of this.policies) b += 16 + 2 * p.length;
    for (const c of this.configs) b += 64 + 2 * c.canonical.length * 2;
    return b + 8 * this.ids.length;
  }
}

/** The index of a store run: its rows' idx in order, and their groups (see the top of this file). */
export class StoreIndex {
  readonly idx: Float64Array;
  readonly links = new GroupLinks();

  constructor(store: RunStore, run: string) {
    const rows = store.db
      .prepare('SELECT idx, task, policy, budget FROM trajectories WHERE run = ? ORDER BY idx')
      .raw()
      .iterate(run) as Iterable<[number, string, string, number]>;
    const idx: number[] = [];
    // A run's rows repeat a few task texts (K samples each): each text is made canonical once.
    const canonical = new Map<string, { group: string; config: string }>();
    for (const [i, text, policy, budget] of rows) {
      idx.push(i);
      let c = canonical.get(text);
      if (c === undefined) {
        const task = JSON.parse(text) as Trajectory['task'];
        const config = canonicalJson({ env: task.env, params: task.params });
        c = { group: groupKeyOf(config, task.seed), config };
        canonical.set(text, c);
      }
      // The store keeps revealBudget in the row's blob only: a run sets it once (rollout, train and
      // harness runs all do), so a probe key here is (env config, policy, budget).
      this.links.add(c.group, `${c.config}|${policy}|${budget}`);
    }
    this.links.done();
    this.idx = Float64Array.from(idx);
  }

  /** The position of row `idx` among the run's rows, or −1. */
  position(idx: number): number {
    let lo = 0;
    let hi = this.idx.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.idx[mid] === idx) return mid;
      if (this.idx[mid] < idx) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  get bytes(): number {
    return this.idx.byteLength + this.links.bytes;
  }
}

/** The indexes kept: the newest version of each file or store run, the last few used. */
const KEPT = 8;
const files = new Map<string, { version: string; index: FileIndex }>();
const stores = new Map<string, { version: string; index: StoreIndex }>();

function keep<I>(
  cache: Map<string, { version: string; index: I }>,
  key: string,
  version: string,
  make: () => I,
) {
  const hit = cache.get(key);
  cache.delete(key);
  const entry = hit !== undefined && hit.version === version ? hit : { version, index: make() };
  cache.set(key, entry);
  for (const old of cache.keys()) {
    if (cache.size <= KEPT) break;
    cache.delete(old);
  }
  return entry;
}

/** The index of a trajectory file as it is now, and its version. */
export function fileIndex(path: string, spacesOf: SpacesOf): { version: string; index: FileIndex } {
  const st = statSync(path);
  return keep(files, path, `${st.ino}|${st.size}|${st.mtimeMs}`, () => new FileIndex(path, spacesOf));
}

/** The index of a store run as it is now (rows are only ever added: their count and last idx say
 * which version it is), and its version. */
export function storeIndex(store: RunStore, run: string): { version: string; index: StoreIndex } {
  const { n, last } = store.db
    .prepare('SELECT COUNT(*) AS n, MAX(idx) AS last FROM trajectories WHERE run = ?')
    .get(run) as { n: number; last: number | null };
  return keep(stores, `${store.path}#${run}`, `${n}|${last}`, () => new StoreIndex(store, run));
}

/** The bytes of every index kept now (for `turnwise bench ui`). */
export function indexBytes(): number {
  let b = 0;
  for (const { index } of files.values()) b += index.bytes;
  for (const { index } of stores.values()) b += index.bytes;
  return b;
}
