// Inference: the KV cache against the cache-free forward (bits), batched generation against one prompt
// at a time, sampling log-probs against teacher-forced scores, and the sampling distribution itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContextOverflow, InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import { feed, KvCache } from '../../src/nn/kv-cache.ts';
import { type Generation, generate, scoreTokens, tokenLogProbs } from '../../src/nn/sampling.ts';
import { noGrad } from '../../src/nn/tensor.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];

/** A small model with weights large enough that its distributions are far from uniform. */
function model(kvHeads = 2, ctx = 96): Transformer {
  const c = transformerConfig({ layers: 2, d: 32, heads: 4, kvHeads, ffn: 48, vocab: 40, ctx });
  const m = new Transformer(c, Rng.derive(7));
  const rng = Rng.derive(8);
  for (const p of m.parameters())
    if (p.rank === 2) for (let i = 0; i < p.size; i++) p.data[i] = rng.normal() * 0.15;
  return m;
}

const prompt = (n: number, seed: number) => {
  const rng = Rng.derive(seed, 1);
  return Array.from({ length: n }, () => rng.int(40));
};

/** The cache-free forward's logits row for the last token of `ids`. */
function lastRow(m: Transformer, ids: number[]): Float32Array {
  const V = m.config.vocab;
  const all = noGrad(() => m.forward(Int32Array.from(ids), [1, ids.length])).data;
  return all.slice((ids.length - 1) * V, ids.length * V);
}

test('KV cache: a prompt fed whole, token by token, or in a ragged batch gives the cache-free logits, bit for bit', () => {
  for (const kvHeads of [4, 2, 1]) {
    const m = model(kvHeads);
    const V = m.config.vocab;
    // 70 tokens: the cache-free forward splits them into two query blocks of 64 and 6.
    const a = prompt(70, 1);
    const b = prompt(9, 2);
    const full = noGrad(() => m.forward(Int32Array.from(a), [1, a.length])).data;
    const whole = feed(m, new KvCache(m, 1), [0], [a]);
    assert.deepEqual(bits(whole), bits(full), `kvHeads ${kvHeads}: whole prompt`);
    const cache = new KvCache(m, 2);
    for (let t = 0; t < a.length; t++) {
      const row = feed(m, cache, [0], [[a[t]]], true);
      assert.deepEqual(bits(row), bits(full.subarray(t * V, (t + 1) * V)), `kvHeads ${kvHeads}: token ${t}`);
    }
    // A ragged batch: sequence 1 (fresh) gets 9 tokens while sequence 0 (holding 70) gets none, then
    // both step together with different lengths.
    const rows = feed(m, cache, [1], [b], true);
    assert.deepEqual(bits(rows), bits(lastRow(m, b)));
    const step = feed(m, cache, [1, 0], [[5], [7]], true);
    assert.deepEqual(bits(step.subarray(0, V)), bits(lastRow(m, [...b, 5])));
    assert.deepEqual(bits(step.subarray(V)), bits(lastRow(m, [...a, 7])));
    assert.deepEqual([...cache.lengths], [71, 10]);
  }
});

test('generation with the KV cache equals generation by cache-free forwards: tokens and log-probs', () => {
  const m = model();
  const V = m.config.vocab;
  const p = prompt(12, 3);
  for (const [temperature, topP] of [
    [1, 1],
    [0.7, 0.9],
    [0, 1],
  ]) {
    const [g] = generate(m, [p], { maxTokens: 20, temperature, topP, rngs: [Rng.derive(1, 2)] });
    // Reference: every step re-runs the whole sequence without a cache and draws the same way
    // (inverse CDF over token ids with one uniform, as generate documents).
    const rng = Rng.derive(1, 2);
    const seq = [...p];
    const tokens: number[] = [];
    const logProbs: number[] = [];
    for (let s = 0; s < 20; s++) {
      const lp = tokenLogProbs(lastRow(m, seq), 0, V, { temperature, topP });
      let token = lp.indexOf(Math.max(...lp));
      if (temperature > 0) {
        let u = rng.float();
        token = -1;
        for (let i = 0; i < V && token < 0; i++) {
          u -= Math.exp(lp[i]);
          if (u < 0) token = i;
        }
      }
      tokens.push(token);
      logProbs.push(lp[token]);
      seq.push(token);
    }
    assert.deepEqual(g.tokens, tokens, `τ=${temperature} p=${topP}`);
    assert.deepEqual(g.logProbs, logProbs);
    assert.equal(g.finish, 'length');
  }
});

