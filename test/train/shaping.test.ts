// Shaping as training sees it (src/train/shaping.ts): the shaped copy of recorded trajectories against
// hand-computed rewards and against the theory module's F; potential-based shaping telescoping on real
// rollouts to R + c·(Φ(end) − Φ(start)), Φ taken from the env's own oracle (not the theory module's V*);
// GRPO's advantages unchanged by it; and whole training runs whose metrics stay on the true reward.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Trajectory, Turn } from '../../src/core/types.ts';
import { creditBatch } from '../../src/credit/index.ts';
import { frozenLakeWorld } from '../../src/envs/frozenlake/index.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { Shaper, type ShapingKind } from '../../src/theory/shaping.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { BatchShaper, recordCells } from '../../src/train/shaping.ts';

const close = (a: number, b: number, tol = 1e-12) => Math.abs(a - b) <= tol;
const near = (xs: readonly number[], ys: readonly number[], tol = 1e-12) =>
  xs.length === ys.length && xs.every((x, i) => close(x, ys[i], tol));

// ── Hand-built trajectories on the plain 4x4 map (not slippery: every move goes where it is aimed) ──
// SFFF / FHFH / FFFH / HFFG; Manhattan distance to G (15): 0:6 1:5 2:4 4:5 5:4 6:3 10:2 14:1.
const plain = envConfig('frozenlake', { map: '4x4' });
const [plainTask] = makeTasks(plain, 1, 0);
const plainWorld = frozenLakeWorld(plainTask);

/** A trajectory through `cells` (cells[0] the start), budget T, ending as said. */
function walk(cells: number[], T: number, end: 'goal' | 'hole' | 'truncated'): Trajectory {
  const turns: Turn[] = cells.slice(1).map((cell, t) => ({
    t,
    observation: cells[t],
    action: 0,
    reward: end === 'goal' && t === cells.length - 2 ? 1 : 0,
    logp: Math.log(0.25),
    info: { cell },
  }));
  return {
    id: cells.join('-'),
    task: plainTask,
    policy: 'hand',
    budget: T,
    revealBudget: false,
    turns,
    outcome: {
      success: end === 'goal',
      return: end === 'goal' ? 1 : 0,
      turns: turns.length,
      firstSuccessTurn: end === 'goal' ? turns.length : null,
      end: end === 'truncated' ? 'truncated' : 'terminated',
      failure: end === 'goal' ? null : end === 'hole' ? 'irreversible' : 'budget',
    },
  };
}

const shapedRewards = (kind: ShapingKind, coef: number, t: Trajectory, horizon = t.budget) =>
  new BatchShaper({ kind, coef }, horizon).shape([t], () => ({ world: plainWorld }))[0];

const goal = walk([0, 1, 2, 6, 10, 14, 15], 10, 'goal');
/** Down, back up, down again, then right into the hole at 5. */
const hole = walk([0, 4, 0, 4, 5], 10, 'hole');
/** Right, back left, right: the budget of 3 runs out on cell 1. */
const cut = walk([0, 1, 0, 1], 3, 'truncated');
/** A bump into the wall first (0 → 0), then the safe path: 6 turns are one too few for the 7 moves. */
const late = walk([0, 0, 1, 2, 6, 10, 14], 6, 'truncated');

test('hand-built trajectories: the shaped rewards are the ones worked out by hand', () => {
  const c = 0.1;
  const rewards = (kind: ShapingKind, t: Trajectory, coef = c) =>
    shapedRewards(kind, coef, t).turns.map((u) => u.reward);
  assert.ok(near(rewards('progress', goal), [0.1, 0.1, 0.1, 0.1, 0.1, 1.1]));
  assert.ok(near(rewards('novelty', goal), [0.1, 0.1, 0.1, 0.1, 0.1, 1.1]));
  assert.ok(near(rewards('step-penalty', goal), [-0.1, -0.1, -0.1, -0.1, -0.1, 0.9]));
  // −distance: each step nearer pays c, entering G pays c·(0 − (−1)) on top of its reward.
  assert.ok(near(rewards('distance', goal), [0.1, 0.1, 0.1, 0.1, 0.1, 1.1]));
  // Progress pays for the nearer hole; novelty pays for 4 and for the hole, not for going back.
  assert.ok(near(rewards('progress', hole), [0.1, 0, 0.1, 0.1]));
  assert.ok(near(rewards('novelty', hole), [0.1, 0, 0, 0.1]));
  // −distance with Φ(hole) = 0: falling in from cell 4 (distance 5) earns c·(0 − (−5)) = 5c.
  assert.ok(near(rewards('distance', hole), [0.1, -0.1, 0.1, 0.5]));
  // The last turn of a truncated episode goes by its recorded cell (info.cell), not the next observation.
  assert.ok(near(rewards('progress', cut), [0.1, 0, 0.1]));
  assert.ok(near(rewards('novelty', cut), [0.1, 0, 0]));
  // Potential Φ_h = V*_h: on plain ice V*_h(s) is 1 when the safe path from s (0: 6 moves) fits in h.
  // goal, T = 10: Φ stays 1 until entering G, whose Φ is 0: F = −1 there, shaped return 1 − Φ_10(0) = 0.
  assert.ok(near(rewards('potential', goal, 1), [0, 0, 0, 0, 0, 0]));
  // late, T = 6: the bump wastes the one spare turn: Φ_6(0) = 1 → Φ_5(0) = 0, F = −1; then 0 throughout
  // (h = 0 at the end: Φ_0 = 0).
  assert.ok(near(rewards('potential', late, 1), [-1, 0, 0, 0, 0, 0]));
});

