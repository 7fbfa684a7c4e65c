// The belief over a fogged FrozenLake map (src/theory/fog.ts) against closed forms and brute force:
// the information gain of a turn that reveals every hidden cell equals the belief's entropy before it
// (here h(0.2) per independent cell, the binary entropy, written out); a revisit gains 0; a cell off
// every shortest path to the goal is not paid; the belief DP equals an expectimax over observation
// histories written here from scratch (no memo, posterior by Bayes over every map, own validity DFS);
// the fully observed bound equals the env's own oracle (envs/tabular.ts) and the fog value at a radius
// that shows the whole map.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrozenLakeWorld, parseMap } from '../../src/envs/frozenlake/index.ts';
import { FogBelief, type FogGrid, FogLimitError, fogReport } from '../../src/theory/fog.ts';

const h2 = (q: number) => -q * Math.log2(q) - (1 - q) * Math.log2(1 - q);
const close = (a: number, b: number, tol = 1e-12) => Math.abs(a - b) <= tol;

function grid(rows: string[], slippery = false): FogGrid {
  const flat = rows.join('');
  return {
    nrow: rows.length,
    ncol: rows[0].length,
    kind: Uint8Array.from(flat, (c) => (c === 'H' ? 1 : c === 'G' ? 2 : 0)),
    starts: [...flat].flatMap((c, i) => (c === 'S' ? [i] : [])),
    slippery,
    successRate: 1 / 3,
  };
}

/** The free-cell mask of a set of cells. */
const maskOf = (b: FogBelief, cells: number[]) => cells.reduce((m, c) => (m | (1 << b.bit[c])) >>> 0, 0);

test('a turn that reveals every hidden cell gains the prior entropy; a revisit gains 0', () => {
  // SFF / FFG, radius 1: from S the window shows columns 0–1; (0,2) is the only hidden cell, and the
  // route S→(1,0)→(1,1)→G keeps every map valid, so it is a hole with probability 0.2 exactly.
  const b = new FogBelief(grid(['SFF', 'FFG']), 1, 0.8);
  const seen0 = b.initialSeen(0);
  assert.equal(seen0, maskOf(b, [1, 3, 4]));
  assert.ok(close(b.entropy(seen0, 0), h2(0.2)));
  const seen1 = (seen0 | b.window[1]) >>> 0; // Right to (0,1)
  assert.equal(seen1, maskOf(b, [1, 2, 3, 4]));
  assert.ok(close(b.gain(0, seen0, seen1), h2(0.2)));
  assert.ok(close(b.entropy(seen1, 0), 0));
  // Back Left to S: nothing new is seen.
  assert.equal(b.gain(1, seen1, seen1), 0);
});

test('wandering is not paid: a revealed cell off every shortest path to the goal counts for nothing', () => {
  // SFF / FFF / FFG, radius 1. At (0,1) (after Right) the hidden cells are (2,0) and (2,1), independent
  // holes with p 0.2 (column 2 is frozen: a route exists whatever they are). Down to (1,1) reveals both,
  // but only (2,1) lies on a shortest path from (0,1) to G: the gain is h(0.2), not 2·h(0.2).
  const b = new FogBelief(grid(['SFF', 'FFF', 'FFG']), 1, 0.8);
  const seen = (b.initialSeen(0) | b.window[1]) >>> 0;
  assert.equal(seen, maskOf(b, [1, 2, 3, 4, 5]));
  assert.ok(close(b.entropy(seen, 0), 2 * h2(0.2)));
  assert.equal(b.relevant(1, seen, 0) & maskOf(b, [6, 7]), maskOf(b, [7]));
  const all = (seen | b.window[4]) >>> 0;
  assert.ok(close(b.gain(1, seen, all), h2(0.2)));
  // From S the same reveal (were it possible) would pay both: every cell is on a shortest S→G path.
  assert.ok(close(b.gain(0, seen, all), 2 * h2(0.2)));
});

// ── Brute force: expectimax over observation histories ──────────────────────────────────────────

