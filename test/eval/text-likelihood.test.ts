// Likelihood per token and per trajectory for text policies (docs/methods.md §5): the figures against
// a brute-force sum over policy.logProb and the token counts, against theory (a transformer whose
// embedding is zero gives every token probability 1/V, so −log π of an action is n·ln V), the token unit
// when two tokenizers differ, eval's own NLL and invalid rate of a text policy, and no new key for
// policies that write no text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Env, Policy, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { evaluate } from '../../src/eval/evaluate.ts';
import { invalidRate } from '../../src/eval/invalid.ts';
import { likelihood } from '../../src/eval/likelihood.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt } from '../../src/rollout/context.ts';
import { lakeTokenizerFile } from '../fixtures/lake-tokenizer.ts';

type AnyPolicy = Policy<unknown, unknown>;
const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const tasks = makeTasks(lake, 3, 7);
const spec = envs.spec(tasks[0]);
const tokFile = await lakeTokenizerFile(lake, 400);

/** A tiny transformer: the BPE tokenizer above, or bytes only (another tokenizer, other counts). */
const tiny = (seed: number, tokenizer: 'bpe' | 'bytes' = 'bpe', extra = '') =>
  makePolicy(
    `transformer:layers=1,d=16,heads=2,ctx=${tokenizer === 'bpe' ? 384 : 1024},seed=${seed}${tokenizer === 'bpe' ? `,tokenizer=${tokFile}` : ''}${extra}`,
    spec,
  ) as TransformerPolicy;

/** The same transformer with a zero embedding: every logit 0, every token 1/V (tied head). */
function uniform(p: TransformerPolicy): TransformerPolicy {
  p.model.embed.data.fill(0);
  return p;
}

const roll = (policy: AnyPolicy, runSeed: number, budget = 6) =>
  rollout({ tasks, samples: 2, budget, runSeed, policy, makeEnv: envs.make });

/** Brute force: every figure from policy.logProb and the token count of TOKEN_UNIT, summed in order. */
async function byHand(
  trajectories: readonly Trajectory[],
  a: TransformerPolicy,
  b: AnyPolicy,
): Promise<{ nllA: number; nllB: number; llr: number; trajA: number; tokens: number; succTokens: number }> {
  let [sumA, sumB, tokens, llrSum, succTokens, trajSum] = [0, 0, 0, 0, 0, 0];
  let succ = 0;
  for (const tr of trajectories) {
    const env = envs.make(tr.task) as Env<unknown, unknown>;
    let [la, lb, n] = [0, 0, 0];
    for (let t = 0; t < tr.turns.length; t++) {
      const turn = tr.turns[t];
      const ctx = contextAt(tr, t, env, { revealBudget: tr.revealBudget });
      la += a.logProb(ctx, turn.action);
      lb += (await b.logProb!(ctx, turn.action)) as number;
      n += turn.trace?.tokens?.length ?? a.actionTokens(env.spec, turn.action)!.length;
    }
    sumA -= la;
    sumB -= lb;
    tokens += n;
    trajSum -= la;
    if (tr.outcome.success) {
      succ++;
      llrSum += la - lb;
      succTokens += n;
    }
  }
  assert.ok(succ > 0, 'some trajectory succeeds');
  return {
    nllA: sumA / tokens,
    nllB: sumB / tokens,
    llr: llrSum / succTokens,
    trajA: trajSum / trajectories.length,
    tokens,
    succTokens,
  };
}

const close = (x: number | null | undefined, y: number, what: string) =>
  assert.ok(
    x !== null && x !== undefined && Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y)),
    `${what}: ${x} vs ${y}`,
  );

