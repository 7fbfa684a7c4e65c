// FrozenLake under fog (issue 29 item 3, docs/methods-measured.md): the belief over the hidden map,
// its entropy, the information gain of a step, and the exact value of the belief MDP by DP over
// (cell, revealed cells, their contents, turns left). The grid arrives as plain data (theory depends on
// nothing); the env's fog view is envs/frozenlake/fog.ts, and both use the same window: the cells within
// Chebyshev distance R of the agent.
//
// The prior: S and G cells are known (where the map has them); every other cell ("free" cell) is frozen
// with probability p, independently, conditioned on the map being valid (a hole-free path from every S
// to a G) — exactly the distribution of Gymnasium's generate_random_map (map.ts) for random maps, and a
// stated prior for a given map. The belief is the prior conditioned on the contents of the cells seen so
// far; it is kept exactly, as the list of the maps consistent with what was seen, so it is refused
// beyond MAX_FREE_CELLS free cells (2^20 maps).

/** The maps of the prior are enumerated: at most 2^20 of them. */
export const MAX_FREE_CELLS = 20;
/** The belief DP memoises (cell, revealed, holes, h): refused beyond this many nodes. */
export const MAX_BELIEF_STATES = 2_000_000;

export interface FogGrid {
  nrow: number;
  ncol: number;
  /** Per cell, row-major: 0 frozen or start, 1 hole, 2 goal (the true map; only S and G are read as prior). */
  kind: Uint8Array;
  /** The start cells (known to the agent). */
  starts: readonly number[];
  slippery: boolean;
  successRate: number;
}

/** A belief computation beyond a stated limit (the caller turns it into an input error). */
export class FogLimitError extends Error {
  /** Which limit: the hidden cells of the map, or the belief DP's states. */
  readonly limit: 'cells' | 'states';
  constructor(limit: 'cells' | 'states', message: string) {
    super(message);
    this.limit = limit;
  }
}

const MOVES: readonly (readonly [number, number])[] = [
  [0, -1], // Left
  [1, 0], // Down
  [0, 1], // Right
  [-1, 0], // Up
];

/** Gymnasium's move: clamped at the edges. */
export function moveCell(nrow: number, ncol: number, s: number, a: number): number {
  const r = Math.min(nrow - 1, Math.max(0, Math.floor(s / ncol) + MOVES[a][0]));
  const c = Math.min(ncol - 1, Math.max(0, (s % ncol) + MOVES[a][1]));
  return r * ncol + c;
}

/** The cells within Chebyshev distance `radius` of `s`. */
export function windowCells(nrow: number, ncol: number, s: number, radius: number): number[] {
  const r0 = Math.floor(s / ncol);
  const c0 = s % ncol;
  const out: number[] = [];
  for (let r = Math.max(0, r0 - radius); r <= Math.min(nrow - 1, r0 + radius); r++)
    for (let c = Math.max(0, c0 - radius); c <= Math.min(ncol - 1, c0 + radius); c++) out.push(r * ncol + c);
  return out;
}

/** (direction, probability) of an action: Gymnasium's slippery split (a−1, a, a+1) or the move itself. */
function outcomes(g: FogGrid, a: number): [number, number][] {
  if (!g.slippery) return [[a, 1]];
  const fail = (1 - g.successRate) / 2;
  return [
    [(a + 3) % 4, fail],
    [a, g.successRate],
    [(a + 1) % 4, fail],
  ];
}

const log2 = Math.log2;

/** The enumerated priors of the last few layouts (2^14 maps for a 4x4 layout: 16384 validity checks). */
const PRIORS = new Map<string, { maps: Uint32Array; weights: Float64Array }>();

/** The exact belief over a grid's hidden map: the prior's maps, their weights, and what a cell sees. */
export class FogBelief {
  readonly grid: FogGrid;
  readonly radius: number;
  readonly p: number;
  /** The free cells (not S, not G), in cell order; bit i of a map or mask is free cell free[i]. */
  readonly free: readonly number[];
  /** Bit index of each cell among the free cells, −1 for S and G. */
  readonly bit: Int32Array;
  /** The valid maps of the prior, as hole bitmasks over the free cells, and their normalised weights. */
  readonly maps: Uint32Array;
  readonly weights: Float64Array;
  /** Per cell, the free cells within the window (a bitmask). */
  readonly window: Uint32Array;
  /** The true map's holes over the free cells. */
  readonly truth: number;

