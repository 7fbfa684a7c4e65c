// The second world (world.ts) and the step-quality detail (measure/step-quality.ts stepQualityDetail): the
// (memory, cell) MDP keeps FrozenLake's values exactly, its memory is what happened, intended-only play
// never slips; the detail's figures on a constructed case with a known answer; the relative tie.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Oracle, StepResult, Task } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { TabularOracle } from '../../src/envs/tabular.ts';
import { occupancy } from '../../src/studies/budget/measure/states.ts';
import { stepQualityDetail } from '../../src/studies/budget/measure/step-quality.ts';
import { MEMORIES, type MemoryEnv } from '../../src/studies/budget/memory-env.ts';
import { WORLD_SETTINGS, worldEnvs } from '../../src/studies/budget/world.ts';
import { TINY } from './fixtures.ts';

const narrow = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true, successRate: 0.9 });
const tasks = makeTasks(narrow, 5, 40);

test('narrow world: Q* of every (memory, cell) equals FrozenLake’s Q* of the cell; features and spec grow by the memory', () => {
  const memory = worldEnvs(true);
  for (const task of tasks) {
    const inner = makeEnv(task).oracle!() as Oracle<number>;
    const env = memory.make(task);
    const o = env.oracle!() as Oracle<number>;
    const n = inner.nS;
    assert.equal(o.nS, MEMORIES * n);
    assert.deepEqual(o.starts, inner.starts);
    for (const h of [1, 5, 20]) {
      for (let x = 0; x < o.nS; x++) {
        const a = o.q(h, x);
        const b = inner.q(h, x % n);
        for (let k = 0; k < 4; k++) assert.ok(Math.abs(a[k] - b[k]) < 1e-12, `h ${h} x ${x} a ${k}`);
      }
    }
    assert.equal(env.spec.features, 3 * n + MEMORIES);
    assert.deepEqual(memory.spec(task), env.spec);
    const f = env.features!(5 * n + 3);
    assert.equal(f.length, 3 * n + MEMORIES);
    assert.equal(f[2 * n + 3], 1, 'the cell');
    assert.equal(f[3 * n + 5], 1, 'the memory');
  }
  assert.equal(WORLD_SETTINGS.narrow.successRate, 0.9);
});

test('narrow world: its oracle reads the map’s own tables (no copy per memory) and equals the full (memory, cell) DP bit for bit', () => {
  const memory = worldEnvs(true);
  for (const task of tasks) {
    const env = memory.make(task) as MemoryEnv;
    const o = env.oracle();
    const inner = makeEnv(task).oracle!() as Oracle<number>;
    const n = inner.nS;
    // The value iteration over all 9·nS (memory, cell) states, as a TabularOracle of its own computes it.
    const full = new TabularOracle<number>(
      env.world.model,
      [...o.starts],
      (x) => x,
      (x) => x,
    );
    for (let h = 0; h <= 100; h++) {
      for (let x = 0; x < o.nS; x++) {
        const [a, b] = [o.q(h, x), full.q(h, x)];
        for (let k = 0; k < 4; k++) assert.ok(Object.is(a[k], b[k]), `Q* h ${h} x ${x} a ${k}`);
        assert.ok(Object.is(o.v(h, x), full.v(h, x)), `V* h ${h} x ${x}`);
      }
    }
    // What the narrow world keeps per map: the map's one table of (h + 1)·nS·nA values, shared.
    assert.equal(o.q(100, 7 * n + 2).buffer, inner.q(100, 2).buffer);
    assert.ok(o.q(100, 0).buffer.byteLength < (MEMORIES * n * 4 * 101 * 8) / 4);
    // Exact evaluation sees the memory: a policy that reads it is evaluated on the (memory, cell) model.
    const pi = (_h: number, x: number) => (Math.floor(x / n) === 0 ? [1, 0, 0, 0] : [0, 0.5, 0.5, 0]);
    assert.deepEqual(o.evaluate(pi, 30), full.evaluate(pi, 30));
  }
});

test('narrow world: the memory records the last action and whether it went as intended; intended-only play never slips', () => {
  const task: Task = tasks[0];
  const n = 16;
  let slips = 0;
  for (const intendedOnly of [false, true]) {
    const env = worldEnvs(true, intendedOnly).make(task);
    for (let seed = 0; seed < 200; seed++) {
      let x = env.reset(seed) as number;
      assert.equal(Math.floor(x / n), 0, 'no move yet');
      for (let t = 0; t < 30; t++) {
        const a = (seed + t) % 4;
        const r = env.step(a) as { observation: number; terminated: boolean };
        const m = Math.floor(r.observation / n);
        const slipped = m >= 5;
        assert.equal((m - 1) % 4, a, 'the memory holds the action taken');
        if (slipped) slips++;
        if (intendedOnly) assert.ok(!slipped);
        x = r.observation;
        if (r.terminated) break;
      }
      assert.ok(x >= 0);
    }
    if (!intendedOnly) assert.ok(slips > 0, 'the real ice slips');
  }
});