test('per token and per trajectory: brute force over logProb and actionTokens, and the invariants', async () => {
  const a = tiny(1);
  const b = tiny(2);
  // The oracle's trajectories as the two transformers' data (every action scores finitely under both).
  const oracle = makePolicy('oracle:eps=0.2', spec);
  const ta = await roll(oracle, 3, 12);
  const tb = await roll(oracle, 4, 12);
  // One of A's turns written in other tokens than its canonical rendering (a non-canonical spelling):
  // the count is the trace's.
  const turn = ta[0].turns[0];
  turn.trace = { tokens: [1, 2, 3] };
  const l = (await likelihood(envs, ta, tb, a, b))!;
  const ha = await byHand(ta, a, b);
  assert.equal(l.perToken!.tokens.a, ha.tokens);
  assert.equal(l.perToken!.successfulTokens.a, ha.succTokens);
  close(l.perToken!.nllAunderA, ha.nllA, 'NLL per token of A under A');
  close(l.perToken!.nllAunderB, ha.nllB, 'NLL per token of A under B');
  close(l.perToken!.llrSuccessA, ha.llr, 'LLR per token of A');
  close(l.perTrajectory!.nllAunderA, ha.trajA, 'NLL per trajectory of A under A');
  assert.deepEqual(l.perTrajectory!.trajectories, { a: ta.length, b: tb.length });
  const hb = await byHand(tb, a, b);
  close(l.perToken!.nllBunderB, hb.nllB, 'NLL per token of B under B');
  close(l.perToken!.llrSuccessB, hb.llr, 'LLR per token of B');
  // One denominator whoever scores: NLL under B − NLL under A is the LLR per token of the same actions,
  // and the per-action, per-trajectory and per-token figures are one sum divided three ways.
  const llrAll = (hb.nllB - hb.nllA) * hb.tokens;
  close(l.perToken!.nllBunderB! - l.perToken!.nllBunderA!, llrAll / hb.tokens, 'NLL difference');
  close(l.perTrajectory!.nllBunderA! * tb.length, l.nllBunderA! * l.actions.b, 'per trajectory = Σ');
  close(l.perToken!.nllBunderA! * l.perToken!.tokens.b!, l.nllBunderA! * l.actions.b, 'per token = Σ');
  for (const k of Object.values(l.perToken!.infinite)) assert.equal(k, 0);
});

test('theory: a uniform transformer scores ln V nats per token of its own tokenizer; two tokenizers', async () => {
  const bytes = uniform(tiny(1, 'bytes'));
  const bpe = uniform(tiny(1, 'bpe'));
  const lnA = Math.log(bytes.tokenizer.vocabSize);
  const lnB = Math.log(bpe.tokenizer.vocabSize);
  assert.notEqual(bytes.tokenizer.vocabSize, bpe.tokenizer.vocabSize);
  const oracle = makePolicy('oracle:eps=0.2', spec);
  const tr = await roll(oracle, 5, 8);
  const count = (p: TransformerPolicy) =>
    tr.reduce((s, t) => s + t.turns.reduce((n, u) => n + p.actionTokens(spec, u.action)!.length, 0), 0);
  const [nBytes, nBpe] = [count(bytes), count(bpe)];
  assert.ok(nBytes > nBpe, `bytes ${nBytes} tokens, bpe ${nBpe}`);
  // A writes the bytes: a turn without a trace is counted in A's tokens, whoever scores it.
  const l = (await likelihood(envs, tr, tr, bytes, bpe))!;
  assert.equal(l.perToken!.tokens.a, nBytes);
  close(l.perToken!.nllAunderA, lnA, 'bytes under bytes: ln V_A');
  close(l.perToken!.nllAunderB, (lnB * nBpe) / nBytes, 'bytes under bpe: ln V_B per bpe token');
  // LLR per token of the successful trajectories: (n_B ln V_B − n_A ln V_A) / n_A over them.
  const won = tr.filter((t) => t.outcome.success);
  assert.ok(won.length > 0);
  const wonA = won.reduce(
    (s, t) => s + t.turns.reduce((n, u) => n + bytes.actionTokens(spec, u.action)!.length, 0),
    0,
  );
  const wonB = won.reduce(
    (s, t) => s + t.turns.reduce((n, u) => n + bpe.actionTokens(spec, u.action)!.length, 0),
    0,
  );
  close(l.perToken!.llrSuccessA, (wonB * lnB - wonA * lnA) / wonA, 'LLR per token');
  // Swapped, the counts are the BPE tokenizer's.
  const s = (await likelihood(envs, tr, tr, bpe, bytes))!;
  assert.equal(s.perToken!.tokens.a, nBpe);
  close(s.perToken!.nllAunderA, lnB, 'bpe under bpe: ln V_B');
  close(s.perTrajectory!.nllAunderB, (lnA * nBytes) / tr.length, 'per trajectory: n_A ln V_A');
  // Trajectories written by the BPE policy (its tokens in the trace) are counted in its tokens even
  // when the bytes policy is A.
  const written = tr.map((t) => ({
    ...t,
    turns: t.turns.map((u) => ({ ...u, trace: { tokens: bpe.actionTokens(spec, u.action)! } })),
  }));
  const w = (await likelihood(envs, written, written, bytes, bpe))!;
  assert.equal(w.perToken!.tokens.a, nBpe);
  close(w.perToken!.nllAunderB, lnB, 'bpe-written actions under bpe');
});