test('each shaped reward is r + the theory module’s F at (h = T − t, s, s′, terminal, new)', () => {
  const args: [Trajectory, [number, number, number, boolean, boolean][]][] = [
    [
      hole,
      [
        [10, 0, 4, false, true],
        [9, 4, 0, false, false],
        [8, 0, 4, false, false],
        [7, 4, 5, true, true],
      ],
    ],
    [
      cut,
      [
        [3, 0, 1, false, true],
        [2, 1, 0, false, false],
        [1, 0, 1, false, false],
      ],
    ],
  ];
  for (const kind of ['potential', 'distance', 'progress', 'novelty', 'step-penalty'] as const) {
    const shaper = new Shaper(plainWorld, { kind, coef: 0.3 }, 10);
    for (const [t, calls] of args) {
      const got = shapedRewards(kind, 0.3, t, 10).turns.map((u) => u.reward);
      const want = calls.map((a, i) => t.turns[i].reward + shaper.bonus(...a));
      assert.deepEqual(got, want, `${kind} on ${t.id}`);
    }
  }
  // The copy's return is its shaped sum; the original is untouched.
  const copy = shapedRewards('step-penalty', 0.1, goal);
  assert.ok(close(copy.outcome.return, 1 - 0.6));
  assert.equal(copy.outcome.success, true);
  assert.deepEqual(
    goal.turns.map((u) => u.reward),
    [0, 0, 0, 0, 0, 1],
  );
  assert.equal(goal.outcome.return, 1);
});

// ── Recorded rollouts on slippery ice ─────────────────────────────────────────────────────────────
const slippery = envConfig('frozenlake', { map: '4x4', slippery: true });
const slipperyWorld = frozenLakeWorld(makeTasks(slippery, 1, 0)[0]);

async function recorded(T: number, factory = recordCells(envs)): Promise<Trajectory[]> {
  const tasks = makeTasks(slippery, 8, 0);
  const policy = makePolicy('oracle:eps=0.3', envs.spec(tasks[0]));
  return rollout({ tasks, samples: 25, budget: T, runSeed: 7, policy, makeEnv: factory.make });
}

test('recordCells adds the cell after each step and changes nothing else', async () => {
  for (const T of [6, 100]) {
    const withCells = await recorded(T);
    const without = await recorded(T, envs);
    assert.equal(withCells.length, 200);
    for (const [k, t] of withCells.entries()) {
      const turns = t.turns.map(({ info: { cell, ...info }, ...u }) => ({ ...u, info }));
      assert.deepEqual({ ...t, turns }, without[k]);
      t.turns.forEach((u, i) => {
        if (i + 1 < t.turns.length) assert.equal(u.info.cell, t.turns[i + 1].observation);
      });
      const last = t.turns.at(-1)!.info.cell as number;
      if (t.outcome.success) assert.equal(last, 15);
      else if (t.outcome.end === 'terminated') assert.equal(slipperyWorld.kind[last], 1);
    }
  }
});

