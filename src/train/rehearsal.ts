// World-model rehearsal (`train --rehearsal ratio=R[,alpha=A,prior=pooled|uniform]`, issue 29 item 1,
// EnvACE's spirit; docs/methods-measured.md). A model of FrozenLake is learned from the real steps already
// collected, and the learner trains on imagined rollouts in it beside the real ones: R imagined episodes
// per real one, on the tasks of the batch.
//
// The model of one map, for a non-terminal cell s and action a (Dirichlet posterior mean):
//   P̂(s′ | s, a) = (n(s, a, s′) + α·q(s′ | s, a)) / (n(s, a) + α)
// n the counts of real steps on that map, α the prior's weight in pseudo-steps (default 4), and q the
// prior: the direction the ice actually took given the one asked, pooled over every real step of every
// map from a cell where every direction leads elsewhere (Laplace-smoothed: (c(a, d) + 1) / (Σ_d c(a, d) + 4)), put through the map's geometry (a move off
// the edge stays). `prior=uniform` takes q(d | a) = 1/4 instead (no pooling: each map on its own counts).
// The map — which cells are holes and where the goal is — is the map *as seen*: FrozenLake is fully
// observed, and the feature view of the first observation shows it; the grid's width is the text view's.
// Entering a hole or the goal ends an imagined episode; the goal pays 1, as the real env does.
//
// How the model is keyed. A map has its own counts (key: the task's params, and its seed when maps are
// random). On a fixed map every task is the same map: its counts grow over the whole run and are saved
// in the checkpoint. On random maps every task is a new map that a run almost never meets again (a
// million training seeds), so a map's counts are those of its own group in this iteration (K episodes,
// about one real step per (cell, action) on a 4x4 map): rehearsal runs on the tasks of the batch only,
// and what carries over from map to map is the pooled prior q, saved in the checkpoint — the ice behaves
// the same on every map, only the holes move. So q, not the per-map counts, is what the model learns on
// random maps, and train/model_tv measures how far that gets.
//
// Imagined groups are their own GRPO groups (their advantages are computed apart from the real ones, so
// a real trajectory's advantage is what it would be without rehearsal); both enter one update. Real
// trajectories are stored and measured as always; imagined ones enter the learner only.
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type { Env, EnvSpec, EnvView, Policy, StepInfo, StepResult, Task, Trajectory } from '../core/types.ts';
import { rollout } from '../rollout/batch.ts';
import { type BudgetSchedule, budgetAt } from './schedule.ts';

export const MAX_RATIO = 16;
export const MAX_ALPHA = 1000;
export const DEFAULT_ALPHA = 4;
export const PRIORS = ['pooled', 'uniform'] as const;
/** A tool env's model keeps the tables of this many questions, the most recently met (`keep`). */
export const DEFAULT_KEEP = 256;
export const MAX_KEEP = 1_000_000;

export const RehearsalSchema = z
  .object({
    ratio: z.number().gt(0).lte(MAX_RATIO).describe('R: imagined episodes per real episode'),
    alpha: z
      .number()
      .min(0)
      .lte(MAX_ALPHA)
      .default(DEFAULT_ALPHA)
      .describe("the prior's weight α in pseudo-steps"),
    prior: z.enum(PRIORS).default('pooled').describe('pooled: the ice pooled over maps; uniform: 1/4'),
    keep: z
      .number()
      .int()
      .min(1)
      .lte(MAX_KEEP)
      .optional()
      .describe(
        `search, sql: the questions whose answer tables are kept, the most recently met (default ${DEFAULT_KEEP})`,
      ),
  })
  .strict();

export type RehearsalConfig = z.infer<typeof RehearsalSchema>;

const FLAG_EXPECTED = `expected ratio=R[,alpha=A][,prior=pooled|uniform] (FrozenLake) or ratio=R[,keep=N] (search, sql) with R in (0, ${MAX_RATIO}], A in [0, ${MAX_ALPHA}] (default ${DEFAULT_ALPHA}), N an integer in [1, ${MAX_KEEP}] (default ${DEFAULT_KEEP}), e.g. ratio=1`;