test('policies that write no text: no per-token or per-trajectory key', async () => {
  const a = makePolicy('oracle:horizon=100', spec);
  const b = makePolicy('random', spec);
  const l = (await likelihood(envs, await roll(a, 1), await roll(b, 2), a, b))!;
  assert.deepEqual(Object.keys(l), [
    'nllAunderA',
    'nllAunderB',
    'llrSuccessA',
    'llrSuccessB',
    'nllBunderB',
    'nllBunderA',
    'actions',
    'successful',
    'infinite',
    'note',
  ]);
  // A discrete policy against a transformer: the oracle's actions are counted as the transformer
  // writes them, the figures appear.
  const t = uniform(tiny(1));
  const m = (await likelihood(envs, await roll(a, 1), await roll(b, 2), a, t))!;
  assert.ok(m.perToken !== undefined && m.perToken.tokens.a! > 0);
  close(m.perToken.nllAunderB, Math.log(t.tokenizer.vocabSize), 'the oracle’s actions under uniform');
  // A turn whose text was written without tokens (a server that gave none) has no count in the
  // transformer's tokens: that side's per-token figures are null, the other side's stay.
  const ta = await roll(a, 1);
  ta[0].turns[0].trace = { text: '<answer>Left</answer>' };
  const n = (await likelihood(envs, ta, await roll(b, 2), a, t))!;
  assert.equal(n.perToken!.tokens.a, null);
  assert.equal(n.perToken!.nllAunderB, null);
  assert.deepEqual(n.perToken!.tokens.b, m.perToken.tokens.b);
});

test('eval of a text policy: its invalid rate and its own NLL, from the trajectories it wrote', async () => {
  const p = uniform(tiny(1));
  const o = { envs, tasks, samples: 2, K: [1], T: [4], runSeed: 9, resamples: 20 };
  const r = await evaluate({ ...o, policy: p });
  // The same episodes again (same seeds), counted from the env's side: an output that did not parse
  // is an action FrozenLake refuses.
  const tr = await rollout({ tasks, samples: 2, budget: 4, runSeed: 9, policy: p, makeEnv: envs.make });
  const turns = tr.flatMap((t) => t.turns);
  const refused = turns.filter((u) => u.info.valid === false).length;
  assert.deepEqual(r.invalid, { count: refused, turns: turns.length });
  assert.equal(r.invalidRate, refused / turns.length);
  assert.equal(invalidRate(tr), r.invalidRate);
  assert.ok(r.invalidRate! > 0.9, `a uniform model writes garbage: ${r.invalidRate}`);
  // Uniform over V: every sampled token has log-prob −ln V, the NLL per token is ln V.
  const lnV = Math.log(p.tokenizer.vocabSize);
  const tokens = turns.reduce((n, u) => n + u.trace!.tokens!.length, 0);
  assert.equal(r.likelihood!.perToken.tokens, tokens);
  close(r.likelihood!.perToken.nll, lnV, 'own NLL per token');
  close(r.likelihood!.perTrajectory.nll, (lnV * tokens) / tr.length, 'own NLL per trajectory');
  assert.equal(r.likelihood!.perTrajectory.trajectories, tr.length);
  // A policy that writes no text: the report has no new key.
  const d = await evaluate({ ...o, policy: makePolicy('oracle', spec) as AnyPolicy });
  assert.deepEqual(Object.keys(d), ['K', 'T', 'mode', 'passKT', 'ci95', 'perTask']);
});
