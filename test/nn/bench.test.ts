// transformerBench's figures hang together (the numbers themselves are machine-dependent: printed by
// `turnwise bench nn`, never asserted).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { transformerBench } from '../../src/nn/bench.ts';
import { gemmPool, gemmThreads } from '../../src/nn/gemm.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';

test('transformerBench: params of the model, mfu = model GFLOP/s of training ÷ the peak given', () => {
  const config = transformerConfig({ layers: 1, d: 16, heads: 2, ctx: 32, vocab: 24 });
  const r = transformerBench(10, 0.01, config, 2);
  const model = new Transformer(config, Rng.derive(0));
  assert.equal(r.params, model.parameterCount());
  assert.deepEqual(Object.keys(r.generateTokensPerSecond), ['1', '64']);
  assert.ok(r.generateTokensPerSecond['1'] > 0 && r.generateTokensPerSecond['64'] > 0);
  assert.equal(r.peakGflops, 10);
  // 6·N + 6·layers·d·T FLOPs per training token (N = matmul parameters: 3·16·48·… see bench.ts).
  const perToken = 6 * model.matmulParameterCount() + 6 * 1 * 16 * 32;
  assert.ok(
    Math.abs(r.trainGflops - (r.trainTokensPerSecond * perToken) / 1e9) < 0.01 + 1e-3 * r.trainGflops,
  );
  assert.ok(Math.abs(r.mfu - r.trainGflops / 10) < 2e-3);
});

test('transformerBench: on one thread and on the engine threads, each against its own peak; CPU-time cross-check', async () => {
  const config = transformerConfig({ layers: 1, d: 16, heads: 2, ctx: 32, vocab: 24 });
  const was = gemmThreads(2);
  try {
    const r = transformerBench(10, 0.01, config, 2, { threadsPeak: 16, cpuPeak: 8 });
    assert.equal(r.peakGflops, 10);
    assert.ok(Math.abs(r.mfu - r.trainGflops / 10) < 2e-3);
    const t = r.threads!;
    assert.equal(t.threads, 2);
    assert.equal(t.peakGflops, 16);
    const perToken = 6 * new Transformer(config, Rng.derive(0)).matmulParameterCount() + 6 * 1 * 16 * 32;
    assert.ok(
      Math.abs(t.trainGflops - (t.trainTokensPerSecond * perToken) / 1e9) < 0.01 + 1e-3 * t.trainGflops,
    );
    assert.ok(Math.abs(t.mfu - t.trainGflops / 16) < 2e-3);
    // This tiny model's products are all below the split threshold.
    assert.deepEqual(t.parallel, { split: 0, declined: 0 });
    const cpu = r.cpu!;
    assert.equal(cpu.peakGflops, 8);
    assert.ok(cpu.trainGflops > 0);
    assert.ok(Math.abs(cpu.mfu - cpu.trainGflops / 8) < 2e-3);
  } finally {
    gemmThreads(was);
    await gemmPool()?.close();
  }
});
