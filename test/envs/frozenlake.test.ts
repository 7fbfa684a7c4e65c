import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Env, Task } from '../../src/core/types.ts';
import { checkEnv } from '../../src/envs/check.ts';
import {
  FrozenLakeEnv,
  FrozenLakeWorld,
  generateRandomMap,
  isValid,
  MAPS,
  makeFrozenLake,
  parseMap,
  transitionTable,
} from '../../src/envs/frozenlake/index.ts';
import { envConfig, makeEnv } from '../../src/envs/index.ts';
import { evaluatePolicy } from '../../src/envs/tabular.ts';

const SR = 1 / 3;
const FAIL = (1 - SR) / 2; // 0.33333333333333337, as Gymnasium computes it
const world = (map: string, slippery: boolean, successRate = SR) =>
  new FrozenLakeWorld({ desc: parseMap(map), slippery, successRate });

test("transition table matches Gymnasium's P entry for entry", () => {
  const P = transitionTable({ desc: MAPS['4x4'], slippery: true, successRate: SR });
  assert.equal(P.length, 16);
  // s=0, Left: perpendiculars Up (stays) and Down (to 4), in Gymnasium's order [(a-1)%4, a, (a+1)%4].
  assert.deepEqual(P[0][0], [
    [FAIL, 0, 0, false],
    [SR, 0, 0, false],
    [FAIL, 4, 0, false],
  ]);
  // s=14, Right: Down (stays), Right (goal: reward 1, terminated), Up (to 10).
  assert.deepEqual(P[14][2], [
    [FAIL, 14, 0, false],
    [SR, 15, 1, true],
    [FAIL, 10, 0, false],
  ]);
  // s=6, Down: Right → 7 is a hole (terminated, reward 0).
  assert.deepEqual(P[6][1], [
    [FAIL, 5, 0, true],
    [SR, 10, 0, false],
    [FAIL, 7, 0, true],
  ]);
  // Holes and the goal are absorbing.
  for (const s of [5, 7, 11, 12, 15])
    for (let a = 0; a < 4; a++) assert.deepEqual(P[s][a], [[1, s, 0, true]]);
  assert.equal(FAIL, 0.33333333333333337);
});

test('deterministic ice has one outcome per action; probabilities always sum to 1', () => {
  const P = transitionTable({ desc: MAPS['4x4'], slippery: false, successRate: SR });
  assert.deepEqual(P[0][2], [[1, 1, 0, false]]);
  assert.deepEqual(P[0][0], [[1, 0, 0, false]]);
  for (const sr of [0, 0.2, 1 / 3, 0.8, 1]) {
    const Q = transitionTable({ desc: MAPS['8x8'], slippery: true, successRate: sr });
    for (const bySA of Q)
      for (const outs of bySA) assert.ok(Math.abs(outs.reduce((s, o) => s + o[0], 0) - 1) < 1e-15);
  }
});

test('exact oracle reproduces the values docs/methods.md fixes', () => {
  const w4 = world('4x4', true).oracle();
  assert.equal(w4.v(100, 0).toFixed(4), '0.7442');
  assert.equal(w4.v(20, 0).toFixed(4), '0.1991');
  const w8 = world('8x8', true).oracle();
  assert.equal(w8.v(200, 0).toFixed(4), '0.9132');
  assert.equal(w8.v(50, 0).toFixed(4), '0.2284');
});

test('V*_h is monotone in h, bounded by 1, and 0 at h=0', () => {
  const o = world('8x8', true).oracle();
  for (let s = 0; s < 64; s++) {
    assert.equal(o.v(0, s), 0);
    for (let h = 1; h <= 120; h++) {
      assert.ok(o.v(h, s) >= o.v(h - 1, s) - 1e-15);
      assert.ok(o.v(h, s) <= 1 + 1e-12);
    }
  }
});

test('deterministic 4x4: the goal is reachable in exactly 6 turns', () => {
  const o = world('4x4', false).oracle();
  for (let h = 0; h < 6; h++) assert.equal(o.v(h, 0), 0);
  for (let h = 6; h < 12; h++) assert.equal(o.v(h, 0), 1);
});

test('policy evaluation: the greedy policy attains V*, the random policy 0.01394', () => {
  const w = world('4x4', true);
  const o = w.oracle();
  const greedy = (h: number, s: number) => {
    const q = o.q(h, s);
    const p = [0, 0, 0, 0];
    p[q.indexOf(Math.max(...q))] = 1;
    return p;
  };
  const vg = evaluatePolicy(w.model, greedy, 100);
  for (const h of [1, 7, 20, 100])
    for (let s = 0; s < 16; s++) assert.ok(Math.abs(vg.V[h * 16 + s] - o.v(h, s)) < 1e-12);
  const vr = evaluatePolicy(w.model, () => [0.25, 0.25, 0.25, 0.25], 100);
  assert.equal(vr.V[100 * 16].toFixed(5), '0.01394');
});

test('random maps: valid, deterministic in the seed, distinct across seeds', () => {
  const a = generateRandomMap(8, 0.8, 42);
  assert.deepEqual(a, generateRandomMap(8, 0.8, 42));
  assert.notDeepEqual(a, generateRandomMap(8, 0.8, 43));
  for (let seed = 0; seed < 200; seed++) {
    const m = generateRandomMap(4, 0.8, seed);
    assert.equal(m.length, 4);
    assert.equal(m[0][0], 'S');
    assert.equal(m[3][3], 'G');
    assert.ok(isValid(m));
    assert.doesNotThrow(() => parseMap(m.join(',')));
  }
  assert.throws(() => generateRandomMap(1, 0.8, 0), InputError);
  assert.throws(() => generateRandomMap(4, 0, 0), InputError);
  assert.throws(() => generateRandomMap(20, 0.05, 0), /no valid 20x20 map/);
});