/** `ratio=R[,alpha=A][,prior=P][,keep=N]` from the command line, refused in one line naming the flag. */
export function parseRehearsalFlag(raw: string, flag = '--rehearsal'): RehearsalConfig {
  const fail = (): never => {
    throw new InputError(flag, raw, FLAG_EXPECTED);
  };
  const out: Record<string, unknown> = {};
  for (const part of raw.split(',')) {
    const m = /^\s*(ratio|alpha|prior|keep)\s*=\s*(\S+)\s*$/.exec(part);
    if (m === null || m[1] in out) fail();
    const [, key, value] = m!;
    if (key === 'prior') out.prior = value;
    else {
      const x = Number(value);
      if (!/^[0-9]*\.?[0-9]+$/.test(value) || !Number.isFinite(x)) fail();
      out[key] = x;
    }
  }
  const parsed = RehearsalSchema.safeParse(out);
  if (!parsed.success) fail();
  return parsed.data!;
}

export const showRehearsal = (c: RehearsalConfig): string =>
  `ratio=${c.ratio},alpha=${c.alpha},prior=${c.prior}${c.keep === undefined ? '' : `,keep=${c.keep}`}`;

/** Imagined episodes per task for groups of K: round(R·K), at least 1. */
export const imaginedPerTask = (c: RehearsalConfig, K: number): number =>
  Math.max(1, Math.round(c.ratio * K));

// ── Geometry ──────────────────────────────────────────────────────────────────────────────────────

/** Where direction d (0 Left, 1 Down, 2 Right, 3 Up) takes cell s on an nrow × ncol grid (edges stay). */
export function dest(s: number, d: number, nrow: number, ncol: number): number {
  const r = Math.floor(s / ncol);
  const c = s % ncol;
  if (d === 0) return r * ncol + Math.max(c - 1, 0);
  if (d === 1) return Math.min(r + 1, nrow - 1) * ncol + c;
  if (d === 2) return r * ncol + Math.min(c + 1, ncol - 1);
  return Math.max(r - 1, 0) * ncol + c;
}

/** The direction that took s to s2, when exactly one does (else −1: a corner's clamped moves coincide). */
export function directionOf(s: number, s2: number, nrow: number, ncol: number): number {
  let found = -1;
  for (let d = 0; d < 4; d++) {
    if (dest(s, d, nrow, ncol) !== s2) continue;
    if (found >= 0) return -1;
    found = d;
  }
  return found;
}

/** Whether the four directions take s to four different cells (not a corner, not a one-wide grid). */
export function distinctMoves(s: number, nrow: number, ncol: number): boolean {
  const cells = new Set([0, 1, 2, 3].map((d) => dest(s, d, nrow, ncol)));
  return cells.size === 4;
}

// ── The learned model ────────────────────────────────────────────────────────────────────────────

/** What the model sees of a map: its shape and its cells (0 frozen, 1 hole, 2 goal). */
export interface SeenMap {
  nrow: number;
  ncol: number;
  kind: Uint8Array;
}

/** The map as an observation shows it: FrozenLake's feature view [holes | goal | position] and its
 * text view's rows (undefined for an env whose views are not those). */
export function seenMap(view: EnvView<unknown>, observation: unknown): SeenMap | undefined {
  const nS = view.spec.observations;
  const f = view.features?.(observation);
  const text = view.text?.(observation);
  if (nS === undefined || f === undefined || text === undefined || f.length !== 3 * nS) return undefined;
  const ncol = text.split('\n')[0].length;
  if (ncol < 1 || nS % ncol !== 0) return undefined;
  const kind = new Uint8Array(nS);
  for (let i = 0; i < nS; i++) kind[i] = f[i] === 1 ? 1 : f[nS + i] === 1 ? 2 : 0;
  return { nrow: nS / ncol, ncol, kind };
}