test('lockstep batched generation equals one prompt at a time (ragged prompts, own streams and stops)', () => {
  const m = model();
  const prompts = [prompt(5, 10), prompt(17, 11), prompt(1, 12), prompt(40, 13), prompt(8, 14)];
  const stop = [[3], [], [7, 8], [39], [0, 1, 2, 3, 4]];
  const opts = { maxTokens: 25, temperature: 0.9, topP: 0.95 };
  const batch = generate(m, prompts, { ...opts, stop, rngs: prompts.map((_, i) => Rng.derive(4, i)) });
  const alone: Generation[] = prompts.map(
    (p, i) => generate(m, [p], { ...opts, stop: stop[i], rngs: [Rng.derive(4, i)] })[0],
  );
  assert.deepEqual(batch, alone);
  // The stops did their work: some generations ended early, on their own stop tokens.
  const stopped = batch.filter((g) => g.finish === 'stop');
  assert.ok(stopped.length >= 1 && stopped.length < 5, `finishes ${batch.map((g) => g.finish)}`);
  batch.forEach((g, i) => {
    if (g.finish === 'stop') assert.ok(stop[i].includes(g.tokens.at(-1)!));
    else assert.equal(g.tokens.length, 25);
  });
});

test('scoreTokens of a generated continuation equals its sampling log-probs (sum included)', () => {
  const m = model();
  const p = prompt(9, 20);
  for (const [temperature, topP] of [
    [1, 1],
    [0.6, 0.8],
    [1.5, 1],
    [0, 1],
  ]) {
    const [g] = generate(m, [p], { maxTokens: 30, temperature, topP, rngs: [Rng.derive(9)] });
    const scored = scoreTokens(m, p, g.tokens, { temperature, topP });
    assert.deepEqual(scored, g.logProbs, `τ=${temperature} p=${topP}`);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    assert.equal(sum(scored), sum(g.logProbs));
  }
  // At τ = 1, p = 1 the score is the model's own log-softmax.
  const lp = scoreTokens(m, p, [4]);
  const row = lastRow(m, p);
  const max = Math.max(...row);
  const lse = max + Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
  assert.ok(Math.abs(lp[0] - (row[4] - lse)) < 1e-9);
  // A token outside the nucleus could not have been sampled: −∞.
  const nucleus = tokenLogProbs(row, 0, 40, { topP: 0.3 });
  const outside = nucleus.indexOf(Number.NEGATIVE_INFINITY);
  assert.ok(outside >= 0);
  assert.equal(scoreTokens(m, p, [outside], { topP: 0.3 })[0], Number.NEGATIVE_INFINITY);
});