test('narrow world: MemoryEnv moves as FrozenLake itself (same cells, rewards, endings, draws), adds the memory, restores from a snapshot', () => {
  const memory = worldEnvs(true);
  let intendedMoves = 0;
  let slips = 0;
  for (const task of tasks) {
    const env = memory.make(task);
    const plain = makeEnv(task);
    const n = plain.spec.observations!;
    for (let seed = 0; seed < 60; seed++) {
      assert.equal(env.reset(seed), plain.reset(seed));
      for (let t = 0; t < 40; t++) {
        const a = (seed * 7 + t * 3) % 4;
        const before = env.snapshot!();
        const r = env.step(a) as StepResult<number>;
        const q = plain.step(a) as StepResult<number>;
        assert.equal(r.observation % n, q.observation, 'the cell is FrozenLake’s');
        assert.deepEqual([r.reward, r.terminated, r.info], [q.reward, q.terminated, q.info]);
        const m = Math.floor(r.observation / n);
        assert.equal((m - 1) % 4, a, 'the memory holds the action');
        if (m >= 5) slips++;
        else intendedMoves++;
        // The snapshot taken before the step replays it exactly.
        env.restore!(before);
        assert.deepEqual(env.step(a), r);
        if (r.terminated) break;
      }
    }
  }
  // Ice that moves the intended way with probability 0.9 (each way across it 0.05).
  assert.ok(slips > 0 && intendedMoves > 5 * slips, `${intendedMoves} intended, ${slips} slipped`);
  assert.throws(() => memory.make(tasks[0]).step(0), /step\(\) before reset\(\)/);
  // Its scope is FrozenLake: another env's task is refused by name, not cast.
  const sql = { env: 'sql', seed: 0, params: {} } as Task;
  assert.throws(() => memory.make(sql), /^InputError: task\.env: got "sql"; expected frozenlake/);
});

test('stepQualityDetail on a constructed case: strict, ties, ½-tie, ties-excluded, E[Q*], consequential and per-pool subsets', () => {
  const [m1, m2] = [{ seed: 1 } as Task, { seed: 2 } as Task];
  const states = [
    { task: m1, from: 0 },
    { task: m1, from: 1 },
    { task: m2, from: 0 },
    { task: m2, from: 1 },
  ];
  const fig = (
    aBetter: number,
    ties: number,
    regretA: number,
    regretB: number,
    v: number,
    spread: number,
  ) => ({
    aBetter,
    ties,
    bBetter: 1 - aBetter - ties,
    score: aBetter + ties / 2,
    regretA,
    regretB,
    v,
    spread,
  });
  const per = [
    fig(0.5, 0.5, 0.0, 0.1, 0.8, 0.2),
    fig(0.0, 1.0, 0.0, 0.0, 0.6, 0.01),
    fig(0.25, 0.25, 0.05, 0.1, 0.5, 0.3),
    fig(0.0, 0.5, 0.2, 0.1, 0.4, 0.02),
  ];
  const d = stepQualityDetail(states, per, { ...TINY, eval: { ...TINY.eval, consequentialGap: 0.05 } });
  const close = (x: number | null, y: number) =>
    assert.ok(x !== null && Math.abs(x - y) < 1e-12, `${x} vs ${y}`);
  assert.equal(d.all.states, 4);
  close(d.all.rlBetter.value, 0.75 / 4);
  close(d.all.ties.value, 2.25 / 4);
  close(d.all.score.value, (0.75 + 2.25 / 2) / 4);
  // Ties excluded: Σ P(RL better) / Σ P(not a tie) = 0.75 / (4 − 2.25).
  close(d.all.tiesExcluded.value, 0.75 / 1.75);
  close(d.all.qRl.value, (0.8 + 0.6 + 0.45 + 0.2) / 4);
  close(d.all.qBase.value, (0.7 + 0.6 + 0.4 + 0.3) / 4);
  close(d.all.regretRl.value, 0.25 / 4);
  // Consequential (spread ≥ 0.05): states 0 and 2.
  assert.equal(d.consequential.states, 2);
  close(d.consequential.rlBetter.value, 0.75 / 2);
  close(d.consequential.tiesExcluded.value, 0.75 / (0.5 + 0.75));
  // Pools: from the base (0, 2), from RL (1, 3).
  assert.equal(d.fromBase.states, 2);
  close(d.fromBase.score.value, (0.75 + 0.375) / 2);
  close(d.fromRl.score.value, (0.5 + 0.25) / 2);
  close(d.fromRl.tiesExcluded.value, 0);
  // Intervals resample the two maps: they bracket the value and lie within the per-map extremes.
  const lo = d.all.rlBetter.ci95[0]!;
  const hi = d.all.rlBetter.ci95[1]!;
  assert.ok(lo <= 0.1875 && 0.1875 <= hi);
  close(lo, Math.min(0.25, 0.125));
  close(hi, Math.max(0.25, 0.125));
});

test('occupancy: the share of states whose (map, observation) the pool visited', () => {
  const [m1, m2] = [{ seed: 1 } as Task, { seed: 2 } as Task];
  const rec = (task: Task, obs: number[]) => ({
    envSeed: 0,
    trajectory: { task, turns: obs.map((o) => ({ observation: o })) } as never,
  });
  const pool = [rec(m1, [0, 1, 5]), rec(m2, [0, 4])];
  const states = [
    { task: m1, observation: 5 },
    { task: m1, observation: 4 },
    { task: m2, observation: 4 },
    { task: m2, observation: 9 },
  ];
  assert.equal(occupancy(states, pool), 0.5);
  assert.equal(occupancy([], pool), null);
  assert.equal(occupancy(states, []), 0);
});
