// Reward shaping measured exactly on a finite grid world (FrozenLake; docs/shaping.md, docs/methods.md §8).
// A shaping adds F to every transition's reward; the shaped-optimal policy comes from the finite-horizon DP
// on r + F (h = turns left, the budget-aware optimum):
//   Q^F_h(x,a) = Σ p·(r + F_h(x,a,x') + [not terminal]·V^F_{h−1}(x')),  V^F_h = max_a Q^F_h,  V^F_0 = 0
// and is then judged by the TRUE reward: its exact success probability against V*_T(start), and the
// (h, x) where one of its greedy actions is not among the true optimum's (ties count as agreeing).
// Potential-based shaping (Ng, Harada & Russell 1999, Thm. 1), finite horizon: Φ_h indexed by turns left,
//   F = Φ_{h−1}(s') − Φ_h(s), with Φ_0 ≡ 0 and Φ = 0 on terminal cells,
// so every episode's shaped return is R − Φ_T(s_0): the optimal policies are the true ones. The two
// zeros matter: −distance with Φ(hole) ≠ 0 would pay for falling into a far hole, with Φ_0 ≠ 0 for ending
// the budget near the goal. Any other bonus may change the optimum; that is what the table measures.
// Novelty (a bonus per newly visited cell) is not Markov in the cell: its DP runs on (cell, visited set),
// enumerated from the start — exact where that set is small (4x4: ≤ 11·2^10 states), refused above it.
// Depends on nothing: the world arrives as plain arrays (a FrozenLakeWorld has this shape).

/** A finite model in the flat layout of envs/tabular.ts: the outcomes of (s, a) are [offset[s·nA+a], offset[s·nA+a+1]). */
export interface FiniteModel {
  nS: number;
  nA: number;
  offset: Int32Array;
  prob: Float64Array;
  next: Int32Array;
  reward: Float64Array;
  terminated: Uint8Array;
}

export interface ShapingWorld {
  model: FiniteModel;
  nrow: number;
  ncol: number;
  /** Per cell: 0 frozen/start, 1 hole, 2 goal. */
  kind: Uint8Array;
  starts: ArrayLike<number>;
}

export const SHAPINGS = ['potential', 'distance', 'progress', 'novelty', 'step-penalty'] as const;
export type ShapingKind = (typeof SHAPINGS)[number];

/** What each kind adds, F per transition s → s' taken with h turns left (c the coefficient). */
export const SHAPING_FORMULA: Readonly<Record<ShapingKind, string>> = {
  potential: 'c·(Φ_{h−1}(s′) − Φ_h(s)), Φ_h = V*_h (potential-based)',
  distance:
    'c·(Φ(s′) − Φ(s)), Φ = −Manhattan distance to G, 0 on terminal cells and at h = 0 (potential-based)',
  progress: 'c per step that brings the cell nearer the goal (Manhattan)',
  novelty: 'c per cell entered for the first time in the episode',
  'step-penalty': '−c per step',
};

export const POTENTIAL_BASED: Readonly<Record<ShapingKind, boolean>> = {
  potential: true,
  distance: true,
  progress: false,
  novelty: false,
  'step-penalty': false,
};

export const DEFAULT_SHAPING_COEF = 0.1;
/** The largest c a training run takes (train --shaping, study shaping): above it a bonus outweighs the
 * goal's reward of 1 ten times over on a single step — a typo, not an experiment. */
export const MAX_SHAPING_COEF = 10;
/** Above this many (cell, visited set) states the novelty DP is refused rather than run for minutes. */
export const MAX_NOVELTY_STATES = 1 << 18;
/** Two actions tie when their values differ by at most this, relative to max(1, |Q|) at the state: above
 * the DP's rounding (~1e-13 at h = 200), below the true gaps on the maps tested — the brute force in
 * test/theory/shaping.test.ts ties at 1e-9 and counts the same changed pairs. Not a proof for every map. */
export const TIE_TOLERANCE = 1e-11;

export interface Shaping {
  kind: ShapingKind;
  coef: number;
}

/** Manhattan distance of every cell to its nearest goal. */
export function goalDistances(w: ShapingWorld): Int32Array {
  const goals: [number, number][] = [];
  for (let s = 0; s < w.kind.length; s++)
    if (w.kind[s] === 2) goals.push([Math.floor(s / w.ncol), s % w.ncol]);
  const d = new Int32Array(w.kind.length);
  for (let s = 0; s < d.length; s++) {
    const r = Math.floor(s / w.ncol);
    const c = s % w.ncol;
    d[s] = Math.min(...goals.map(([gr, gc]) => Math.abs(r - gr) + Math.abs(c - gc)));
  }
  return d;
}

