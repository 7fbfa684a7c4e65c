// Shaping measured exactly (src/theory/shaping.ts) against an independent brute force: a recursive,
// memoised DP written here from the Gymnasium transition table P[s][a] = [prob, next, reward, terminated],
// with its own distances, its own V*, its own (cell, visited) states for novelty, and its own exact
// evaluation of the shaped-optimal policy on the true reward.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FrozenLakeWorld, transitionTable } from '../../src/envs/frozenlake/env.ts';
import { generateRandomMap, MAPS } from '../../src/envs/frozenlake/map.ts';
import { measureShaping, parseShaping, SHAPINGS, type ShapingKind } from '../../src/theory/shaping.ts';

const world = (desc: readonly string[], slippery: boolean) =>
  new FrozenLakeWorld({ desc, slippery, successRate: 1 / 3 });

/** The brute force: every figure of a measureShaping row, computed another way. */
function bruteForce(desc: readonly string[], slippery: boolean, T: number, kind: ShapingKind, c: number) {
  const P = transitionTable({ desc, slippery, successRate: 1 / 3 });
  const cols = desc[0].length;
  const flat = desc.join('');
  const terminalCell = (s: number) => flat[s] === 'H' || flat[s] === 'G';
  let gr = 0;
  let gc = 0;
  for (let s = 0; s < flat.length; s++) if (flat[s] === 'G') [gr, gc] = [Math.floor(s / cols), s % cols];
  const dist = (s: number) => Math.abs(Math.floor(s / cols) - gr) + Math.abs((s % cols) - gc);
  // V* by recursion on (h, s).
  const vmemo = new Map<string, number>();
  const vstar = (h: number, s: number): number => {
    if (h === 0) return 0;
    const k = `${h},${s}`;
    if (!vmemo.has(k)) {
      const qs = P[s].map((outs) =>
        outs.reduce((q, [p, s2, r, d]) => q + p * (r + (d ? 0 : vstar(h - 1, s2))), 0),
      );
      vmemo.set(k, Math.max(...qs));
    }
    return vmemo.get(k) as number;
  };
  const qstar = (h: number, s: number) =>
    P[s].map((outs) => outs.reduce((q, [p, s2, r, d]) => q + p * (r + (d ? 0 : vstar(h - 1, s2))), 0));
  const phi = (h: number, s: number) =>
    h === 0 || terminalCell(s) ? 0 : kind === 'potential' ? vstar(h, s) : -dist(s);
  // A state is [cell, visited cells]; visited matters to novelty only.
  type X = { s: number; seen: number[] };
  const keyOf = (x: X) => (kind === 'novelty' ? `${x.s}|${x.seen.join('.')}` : `${x.s}`);
  const step = (x: X, s2: number): X =>
    kind === 'novelty' && !x.seen.includes(s2)
      ? { s: s2, seen: [...x.seen, s2].sort((a, b) => a - b) }
      : { s: s2, seen: x.seen };
  const F = (h: number, x: X, s2: number, d: boolean): number => {
    if (kind === 'potential' || kind === 'distance') return c * ((d ? 0 : phi(h - 1, s2)) - phi(h, x.s));
    if (kind === 'progress') return dist(s2) < dist(x.s) ? c : 0;
    if (kind === 'novelty') return x.seen.includes(s2) ? 0 : c;
    return -c;
  };
  const smemo = new Map<string, { v: number; q: number[] }>();
  const shaped = (h: number, x: X): { v: number; q: number[] } => {
    if (h === 0) return { v: 0, q: [] };
    const k = `${h}#${keyOf(x)}`;
    let e = smemo.get(k);
    if (!e) {
      const q = P[x.s].map((outs) =>
        outs.reduce(
          (acc, [p, s2, r, d]) => acc + p * (r + F(h, x, s2, d) + (d ? 0 : shaped(h - 1, step(x, s2)).v)),
          0,
        ),
      );
      e = { v: Math.max(...q), q };
      smemo.set(k, e);
    }
    return e;
  };
  const ties = (q: number[]) => {
    const best = Math.max(...q);
    const scale = Math.max(1, ...q.map(Math.abs));
    return q.flatMap((v, a) => (best - v <= 1e-9 * scale ? [a] : []));
  };
  const tmemo = new Map<string, number>();
  const trueValue = (h: number, x: X): number => {
    if (h === 0) return 0;
    const k = `${h}#${keyOf(x)}`;
    if (!tmemo.has(k)) {
      const acts = ties(shaped(h, x).q);
      let v = 0;
      for (const a of acts)
        for (const [p, s2, r, d] of P[x.s][a])
          v += (p * (r + (d ? 0 : trueValue(h - 1, step(x, s2))))) / acts.length;
      tmemo.set(k, v);
    }
    return tmemo.get(k) as number;
  };
  // Reachable non-terminal states by breadth-first search from the start.
  const start: X = { s: 0, seen: [0] };
  const found = new Map<string, X>([[keyOf(start), start]]);
  const queue = [start];
  while (queue.length > 0) {
    const x = queue.shift() as X;
    for (const outs of P[x.s])
      for (const [p, s2, , d] of outs) {
        if (p === 0 || d) continue;
        const y = step(x, s2);
        if (!found.has(keyOf(y))) {
          found.set(keyOf(y), y);
          queue.push(y);
        }
      }
  }
  let states = 0;
  let changed = 0;
  for (const x of found.values()) {
    if (terminalCell(x.s)) continue;
    for (let h = 1; h <= T; h++) {
      states++;
      const optimal = ties(qstar(h, x.s));
      if (ties(shaped(h, x).q).some((a) => !optimal.includes(a))) changed++;
    }
  }
  const success = trueValue(T, start);
  return { states, changed, success, optimum: vstar(T, 0), shapedValue: shaped(T, start).v };
}

