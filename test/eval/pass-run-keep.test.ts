// runPassCounts keeps only what it is asked to keep (the budget study's memory: a policy's episodes at
// T_max are tallied as they are played and only the diagnostic pools are held), and what it keeps and
// tallies is what keeping every episode would have given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { failures } from '../../src/eval/failures.ts';
import { makePolicy } from '../../src/policies/spec.ts';

test('runPassCounts: keep by sample index holds only those episodes, the same ones in the same order; the failure tally covers every episode', async () => {
  const tasks = makeTasks(
    envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }),
    30,
    900,
  );
  const policy = makePolicy('random', makeEnv(tasks[0]).spec);
  // 30 tasks × 200 samples: more than one rollout chunk (4096 episodes), so chunk edges are crossed.
  const o = { envs, tasks, samples: 200, T: [10, 50], policy, runSeed: 3 };
  const all = await runPassCounts({ ...o, keep: true });
  const some = await runPassCounts({ ...o, keep: (s) => s < 3 || s === 199 });
  const none = await runPassCounts(o);
  assert.equal(all.atTmax.length, 30 * 200);
  assert.equal(none.atTmax.length, 0);
  const expected = all.atTmax.filter((_, e) => e % 200 < 3 || e % 200 === 199);
  assert.equal(some.atTmax.length, 30 * 4);
  assert.deepEqual(
    some.atTmax.map((r) => [r.trajectory.id, r.envSeed, r.trajectory.outcome]),
    expected.map((r) => [r.trajectory.id, r.envSeed, r.trajectory.outcome]),
  );
  const tally = failures(all.atTmax.map((r) => r.trajectory));
  assert.equal(tally.episodes, 6000);
  for (const run of [all, some, none]) assert.deepEqual(run.failures, tally);
  assert.deepEqual(some.counts, all.counts);
});
