// The prefix cache (src/nn/prefix-cache.ts) against generation and scoring without it: the same tokens
// and the same log-prob bits over a chain of turns whose prompts extend each other, a prompt whose window
// slid, the weights changed under it, and a capacity too small for what it is asked to keep.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import { PrefixCache, weightsFingerprint } from '../../src/nn/prefix-cache.ts';
import { type Generation, generate, scoreTokensTop } from '../../src/nn/sampling.ts';
import { Transformer, transformerConfig } from '../../src/nn/transformer.ts';

const f64bits = (xs: number[]) => xs.map((x) => new BigUint64Array(new Float64Array([x]).buffer)[0]);

function model(kvHeads = 2): Transformer {
  const c = transformerConfig({ layers: 2, d: 32, heads: 4, kvHeads, ffn: 48, vocab: 40, ctx: 160 });
  const m = new Transformer(c, Rng.derive(7));
  const rng = Rng.derive(8);
  for (const p of m.parameters())
    if (p.rank === 2) for (let i = 0; i < p.size; i++) p.data[i] = rng.normal() * 0.15;
  return m;
}

const tokens = (n: number, seed: number) => {
  const rng = Rng.derive(seed, 1);
  return Array.from({ length: n }, () => 1 + rng.int(38));
};

const gen = (m: Transformer, prompts: number[][], seed: number, pc?: PrefixCache): Generation[] =>
  generate(m, prompts, {
    maxTokens: 6,
    rngs: prompts.map((_, b) => Rng.derive(seed, b)),
    stop: [0],
    temperature: 1,
    ...(pc === undefined ? {} : { prefixCache: pc }),
  });

function sameGenerations(a: Generation[], b: Generation[], what: string): void {
  assert.equal(a.length, b.length);
  a.forEach((g, i) => {
    assert.deepEqual(g.tokens, b[i].tokens, `${what}: tokens of ${i}`);
    assert.deepEqual(f64bits(g.logProbs), f64bits(b[i].logProbs), `${what}: log-prob bits of ${i}`);
    assert.equal(g.finish, b[i].finish, `${what}: finish of ${i}`);
  });
}

test('turns whose prompts extend the last prompt and reply: the same tokens and log-prob bits, most positions reused', () => {
  for (const kvHeads of [4, 2, 1]) {
    const m = model(kvHeads);
    const pc = new PrefixCache(m);
    const system = tokens(30, 1);
    // Three episodes of four turns in lockstep: each prompt is the last prompt, its reply and a new
    // observation; episode 2's window slides at turn 3 (the system message and its latest turn only).
    let prompts = [0, 1, 2].map((e) => [...system, ...tokens(8, 10 + e)]);
    for (let turn = 0; turn < 4; turn++) {
      const plain = gen(m, prompts, 100 + turn);
      const cached = gen(m, prompts, 100 + turn, pc);
      sameGenerations(cached, plain, `kvHeads ${kvHeads}, turn ${turn}`);
      prompts = prompts.map((p, e) => {
        const obs = tokens(5, 1000 + 10 * turn + e);
        if (e === 2 && turn === 2) return [...system, ...obs];
        return [...p, ...plain[e].tokens, ...obs];
      });
    }
    // Every turn after the first reads at least the system message from the cache; most turns read the
    // whole previous sequence.
    assert.ok(pc.stats.reused > pc.stats.fed, `reused ${pc.stats.reused}, fed ${pc.stats.fed}`);
    assert.equal(pc.stats.lookups, 12);
  }
});

test('scoring through the cache gives the forward’s bits, and its sequences serve later generations', () => {
  const m = model();
  const pc = new PrefixCache(m);
  const p = tokens(50, 3);
  for (const action of [tokens(4, 4), tokens(7, 5), tokens(1, 6)]) {
    const plain = scoreTokensTop(m, p, action, { temperature: 0.7, top: 3 });
    const cached = scoreTokensTop(m, p, action, { temperature: 0.7, top: 3 }, pc);
    assert.deepEqual(f64bits(cached.logProbs), f64bits(plain.logProbs));
    assert.deepEqual(cached.top, plain.top);
  }
  // The prompt was read once; the next two scores fed their actions only (and the prompt's last token).
  assert.equal(pc.stats.fed, 50 + 3 + (1 + 6) + (1 + 0));
  const reusedBefore = pc.stats.reused;
  sameGenerations(gen(m, [p], 9, pc), gen(m, [p], 9), 'after scoring');
  assert.equal(pc.stats.reused - reusedBefore, 49);
});

test('changed weights: the cache drops what it held, and the replies follow the new weights', () => {
  const m = model();
  const pc = new PrefixCache(m);
  const p = [tokens(40, 7)];
  const before = gen(m, p, 1, pc);
  const f0 = weightsFingerprint(m);
  m.blocks[1].wv.data[5] += 0.5; // a value projection of the last layer: changes every later logit
  assert.notEqual(weightsFingerprint(m), f0);
  const after = gen(m, p, 1, pc);
  sameGenerations(after, gen(m, p, 1), 'new weights');
  assert.notDeepEqual(f64bits(after[0].logProbs), f64bits(before[0].logProbs));
  // The lookup after the change found nothing (the entries were dropped), so the whole prompt was fed.
  assert.equal(pc.stats.reused, 0);
});

test('capacity: what is kept never exceeds it, the least recently used goes first, and replies do not change', () => {
  const m = model();
  const perPosition = m.config.layers * 2 * m.config.kvHeads * m.headWidth * 4;
  const pc = new PrefixCache(m, 200 * perPosition); // 200 positions (above ctx, 160)
  assert.equal(pc.capacity, 200);
  const a = tokens(90, 11);
  const b = tokens(90, 12);
  const c = tokens(90, 13);
  for (const p of [a, b, c, a]) {
    sameGenerations(gen(m, [p], 3, pc), gen(m, [p], 3), 'under capacity');
    assert.ok(pc.size <= pc.capacity, `${pc.size} positions held`);
  }
  // a (stored first) was dropped for c; b was dropped for a's second time: nothing was reused.
  assert.equal(pc.stats.reused, 0);
  const reused = pc.stats.reused;
  gen(m, [c], 3, pc);
  assert.equal(pc.stats.reused - reused, 89);
});