function bruteValue(rows: string[], radius: number, p: number, T: number, slippery: boolean): number {
  const nrow = rows.length;
  const ncol = rows[0].length;
  const n = nrow * ncol;
  const flat = rows.join('');
  const free = [...flat].flatMap((c, i) => (c === 'S' || c === 'G' ? [] : [i]));
  const start = flat.indexOf('S');
  // Every map: a letter per cell.
  const maps: { cells: string[]; w: number }[] = [];
  for (let m = 0; m < 2 ** free.length; m++) {
    const cells = [...flat];
    let w = 1;
    free.forEach((c, i) => {
      const hole = (m >> i) & 1;
      cells[c] = hole ? 'H' : 'F';
      w *= hole ? 1 - p : p;
    });
    // Valid: S reaches G through non-holes (4-neighbour flood fill).
    const reach = new Set([start]);
    const todo = [start];
    let ok = false;
    while (todo.length) {
      const s = todo.pop()!;
      const r = Math.floor(s / ncol);
      const c = s % ncol;
      for (const [dr, dc] of [
        [0, 1],
        [1, 0],
        [0, -1],
        [-1, 0],
      ]) {
        const rr = r + dr;
        const cc = c + dc;
        if (rr < 0 || cc < 0 || rr >= nrow || cc >= ncol) continue;
        const x = rr * ncol + cc;
        if (cells[x] === 'G') ok = true;
        if (cells[x] !== 'H' && !reach.has(x)) {
          reach.add(x);
          todo.push(x);
        }
      }
    }
    if (ok) maps.push({ cells, w });
  }
  const win = (s: number) => {
    const out: number[] = [];
    for (let x = 0; x < n; x++)
      if (
        Math.max(Math.abs(Math.floor(x / ncol) - Math.floor(s / ncol)), Math.abs((x % ncol) - (s % ncol))) <=
        radius
      )
        out.push(x);
    return out;
  };
  const move = (s: number, a: number) => {
    let r = Math.floor(s / ncol);
    let c = s % ncol;
    if (a === 0) c = Math.max(c - 1, 0);
    else if (a === 1) r = Math.min(r + 1, nrow - 1);
    else if (a === 2) c = Math.min(c + 1, ncol - 1);
    else r = Math.max(r - 1, 0);
    return r * ncol + c;
  };
  // A history is the list of (cell, what the window showed); the posterior is every map that agrees.
  type Obs = { cell: number; shown: [number, string][] };
  const show = (cells: string[], s: number): Obs => ({ cell: s, shown: win(s).map((x) => [x, cells[x]]) });
  const agrees = (cells: string[], hist: Obs[]) =>
    hist.every((o) => o.shown.every(([x, ch]) => cells[x] === ch));
  const V = (hist: Obs[], h: number): number => {
    if (h === 0) return 0;
    const post = maps.filter((m) => agrees(m.cells, hist));
    const W = post.reduce((s, m) => s + m.w, 0);
    const s = hist[hist.length - 1].cell;
    let best = 0;
    for (let a = 0; a < 4; a++) {
      const outs: [number, number][] = slippery
        ? [
            [(a + 3) % 4, 1 / 3],
            [a, 1 / 3],
            [(a + 1) % 4, 1 / 3],
          ]
        : [[a, 1]];
      let q = 0;
      for (const [d, pd] of outs) {
        const x = move(s, d);
        // Group the posterior by what the next window shows; each group is one next history.
        const groups = new Map<string, { w: number; obs: Obs; cells: string[] }>();
        for (const m of post) {
          const o = show(m.cells, x);
          const key = JSON.stringify(o);
          const g = groups.get(key);
          if (g) g.w += m.w;
          else groups.set(key, { w: m.w, obs: o, cells: m.cells });
        }
        for (const g of groups.values()) {
          const here = g.cells[x];
          const val = here === 'G' ? 1 : here === 'H' ? 0 : V([...hist, g.obs], h - 1);
          q += pd * (g.w / W) * val;
        }
      }
      best = Math.max(best, q);
    }
    return best;
  };
  let v = 0;
  const W0 = maps.reduce((s, m) => s + m.w, 0);
  const first = new Map<string, { w: number; obs: Obs }>();
  for (const m of maps) {
    const o = show(m.cells, start);
    const key = JSON.stringify(o);
    const g = first.get(key);
    if (g) g.w += m.w;
    else first.set(key, { w: m.w, obs: o });
  }
  for (const g of first.values()) v += (g.w / W0) * V([g.obs], T);
  return v;
}

test('the belief DP equals brute force over observation histories on tiny maps', () => {
  const cases: [string[], number, number, number, boolean][] = [
    [['SFF', 'FFG'], 1, 0.8, 3, false],
    [['SFF', 'FFF', 'FFG'], 1, 0.8, 4, false],
    [['SFF', 'FFF', 'FFG'], 1, 0.6, 5, false],
    [['SFF', 'FFF', 'FFG'], 1, 0.7, 4, true],
    [['SFFF', 'FFFG'], 1, 0.5, 5, true],
  ];
  for (const [rows, R, p, T, slippery] of cases) {
    const b = new FogBelief(grid(rows, slippery), R, p);
    const { value } = b.value(T);
    const brute = bruteValue(rows, R, p, T, slippery);
    assert.ok(close(value, brute, 1e-12), `${rows} p=${p} T=${T} slippery=${slippery}: ${value} vs ${brute}`);
    assert.ok(value <= b.fullyObservedMean(T) + 1e-12);
  }
  // The fog costs something where it should: 3x3, p 0.6, T 4 (the shortest route) is below the bound.
  const b = new FogBelief(grid(['SFF', 'FFF', 'FFG']), 1, 0.6);
  assert.ok(b.value(4).value < b.fullyObservedMean(4) - 0.01);
});

test('the fully observed bound is the env’s own oracle; a radius that shows every cell reaches it', () => {
  const rows = ['SFFF', 'FFFF', 'FFFF', 'FFFG'];
  for (const slippery of [false, true]) {
    const b = new FogBelief(grid(rows, slippery), 1, 0.8);
    for (const i of [0, 7, 100, b.maps.length - 1]) {
      const m = b.maps[i];
      const desc = rows.map((r, y) => [...r].map((c, x) => (b.isHole(m, y * 4 + x) ? 'H' : c)).join(''));
      const world = new FrozenLakeWorld({ desc: parseMap(desc.join(',')), slippery, successRate: 1 / 3 });
      for (const T of [6, 9]) assert.ok(close(b.fullyObserved(m, 0, T), world.oracle().v(T, 0), 1e-12));
    }
  }
  const r = fogReport(3, 2, 0.7, 5, true);
  assert.ok(close(r.fog, r.oracle, 1e-12));
  const fogged = fogReport(3, 1, 0.7, 5, true);
  assert.ok(fogged.fog < r.fog);
  assert.throws(
    () => new FogBelief(grid(['SFFFF', 'FFFFF', 'FFFFF', 'FFFFF', 'FFFFG']), 1, 0.8),
    FogLimitError,
  );
});
