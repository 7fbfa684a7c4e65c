// The parallel matmul: worker threads compute blocks of large products on the shared wasm memory. Every
// element is computed by the same instructions whichever thread runs its block, so the bits equal the
// one-thread and scalar results; the workers never keep a process alive, leave when idle and come back.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { gemm, gemmPool, gemmScalar, gemmThreads, KC, PARALLEL } from '../../src/nn/gemm.ts';
import { randomData } from './gradcheck.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];

after(async () => {
  await gemmPool()?.close();
});

function product(M: number, N: number, K: number, tA: boolean, tB: boolean, acc: boolean, seed: number) {
  const A = randomData(M * K, seed);
  const B = randomData(K * N, seed + 1);
  const C0 = randomData(M * N, seed + 2);
  return (run: typeof gemm) => {
    const C = C0.slice();
    run(M, N, K, A, 0, tA, B, 0, tB, C, 0, acc);
    return bits(C);
  };
}

// Above PARALLEL multiply-adds; odd sizes straddle the 4×8 tile, the 64-row block and the 256-deep
// k-block; one row block only (64 × 520) splits by column groups, many (1000 × 37) by row blocks.
const SHAPES = [
  [131, 67, 259],
  [64, 520, 65],
  [1000, 37, 60],
  [70, 70, 2 * KC + 3],
  [300, 9, 801],
];

test('a product split between threads has the bits of one thread and of the scalar path', () => {
  const pool = gemmPool();
  assert.ok(pool !== undefined, 'Node 20 has shared WebAssembly memory');
  const was = gemmThreads(2);
  try {
    let seed = 0;
    for (const [M, N, K] of SHAPES) {
      assert.ok(M * N * K >= PARALLEL, `${M}×${N}×${K} is large enough to split`);
      for (const tA of [false, true]) {
        for (const tB of [false, true]) {
          for (const acc of [false, true]) {
            seed += 3;
            const run = product(M, N, K, tA, tB, acc, seed);
            const label = `M=${M} N=${N} K=${K} tA=${tA} tB=${tB} acc=${acc}`;
            const scalar = run(gemmScalar);
            gemmThreads(1);
            const one = run(gemm);
            gemmThreads(2);
            // The workers alone compute every block, then the caller and the workers share them.
            pool.workersOnly = true;
            const before = pool.workerBlocks;
            const workers = run(gemm);
            assert.ok(pool.workerBlocks > before, `${label}: a worker computed the blocks`);
            pool.workersOnly = false;
            const shared = run(gemm);
            assert.deepEqual(one, scalar, `${label}: one thread vs scalar`);
            assert.deepEqual(workers, one, `${label}: workers vs one thread`);
            assert.deepEqual(shared, one, `${label}: shared vs one thread`);
          }
        }
      }
    }
  } finally {
    pool.workersOnly = false;
    gemmThreads(was);
  }
});

test('idle workers leave by themselves, and the next large product starts them again', async () => {
  const pool = gemmPool()!;
  const was = gemmThreads(2);
  try {
    await pool.close();
    pool.idleMs = 20;
    pool.workersOnly = true; // the product cannot finish unless a worker starts and computes it
    const run = product(200, 100, 120, false, true, false, 7);
    const first = run(gemm);
    assert.equal(pool.alive, 1);
    await pool.exited(); // resolves on the worker's own exit after 20 ms without work
    assert.equal(pool.alive, 0);
    const again = run(gemm);
    assert.equal(pool.alive, 1);
    assert.deepEqual(again, first);
    await pool.close();
    assert.equal(pool.alive, 0);
  } finally {
    pool.workersOnly = false;
    pool.idleMs = 10_000;
    gemmThreads(was);
  }
});

test('a script that never closes the workers still exits', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gemm-threads-'));
  const script = join(dir, 'unclosed.mts');
  const gemmUrl = pathToFileURL(join(import.meta.dirname, '../../src/nn/gemm.ts')).href;
  writeFileSync(
    script,
    `import { gemm, gemmPool, gemmThreads } from ${JSON.stringify(gemmUrl)};
gemmThreads(2);
const pool = gemmPool();
pool.workersOnly = true;
const [M, N, K] = [512, 64, 64];
gemm(M, N, K, new Float32Array(M * K).fill(1), 0, false, new Float32Array(K * N).fill(2), 0, false, new Float32Array(M * N), 0, false);
console.log(JSON.stringify({ alive: pool.alive, blocks: pool.workerBlocks }));
`,
  );
  const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.signal, null, `the script was killed at the timeout (stderr: ${r.stderr})`);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { alive: number; blocks: number };
  // A worker was running (and had computed all 8 row blocks of 64) when the script reached its end.
  assert.deepEqual(out, { alive: 1, blocks: 8 });
});

test('each shape is split only while splitting measures faster on two cores, and the other way is timed again now and then', () => {
  const pool = gemmPool()!;
  const shape = 'test-shape'; // a key no real product uses
  const next = () => pool.choose(shape);
  assert.equal(next(), true); // first timed split …
  pool.record(shape, true, 4, 8); // 4 ms, 8 ms of CPU: parallelism 2
  assert.equal(next(), false); // … then alone
  pool.record(shape, false, 3);
  // Alone measured faster (3 ms < 4 ms): alone, except every 16th product of the shape (the 16th here).
  const ways: boolean[] = [];
  for (let i = 3; i <= 20; i++) {
    const split = next();
    ways.push(split);
    if (!split) pool.record(shape, false, 3);
  }
  assert.deepEqual(
    ways.map((w, i) => (w ? i + 3 : 0)).filter((i) => i > 0),
    [16],
  );
  // The split times faster now (the machine got quiet): averages move by a quarter of each new time.
  for (let i = 0; i < 3; i++) pool.record(shape, true, 1, 2); // 4 → 3.25 → 2.69 → 2.27 ms
  assert.equal(next(), true);
  assert.equal(next(), true);
  // Faster, but on one core's worth of CPU (parallelism 1: the threads took turns): not split.
  for (let i = 0; i < 8; i++) pool.record(shape, true, 1, 1); // parallelism 2 → … → 1.10 < 1.5
  assert.equal(next(), false);
});

test('a product too large for one pass is done in row slabs, with the bits of a row computed alone', () => {
  // M·(K + N) = 64 003 · 264 floats of A and C: more than one pass copies in (2²⁴), so two slabs, of
  // 63 488 rows (a multiple of the 64-row block) and 515.
  const [M, N, K] = [64_003, 8, 256];
  const A = randomData(M * K, 11);
  const B = randomData(K * N, 12);
  for (const tA of [false, true]) {
    const C = new Float32Array(M * N);
    gemm(M, N, K, A, 0, tA, B, 0, false, C, 0, false);
    for (const i of [0, 1, 63_487, 63_488, M - 1]) {
      // Row i of op(A), contiguous, through the scalar path.
      const row = tA ? Float32Array.from({ length: K }, (_, k) => A[k * M + i]) : A.slice(i * K, (i + 1) * K);
      const want = new Float32Array(N);
      gemmScalar(1, N, K, row, 0, false, B, 0, false, want, 0, false);
      assert.deepEqual(bits(C.subarray(i * N, (i + 1) * N)), bits(want), `tA=${tA} row ${i}`);
    }
  }
});