test('the sampling distribution: normalised, temperature-scaled, the smallest nucleus reaching p', () => {
  const logits = Float32Array.of(2, 1, 0, 0, -1, 3);
  const total = (lp: Float64Array) => [...lp].reduce((a, x) => a + Math.exp(x), 0);
  const plain = tokenLogProbs(logits, 0, 6);
  assert.ok(Math.abs(total(plain) - 1) < 1e-12);
  const hot = tokenLogProbs(logits, 0, 6, { temperature: 2 });
  // log π_τ(i) − log π_τ(j) = (l_i − l_j)/τ
  assert.ok(Math.abs(hot[5] - hot[0] - 0.5) < 1e-12);
  // Softmax masses: 3 → 0.6170, 2 → 0.2270, 1 → 0.0835, … p = 0.8 needs {5, 0}: 0.8440 ≥ 0.8 (and
  // p = 0.85 would need token 1 too).
  const top = tokenLogProbs(logits, 0, 6, { topP: 0.8 });
  assert.ok(Number.isFinite(tokenLogProbs(logits, 0, 6, { topP: 0.85 })[1]));
  assert.deepEqual(
    [...top].map((x) => x > Number.NEGATIVE_INFINITY),
    [true, false, false, false, false, true],
  );
  assert.ok(Math.abs(total(top) - 1) < 1e-12);
  assert.ok(Math.abs(Math.exp(top[5]) - Math.exp(3) / (Math.exp(3) + Math.exp(2))) < 1e-12);
  // Ties go to the lower id: with p small only the first of two equal maxima stays.
  const tied = tokenLogProbs(Float32Array.of(1, 5, 5), 0, 3, { topP: 0.1 });
  assert.deepEqual([...tied], [Number.NEGATIVE_INFINITY, 0, Number.NEGATIVE_INFINITY]);
  const greedy = tokenLogProbs(Float32Array.of(1, 5, 5), 0, 3, { temperature: 0 });
  assert.deepEqual([...greedy], [Number.NEGATIVE_INFINITY, 0, Number.NEGATIVE_INFINITY]);
  // Frequencies: 20 000 draws of one step from the model match π within 4 standard errors.
  const m = model();
  const p = prompt(6, 30);
  const lp = tokenLogProbs(lastRow(m, p), 0, 40, { temperature: 0.8, topP: 0.9 });
  const counts = new Array(40).fill(0);
  const n = 20000;
  for (let c0 = 0; c0 < n; c0 += 2000) {
    const gens = generate(
      m,
      Array.from({ length: 2000 }, () => p),
      {
        maxTokens: 1,
        temperature: 0.8,
        topP: 0.9,
        rngs: Array.from({ length: 2000 }, (_, i) => Rng.derive(77, c0 + i)),
      },
    );
    for (const g of gens) counts[g.tokens[0]]++;
  }
  for (let i = 0; i < 40; i++) {
    const pi = Math.exp(lp[i]);
    const se = Math.sqrt((pi * (1 - pi)) / n) + 1e-12;
    assert.ok(Math.abs(counts[i] / n - pi) <= 4 * se, `token ${i}: ${counts[i] / n} vs ${pi}`);
  }
});

test('context and bad input: ContextOverflow for a prompt with no room, finish "context" at ctx, one-line refusals', () => {
  const m = model(2, 16);
  assert.throws(() => generate(m, [prompt(16, 1)], { maxTokens: 4, rngs: [Rng.derive(0)] }), ContextOverflow);
  const [g] = generate(m, [prompt(12, 1)], { maxTokens: 10, rngs: [Rng.derive(0)] });
  assert.equal(g.finish, 'context');
  assert.equal(g.tokens.length, 4); // positions 12..15
  assert.throws(() => scoreTokens(m, prompt(12, 1), prompt(5, 2)), ContextOverflow);
  const refuse = (f: () => unknown, re: RegExp) =>
    assert.throws(f, (e: unknown) => e instanceof InputError && re.test((e as Error).message));
  const base = { maxTokens: 2, rngs: [Rng.derive(0)] };
  refuse(() => generate(m, [[1]], { ...base, temperature: -1 }), /^temperature: got -1; a number ≥ 0/);
  refuse(() => generate(m, [[1]], { ...base, topP: 0 }), /^topP: got 0; a number in \(0, 1\]/);
  refuse(() => generate(m, [[1]], { ...base, maxTokens: 0 }), /^maxTokens: got 0/);
  refuse(() => generate(m, [[1, 40]], base), /^prompts\[0\]\[1\]: got 40; a token id in \[0, 39\]/);
  refuse(() => generate(m, [[1], [2]], base), /^rngs: got 1; one generator per prompt \(2\)/);
  refuse(
    () => generate(m, [[1], [2]], { ...base, rngs: [Rng.derive(0), Rng.derive(1)], stop: [[3]] }),
    /^stop: got 1; one stop list for all prompts, or one per prompt \(2\)/,
  );
});
