// The audit's statistics against values computed by hand: agreement, Cohen's κ and the confusion
// matrix, Spearman's ρ with ties, the least-squares slope, position bias and the preference on mixed
// pairs — and the whole audit of a scored batch, by criterion and for the combined score.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  agreement,
  audit,
  cohenKappa,
  confusion,
  pairwiseAudit,
  ranks,
  slope,
  spearman,
} from '../../src/rewards/audit.ts';
import { parseRubric } from '../../src/rewards/rubric.ts';
import type { RubricRun } from '../../src/rewards/score.ts';
import { trajectory } from './fixtures.ts';

const close = (a: number | null, b: number, eps = 1e-12) =>
  assert.ok(a !== null && Math.abs(a - b) < eps, `${a} ≠ ${b}`);

test("Cohen's κ, agreement and the confusion matrix", () => {
  // tp 5, fn 2, fp 4, tn 53 (n = 64): p_o = 58/64; P(pass) = 9/64, P(success) = 7/64,
  // p_e = (9·7 + 55·57)/64² = 3198/4096; κ = (58/64 − 3198/4096)/(1 − 3198/4096) = 514/898.
  const items = [
    ...Array(5).fill({ truth: true, verdict: true }),
    ...Array(2).fill({ truth: true, verdict: false }),
    ...Array(4).fill({ truth: false, verdict: true }),
    ...Array(53).fill({ truth: false, verdict: false }),
  ];
  const c = confusion(items);
  assert.deepEqual(c, { tp: 5, fn: 2, fp: 4, tn: 53 });
  close(agreement(c), 58 / 64);
  close(cohenKappa(c), 514 / 898);
  // Perfect agreement: κ = 1; agreement no better than chance: κ = 0; systematic disagreement: −1.
  close(cohenKappa({ tp: 3, fn: 0, fp: 0, tn: 5 }), 1);
  close(cohenKappa({ tp: 1, fn: 1, fp: 1, tn: 1 }), 0);
  close(cohenKappa({ tp: 0, fn: 2, fp: 2, tn: 0 }), -1);
  // One class only on both sides: p_e = 1, κ undefined.
  assert.equal(cohenKappa({ tp: 4, fn: 0, fp: 0, tn: 0 }), null);
  assert.equal(agreement({ tp: 0, fn: 0, fp: 0, tn: 0 }), null);
});

test('length bias: ranks with ties, Spearman ρ and the least-squares slope', () => {
  assert.deepEqual(ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1]);
  // turns 2, 4, 4, 8 → ranks 1, 2.5, 2.5, 4; scores 0.9, 0.5, 0.7, 0.1 → ranks 4, 2, 3, 1.
  // d = rank differences about the mean 2.5: x −1.5, 0, 0, 1.5; y 1.5, −0.5, 0.5, −1.5
  // Σxy = −2.25 − 2.25 = −4.5; Σx² = 4.5; Σy² = 5; ρ = −4.5/√22.5.
  close(spearman([2, 4, 4, 8], [0.9, 0.5, 0.7, 0.1]), -4.5 / Math.sqrt(22.5));
  // Slope: mean turns 4.5, mean score 0.55; Σ(x−x̄)(y−ȳ) = (−2.5)(0.35) + (−0.5)(−0.05) + (−0.5)(0.15)
  // + (3.5)(−0.45) = −2.5; Σ(x−x̄)² = 6.25 + 0.25 + 0.25 + 12.25 = 19; slope = −2.5/19.
  close(slope([2, 4, 4, 8], [0.9, 0.5, 0.7, 0.1]), -2.5 / 19);
  assert.equal(slope([3, 3], [0, 1]), null);
  assert.equal(spearman([1, 2, 3], [5, 5, 5]), null);
  assert.equal(slope([1], [1]), null);
});

test('pairwise audit: position bias, flipped pairs, the preference for the success on mixed pairs', () => {
  const batch = [trajectory('a', [1], { success: true }), trajectory('b', [1]), trajectory('c', [1, 1])];
  const p = {
    pairs: [
      { i: 0, j: 1, first: 1, second: 1 }, // flipped: ½ for a
      { i: 0, j: 2, first: 1, second: 0 }, // a both times
      { i: 1, j: 2, first: 1, second: 1 }, // flipped, both failures: not mixed
    ],
    answers: 6,
    firstWins: 5,
    flipped: 2,
  };
  const a = pairwiseAudit(p, batch);
  close(a.positionBias, 5 / 6 - 0.5);
  assert.equal(a.mixedPairs, 2);
  close(a.mixedAccuracy, (0.5 + 1) / 2);
  assert.equal(a.flipped, 2);
});

test('the audit of a scored batch: each judge criterion and the combined score against the verifier', () => {
  const rubric = parseRubric(
    {
      criteria: [
        { kind: 'success', weight: 0.5 },
        { id: 'j', kind: 'judge', judge: 'openai:http://h/v1#m', weight: 0.5 },
      ],
    },
    'a.json',
  );
  // Five trajectories: success with 2 and 6 turns, failures with 3, 5 and 9; the judge's scores
  // 0.8, 0.4, 0.6, error, 0.2 (threshold ½ → pass, fail, pass, —, fail).
  const batch = [
    trajectory('s2', [1, 1], { success: true }),
    trajectory('s6', new Array(6).fill(1), { success: true }),
    trajectory('f3', [1, 1, 1]),
    trajectory('f5', new Array(5).fill(1)),
    trajectory('f9', new Array(9).fill(1)),
  ];
  const judge = [0.8, 0.4, 0.6, null, 0.2];
  const run: RubricRun = {
    results: batch.map((t, i) => {
      const s = judge[i];
      const success = t.outcome.success ? 1 : 0;
      return {
        score: s === null ? null : 0.5 * success + 0.5 * s,
        criteria: [
          { id: 'success', kind: 'success', weight: 0.5, score: success },
          { id: 'j', kind: 'judge', weight: 0.5, score: s, ...(s === null ? { error: 'unparseable' } : {}) },
        ],
        gates: [],
        judgeErrors: s === null ? 1 : 0,
        calls: [],
      };
    }),
    pairs: new Map(),
  };
  const r = audit(rubric, batch, run);
  const [j, total] = r.audits;
  assert.equal(j.criterion, 'j');
  assert.equal(j.n, 4);
  assert.equal(j.judgeErrors, 1);
  assert.deepEqual(j.confusion, { tp: 1, fn: 1, fp: 1, tn: 1 });
  close(j.agreement, 0.5);
  close(j.kappa, 0);
  // Within the successes (2 → 0.8, 6 → 0.4): slope −0.1 a turn, ρ −1; failures (3 → 0.6, 9 → 0.2).
  close(j.lengthBias.success.slope, -0.1);
  close(j.lengthBias.success.spearman, -1);
  close(j.lengthBias.failure.slope, -0.4 / 6);
  assert.equal(j.lengthBias.failure.n, 2);
  // Combined: 0.9, 0.7, 0.3, —, 0.1 → pass, pass, fail, fail: all agree, κ = 1.
  assert.equal(total.criterion, 'rubric');
  assert.deepEqual(total.confusion, { tp: 2, fn: 0, fp: 0, tn: 2 });
  close(total.kappa, 1);
  assert.equal(total.judgeErrors, 1);
  close(r.envSuccess, 2 / 5);
  // A higher threshold moves the verdicts: at 0.7 the judge passes only s2.
  const strict = audit(rubric, batch, run, 0.7).audits[0];
  assert.deepEqual(strict.confusion, { tp: 1, fn: 1, fp: 0, tn: 2 });
});