/**
 * The F of one transition, for a DP and for training alike. `h` is the turns left when the action is
 * taken (≥ 1), `next` the cell entered, `terminal` whether the episode ends there, `isNew` whether
 * `next` was not visited before in the episode (novelty only).
 */
export class Shaper {
  readonly kind: ShapingKind;
  readonly coef: number;
  private readonly world: ShapingWorld;
  private readonly dist: Int32Array;
  /** V*_h(s) at h·nS + s, h = 0..horizon (potential only). */
  private readonly vstar: Float64Array | undefined;

  constructor(world: ShapingWorld, shaping: Shaping, horizon: number) {
    this.world = world;
    this.kind = shaping.kind;
    this.coef = shaping.coef;
    this.dist = goalDistances(world);
    this.vstar = shaping.kind === 'potential' ? optimalValues(world, horizon) : undefined;
  }

  /** Φ_h(s) of the potential-based kinds: 0 at h = 0 and on terminal cells. */
  potential(h: number, s: number): number {
    if (h === 0 || this.world.kind[s] !== 0) return 0;
    if (this.kind === 'distance') return -this.dist[s];
    const V = this.vstar as Float64Array;
    const nS = this.world.model.nS;
    if ((h + 1) * nS > V.length) throw new RangeError(`potential asked at h = ${h} beyond its horizon`);
    return V[h * nS + s];
  }

  bonus(h: number, s: number, next: number, terminal: boolean, isNew: boolean): number {
    const c = this.coef;
    switch (this.kind) {
      case 'potential':
      case 'distance':
        return c * ((terminal ? 0 : this.potential(h - 1, next)) - this.potential(h, s));
      case 'progress':
        return this.dist[next] < this.dist[s] ? c : 0;
      case 'novelty':
        return isNew ? c : 0;
      case 'step-penalty':
        return -c;
    }
  }
}

/** The decision model a DP runs on: cells, or (cell, visited set) for novelty. Outcome k of (x, a) leads
 * to cell nextCell[k] and, unless terminal, to decision state next[k]. */
interface DecisionModel {
  nX: number;
  nA: number;
  cellOf: Int32Array;
  offset: Int32Array;
  prob: Float64Array;
  reward: Float64Array;
  terminated: Uint8Array;
  nextCell: Int32Array;
  next: Int32Array;
  /** Novelty: the outcome enters a cell not visited before. */
  isNew: Uint8Array;
  starts: Int32Array;
}

function cellModel(w: ShapingWorld): DecisionModel {
  const m = w.model;
  const n = m.offset[m.nS * m.nA];
  return {
    nX: m.nS,
    nA: m.nA,
    cellOf: Int32Array.from({ length: m.nS }, (_, s) => s),
    offset: m.offset,
    prob: m.prob,
    reward: m.reward,
    terminated: m.terminated,
    nextCell: m.next,
    next: m.next,
    isNew: new Uint8Array(n),
    starts: Int32Array.from(w.starts),
  };
}

/** (cell, visited set) states reachable from the starts; the set holds the non-terminal cells visited. */
function noveltyModel(w: ShapingWorld, maxStates: number): DecisionModel | string {
  const m = w.model;
  const bit = new Int32Array(m.nS).fill(-1);
  let nb = 0;
  for (let s = 0; s < m.nS; s++) if (w.kind[s] === 0) bit[s] = nb++;
  if (nb > 52) return `${nb} frozen cells: 2^${nb} visited sets`;
  const index = new Map<string, number>();
  const cells: number[] = [];
  const masks: number[] = [];
  const key = (cell: number, mask: number) => `${mask}:${cell}`;
  const add = (cell: number, mask: number): number => {
    const k = key(cell, mask);
    let x = index.get(k);
    if (x === undefined) {
      x = cells.length;
      index.set(k, x);
      cells.push(cell);
      masks.push(mask);
    }
    return x;
  };
  const starts = Int32Array.from(w.starts, (s) => add(s, 2 ** bit[s]));
  const offset: number[] = [0];
  const prob: number[] = [];
  const reward: number[] = [];
  const terminated: number[] = [];
  const nextCell: number[] = [];
  const next: number[] = [];
  const isNew: number[] = [];
  for (let x = 0; x < cells.length; x++) {
    if (cells.length > maxStates) return `more than ${maxStates} (cell, visited set) states`;
    const s = cells[x];
    const mask = masks[x];
    for (let a = 0; a < m.nA; a++) {
      for (let k = m.offset[s * m.nA + a]; k < m.offset[s * m.nA + a + 1]; k++) {
        const s2 = m.next[k];
        const b = bit[s2];
        // Terminal cells are never in the set: entering one ends the episode, and it is new by construction.
        const fresh = b < 0 ? m.terminated[k] === 1 && s2 !== s : Math.floor(mask / 2 ** b) % 2 === 0;
        prob.push(m.prob[k]);
        reward.push(m.reward[k]);
        terminated.push(m.terminated[k]);
        nextCell.push(s2);
        isNew.push(fresh ? 1 : 0);
        next.push(m.terminated[k] ? -1 : add(s2, fresh && b >= 0 ? mask + 2 ** b : mask));
      }
      offset.push(prob.length);
    }
  }
  return {
    nX: cells.length,
    nA: m.nA,
    cellOf: Int32Array.from(cells),
    offset: Int32Array.from(offset),
    prob: Float64Array.from(prob),
    reward: Float64Array.from(reward),
    terminated: Uint8Array.from(terminated),
    nextCell: Int32Array.from(nextCell),
    next: Int32Array.from(next),
    isNew: Uint8Array.from(isNew),
    starts,
  };
}

