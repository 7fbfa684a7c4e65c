// The language study's verdicts are pure functions of stored measurements: each rule on both sides of
// its threshold, and undecided (with its reason) exactly when its premise fails — never held or not held
// by default.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Est, LanguageMeasurements } from '../../../src/studies/language/measure.ts';
import {
  acrossSeeds,
  LANGUAGE_THRESHOLDS,
  languageFindings,
} from '../../../src/studies/language/verdicts.ts';

const e = (value: number, lo: number, hi: number): Est => ({ value, ci95: [lo, hi] });
const ep = (value: number, lo: number, hi: number, pNonNeg = 0.5) => ({ ...e(value, lo, hi), pNonNeg });

/** A run where RL leads at T_train, and every premise holds; each test changes one thing. */
function measurements(): LanguageMeasurements {
  const T = [10, 20, 50, 100];
  const K = [1, 8];
  const grid = (x: number) => K.map(() => T.map(() => x));
  const diffGrid = () => K.map(() => T.map(() => ep(0.05, 0.01, 0.09, 0.01)));
  return {
    pass: {
      K,
      T,
      of: { base: grid(0.3), rl: grid(0.35), budgetmix: grid(0.34), baseTau: grid(0.32) },
      diff: { rlBase: diffGrid(), mixBase: diffGrid(), mixRl: diffGrid(), rlBaseTau: diffGrid() },
      shrink: e(-0.02, -0.04, -0.01),
      invalid: { base: 0, rl: 0, budgetmix: 0, baseTau: 0 },
      failures: { base: {} as never, rl: {} as never },
    },
    stepQuality: {
      signal: 'exact',
      normal: { ...e(0.45, 0.4, 0.49), states: 40, ties: 0.5 },
      error: { ...e(0.6, 0.55, 0.65), states: 40 },
      preError: { ...e(0.5, 0.45, 0.55), states: 40 },
      contrast: { ...e(0.1, 0.02, 0.18), pairs: 40 },
      errors: { attempts: 60, made: 40, noBadAction: 5, terminal: 15, belowThreshold: 0 },
    },
    recovery: {
      states: 40,
      continuations: 4,
      rl: { error: e(0.4, 0.3, 0.5), preError: e(0.45, 0.35, 0.55) },
      base: { error: e(0.3, 0.2, 0.4), preError: e(0.42, 0.32, 0.52) },
      did: e(0.07, 0.01, 0.13),
    },
    likelihood: {
      nllRatio: e(1.1, 1.0, 1.2),
      nllRlUnderBase: 0.6,
      nllBaseUnderBase: 0.55,
      nllRlUnderRl: 0.4,
      llrSuccessBase: e(2, 0.5, 3.5),
      llrSuccessRl: 8,
      successes: { base: 50, rl: 60 },
      perToken: null,
      perTrajectory: null,
    },
    curves: {
      iterations: 8,
      window: 2,
      signal: 'rollout/step_quality',
      reward: { first: 0.2, last: 0.3, ...e(0.1, 0.05, 0.15) },
      step: { first: 0.8, last: 0.75, ...e(-0.05, -0.08, -0.02) },
    },
  };
}

const verdict = (m: LanguageMeasurements, id: string) => {
  const f = languageFindings('frozenlake-text', m).find((x) => x.id === id);
  assert.ok(f, id);
  return f;
};

test('every finding holds on the measurements built to satisfy it', () => {
  for (const f of languageFindings('frozenlake-text', measurements())) {
    if (f.id === 'lead-reverses') continue; // the base is nowhere ahead here: checked below
    assert.equal(f.held, true, `${f.id}: ${f.undecided ?? f.note}`);
    assert.equal(f.undecided, null);
  }
  assert.equal(verdict(measurements(), 'lead-reverses').held, false);
});

test('rl-beats-base: an interval reaching 0 at one K is not held; no success at all is undecided', () => {
  const m = measurements();
  m.pass.diff.rlBase[0][3] = ep(0.02, -0.01, 0.05);
  assert.equal(verdict(m, 'rl-beats-base').held, false);
  const z = measurements();
  z.pass.of.rl = z.pass.of.rl.map((r) => r.map(() => 0));
  z.pass.of.base = z.pass.of.base.map((r) => r.map(() => 0));
  const f = verdict(z, 'rl-beats-base');
  assert.equal(f.held, null);
  assert.match(f.undecided ?? '', /neither RL nor the base succeeded within T=100/);
});

test('lead-shrinks and lead-reverses are undecided without a lead at (K=8, T_train), decided with one', () => {
  const m = measurements();
  m.pass.shrink = e(-0.01, -0.03, 0.01);
  assert.equal(verdict(m, 'lead-shrinks').held, false); // interval reaches 0
  m.pass.diff.rlBase[1][3] = ep(0.01, -0.02, 0.04);
  const f = verdict(m, 'lead-shrinks');
  assert.equal(f.held, null);
  assert.match(f.undecided ?? '', /RL has no lead at K=8, T=100/);
  assert.equal(verdict(m, 'lead-reverses').held, null);
  // The base ahead at T=10 with p small enough after Holm over three budgets (0.005 · 3 ≤ 0.025).
  const r = measurements();
  r.pass.diff.rlBase[1][0] = ep(-0.05, -0.09, -0.01, 0.005);
  assert.equal(verdict(r, 'lead-reverses').held, true);
  r.pass.diff.rlBase[1][0] = ep(-0.05, -0.09, -0.01, 0.01); // 0.01 · 3 = 0.03 > 0.025
  assert.equal(verdict(r, 'lead-reverses').held, false);
});