/** A next-cell distribution: cells and probabilities (each cell once). */
export interface NextDist {
  cells: number[];
  probs: number[];
}

/** Total-variation distance ½ Σ |p − q| between two next-cell distributions. */
export function tv(p: NextDist, q: NextDist): number {
  const m = new Map<number, number>();
  p.cells.forEach((c, i) => {
    m.set(c, (m.get(c) ?? 0) + p.probs[i]);
  });
  q.cells.forEach((c, i) => {
    m.set(c, (m.get(c) ?? 0) - q.probs[i]);
  });
  let s = 0;
  for (const v of m.values()) s += Math.abs(v);
  return s / 2;
}

/** The checkpointed part of the model: the pooled direction counts c(a, d) (row-major 4 × 4) and the
 * counts of the fixed maps, [key, [(s·4 + a), s′, n][]]. */
export interface RehearsalState {
  pooled: number[];
  maps: [string, [number, number, number][]][];
  /** A tool env's model instead (rehearsal-tools.ts): its answers per task (pooled and maps empty). */
  tools?: ToolTableState;
}

/** A tool env's checkpointed table (rehearsal-tools.ts): [task key, [call key, answer][]][]. */
export type ToolTableState = [string, [string, unknown][]][];

/** The counts of one map: (s·4 + a) → s′ → n. */
type MapCounts = Map<number, Map<number, number>>;

/** m's entry for k, made empty first when there is none. */
function slot<K, K2, V>(m: Map<K, Map<K2, V>>, k: K): Map<K2, V> {
  let v = m.get(k);
  if (v === undefined) {
    v = new Map();
    m.set(k, v);
  }
  return v;
}

export class WorldModel {
  readonly config: RehearsalConfig;
  /** c(a, d): the direction d taken when a was asked, over every unambiguous real step. */
  readonly pooled = new Float64Array(16);
  private readonly maps = new Map<string, MapCounts>();
  /** Whether a map's counts persist across iterations (a fixed map) or are the batch's only. */
  private readonly persistent: boolean;

  constructor(config: RehearsalConfig, persistent: boolean, state?: RehearsalState) {
    this.config = config;
    this.persistent = persistent;
    if (state !== undefined) {
      this.pooled.set(state.pooled);
      for (const [key, rows] of state.maps) {
        const m: MapCounts = new Map();
        for (const [sa, s2, n] of rows) slot(m, sa).set(s2, n);
        this.maps.set(key, m);
      }
    }
  }

  /** A map's key: its params, and its seed when maps are drawn per task. */
  static key(task: Task, generated: boolean): string {
    return JSON.stringify([task.env, task.params, generated ? task.seed : 0]);
  }

  /** Starts an iteration: on random maps, the previous batch's maps are dropped. */
  beginIteration(): void {
    if (!this.persistent) this.maps.clear();
  }

  /** Counts one real step s —a→ s′ on a map. */
  count(key: string, map: SeenMap, s: number, a: number, s2: number): void {
    const row = slot(slot(this.maps, key), s * 4 + a);
    row.set(s2, (row.get(s2) ?? 0) + 1);
    // Only from a cell where the four directions lead to four different cells: counting a corner's
    // steps when they can be told apart would select on the outcome (its two clamped directions never
    // can), and bias q towards the others.
    if (!distinctMoves(s, map.nrow, map.ncol)) return;
    const d = directionOf(s, s2, map.nrow, map.ncol);
    if (d >= 0) this.pooled[a * 4 + d]++;
  }

  /** q(d | a): the pooled prior over the direction taken (or 1/4 with prior=uniform). */
  direction(a: number): Float64Array {
    const q = new Float64Array(4);
    if (this.config.prior === 'uniform') return q.fill(0.25);
    let total = 0;
    for (let d = 0; d < 4; d++) total += this.pooled[a * 4 + d];
    for (let d = 0; d < 4; d++) q[d] = (this.pooled[a * 4 + d] + 1) / (total + 4);
    return q;
  }

