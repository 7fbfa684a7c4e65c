// The isolated pool (worker threads and child processes under a deadline the host enforces): answers
// come back; a job past its deadline is stopped whatever it does (a JavaScript loop, a block inside
// native code) and the next job gets a fresh runner; a runner that dies fails only its own job; runners
// end idleMs after no env holds the pool (at once with drained()), and idle ones never keep a process
// alive.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { IsolatedPool } from '../../src/envs/isolated-pool.ts';
import type { FixtureJob } from './fixtures/pool-runner.ts';

const RUNNER = new URL('./fixtures/pool-runner.ts', import.meta.url);
const pool = (isolation: 'thread' | 'process', memoryMb = isolation === 'thread' ? 32 : 256) =>
  new IsolatedPool<FixtureJob, unknown>({ module: RUNNER, isolation, size: 2, memoryMb, name: 'runner' });

for (const isolation of ['thread', 'process'] as const) {
  test(`${isolation}: a job past its deadline is stopped by the host (JavaScript loop, native block); a fresh runner follows`, async () => {
    const p = new IsolatedPool<FixtureJob, { value: unknown; runner: string }>({
      module: RUNNER,
      isolation,
      size: 1,
      memoryMb: isolation === 'thread' ? 32 : 256,
      name: 'runner',
    });
    p.acquire();
    const echo = async (value: unknown) => {
      const r = await p.run({ op: 'echo', value }, 10_000);
      assert.ok(r.ok);
      assert.equal(r.value.value, value);
      return r.value.runner;
    };
    const runners = [await echo('a')];
    for (const job of [{ op: 'spin' }, { op: 'block', ms: 600_000 }] as FixtureJob[]) {
      const t0 = performance.now();
      const r = await p.run(job, 200);
      const ms = performance.now() - t0;
      assert.deepEqual(r, {
        ok: false,
        kind: 'timeout',
        message: 'it ran past 200 ms and its runner was stopped',
      });
      // Node's timers count from the event loop's cached clock (libuv's uv_now, read at the start of the
      // loop iteration), which can be up to a millisecond behind performance.now() at t0: a 200 ms
      // deadline can come 199.x ms after t0 (seen: 199.66). Not stopped early is what is checked.
      assert.ok(ms >= 199 && ms < 2000, `${job.op}: ${ms} ms`);
      runners.push(await echo(job.op));
    }
    // Each stopped runner was replaced by a fresh one.
    assert.equal(new Set(runners).size, 3);
    assert.equal(p.starts, 3);
    p.release();
    await p.drained();
    assert.equal(p.live, 0);
  });

  test(`${isolation}: a runner that dies fails only its own job (crash); a handler error rejects`, async () => {
    const p = pool(isolation);
    p.acquire();
    const [died, beside] = await Promise.all([
      p.run({ op: 'exit' }, 10_000),
      p.run({ op: 'echo', value: 'beside' }, 10_000),
    ]);
    assert.deepEqual(died, { ok: false, kind: 'crash', message: 'the runner exited (code 3)' });
    assert.deepEqual(beside.ok && (beside.value as { value: unknown }).value, 'beside');
    // Past its memory cap: a thread's V8 heap (resourceLimits), a process's data segment (ulimit -d).
    const grown = await p.run({ op: 'grow' }, 60_000);
    assert.equal(grown.ok === false && grown.kind, 'crash', JSON.stringify(grown));
    await assert.rejects(p.run({ op: 'throw' }, 10_000), /^Error: runner: RangeError: the handler failed$/);
    const again = await p.run({ op: 'echo', value: 1 }, 10_000);
    assert.ok(again.ok);
    p.release();
    await p.drained();
    assert.equal(p.live, 0);
  });
}

test('drained() ends the runners of a pool no one holds, not of one held again; close() ends a job in flight', async () => {
  const p = pool('thread');
  p.acquire();
  await p.run({ op: 'echo', value: 1 }, 10_000);
  p.release();
  p.acquire(); // a rollout closing one env and making the next
  await p.drained();
  assert.equal(p.live, 1);
  await p.run({ op: 'echo', value: 2 }, 10_000);
  assert.equal(p.starts, 1, 'the runner was kept');
  p.release();
  await p.drained();
  assert.equal(p.live, 0);
  // Explicit close ends a job in flight as a crash.
  p.acquire();
  const pending = p.run({ op: 'spin' }, 60_000);
  await p.run({ op: 'echo', value: 3 }, 10_000); // both runners started
  await p.close();
  assert.deepEqual(await pending, { ok: false, kind: 'crash', message: 'the runner was closed' });
  assert.equal(p.live, 0);
  p.release();
});

test('runners outlive the last holder by idleMs, then end; a holder in between keeps them', async () => {
  const p = new IsolatedPool<FixtureJob, unknown>({
    module: RUNNER,
    isolation: 'thread',
    size: 1,
    memoryMb: 32,
    name: 'runner',
    idleMs: 100,
  });
  p.acquire();
  await p.run({ op: 'echo', value: 1 }, 10_000);
  const closed = p.whenClosed();
  p.release();
  p.acquire(); // the next episode's env, before idleMs
  await p.run({ op: 'echo', value: 2 }, 10_000);
  assert.deepEqual([p.live, p.starts], [1, 1]);
  p.release();
  await closed; // idleMs after the last release, on the pool's own timer
  assert.equal(p.live, 0);
});

test('idle runners never keep a process alive: a script that never closes its pool exits', async () => {
  const script = `
    import { IsolatedPool } from ${JSON.stringify(new URL('../../src/envs/isolated-pool.ts', import.meta.url).href)};
    for (const isolation of ['thread', 'process']) {
      const p = new IsolatedPool({ module: new URL(${JSON.stringify(RUNNER.href)}), isolation, size: 1, memoryMb: 256, name: 'r' });
      p.acquire();
      const r = await p.run({ op: 'echo', value: isolation }, 10000);
      console.log(r.value.value);
    }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.deepEqual([code, out], [0, 'thread\nprocess\n']);
});
