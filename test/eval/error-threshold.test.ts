// Injected errors that are real errors (issue 11, point 3): the forced action must lose at least a
// stated fraction of the state's value. Checked against the oracle at every pre-error state, with
// every forcing attempt accounted for and the relative regrets of kept and dropped attempts stored.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Oracle, Task } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { errorActions, makeErrorStates, type Recorded, TIE } from '../../src/eval/states.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { regretDistribution } from '../../src/studies/budget/measure/step-quality.ts';

const slippery4 = envConfig('frozenlake', { map: '4x4', slippery: true });
const tasks = (n: number, seed = 0): Task[] => makeTasks(slippery4, n, seed);
const spec = makeEnv(tasks(1)[0]).spec;

async function pool(): Promise<Recorded[]> {
  const run = await runPassCounts({
    envs,
    tasks: tasks(8, 1),
    samples: 8,
    T: [100],
    policy: makePolicy('oracle:temp=0.05,horizon=20', spec),
    runSeed: 1,
    keep: true,
  });
  return run.atTmax;
}

test('errorActions: positive regret beyond the tie tolerance and at least the threshold share of V*', () => {
  // Regrets 0, 0.125 (25% of V*), a tie within TIE, 0.25 (50%): all exact in binary.
  const q = [0.5, 0.375, 0.5 - 1e-13, 0.25];
  assert.deepEqual(errorActions(q, 0.5, 0), [1, 3]);
  assert.deepEqual(errorActions(q, 0.5, 0.25), [1, 3], 'exactly at the threshold counts');
  assert.deepEqual(errorActions(q, 0.5, 0.26), [3]);
  assert.deepEqual(errorActions(q, 0.5, 0.51), []);
  assert.ok(0.5 - q[2] < TIE);
});

test('makeErrorStates with a 10% threshold: every forced action loses ≥ 10% of V*; attempts add up; regrets stored', async () => {
  const p = await pool();
  const loose = await makeErrorStates(envs, [p], 60, 2);
  const strict = await makeErrorStates(envs, [p], 60, 2, { minRelRegret: 0.1 });
  for (const e of [loose, strict]) {
    assert.equal(e.attempts, e.states.length + e.noBadAction + e.belowThreshold + e.terminal);
    assert.equal(e.regrets.length, e.states.length);
    assert.equal(e.terminalRegrets.length, e.terminal);
  }
  assert.equal(loose.belowThreshold, 0);
  assert.equal(loose.minRelRegret, 0);
  assert.equal(strict.minRelRegret, 0.1);
  assert.equal(strict.states.length, 60);
  // The loose states include small errors (the oracle-like policy's near-ties); the strict ones do not.
  assert.ok(
    loose.regrets.some((r) => r < 0.1),
    'some loose errors lose < 10%',
  );
  assert.ok(strict.belowThreshold > 0, 'attempts refused for want of a real error');
  strict.states.forEach((st, i) => {
    const forced = st.history[st.history.length - 1];
    const oracle = makeEnv(st.task).oracle!() as Oracle<unknown>;
    const h = st.budget - forced.t;
    const s = oracle.state(forced.observation);
    const v = oracle.v(h, s);
    const rel = (v - oracle.q(h, s)[forced.action as number]) / v;
    assert.ok(rel >= 0.1, `state ${i}: relative regret ${rel}`);
    assert.equal(strict.regrets[i], rel);
  });
  for (const r of strict.terminalRegrets) assert.ok(r >= 0.1);
});

test('regretDistribution: nearest-rank quantiles, mean and histogram by hand', () => {
  const d = regretDistribution([0.5, 0.005, 0.02, 1, 0.1, 0.3, 0.07, 0.15, 0.2, 0.01]);
  assert.equal(d.n, 10);
  assert.ok(Math.abs(d.mean! - 2.355 / 10) < 1e-12);
  // sorted: 0.005 0.01 0.02 0.07 0.1 0.15 0.2 0.3 0.5 1
  assert.equal(d.p10, 0.01);
  assert.equal(d.median, 0.15);
  assert.equal(d.p90, 1);
  assert.deepEqual(d.bins, [0, 0.01, 0.05, 0.1, 0.2, 0.5, 1]);
  assert.deepEqual(d.counts, [1, 2, 1, 2, 2, 2]);
  assert.deepEqual(regretDistribution([]).counts, [0, 0, 0, 0, 0, 0]);
});