  /** Real steps counted for (s, a) on a map. */
  visits(key: string, s: number, a: number): number {
    let n = 0;
    for (const v of this.maps
      .get(key)
      ?.get(s * 4 + a)
      ?.values() ?? [])
      n += v;
    return n;
  }

  /** P̂(· | s, a) on a map: the counts with α pseudo-steps of the prior. */
  next(key: string, map: SeenMap, s: number, a: number): NextDist {
    const q = this.direction(a);
    const row = this.maps.get(key)?.get(s * 4 + a);
    let n = 0;
    for (const v of row?.values() ?? []) n += v;
    const alpha = this.config.alpha;
    const w = new Map<number, number>();
    if (n + alpha > 0) {
      for (let d = 0; d < 4; d++) {
        const c = dest(s, d, map.nrow, map.ncol);
        w.set(c, (w.get(c) ?? 0) + (alpha * q[d]) / (n + alpha));
      }
      for (const [c, k] of row ?? []) w.set(c, (w.get(c) ?? 0) + k / (n + alpha));
    } else {
      for (let d = 0; d < 4; d++) {
        const c = dest(s, d, map.nrow, map.ncol);
        w.set(c, (w.get(c) ?? 0) + q[d]);
      }
    }
    const cells = [...w.keys()].sort((x, y) => x - y);
    return { cells, probs: cells.map((c) => w.get(c)!) };
  }

  /** What a checkpoint keeps: the pooled counts, and a fixed map's counts (random maps' are the batch's). */
  state(): RehearsalState {
    const maps: RehearsalState['maps'] = [];
    if (this.persistent)
      for (const [key, m] of this.maps) {
        const rows: [number, number, number][] = [];
        for (const [sa, row] of m) for (const [s2, n] of row) rows.push([sa, s2, n]);
        maps.push([key, rows]);
      }
    return { pooled: [...this.pooled], maps };
  }
}

// ── The env the learner rehearses in ─────────────────────────────────────────────────────────────

const EMPTY: StepInfo = Object.freeze({});
const SUCCESS: StepInfo = Object.freeze({ success: true });
const HOLE: StepInfo = Object.freeze({ success: false, failure: 'irreversible' as const });
const INVALID: StepInfo = Object.freeze({ valid: false });

/** The learned model of one map as an env: it starts where the real episodes did and steps by P̂; its
 * views (features, text, spec) are the real env's, so the policy sees an imagined state as it would a real
 * one. */
export class ModelEnv implements Env<number, number> {
  readonly spec: EnvSpec;
  private s = -1;
  private rng = Rng.derive(0, STREAM.env);
  private readonly dists = new Map<number, NextDist>();

  constructor(
    private readonly model: WorldModel,
    private readonly key: string,
    private readonly map: SeenMap,
    private readonly starts: readonly number[],
    private readonly view: EnvView<unknown>,
  ) {
    this.spec = view.spec;
  }

  reset(seed: number): number {
    this.rng = Rng.derive(seed, STREAM.env);
    this.s = this.starts.length === 1 ? this.starts[0] : this.starts[this.rng.int(this.starts.length)];
    return this.s;
  }

  step(action: number): StepResult<number> {
    if (this.s < 0) throw new Error('rehearsal: step() before reset()');
    if (!Number.isInteger(action) || action < 0 || action > 3)
      return { observation: this.s, reward: 0, terminated: false, info: INVALID };
    const sa = this.s * 4 + action;
    let d = this.dists.get(sa);
    if (d === undefined) {
      d = this.model.next(this.key, this.map, this.s, action);
      this.dists.set(sa, d);
    }
    const u = this.rng.float();
    let k = 0;
    let acc = d.probs[0];
    while (k < d.cells.length - 1 && acc <= u) acc += d.probs[++k];
    const next = d.cells[k];
    this.s = next;
    const kind = this.map.kind[next];
    return {
      observation: next,
      reward: kind === 2 ? 1 : 0,
      terminated: kind !== 0,
      info: kind === 2 ? SUCCESS : kind === 1 ? HOLE : EMPTY,
    };
  }

