// The llamaCpp figure of `turnwise bench nn`: the same model in turnwise's engine and in llama.cpp (through
// node-llama-cpp, loaded from the GGUF file the bench writes), greedy. The rates are machine-dependent and
// not asserted; what is: the shape, that each engine generated batch × tokens, that the ratios are the
// quotients of the rates, that both engines pick the same greedy tokens, and that the file is gone after.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { benchTokenizer, LLAMA_BENCH, llamaCppBench } from '../../src/llama/bench.ts';
import { BENCH_TRANSFORMER } from '../../src/nn/bench.ts';
import { Transformer } from '../../src/nn/transformer.ts';

const benchDirs = () => readdirSync(tmpdir()).filter((f) => f.startsWith('turnwise-llama-bench-'));

test('llamaCppBench: both engines generate batch × tokens greedily, the same tokens; rates positive; temp file removed', async () => {
  const before = new Set(benchDirs());
  const tokens = 8;
  const r = await llamaCppBench({ ...LLAMA_BENCH, tokens, batches: [1, 3], trialSeconds: 0.001, trials: 1 });
  assert.equal(r.threads, 1);
  assert.equal(r.promptTokens, 16);
  assert.equal(r.newTokens, tokens);
  const { params, ...config } = r.model;
  assert.deepEqual(config, BENCH_TRANSFORMER);
  assert.equal(params, new Transformer(BENCH_TRANSFORMER, Rng.derive(0)).parameterCount());
  for (const engine of ['ours', 'llamaCpp'] as const)
    assert.deepEqual(r.generatedTokens[engine], { '1': tokens, '3': 3 * tokens });
  for (const rates of Object.values(r.generateTokensPerSecond)) {
    assert.deepEqual(Object.keys(rates), ['1', '3']);
    for (const v of Object.values(rates)) assert.ok(Number.isFinite(v) && v > 0, String(v));
  }
  const g = r.generateTokensPerSecond;
  for (const B of ['1', '3']) {
    assert.ok(Math.abs(r.ratio[B] - g.ours[B] / g.llamaCpp[B]) <= 5e-4);
    assert.ok(Math.abs(r.ratioToDecode[B] - g.ours[B] / g.llamaCppDecode[B]) <= 5e-4);
  }
  assert.equal(r.greedyTokensEqual, true);
  assert.deepEqual(
    benchDirs().filter((d) => !before.has(d)),
    [],
  );
});

test('benchTokenizer: exactly the vocabulary asked for; refuses what 26² letter pairs cannot make', () => {
  assert.equal(benchTokenizer(512).vocabSize, 512);
  assert.equal(benchTokenizer(262).vocabSize, 262);
  assert.throws(() => benchTokenizer(261), RangeError);
  assert.throws(() => benchTokenizer(262 + 677), RangeError);
});