function assertMatches(
  desc: readonly string[],
  slippery: boolean,
  T: number,
  kind: ShapingKind,
  coef: number,
) {
  const [row] = measureShaping(world(desc, slippery), T, [{ kind, coef }]).rows;
  const want = bruteForce(desc, slippery, T, kind, coef);
  const where = `${desc.join(',')} ${kind}:${coef} T=${T}`;
  assert.equal(row.states, want.states, `${where}: states`);
  assert.equal(row.changed, want.changed, `${where}: changed`);
  for (const k of ['success', 'optimum', 'shapedValue'] as const)
    assert.ok(Math.abs(row[k] - want[k]) <= 1e-9, `${where}: ${k} ${row[k]} vs ${want[k]}`);
  assert.ok(Math.abs(row.loss - (want.optimum - want.success)) <= 1e-9, `${where}: loss`);
  return row;
}

describe('potential-based shaping changes nothing', () => {
  const maps: [string, readonly string[], number][] = [
    ['4x4', MAPS['4x4'], 100],
    ['8x8', MAPS['8x8'], 200],
    ...[1, 2, 3, 4, 5].map((seed): [string, readonly string[], number] => [
      `random 6x6 seed ${seed}`,
      generateRandomMap(6, 0.8, seed),
      60,
    ]),
  ];
  for (const [name, desc, T] of maps) {
    for (const slippery of [true, false]) {
      test(`${name} ${slippery ? 'slippery' : 'deterministic'}: Φ = V* and Φ = −distance, at several coefficients`, () => {
        const shapings = (['potential', 'distance'] as const).flatMap((kind) =>
          [0.1, 1, 5].map((coef) => ({ kind, coef })),
        );
        const r = measureShaping(world(desc, slippery), T, shapings);
        for (const row of r.rows) {
          assert.equal(row.changed, 0, `${row.kind}:${row.coef} changed ${row.changed} actions`);
          assert.ok(Math.abs(row.loss) <= 1e-9, `${row.kind}:${row.coef} loses ${row.loss}`);
          assert.ok(row.states > 0, 'no decision states');
        }
        // The shaped objective's own value is R − c·Φ_T(s0): V*·(1 − c) for Φ = V*, V* + c·d(s0) for −distance.
        const d0 = desc.length - 1 + desc[0].length - 1;
        for (const row of r.rows) {
          const want = row.kind === 'potential' ? r.optimum * (1 - row.coef) : r.optimum + row.coef * d0;
          assert.ok(Math.abs(row.shapedValue - want) <= 1e-9, `${row.kind}:${row.coef} shaped value`);
        }
      });
    }
  }
});

describe('every shaping equals the brute-force DP', () => {
  test('4x4 slippery, budget 100 (the calc shaping contract), coefficient 0.1', () => {
    for (const kind of SHAPINGS) assertMatches(MAPS['4x4'], true, 100, kind, 0.1);
  });
  test('4x4 slippery, budget 20, coefficients 0.01 and 0.5', () => {
    for (const kind of SHAPINGS) for (const c of [0.01, 0.5]) assertMatches(MAPS['4x4'], true, 20, kind, c);
  });
  test('8x8 slippery, budget 60, every kind but novelty (2^53 visited sets: refused, with the reason)', () => {
    for (const kind of SHAPINGS) if (kind !== 'novelty') assertMatches(MAPS['8x8'], true, 60, kind, 0.1);
    const [row] = measureShaping(world(MAPS['8x8'], true), 60, [{ kind: 'novelty', coef: 0.1 }]).rows;
    assert.match(row.skipped ?? '', /2\^53 visited sets/);
  });
  test('random 4x4 and 5x5 maps (novelty on 4x4 only: a 5x5 map has ~2^20 visited sets, refused), deterministic and slippery', () => {
    for (const seed of [7, 8, 9])
      for (const size of [4, 5])
        for (const slippery of [true, false])
          for (const kind of SHAPINGS.filter((k) => size === 4 || k !== 'novelty'))
            assertMatches(generateRandomMap(size, 0.8, seed), slippery, 15, kind, 0.2);
  });
});

