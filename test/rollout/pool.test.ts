import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool } from '../../src/rollout/pool.ts';

test('worker pool: results in job order, errors reach the caller, pool survives them', async () => {
  const pool = new WorkerPool<number, number>(
    new URL('./fixtures/square-job.ts', import.meta.url),
    { offset: 1 },
    2,
  );
  try {
    const jobs = Array.from({ length: 50 }, (_, i) => i);
    assert.deepEqual(
      await pool.map(jobs),
      jobs.map((i) => i * i + 1),
    );
    await assert.rejects(pool.run(-3), /negative job -3/);
    assert.equal(await pool.run(4), 17);
  } finally {
    await pool.close();
  }
});