  constructor(grid: FogGrid, radius: number, p: number) {
    if (!(Number.isInteger(radius) && radius >= 1))
      throw new RangeError(`fog radius must be ≥ 1, got ${radius}`);
    if (!(p > 0 && p <= 1)) throw new RangeError(`p must be in (0, 1], got ${p}`);
    this.grid = grid;
    this.radius = radius;
    this.p = p;
    const n = grid.nrow * grid.ncol;
    const isStart = new Uint8Array(n);
    for (const s of grid.starts) isStart[s] = 1;
    this.bit = new Int32Array(n).fill(-1);
    const free: number[] = [];
    for (let s = 0; s < n; s++)
      if (!isStart[s] && grid.kind[s] !== 2) {
        this.bit[s] = free.length;
        free.push(s);
      }
    this.free = free;
    if (free.length > MAX_FREE_CELLS)
      throw new FogLimitError(
        'cells',
        `${free.length} hidden cells: the exact belief enumerates 2^${free.length} maps; at most ${MAX_FREE_CELLS} hidden cells (a 4x4 map has 14)`,
      );
    let truth = 0;
    free.forEach((s, i) => {
      if (grid.kind[s] === 1) truth |= 1 << i;
    });
    this.truth = truth >>> 0;
    // The prior depends on the layout (size, S, G), not on the true map: maps of one layout share it.
    const layout = JSON.stringify([grid.nrow, grid.ncol, grid.starts, [...grid.kind].map((k) => k === 2), p]);
    let prior = PRIORS.get(layout);
    if (prior === undefined) {
      const maps: number[] = [];
      const weights: number[] = [];
      const q = 1 - p;
      let total = 0;
      for (let m = 0; m < 2 ** free.length; m++) {
        if (!this.valid(m)) continue;
        let w = 1;
        for (let i = 0; i < free.length; i++) w *= (m >>> i) & 1 ? q : p;
        if (w === 0) continue;
        maps.push(m);
        weights.push(w);
        total += w;
      }
      prior = { maps: Uint32Array.from(maps), weights: Float64Array.from(weights, (w) => w / total) };
      if (PRIORS.size >= 8) PRIORS.delete(PRIORS.keys().next().value as string);
      PRIORS.set(layout, prior);
    }
    this.maps = prior.maps;
    this.weights = prior.weights;
    this.window = new Uint32Array(n);
    for (let s = 0; s < n; s++) {
      let mask = 0;
      for (const c of windowCells(grid.nrow, grid.ncol, s, radius))
        if (this.bit[c] >= 0) mask |= 1 << this.bit[c];
      this.window[s] = mask >>> 0;
    }
  }

  /** Whether cell s is a hole in map m. */
  isHole(m: number, s: number): boolean {
    const b = this.bit[s];
    return b >= 0 && ((m >>> b) & 1) === 1;
  }

  /** Every start reaches a goal through non-hole cells (Gymnasium's is_valid, from every S). */
  private valid(m: number): boolean {
    const { nrow, ncol, kind } = this.grid;
    for (const s0 of this.grid.starts) {
      const seen = new Uint8Array(nrow * ncol);
      const stack = [s0];
      let found = false;
      while (stack.length > 0 && !found) {
        const s = stack.pop()!;
        if (seen[s]) continue;
        seen[s] = 1;
        for (let a = 0; a < 4; a++) {
          const nx = moveCell(nrow, ncol, s, a);
          if (kind[nx] === 2) {
            found = true;
            break;
          }
          if (!this.isHole(m, nx) && !seen[nx]) stack.push(nx);
        }
      }
      if (!found) return false;
    }
    return true;
  }

  /** The free cells seen from the starts before any move (the reset's window), as a mask. */
  initialSeen(start: number): number {
    return this.window[start];
  }

  /** The indices (into maps) of the maps consistent with the contents `holes` of the seen cells `seen`. */
  consistent(seen: number, holes: number): number[] {
    const out: number[] = [];
    const h = (holes & seen) >>> 0;
    for (let i = 0; i < this.maps.length; i++) if ((this.maps[i] & seen) >>> 0 === h) out.push(i);
    return out;
  }

  /** Entropy (bits) of the belief's marginal over the free cells in `over`, given (seen, holes). */
  entropy(seen: number, holes: number, over = 0xffffffff): number {
    const idx = this.consistent(seen, holes);
    const mass = new Map<number, number>();
    let total = 0;
    for (const i of idx) {
      const key = (this.maps[i] & over) >>> 0;
      mass.set(key, (mass.get(key) ?? 0) + this.weights[i]);
      total += this.weights[i];
    }
    let h = 0;
    for (const w of mass.values()) {
      const q = w / total;
      if (q > 0) h -= q * log2(q);
    }
    return h;
  }