test('a step penalty of 0 is the identity', () => {
  const r = measureShaping(world(MAPS['4x4'], true), 100, [{ kind: 'step-penalty', coef: 0 }]);
  const [row] = r.rows;
  assert.equal(row.changed, 0);
  assert.equal(row.success, r.optimum);
  assert.equal(row.shapedValue, r.optimum);
});

test('by hand: SFFG over a row of holes, deterministic, budget 3', () => {
  // Cells 0 S, 1 F, 2 F, 3 G; every cell below is a hole, so Down ends the episode at once. Decision
  // states: cells 0, 1, 2 at h = 1, 2, 3 — 9 pairs. The true optimum from S at h = 3 is Right, Right,
  // Right: V*_3(S) = 1; at h < 3 nothing reaches G from S (V* = 0, all four actions tie).
  // Step penalty c: walking to G returns 1 − 3c, Down into the hole −c: the walk wins iff c < 1/2.
  //   c = 0.6: 1 − 1.8 = −0.8 < −0.6, so the shaped optimum jumps into the hole at (h = 3, S) — one
  //   changed pair of 9; its true success is 0, the loss 1, its shaped value −0.6. From cells 1 and 2 the
  //   walk still wins (1 − 2c = −0.2, 1 − c = 0.4 against −0.6).
  //   c = 0.4: 1 − 1.2 = −0.2 > −0.4 — nothing changes, the shaped value is −0.2.
  const desc = ['SFFG', 'HHHH'];
  const r = measureShaping(world(desc, false), 3, [
    { kind: 'step-penalty', coef: 0.6 },
    { kind: 'step-penalty', coef: 0.4 },
    { kind: 'distance', coef: 1 },
    { kind: 'progress', coef: 0.6 },
  ]);
  assert.equal(r.optimum, 1);
  const [p6, p4, dist, prog] = r.rows;
  assert.deepEqual([p6.states, p6.changed, p6.success, p6.loss], [9, 1, 0, 1]);
  assert.ok(Math.abs(p6.shapedValue + 0.6) < 1e-12);
  assert.deepEqual([p4.changed, p4.success, p4.loss], [0, 1, 0]);
  assert.ok(Math.abs(p4.shapedValue + 0.2) < 1e-12);
  // Φ = −distance: the walk's shaped return is 1 + (0 − (−3)) = 4, the hole's 0 − (−3) = 3 (Φ(hole) = 0).
  assert.equal(dist.changed, 0);
  assert.equal(dist.shapedValue, 4);
  // Progress 0.6: the walk earns 1 + 3·0.6 = 2.8; Right, Left, Right earns 1.2 — nothing changes at h = 3.
  assert.equal(prog.changed, 0);
  assert.ok(Math.abs(prog.shapedValue - 2.8) < 1e-12);
  for (const kind of SHAPINGS) assertMatches(desc, false, 3, kind, 0.6);
});

test('by hand: progress pays for pacing back and forth, and here it costs nothing', () => {
  // SFFG/HHHH again, budget 7, progress c = 0.6. Walking straight to G: 1 + 3·0.6 = 2.8 in 3 turns.
  // Pacing Right/Left earns 0.6 every two turns and still ends on G: R L R L R R R = 5 progress steps
  // and G, 1 + 5·0.6 = 4.0 > 2.8. With 7 turns a step back still reaches G in time, so every action the
  // pacing policy takes is also truly optimal (V* ties): 0 changed pairs, true success 1, loss 0 — the
  // shaped objective differs from the true one while the policy loses nothing.
  const desc = ['SFFG', 'HHHH'];
  const [row] = measureShaping(world(desc, false), 7, [{ kind: 'progress', coef: 0.6 }]).rows;
  assert.ok(Math.abs(row.shapedValue - 4) < 1e-12, `shaped value ${row.shapedValue}`);
  assert.deepEqual([row.states, row.changed, row.success, row.loss], [21, 0, 1, 0]);
  assertMatches(desc, false, 7, 'progress', 0.6);
});

test('parseShaping: kind[:coef]', () => {
  assert.deepEqual(parseShaping('novelty'), { kind: 'novelty', coef: 0.1 });
  assert.deepEqual(parseShaping('step-penalty:0.01'), { kind: 'step-penalty', coef: 0.01 });
  for (const bad of ['nov', 'progress:', 'progress:x', 'progress:1:2', 'step-penalty:Infinity'])
    assert.equal(parseShaping(bad), undefined, bad);
});