test('potential-based shaping telescopes: shaped return = R + c·(Φ(end) − Φ_T(start)), Φ(end) = 0', async () => {
  const oracle = slipperyWorld.oracle();
  for (const T of [6, 20, 100]) {
    const batch = await recorded(T);
    assert.ok(batch.some((t) => t.outcome.end === 'truncated') || T === 100);
    assert.ok(batch.some((t) => t.outcome.success));
    const view = () => ({ world: slipperyWorld });
    const c = 0.5;
    const potential = new BatchShaper({ kind: 'potential', coef: c }, T).shape(batch, view);
    const distance = new BatchShaper({ kind: 'distance', coef: c }, T).shape(batch, view);
    const penalty = new BatchShaper({ kind: 'step-penalty', coef: c }, T).shape(batch, view);
    batch.forEach((t, i) => {
      const R = t.outcome.return;
      const sum = (x: Trajectory) => x.turns.reduce((s, u) => s + u.reward, 0);
      // Φ_T(start) = V*_T(0) from the env's own oracle (envs/tabular.ts), not theory/shaping.ts.
      const want = R - c * oracle.v(T, 0);
      assert.ok(
        close(potential[i].outcome.return, want),
        `${t.id}: ${potential[i].outcome.return} ≠ ${want}`,
      );
      assert.ok(close(sum(potential[i]), want));
      // −distance: Φ(start) = −6.
      assert.ok(close(distance[i].outcome.return, R + 6 * c));
      assert.ok(close(penalty[i].outcome.return, R - c * t.outcome.turns));
    });
  }
  // Not a tautology of the module: V*_6(0) on 4x4 slippery is small but not 0, and V*_100(0) = 0.7442.
  assert.ok(close(oracle.v(100, 0), 0.744190287829, 1e-9));
});

test('random maps: each trajectory is shaped with its own map’s potential', async () => {
  const random = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(random, 6, 0);
  const factory = recordCells(envs);
  const policy = makePolicy('oracle:eps=0.3', envs.spec(tasks[0]));
  const batch = await rollout({ tasks, samples: 4, budget: 30, runSeed: 3, policy, makeEnv: factory.make });
  const shaped = new BatchShaper({ kind: 'potential', coef: 1 }, 30).shape(batch, (task) => ({
    world: frozenLakeWorld(task),
  }));
  const values = new Set<number>();
  batch.forEach((t, i) => {
    const v = frozenLakeWorld(t.task).oracle().v(30, 0);
    values.add(v);
    assert.ok(close(shaped[i].outcome.return, t.outcome.return - v));
    assert.ok(
      close(
        shaped[i].turns.reduce((s, u) => s + u.reward, 0),
        t.outcome.return - v,
      ),
    );
  });
  assert.ok(values.size > 1, 'the maps differ in V*_30(start)');
});

test('GRPO: potential-based shaping shifts a group’s returns by one constant, so its advantages do not move', async () => {
  const batch = await recorded(20);
  const view = () => ({ world: slipperyWorld });
  const shaped = new BatchShaper({ kind: 'potential', coef: 1 }, 20).shape(batch, view);
  const a = creditBatch(batch, 'grpo', {});
  const b = creditBatch(shaped, 'grpo', {});
  // Within a group (one start, one budget) every return moves by −Φ_20(0), exactly: a dead group's
  // advantages stay exact zeros (the float sum of the per-turn F would leave ~1e-10 there).
  const groups = new Map<number, number[]>();
  for (const [i, t] of batch.entries()) groups.set(t.task.seed, [...(groups.get(t.task.seed) ?? []), i]);
  let dead = 0;
  for (const members of groups.values()) {
    const returns = new Set(members.map((i) => shaped[i].outcome.return));
    const outcomes = new Set(members.map((i) => batch[i].outcome.return));
    assert.equal(returns.size, outcomes.size);
    if (outcomes.size === 1) {
      dead++;
      for (const i of members) assert.ok(b[i].every((x) => x === 0));
    }
  }
  assert.ok(dead > 0 && dead < groups.size, `${dead} dead groups of ${groups.size}`);
  for (const [i, row] of a.entries()) assert.ok(near(row, b[i], 1e-12), `trajectory ${i}`);
  // Progress is no constant: it moves them.
  const progress = new BatchShaper({ kind: 'progress', coef: 0.1 }, 20).shape(batch, view);
  const c = creditBatch(progress, 'grpo', {});
  assert.ok(c.some((row, i) => !near(row, a[i], 1e-3)));
});

// ── Whole runs ────────────────────────────────────────────────────────────────────────────────────
const slippery4 = { env: 'frozenlake', params: { map: '4x4', slippery: true } };
const base = {
  env: slippery4,
  iters: 4,
  groups: 4,
  eval: { episodes: 50 },
  seed: 3,
  storeTrajectories: true,
};

/** The run's stored trajectories, iteration by iteration (`perIter` a batch). */
function stored(out: string, perIter: number): Trajectory[][] {
  const store = new RunStore(join(out, 'run.sqlite'), 'run', true);
  const all = store.trajectories('train');
  store.close();
  const iters: Trajectory[][] = [];
  for (let i = 0; i < all.length; i += perIter) iters.push(all.slice(i, i + perIter));
  return iters;
}