  features(o: number): Float32Array {
    return this.view.features!(o);
  }

  text(o: number): string {
    return this.view.text!(o);
  }

  stateKey(o: number): number {
    return o;
  }
}

// ── The true P, for the model's error ─────────────────────────────────────────────────────────────

/** FrozenLake's compiled transition table as its env holds it (envs/tabular.ts), read duck-typed: train/
 * does not import envs/. Undefined for any other env. */
interface TrueModel {
  offset: Int32Array;
  prob: Float64Array;
  next: Int32Array;
}

function trueModel(view: EnvView<unknown>): TrueModel | undefined {
  const m = (view as { world?: { model?: Partial<TrueModel> } }).world?.model;
  return m?.offset instanceof Int32Array && m.prob instanceof Float64Array && m.next instanceof Int32Array
    ? (m as TrueModel)
    : undefined;
}

/** P(· | s, a) of the env itself (outcomes that land on one cell merged). */
export function trueNext(m: TrueModel, s: number, a: number): NextDist {
  const w = new Map<number, number>();
  for (let k = m.offset[s * 4 + a]; k < m.offset[s * 4 + a + 1]; k++)
    w.set(m.next[k], (w.get(m.next[k]) ?? 0) + m.prob[k]);
  const cells = [...w.keys()].sort((x, y) => x - y);
  return { cells, probs: cells.map((c) => w.get(c)!) };
}

// ── One iteration's rehearsal ─────────────────────────────────────────────────────────────────────

/** The cell after a turn: the next turn's observation, or the last turn's info.cell (recordCells). */
function cellAfter(t: Trajectory, i: number): number | undefined {
  if (i + 1 < t.turns.length) return t.turns[i + 1].observation as number;
  const c = t.turns[i].info.cell;
  return typeof c === 'number' ? c : undefined;
}

export interface Rehearsal {
  /** The model of each of the batch's tasks as an env factory for the rollout (a task not in the batch
   * throws). */
  makeEnv: (task: Task) => ModelEnv;
  /** The batch's distinct tasks, in order of first appearance. */
  tasks: Task[];
  /** Mean TV(P̂, P) over the (map, cell, action) the batch's real steps visited; NaN without a true P. */
  modelTv: number;
  /** Mean TV(P̂, P) over every non-terminal (cell, action) of the batch's maps. */
  modelTvAll: number;
}

/** Counts the batch's real steps into the model and returns what this iteration's rehearsal rolls out
 * in. Forced turns (guidance prefixes) are real steps too, and counted. */
