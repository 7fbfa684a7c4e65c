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

test('transformerBench: on the engine threads and on one, each against its own peak; CPU-time cross-check', async () => {
  const config = transformerConfig({ layers: 1, d: 16, heads: 2, ctx: 32, vocab: 24 });
  const was = gemmThreads(2);
  try {
    const r = transformerBench(10, 0.01, config, 2, { onePeak: 4, cpuPeak: 8 });
    assert.equal(r.threads, 2);
    assert.equal(r.peakGflops, 10);
    const one = r.oneThread!;
    assert.equal(one.peakGflops, 4);
    const perToken = 6 * new Transformer(config, Rng.derive(0)).matmulParameterCount() + 6 * 1 * 16 * 32;
    assert.ok(
      Math.abs(one.trainGflops - (one.trainTokensPerSecond * perToken) / 1e9) < 0.01 + 1e-3 * one.trainGflops,
    );
    assert.ok(Math.abs(one.mfu - one.trainGflops / 4) < 2e-3);
    const cpu = r.cpu!;
    assert.equal(cpu.peakGflops, 8);
    assert.ok(cpu.trainGflops > 0);
    assert.ok(Math.abs(cpu.mfu - cpu.trainGflops / 8) < 2e-3);
  } finally {
    gemmThreads(was);
    await gemmPool()?.close();
  }
});