test('a shaped run: metrics and stored trajectories on the true reward, shaped_return and shaping_gap exact', async () => {
  const c = 0.05;
  const out = join(mkdtempSync(join(tmpdir(), 'turnwise-shaping-')), 'run');
  const config = parseTrainConfig({ ...base, shaping: { kind: 'step-penalty', coef: c } });
  const r = await trainPolicyGradient({ config, envs, out });
  assert.deepEqual(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).shaping, {
    kind: 'step-penalty',
    coef: c,
  });
  const iters = stored(out, 4 * 8);
  assert.equal(iters.length, 4);
  for (const m of r.metrics) {
    const ts = iters[m.iter];
    const v = m.values;
    // Stored as played: true rewards (1 on entering G, else 0) and the cell each step entered.
    for (const t of ts) {
      assert.equal(
        t.turns.reduce((s, u) => s + u.reward, 0),
        t.outcome.success ? 1 : 0,
      );
      assert.ok(t.turns.every((u) => typeof u.info.cell === 'number'));
    }
    const success = ts.filter((t) => t.outcome.success).length / ts.length;
    const turns = ts.reduce((s, t) => s + t.outcome.turns, 0) / ts.length;
    assert.equal(v['rollout/success'], success);
    assert.ok(close(v['rollout/turns'], turns));
    // A step penalty's gap is −c per turn; the shaped return is the true one minus it.
    assert.ok(close(v['train/shaping_gap'], -c * turns), `${v['train/shaping_gap']} vs ${-c * turns}`);
    assert.ok(close(v['train/shaped_return'], success - c * turns));
  }
  // The final evaluation is the true one: a success probability, not a shaped return.
  assert.ok(r.final !== null && r.final.exact !== null && r.final.exact >= 0 && r.final.exact <= 1);
  // Potential: every episode's gap is −c·Φ_100(start) = −c·V*_100(0), whatever it did.
  const p = await trainPolicyGradient({
    config: parseTrainConfig({
      ...base,
      storeTrajectories: false,
      shaping: { kind: 'potential', coef: 0.5 },
    }),
    envs,
  });
  for (const m of p.metrics) assert.ok(close(m.values['train/shaping_gap'], -0.5 * 0.744190287829, 1e-9));
  // An unshaped run has neither the metrics nor the config key.
  const u = await trainPolicyGradient({
    config: parseTrainConfig({ ...base, storeTrajectories: false }),
    envs,
  });
  assert.equal(u.metrics[0].values['train/shaping_gap'], undefined);
  assert.equal(Object.hasOwn(u.config, 'shaping'), false);
});

test('a shaped run interrupted and resumed equals the uninterrupted one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-shaping-resume-'));
  const shaping = { kind: 'novelty', coef: 0.2 };
  const config = parseTrainConfig({ ...base, iters: 6, checkpointEvery: 1, seed: 2, shaping });
  const whole = await trainPolicyGradient({ config, envs, out: join(dir, 'whole') });
  await trainPolicyGradient({ config, envs, out: join(dir, 'cut'), stopAfter: 2 });
  const resumed = await trainPolicyGradient({ config, envs, out: join(dir, 'cut'), resume: true });
  assert.deepEqual(resumed.final, whole.final);
  assert.equal(
    readFileSync(join(dir, 'cut', 'metrics.jsonl'), 'utf8'),
    readFileSync(join(dir, 'whole', 'metrics.jsonl'), 'utf8'),
  );
  assert.ok(readFileSync(join(dir, 'cut', 'metrics.jsonl'), 'utf8').includes('train/shaping_gap'));
});

test('shaping is refused on other envs, with ES, and outside its coefficient range', () => {
  const refuse = (raw: Record<string, unknown>, ...words: string[]) => {
    assert.throws(
      () => parseTrainConfig(raw),
      (e: Error) =>
        e.name === 'InputError' && !e.message.includes('\n') && words.every((w) => e.message.includes(w)),
      JSON.stringify(raw),
    );
  };
  refuse({ env: { env: 'sql' }, shaping: { kind: 'progress' } }, 'config.shaping', 'env.env is sql');
  refuse({ env: slippery4, algo: 'es', shaping: { kind: 'potential' } }, 'config.shaping', 'algo es');
  refuse({ env: slippery4, shaping: { kind: 'progress', coef: 0 } }, 'shaping.coef');
  refuse({ env: slippery4, shaping: { kind: 'progress', coef: 10.5 } }, 'shaping.coef');
  refuse({ env: slippery4, shaping: { kind: 'laps' } }, 'shaping.kind');
  assert.deepEqual(parseTrainConfig({ env: slippery4, shaping: { kind: 'novelty' } }).shaping, {
    kind: 'novelty',
    coef: 0.1,
  });
});
