// The study on worker threads (study.ts, run.ts, run-worker.ts): a trainer named in TRAINERS runs each
// (world, seed) on its own thread, and the summary and the policies are the same bytes at any
// parallelism — one run after another in this thread, or two at a time on threads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runStudy, studyPlan } from '../../src/studies/budget/study.ts';
import type { StudySummary } from '../../src/studies/budget/summary.ts';
import { TINY } from './fixtures.ts';

/** The summary without what the machine decides: seconds, timings, and how many ran at once. */
function machineFree(s: StudySummary): unknown {
  return JSON.parse(
    JSON.stringify(s, (k, v) => (k === 'seconds' || k === 'timings' || k === 'parallel' ? undefined : v)),
  );
}

test('study on worker threads: same summary and policy bytes at parallel 1 (this thread) and 2 (threads)', async () => {
  const plan = studyPlan(TINY, [3], ['slippery', 'narrow']);
  const events: string[] = [];
  const [one, two] = [
    await runStudy(plan, { trainer: 'frozen', parallel: 1 }),
    await runStudy(plan, {
      trainer: 'frozen',
      parallel: 2,
      onEvent: (e) => events.push(`${e.world}/${e.seed}`),
    }),
  ];
  assert.equal(one.summary.parallel, 1);
  assert.equal(two.summary.parallel, 2);
  assert.deepEqual(
    two.summary.runs.map((r) => [r.world, r.config.seed]),
    [
      ['slippery', 3],
      ['narrow', 3],
    ],
  );
  assert.deepEqual(machineFree(two.summary), machineFree(one.summary));
  assert.deepEqual(two.policies, one.policies);
  // Every run's stages reached the main thread, named by world and seed.
  assert.deepEqual([...new Set(events)].sort(), ['narrow/3', 'slippery/3']);
});

test('the default parallelism: the cores, at most one run per 4 GiB of memory, at least one', async () => {
  const { defaultParallel } = await import('../../src/studies/budget/study.ts');
  const GiB = 2 ** 30;
  assert.equal(defaultParallel(8, 8 * GiB), 2); // an 8 GB laptop: two runs at once (≈ 1.8 GB)
  assert.equal(defaultParallel(8, 64 * GiB), 8);
  assert.equal(defaultParallel(2, 24 * GiB), 2); // this project's machines
  assert.equal(defaultParallel(4, 2 * GiB), 1);
});