  /**
   * The free cells on some shortest path from `from` to a goal in the optimistic map (unseen cells
   * frozen, seen holes blocked), as a mask: the cells whose contents can change how fast the goal is
   * reached. A cell off every such path (behind the agent, in a corner away from the goal) is wandering.
   */
  relevant(from: number, seen: number, holes: number): number {
    const { nrow, ncol, kind } = this.grid;
    const n = nrow * ncol;
    const blocked = (s: number) =>
      this.bit[s] >= 0 && ((seen >>> this.bit[s]) & 1) === 1 && ((holes >>> this.bit[s]) & 1) === 1;
    const bfs = (sources: number[]): Int32Array => {
      const d = new Int32Array(n).fill(-1);
      const queue = [...sources];
      for (const s of sources) d[s] = 0;
      for (let k = 0; k < queue.length; k++) {
        const s = queue[k];
        // Paths go through frozen cells only: a goal or a hole ends an episode.
        if (d[s] > 0 && (kind[s] === 2 || blocked(s))) continue;
        for (let a = 0; a < 4; a++) {
          const nx = moveCell(nrow, ncol, s, a);
          if (d[nx] >= 0 || blocked(nx)) continue;
          d[nx] = d[s] + 1;
          queue.push(nx);
        }
      }
      return d;
    };
    const goals: number[] = [];
    for (let s = 0; s < n; s++) if (kind[s] === 2) goals.push(s);
    const dFrom = bfs([from]);
    const dGoal = bfs(goals);
    let best = Number.POSITIVE_INFINITY;
    for (const gl of goals) if (dFrom[gl] >= 0) best = Math.min(best, dFrom[gl]);
    if (!Number.isFinite(best)) return 0;
    let mask = 0;
    for (const s of this.free)
      if (dFrom[s] >= 0 && dGoal[s] >= 0 && dFrom[s] + dGoal[s] === best) mask |= 1 << this.bit[s];
    return mask >>> 0;
  }

  /**
   * The information gain (bits) of a step from cell `from` (seen cells `seenBefore`) that left the seen
   * cells `seenAfter`, on the true map: the entropy of the belief over the hidden cells on some shortest
   * path from `from` to the goal before the step minus the entropy of those same cells after it. 0 when
   * the step revealed nothing (a revisit); 0 for cells off every shortest path (wandering).
   */
  gain(from: number, seenBefore: number, seenAfter: number): number {
    const hb = (this.truth & seenBefore) >>> 0;
    const ha = (this.truth & seenAfter) >>> 0;
    if (seenAfter === seenBefore) return 0;
    const over = (this.relevant(from, seenBefore, hb) & ~seenBefore) >>> 0;
    if (over === 0) return 0;
    return this.entropy(seenBefore, hb, over) - this.entropy(seenAfter, ha, over);
  }

  /**
   * The value of the belief MDP: the probability, under the prior, that the Bayes-optimal policy that
   * sees only the revealed map reaches a goal within `budget` turns from the starts (exact DP over
   * (cell, revealed cells, their contents, turns left), memoised); `states` counts the nodes.
   */
  value(budget: number): { value: number; states: number } {
    const memo: Map<number, number>[] = Array.from({ length: budget + 1 }, () => new Map());
    let states = 0;
    const { nrow, ncol, kind } = this.grid;
    const nFree = this.free.length;
    const rec = (s: number, seen: number, holes: number, h: number, idx: number[]): number => {
      if (h === 0) return 0;
      const key = (s * 2 ** nFree + seen) * 2 ** nFree + holes;
      const hit = memo[h].get(key);
      if (hit !== undefined) return hit;
      if (++states > MAX_BELIEF_STATES)
        throw new FogLimitError(
          'states',
          `the belief DP passed ${MAX_BELIEF_STATES} states (cell, revealed cells, contents, turns left); lower the budget or the map`,
        );
      let best = 0;
      for (let a = 0; a < 4; a++) {
        let q = 0;
        for (const [d, prob] of outcomes(this.grid, a)) {
          const nx = moveCell(nrow, ncol, s, d);
          if (kind[nx] === 2) {
            q += prob;
            continue;
          }
          const b = this.bit[nx];
          if (b >= 0 && ((seen >>> b) & 1) === 0)
            throw new Error(`fog: cell ${nx} entered unseen (the window of radius ≥ 1 shows every move)`);
          if (b >= 0 && ((holes >>> b) & 1) === 1) continue;
          q += prob * this.expectOver(nx, seen, holes, h, idx, rec);
        }
        if (q > best) best = q;
      }
      memo[h].set(key, best);
      return best;
    };
    const vals = this.grid.starts.map((s0) => {
      const seen = this.window[s0];
      // The reset's window is already an observation: average over its contents.
      const groups = this.split(this.consistent(0, 0), seen);
      let v = 0;
      for (const [pattern, g] of groups) v += g.weight * rec(s0, seen, pattern, budget, g.idx);
      return v;
    });
    return { value: vals.reduce((x, y) => x + y, 0) / vals.length, states };
  }

