// Injected errors that move as intended and that slip (issue 11, point 3): the classifier against the
// map's geometry by hand and by brute force, against the narrow world's intended-only ice, on ice that
// never slips (every forced move intended) and on slippery ice (both kinds, each state's flag checked);
// the split figures on a constructed case with a known answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepResult, Task } from '../../src/core/types.ts';
import { DOWN, LEFT, RIGHT, UP } from '../../src/envs/frozenlake/env.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { makeErrorStates, type Recorded, type State } from '../../src/eval/states.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { byMove, pairedContrastWhere } from '../../src/studies/budget/measure/states.ts';
import { moveCounts } from '../../src/studies/budget/measure/step-quality.ts';
import { movedAsIntended, worldEnvs } from '../../src/studies/budget/world.ts';

const MAP = 'SFFF,FHFH,FFFH,HFFG';
const one = (params: Record<string, unknown>): Task => makeTasks(envConfig('frozenlake', params), 1, 0)[0];

/** The cell a move leads to on ice that never slips (Gymnasium's inc), computed independently here. */
function geometric(s: number, a: number, n: number): number {
  let [row, col] = [Math.floor(s / n), s % n];
  if (a === LEFT) col = Math.max(col - 1, 0);
  else if (a === DOWN) row = Math.min(row + 1, n - 1);
  else if (a === RIGHT) col = Math.min(col + 1, n - 1);
  else if (a === UP) row = Math.max(row - 1, 0);
  return row * n + col;
}

test('movedAsIntended (cell worlds) by hand: the intended cell is intended, a slip elsewhere is not, a slip into the wall cell counts as intended', () => {
  const slippery = movedAsIntended(false);
  const task = one({ map: MAP, slippery: true });
  // From the start (0, 0): Right intends 1; it slips Down to 4 or Up (clamped) to 0.
  assert.equal(slippery(task, 0, RIGHT, 1), true);
  assert.equal(slippery(task, 0, RIGHT, 4), false);
  assert.equal(slippery(task, 0, RIGHT, 0), false);
  // Left intends 0 (the wall); slipping Up also ends in 0 — the same state, so intended; Down is a slip.
  assert.equal(slippery(task, 0, LEFT, 0), true);
  assert.equal(slippery(task, 0, LEFT, 4), false);
  // From (1, 2): Down intends 10; Left slips into the hole 5, Right to 7.
  assert.equal(slippery(task, 6, DOWN, 10), true);
  assert.equal(slippery(task, 6, DOWN, 5), false);
  assert.equal(slippery(task, 6, DOWN, 7), false);
  // Ice that never slips: the only outcome is the intended one.
  assert.equal(slippery(one({ map: MAP }), 0, RIGHT, 1), true);
});

test('movedAsIntended against brute force: every step of the real env on random slippery maps, by geometry', () => {
  const classify = movedAsIntended(false);
  const tasks = makeTasks(envConfig('frozenlake', { random: true, size: 5, p: 0.8, slippery: true }), 6, 7);
  const tally = { intended: 0, slipped: 0 };
  for (const task of tasks) {
    const env = makeEnv(task);
    for (let seed = 0; seed < 60; seed++) {
      let s = env.reset(seed) as number;
      for (let t = 0; t < 20; t++) {
        const a = (seed * 7 + t * 3) % 4;
        const r = env.step(a) as StepResult<unknown>;
        const next = r.observation as number;
        const got = classify(task, s, a, next);
        assert.equal(got, next === geometric(s, a, 5), `map ${task.seed} s ${s} a ${a} → ${next}`);
        tally[got ? 'intended' : 'slipped']++;
        s = next;
        if (r.terminated) break;
      }
    }
  }
  // 1/3-slippery ice: about 2/3 of moves slip (a little less: slips into a wall cell count as intended).
  const share = tally.slipped / (tally.intended + tally.slipped);
  assert.ok(share > 0.45 && share < 0.7, `slipped share ${share}`);
});

test('movedAsIntended (narrow world): intended exactly when the step reached what intended-only ice reaches from the same state', () => {
  const classify = movedAsIntended(true);
  const cells = movedAsIntended(false);
  const tasks = makeTasks(
    envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true, successRate: 0.9 }),
    4,
    40,
  );
  let slips = 0;
  let steps = 0;
  for (const task of tasks) {
    const [env, ice] = [worldEnvs(true).make(task), worldEnvs(true, true).make(task)];
    const n = 16;
    for (let seed = 0; seed < 100; seed++) {
      let x = env.reset(seed) as number;
      for (let t = 0; t < 25; t++) {
        const a = (seed + 3 * t) % 4;
        ice.restore!(env.snapshot!());
        const want = (ice.step(a) as StepResult<unknown>).observation as number;
        const r = env.step(a) as StepResult<unknown>;
        const next = r.observation as number;
        const got = classify(task, x, a, next);
        assert.equal(got, next === want, `map ${task.seed} x ${x} a ${a}`);
        // Where the cell differs from the intended one, the cell world calls it a slip too.
        if (next % n !== want % n) assert.equal(cells(task, x % n, a, next % n), false);
        steps++;
        if (!got) slips++;
        x = next;
        if (r.terminated) break;
      }
    }
  }
  const share = slips / steps;
  assert.ok(share > 0.05 && share < 0.15, `slips ${share} (the ice slips with probability 0.1)`);
});

