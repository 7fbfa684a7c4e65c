// Error states in a tool env without an oracle (sql): the forced action is a detour — a valid call other
// than the gold path's next one — and the state keeps the env just before it, so that the pre-error
// state can be continued from. Checked against the env itself: the pre-error snapshot, restored in a
// fresh env and stepped with the forced call, gives the error state's observation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Env, Policy, Task } from '../../src/core/types.ts';
import { envs } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { canInjectDetours, canInjectErrors, makeErrorStates } from '../../src/eval/states.ts';
import { stepProxyAt } from '../../src/eval/step-proxy.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { closeEnv } from '../../src/rollout/lockstep.ts';

const tasks: Task[] = Array.from({ length: 4 }, (_, i) => ({
  env: 'sql',
  params: { level: 1 },
  seed: 10 + i,
}));
const key = (a: unknown) => JSON.stringify(a);

test('sql error states are detours from the gold path, and their pre-error snapshots replay into them', async () => {
  const spec = envs.spec(tasks[0]);
  const expert = makePolicy('oracle:eps=0.2', spec) as Policy<unknown, unknown>;
  const run = await runPassCounts({
    envs,
    tasks,
    samples: 2,
    T: [10],
    policy: expert,
    runSeed: 1,
    keep: true,
  });
  const probe = (await envs.make(tasks[0])) as Env<unknown, unknown>;
  assert.equal(canInjectErrors(probe), false); // no oracle
  assert.equal(canInjectDetours(probe), true);
  await closeEnv(probe);
  const made = await makeErrorStates(envs, [run.atTmax], 8, 5);
  assert.ok(made.states.length >= 4, `${made.states.length} error states of ${made.attempts} attempts`);
  assert.equal(made.regrets.length, made.states.length);
  assert.ok(made.regrets.every(Number.isNaN)); // no oracle measures a detour's regret
  for (const st of made.states) {
    const forced = st.history[st.history.length - 1];
    assert.equal(forced.forced, true);
    const before = st.history.slice(0, -1);
    // A detour: valid at that point, and not the gold call.
    const env = (await envs.make(st.task)) as Env<unknown, unknown>;
    try {
      env.restore!(st.preSnapshot);
      const view = env.scripted!();
      assert.notEqual(key(forced.action), key(view.goldAction(before)));
      assert.ok(view.validActions(before).some((a) => key(a) === key(forced.action)));
      const res = await env.step(forced.action);
      assert.equal(key(res.observation), key(st.observation));
      assert.equal(res.terminated, false);
    } finally {
      await closeEnv(env);
    }
  }
  // The same policy on both sides: every scored pair ties, at error and at pre-error states alike.
  const oracle = makePolicy('oracle', spec) as Policy<unknown, unknown>;
  for (const pre of [false, true]) {
    const f = await stepProxyAt(
      envs,
      made.states,
      { a: oracle, b: oracle },
      { actions: 2, seed: 0, key: 3, pre },
    );
    assert.ok(f.states > 0, `scored states (pre: ${pre})`);
    assert.equal(f.ties, 1);
    assert.equal(f.score, 0.5);
  }
});