test('maps that are malformed or unsolvable are refused', () => {
  assert.deepEqual(parseMap('SFFF/FHFH/FFFH/HFFG'), [...MAPS['4x4']]);
  assert.throws(() => parseMap('SFX,FFG'), /--map: got "SFX,FFG"; expected 4x4/);
  assert.throws(() => parseMap('SFF,FG'), /same length/);
  assert.throws(() => parseMap('FFF,FFG'), /start cell S/);
  assert.throws(() => parseMap('SFF,FFF'), /goal cell G/);
  assert.throws(() => parseMap('SH,HG'), /no path from S/);
  assert.throws(() => envConfig('frozenlake', { map: '4x4', random: true }), /--random/);
  assert.throws(() => envConfig('frozenlake', { map: '4x4', bogus: 1 }), /unknown field/);
});

test('text and feature views', () => {
  const w = world('4x4', true);
  assert.equal(w.text(0), 'P___\n_O_O\n___O\nO__G');
  assert.equal(w.text(5), '____\n_X_O\n___O\nO__G');
  assert.equal(w.text(15), '____\n_O_O\n___O\nO__√');
  const f = w.features(6);
  assert.equal(f.length, 48);
  assert.deepEqual(
    [...f.subarray(0, 16)].flatMap((x, i) => (x ? [i] : [])),
    [5, 7, 11, 12],
  );
  assert.deepEqual(
    [...f.subarray(16, 32)].flatMap((x, i) => (x ? [i] : [])),
    [15],
  );
  assert.deepEqual(
    [...f.subarray(32)].flatMap((x, i) => (x ? [i] : [])),
    [6],
  );
  assert.equal(w.features(6), f, 'cached');
});

test('sampled transitions follow P (chi-square on 30000 steps)', () => {
  const env = new FrozenLakeEnv(world('4x4', true, 0.6));
  const counts = new Map<number, number>();
  const n = 30_000;
  for (let i = 0; i < n; i++) {
    env.reset(i);
    const r = env.step(1); // Down from 0: Right → 1 (0.2), Down → 4 (0.6), Left → 0 (0.2)
    counts.set(r.observation, (counts.get(r.observation) ?? 0) + 1);
  }
  const expected: Record<number, number> = { 0: 0.2, 4: 0.6, 1: 0.2 };
  let chi2 = 0;
  for (const [s, p] of Object.entries(expected))
    chi2 += ((counts.get(Number(s)) ?? 0) - p * n) ** 2 / (p * n);
  assert.equal([...counts.keys()].sort().join(), '0,1,4');
  assert.ok(chi2 < 13.8, `chi2 ${chi2}`); // 2 dof, p = 0.001
});

test('invalid actions are observations: nothing moves, valid=false', () => {
  const env = new FrozenLakeEnv(world('4x4', false));
  env.reset(0);
  env.step(2);
  for (const bad of [4, -1, 1.5, Number.NaN, '2' as unknown as number]) {
    const r = env.step(bad);
    assert.deepEqual(r, { observation: 1, reward: 0, terminated: false, info: { valid: false } });
  }
});

test('snapshot/restore: the same continuation, or a fresh one when re-seeded', () => {
  const env = new FrozenLakeEnv(world('8x8', true));
  env.reset(3);
  env.step(2);
  const snap = JSON.parse(JSON.stringify(env.snapshot()));
  const walk = () => Array.from({ length: 12 }, () => env.step(1).observation);
  const a = walk();
  env.restore(snap);
  assert.deepEqual(walk(), a);
  const reseeded = new Set<string>();
  for (let seed = 0; seed < 10; seed++) {
    env.restore(snap, seed);
    reseeded.add(walk().join());
  }
  assert.ok(reseeded.size > 1);
  assert.throws(() => env.restore({ s: 99, rng: [1, 2, 3, 4] }), InputError);
});

test('checkEnv passes every built-in FrozenLake configuration', async () => {
  const tasks: Task[] = [
    { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 },
    { env: 'frozenlake', params: { map: '8x8', slippery: false }, seed: 0 },
    { env: 'frozenlake', params: { random: true, size: 6, p: 0.8, slippery: true }, seed: 9 },
    { env: 'frozenlake', params: { map: 'SFH,FFF,HFG', slippery: true, successRate: 0.5 }, seed: 0 },
  ];
  for (const task of tasks) assert.deepEqual(await checkEnv(() => makeEnv(task)), [], JSON.stringify(task));
});

test('checkEnv catches a nondeterministic env and a broken snapshot', async () => {
  const task: Task = { env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 };
  let calls = 0;
  const noisy = (): Env<unknown, unknown> => {
    const env = makeFrozenLake(task);
    const reset = env.reset.bind(env);
    env.reset = (seed: number) => reset(seed + calls++);
    return env as Env<unknown, unknown>;
  };
  assert.match((await checkEnv(noisy)).join(), /different trajectories/);
  const forgetful = (): Env<unknown, unknown> => {
    const env = makeFrozenLake(task);
    env.restore = () => {};
    return env as Env<unknown, unknown>;
  };
  assert.match((await checkEnv(forgetful)).join(), /did not reproduce/);
});