async function pool(params: Record<string, unknown>, T: number): Promise<{ pool: Recorded[]; n: number }> {
  const tasks = makeTasks(envConfig('frozenlake', params), 10, 3);
  const run = await runPassCounts({
    envs,
    tasks,
    samples: 6,
    T: [T],
    policy: makePolicy('oracle:temp=0.05,horizon=20', makeEnv(tasks[0]).spec),
    runSeed: 1,
    keep: true,
  });
  return { pool: run.atTmax, n: (params.size as number) ?? 4 };
}

test('makeErrorStates with the classifier: on ice that never slips every forced move is intended', async () => {
  const { pool: p } = await pool({ random: true, size: 4, p: 0.8 }, 8);
  const e = await makeErrorStates(envs, [p], 40, 5, { minRelRegret: 0.1, intended: movedAsIntended(false) });
  assert.ok(e.states.length > 0 && e.terminal > 0, `${e.states.length} states, ${e.terminal} terminal`);
  const m = moveCounts(e);
  assert.deepEqual(m, {
    intended: e.states.length,
    slipped: 0,
    terminalIntended: e.terminal,
    terminalSlipped: 0,
  });
  // Without a classifier nothing is split.
  const plain = await makeErrorStates(envs, [p], 40, 5, { minRelRegret: 0.1 });
  assert.equal(plain.terminalSlipped.length, 0);
  assert.ok(plain.states.every((st) => st.slipped === undefined));
  assert.deepEqual(moveCounts(plain), { intended: 0, slipped: 0, terminalIntended: 0, terminalSlipped: 0 });
  // The classification does not change which states are made.
  assert.deepEqual(
    plain.states.map((st) => st.observation),
    e.states.map((st) => st.observation),
  );
});

test('makeErrorStates with the classifier on slippery ice: both kinds, each flag by geometry, counts add up', async () => {
  const { pool: p, n } = await pool({ random: true, size: 4, p: 0.8, slippery: true }, 100);
  const e = await makeErrorStates(envs, [p], 60, 2, { minRelRegret: 0.1, intended: movedAsIntended(false) });
  assert.equal(e.states.length, 60);
  for (const st of e.states) {
    const forced = st.history[st.history.length - 1];
    const want = st.observation !== geometric(forced.observation as number, forced.action as number, n);
    assert.equal(st.slipped, want);
  }
  const m = moveCounts(e);
  assert.ok(m.intended > 0 && m.slipped > 0, JSON.stringify(m));
  assert.equal(m.intended + m.slipped, e.states.length);
  assert.equal(e.terminalSlipped.length, e.terminal);
  assert.equal(m.terminalIntended + m.terminalSlipped, e.terminal);
});

test('byMove and pairedContrastWhere on a constructed case: each kind by hand, the parts add up to the whole', () => {
  const [A, B] = [{ seed: 1 }, { seed: 2 }] as unknown as Task[];
  // Intended: states 0 (A), 3 (B); slipped: 1, 2 (A), 4 (B); state 5 unclassified (in neither part).
  const flags = [false, true, true, false, true, undefined];
  const tasks = [A, A, A, B, B, B];
  const states = tasks.map((task, i) => ({ task, slipped: flags[i] }) as unknown as State);
  const x = Float64Array.from([0.9, 0.5, 0.7, 0.6, 0.2, 0.4]);
  const y = Float64Array.from([0.5, 0.5, 0.5, 0.5, 0.5, 0.5]);
  const boot = { resamples: 300, seed: 0 };
  const split = byMove((keep) => pairedContrastWhere(x, y, states, keep, boot));
  assert.equal(split.intended.pairs, 2);
  assert.equal(split.slipped.pairs, 3);
  assert.equal(split.intended.maps, 2);
  assert.ok(Math.abs(split.intended.value[0] - 0.75) < 1e-12, 'win(error) (0.9 + 0.6)/2');
  assert.ok(Math.abs(split.intended.diff! - 0.25) < 1e-12);
  assert.ok(Math.abs(split.slipped.value[0] - 1.4 / 3) < 1e-12, 'win(error) (0.5 + 0.7 + 0.2)/3');
  assert.ok(Math.abs(split.slipped.diff! - (1.4 / 3 - 0.5)) < 1e-12);
  const classified = pairedContrastWhere(x, y, states, (st) => st.slipped !== undefined, boot);
  assert.ok(Math.abs((2 * split.intended.diff! + 3 * split.slipped.diff!) / 5 - classified.diff!) < 1e-12);
  // No state of a kind: no figure, no interval.
  const none = pairedContrastWhere(x, y, states, () => false, boot);
  assert.equal(none.pairs, 0);
  assert.equal(none.diff, undefined);
});