/** V*_h(s) of the true reward for h = 0..horizon, at h·nS + s. */
export function optimalValues(w: ShapingWorld, horizon: number): Float64Array {
  return solve(cellModel(w), horizon, undefined).V;
}

interface Solution {
  /** V_h(x) at h·nX + x. */
  V: Float64Array;
  /** Bit a set when action a is greedy at (h, x), at h·nX + x. */
  greedy: Uint8Array;
}

/** The finite-horizon DP on r + F (F = 0 without a shaper), keeping every greedy set. */
function solve(d: DecisionModel, horizon: number, shaper: Shaper | undefined): Solution {
  const { nX, nA } = d;
  const V = new Float64Array((horizon + 1) * nX);
  const greedy = new Uint8Array((horizon + 1) * nX);
  const q = new Float64Array(nA);
  for (let h = 1; h <= horizon; h++) {
    const prev = (h - 1) * nX;
    for (let x = 0; x < nX; x++) {
      const s = d.cellOf[x];
      let best = Number.NEGATIVE_INFINITY;
      let scale = 1;
      for (let a = 0; a < nA; a++) {
        let v = 0;
        for (let k = d.offset[x * nA + a]; k < d.offset[x * nA + a + 1]; k++) {
          const term = d.terminated[k] === 1;
          const f = shaper ? shaper.bonus(h, s, d.nextCell[k], term, d.isNew[k] === 1) : 0;
          v += d.prob[k] * (d.reward[k] + f + (term ? 0 : V[prev + d.next[k]]));
        }
        q[a] = v;
        if (v > best) best = v;
        scale = Math.max(scale, Math.abs(v));
      }
      V[h * nX + x] = best;
      let set = 0;
      for (let a = 0; a < nA; a++) if (best - q[a] <= TIE_TOLERANCE * scale) set |= 1 << a;
      greedy[h * nX + x] = set;
    }
  }
  return { V, greedy };
}

/** Exact true-reward value at h = horizon of the policy uniform over the greedy set at each (h, x). */
function trueValue(d: DecisionModel, horizon: number, greedy: Uint8Array): Float64Array {
  const { nX, nA } = d;
  let prev = new Float64Array(nX);
  let cur = new Float64Array(nX);
  for (let h = 1; h <= horizon; h++) {
    for (let x = 0; x < nX; x++) {
      const set = greedy[h * nX + x];
      let v = 0;
      let n = 0;
      for (let a = 0; a < nA; a++) {
        if ((set & (1 << a)) === 0) continue;
        n++;
        for (let k = d.offset[x * nA + a]; k < d.offset[x * nA + a + 1]; k++)
          v += d.prob[k] * (d.reward[k] + (d.terminated[k] ? 0 : prev[d.next[k]]));
      }
      cur[x] = v / n;
    }
    [prev, cur] = [cur, prev];
  }
  return prev;
}