test('normal-states: below ½ held, reaching ½ not held; too few states or all ties undecided', () => {
  const m = measurements();
  m.stepQuality.normal = { ...e(0.48, 0.45, 0.51), states: 40, ties: 0.5 };
  assert.equal(verdict(m, 'normal-states').held, false);
  m.stepQuality.normal = { ...e(0.45, 0.4, 0.49), states: LANGUAGE_THRESHOLDS.minStates - 1, ties: 0.5 };
  assert.equal(verdict(m, 'normal-states').held, null);
  m.stepQuality.normal = { ...e(0.45, 0.4, 0.49), states: 40, ties: 0.99 };
  assert.match(verdict(m, 'normal-states').undecided ?? '', /99\.0% of the pairs tie/);
});

test('error-contrast and recovery-did: undecided without error states, decided on their intervals', () => {
  const m = measurements();
  m.stepQuality.contrast = { ...e(0.05, -0.01, 0.11), pairs: 40 };
  m.recovery!.did = e(0.05, -0.01, 0.11);
  assert.equal(verdict(m, 'error-contrast').held, false);
  assert.equal(verdict(m, 'recovery-did').held, false);
  m.stepQuality.errors.made = 0;
  m.recovery = null;
  assert.match(verdict(m, 'error-contrast').undecided ?? '', /no error state/);
  assert.match(verdict(m, 'recovery-did').undecided ?? '', /no error state/);
  // Δ exactly 0 with a [0, 0] interval (every pair tied at both states): undecided; any spread decides.
  const t = measurements();
  t.stepQuality.contrast = { ...e(0, 0, 0), pairs: 16 };
  assert.equal(verdict(t, 'error-contrast').held, null);
  assert.match(verdict(t, 'error-contrast').undecided ?? '', /interval of \[0, 0\] over 16 pairs/);
  t.stepQuality.contrast = { ...e(0, -0.02, 0.01), pairs: 16 };
  assert.equal(verdict(t, 'error-contrast').held, false);
  t.stepQuality.contrast = { ...e(0.03, 0.01, 0.05), pairs: 16 };
  assert.equal(verdict(t, 'error-contrast').held, true);
  const z = measurements();
  const zero = e(0, 0, 0);
  z.recovery = { ...z.recovery!, rl: { error: zero, preError: zero }, base: { error: zero, preError: zero } };
  assert.match(verdict(z, 'recovery-did').undecided ?? '', /no continuation succeeded/);
});

test('nll-plausible and llr-sign on both sides of their thresholds', () => {
  const m = measurements();
  m.likelihood.nllRatio = e(1.2, 1.1, 1.3); // reaches 1.25
  assert.equal(verdict(m, 'nll-plausible').held, false);
  m.likelihood.llrSuccessBase = e(0.5, -0.2, 1.2);
  assert.equal(verdict(m, 'llr-sign').held, false);
  m.likelihood.successes.base = LANGUAGE_THRESHOLDS.minSuccesses - 1;
  assert.equal(verdict(m, 'llr-sign').held, null);
  // RL that never moved (its actions' NLL the same under both, to the bit): undecided, whatever the ratio.
  const still = measurements();
  still.likelihood.nllRatio = e(1, 1, 1);
  still.likelihood.nllRlUnderBase = 0.55;
  still.likelihood.nllRlUnderRl = 0.55;
  for (const id of ['nll-plausible', 'llr-sign'] as const) {
    assert.equal(verdict(still, id).held, null, id);
    assert.match(verdict(still, id).undecided ?? '', /RL never moved from the base/, id);
  }
  still.likelihood.nllRlUnderRl = 0.55 - 1e-12;
  assert.equal(verdict(still, 'nll-plausible').held, true);
});

test('training-curves: reward up and step down held; step up not held; no reward at all undecided', () => {
  const m = measurements();
  m.curves.step = { first: 0.7, last: 0.8, ...e(0.1, 0.05, 0.15) };
  assert.equal(verdict(m, 'training-curves').held, false);
  m.curves.reward = { first: 0, last: 0, ...e(0, 0, 0) };
  assert.match(verdict(m, 'training-curves').undecided ?? '', /RL never succeeded/);
  m.curves.signal = null;
  assert.match(verdict(m, 'training-curves').undecided ?? '', /no per-turn quality signal/);
});

test('budgetmix-robust: behind the base at one T is not held; nothing succeeds at the tightest T undecided', () => {
  const m = measurements();
  m.pass.diff.mixBase[0][2] = ep(-0.05, -0.09, -0.01);
  assert.equal(verdict(m, 'budgetmix-robust').held, false);
  const z = measurements();
  z.pass.of.budgetmix[0][0] = 0;
  z.pass.of.rl[0][0] = 0;
  assert.equal(verdict(z, 'budgetmix-robust').held, null);
});

test('across seeds: held in more than half of the decided seeds; undecided seeds carry their reason', () => {
  const held = languageFindings('frozenlake-text', measurements());
  const notHeld = (() => {
    const m = measurements();
    m.likelihood.llrSuccessBase = e(-1, -2, -0.5);
    return languageFindings('frozenlake-text', m);
  })();
  const undecided = (() => {
    const m = measurements();
    m.likelihood.successes.base = 0;
    return languageFindings('frozenlake-text', m);
  })();
  const llr = (xs: ReturnType<typeof acrossSeeds>) => xs.find((x) => x.id === 'llr-sign')!;
  const a = llr(acrossSeeds('frozenlake-text', [held, notHeld, undecided]));
  assert.deepEqual(a.perSeed, [true, false, null]);
  assert.equal(a.held, false); // 1 of 2 decided: not more than half
  assert.equal(a.heldFraction, 0.5);
  assert.equal(a.reasons.length, 1);
  assert.equal(llr(acrossSeeds('frozenlake-text', [held, held, notHeld])).held, true);
  assert.equal(llr(acrossSeeds('frozenlake-text', [undecided])).held, null);
});