  /** E over what the window at `nx` reveals of V(nx, …, h − 1). */
  private expectOver(
    nx: number,
    seen: number,
    holes: number,
    h: number,
    idx: number[],
    rec: (s: number, seen: number, holes: number, h: number, idx: number[]) => number,
  ): number {
    const fresh = (this.window[nx] & ~seen) >>> 0;
    if (fresh === 0) return rec(nx, seen, holes, h - 1, idx);
    const groups = this.split(idx, fresh);
    const after = (seen | fresh) >>> 0;
    let total = 0;
    let v = 0;
    for (const g of groups.values()) total += g.weight;
    for (const [pattern, g] of groups)
      v += (g.weight / total) * rec(nx, after, (holes | pattern) >>> 0, h - 1, g.idx);
    return v;
  }

  /** The maps idx grouped by their holes in `cells`, each group's weight normalised over idx. */
  private split(idx: readonly number[], cells: number): Map<number, { weight: number; idx: number[] }> {
    const groups = new Map<number, { weight: number; idx: number[] }>();
    let total = 0;
    for (const i of idx) {
      const key = (this.maps[i] & cells) >>> 0;
      let g = groups.get(key);
      if (g === undefined) {
        g = { weight: 0, idx: [] };
        groups.set(key, g);
      }
      g.weight += this.weights[i];
      g.idx.push(i);
      total += this.weights[i];
    }
    for (const g of groups.values()) g.weight /= total;
    return groups;
  }

  /** The fully observed optimum on map m: V*_h(start) by finite-horizon DP (the agent sees the map). */
  fullyObserved(m: number, start: number, budget: number): number {
    const { nrow, ncol, kind } = this.grid;
    const n = nrow * ncol;
    let V = new Float64Array(n);
    for (let h = 1; h <= budget; h++) {
      const next = new Float64Array(n);
      for (let s = 0; s < n; s++) {
        if (kind[s] === 2 || this.isHole(m, s)) continue;
        let best = 0;
        for (let a = 0; a < 4; a++) {
          let q = 0;
          for (const [d, prob] of outcomes(this.grid, a)) {
            const nx = moveCell(nrow, ncol, s, d);
            q += prob * (kind[nx] === 2 ? 1 : this.isHole(m, nx) ? 0 : V[nx]);
          }
          if (q > best) best = q;
        }
        next[s] = best;
      }
      V = next;
    }
    return V[start];
  }

  /** The fully observed oracle's expected value under the prior: an upper bound on the belief value. */
  fullyObservedMean(budget: number): number {
    let v = 0;
    for (let i = 0; i < this.maps.length; i++) {
      let per = 0;
      for (const s0 of this.grid.starts) per += this.fullyObserved(this.maps[i], s0, budget);
      v += this.weights[i] * (per / this.grid.starts.length);
    }
    return v;
  }
}

/** The exact fog report `turnwise calc fog` prints. */
export interface FogReport {
  size: number;
  radius: number;
  p: number;
  budget: number;
  slippery: boolean;
  /** Hidden cells and valid maps of the prior. */
  hidden: number;
  maps: number;
  /** Entropy (bits) of the belief at reset (after the first window). */
  entropy: number;
  /** The belief MDP's value: the Bayes-optimal success under fog. */
  fog: number;
  /** E_prior[V*_T]: the fully observed oracle, an upper bound. */
  oracle: number;
  states: number;
}

/** The belief value and the fully observed bound on size×size random maps (S top left, G bottom right). */
export function fogReport(
  size: number,
  radius: number,
  p: number,
  budget: number,
  slippery: boolean,
  successRate = 1 / 3,
): FogReport {
  const n = size * size;
  const kind = new Uint8Array(n);
  kind[n - 1] = 2;
  const belief = new FogBelief(
    { nrow: size, ncol: size, kind, starts: [0], slippery, successRate },
    radius,
    p,
  );
  const { value, states } = belief.value(budget);
  const seen = belief.initialSeen(0);
  const prior = belief.consistent(0, 0);
  // The entropy at reset: the expected entropy after the first window.
  let entropy = 0;
  const groups = new Map<number, number>();
  for (const i of prior) {
    const key = (belief.maps[i] & seen) >>> 0;
    groups.set(key, (groups.get(key) ?? 0) + belief.weights[i]);
  }
  for (const [pattern, w] of groups) entropy += w * belief.entropy(seen, pattern);
  return {
    size,
    radius,
    p,
    budget,
    slippery,
    hidden: belief.free.length,
    maps: belief.maps.length,
    entropy,
    fog: value,
    oracle: belief.fullyObservedMean(budget),
    states,
  };
}