/** Decision states reachable from the starts whose cell is not terminal. */
function reachable(d: DecisionModel, kind: Uint8Array): Uint8Array {
  const seen = new Uint8Array(d.nX);
  const stack = [...d.starts];
  for (const x of stack) seen[x] = 1;
  while (stack.length > 0) {
    const x = stack.pop() as number;
    for (let k = d.offset[x * d.nA]; k < d.offset[(x + 1) * d.nA]; k++) {
      if (d.prob[k] > 0 && !d.terminated[k] && !seen[d.next[k]]) {
        seen[d.next[k]] = 1;
        stack.push(d.next[k]);
      }
    }
  }
  for (let x = 0; x < d.nX; x++) if (kind[d.cellOf[x]] !== 0) seen[x] = 0;
  return seen;
}

export interface ShapingRow {
  kind: ShapingKind;
  coef: number;
  potentialBased: boolean;
  /** Decision pairs (h, x), h = 1..budget, x a non-terminal state reachable from the start: cells, or
   * (cell, visited set) for novelty. */
  states: number;
  /** Pairs where some greedy action of the shaped optimum is not optimal for the true reward. */
  changed: number;
  /** changed / states. */
  changedShare: number;
  /** Exact true success probability of the shaped-optimal policy from the start (uniform over its ties). */
  success: number;
  /** V*_budget(start): the true optimum. */
  optimum: number;
  /** optimum − success. */
  loss: number;
  /** V^F_budget(start): the shaped objective's own optimum. */
  shapedValue: number;
  /** Set when the row could not be computed exactly (novelty on a large map): why. */
  skipped?: string;
}

export interface ShapingReport {
  budget: number;
  /** Non-terminal cells reachable from the start. */
  cells: number;
  optimum: number;
  rows: ShapingRow[];
}

const meanAt = (V: ArrayLike<number>, base: number, xs: Int32Array) => {
  let s = 0;
  for (const x of xs) s += V[base + x];
  return s / xs.length;
};

/** Every shaping's shaped-optimal policy measured against the true optimum at turn budget `budget`. */
export function measureShaping(
  world: ShapingWorld,
  budget: number,
  shapings: readonly Shaping[],
  maxNoveltyStates = MAX_NOVELTY_STATES,
): ShapingReport {
  if (!Number.isInteger(budget) || budget < 1)
    throw new RangeError(`budget must be an integer ≥ 1, got ${budget}`);
  const cells = cellModel(world);
  const truth = solve(cells, budget, undefined);
  const nS = cells.nX;
  const optimum = meanAt(truth.V, budget * nS, cells.starts);
  const cellReach = reachable(cells, world.kind);
  let nCells = 0;
  for (const r of cellReach) nCells += r;
  let novelty: DecisionModel | string | undefined;
  const rows = shapings.map((sh): ShapingRow => {
    const base = { kind: sh.kind, coef: sh.coef, potentialBased: POTENTIAL_BASED[sh.kind], optimum };
    let d = cells;
    if (sh.kind === 'novelty') {
      novelty ??= noveltyModel(world, maxNoveltyStates);
      if (typeof novelty === 'string') {
        const nan = Number.NaN;
        const out = { states: 0, changed: 0, changedShare: nan, success: nan, loss: nan, shapedValue: nan };
        return { ...base, ...out, skipped: novelty };
      }
      d = novelty;
    }
    const shaped = solve(d, budget, new Shaper(world, sh, budget));
    const reach = sh.kind === 'novelty' ? reachable(d, world.kind) : cellReach;
    let states = 0;
    let changed = 0;
    for (let h = 1; h <= budget; h++) {
      for (let x = 0; x < d.nX; x++) {
        if (!reach[x]) continue;
        states++;
        const optimal = truth.greedy[h * nS + d.cellOf[x]];
        if ((shaped.greedy[h * d.nX + x] & ~optimal) !== 0) changed++;
      }
    }
    const success = meanAt(trueValue(d, budget, shaped.greedy), 0, d.starts);
    return {
      ...base,
      states,
      changed,
      changedShare: changed / states,
      success,
      loss: optimum - success,
      shapedValue: meanAt(shaped.V, budget * d.nX, d.starts),
    };
  });
  return { budget, cells: nCells, optimum, rows };
}

/** `kind` or `kind:coef` (coef a finite number), as `train --shaping` and configs write it. */
export function parseShaping(raw: string): Shaping | undefined {
  const [kind, coef, ...rest] = raw.split(':');
  if (rest.length > 0 || !(SHAPINGS as readonly string[]).includes(kind)) return undefined;
  if (coef === undefined) return { kind: kind as ShapingKind, coef: DEFAULT_SHAPING_COEF };
  const c = Number(coef);
  if (coef.trim() === '' || !Number.isFinite(c)) return undefined;
  return { kind: kind as ShapingKind, coef: c };
}