export function learnFromBatch(
  model: WorldModel,
  batch: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
  generated: boolean,
): Rehearsal {
  model.beginIteration();
  const byKey = new Map<
    string,
    { task: Task; map: SeenMap; starts: number[]; view: EnvView<unknown>; visited: Set<number> }
  >();
  for (const t of batch) {
    if (t.turns.length === 0) continue;
    const key = WorldModel.key(t.task, generated);
    let e = byKey.get(key);
    if (e === undefined) {
      const view = viewOf(t.task);
      const map = seenMap(view, t.turns[0].observation);
      if (map === undefined)
        throw new InputError(
          'rehearsal',
          t.task.env,
          "learns FrozenLake's cells: this env's views are not those",
        );
      e = { task: t.task, map, starts: [], view, visited: new Set() };
      byKey.set(key, e);
    }
    const start = t.turns[0].observation as number;
    if (!e.starts.includes(start)) e.starts.push(start);
    t.turns.forEach((turn, i) => {
      const a = turn.action;
      const s2 = cellAfter(t, i);
      if (turn.info.valid === false || typeof a !== 'number' || s2 === undefined) return;
      const s = turn.observation as number;
      model.count(key, e!.map, s, a, s2);
      e!.visited.add(s * 4 + a);
    });
  }
  let tvSum = 0;
  let tvN = 0;
  let allSum = 0;
  let allN = 0;
  for (const [key, e] of byKey) {
    const m = trueModel(e.view);
    if (m === undefined) continue;
    for (let s = 0; s < e.map.kind.length; s++) {
      if (e.map.kind[s] !== 0) continue;
      for (let a = 0; a < 4; a++) {
        const d = tv(model.next(key, e.map, s, a), trueNext(m, s, a));
        allSum += d;
        allN++;
        if (e.visited.has(s * 4 + a)) {
          tvSum += d;
          tvN++;
        }
      }
    }
  }
  // Every distinct task of the batch is rehearsed (a fixed map's tasks share one model).
  const keyOf = new Map<string, string>();
  const tasks: Task[] = [];
  for (const t of batch) {
    const id = JSON.stringify(t.task);
    const key = WorldModel.key(t.task, generated);
    if (keyOf.has(id) || !byKey.has(key)) continue;
    keyOf.set(id, key);
    tasks.push(t.task);
  }
  return {
    tasks,
    makeEnv: (task) => {
      const key = keyOf.get(JSON.stringify(task));
      if (key === undefined) throw new Error(`rehearsal: task ${JSON.stringify(task)} is not in the batch`);
      const e = byKey.get(key)!;
      return new ModelEnv(model, key, e.map, e.starts, e.view);
    },
    modelTv: tvN > 0 ? tvSum / tvN : Number.NaN,
    modelTvAll: allN > 0 ? allSum / allN : Number.NaN,
  };
}

export interface RehearseOptions {
  iter: number;
  /** The run seed, and the rollout seed of the iteration's rehearsal (derived from it by the loop). */
  seed: number;
  runSeed: number;
  groupSize: number;
  budget: BudgetSchedule;
  policy: Policy<unknown, unknown>;
  revealBudget: boolean;
  /** Whether every task is its own random map (train/setup.ts). */
  generated: boolean;
}

/** The stage of train/loop.ts: the batch counted into the model, then round(R·K) imagined episodes of
 * each of its tasks in the model, acted by the learner's policy with the iteration's budgets (drawn as
 * samples K, K+1, … of the task, so a budget mix gives them their own draws). Randomness from (seed,
 * iteration): a resumed run rehearses the same episodes. */
export async function rehearse(
  model: WorldModel,
  batch: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
  o: RehearseOptions,
): Promise<{ imagined: Trajectory[]; values: Record<string, number> }> {
  const reh = learnFromBatch(model, batch, viewOf, o.generated);
  const K = o.groupSize;
  const imagined = await rollout({
    tasks: reh.tasks,
    samples: imaginedPerTask(model.config, K),
    budget: (task, sample) => budgetAt(o.budget, o.seed, o.iter, task.seed, K + sample),
    revealBudget: o.revealBudget,
    runSeed: o.runSeed,
    policy: o.policy,
    makeEnv: reh.makeEnv,
    idPrefix: `i${o.iter}-imagined-`,
  });
  const n = Math.max(1, imagined.length);
  return {
    imagined,
    values: {
      'train/model_tv': reh.modelTv,
      'rehearsal/model_tv_all': reh.modelTvAll,
      'rehearsal/imagined_episodes': imagined.length,
      'rehearsal/imagined_steps': imagined.reduce((a, t) => a + t.turns.length, 0),
      'rehearsal/imagined_success': imagined.filter((t) => t.outcome.success).length / n,
      'rehearsal/real_steps': batch.reduce((a, t) => a + t.turns.length, 0),
    },
  };
}
