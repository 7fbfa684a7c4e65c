// The budget study's verdicts (issue 11): each one a pure function of stored quantities, flipped by
// moving the quantity it tests across its threshold; the paired contrast and Holm's correction on
// cases worked by hand; `turnwise study verdicts --in` (the real CLI) agrees with the summary and
// re-decides an edited one.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Task } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { type State, turnsLeft } from '../../src/eval/states.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { budgetFindings, THRESHOLDS } from '../../src/studies/budget/findings.ts';
import { PAPER_K, sliceK } from '../../src/studies/budget/measure/exact-pass.ts';
import { pairedContrast, preErrorState } from '../../src/studies/budget/measure/states.ts';
import { TemperedPolicy } from '../../src/studies/budget/measure/temperature.ts';
import { MemoPolicy } from '../../src/studies/budget/memo.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { holm } from '../../src/studies/budget/stats.ts';
import { meanAcross, studyFindings, studySummary } from '../../src/studies/budget/study.ts';
import type { FindingId, StudySummary, Summary } from '../../src/studies/budget/summary.ts';
import { FINDING_IDS } from '../../src/studies/budget/summary.ts';
import { frozenTrainer } from '../../src/studies/budget/trainer.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import { TINY } from './fixtures.ts';

// A real summary to edit (the null control: RL = base, so every RL-dependent verdict starts not held).
const base: Summary = (await runBudgetStudy(TINY, { trainer: frozenTrainer })).summary;

function edited(edit: (s: Summary) => void): Summary {
  const s = structuredClone(base);
  edit(s);
  return s;
}
const verdictOf = (s: Summary, id: FindingId) => budgetFindings(s).find((f) => f.id === id)!;
const held = (s: Summary, id: FindingId) => verdictOf(s, id).held;

test('the findings: the ten ids in order, one world, heldFraction from held, ours a stored estimate', () => {
  const f = budgetFindings(base);
  assert.deepEqual(
    f.map((x) => x.id),
    [...FINDING_IDS],
  );
  for (const x of f) {
    assert.equal(x.world, 'slippery');
    assert.equal(x.heldFraction, x.held === null ? null : x.held ? 1 : 0);
    assert.ok(x.test.length > 40 && !x.test.includes('\n'), x.id);
  }
  // ours is the stored quantity itself, not a recomputation of it.
  const byId = Object.fromEntries(f.map((x) => [x.id, x.ours]));
  assert.deepEqual(byId['error-contrast'], base.stepQuality.contrast.delta);
  assert.deepEqual(byId['recovery-did'], base.recovery.did.did);
  assert.deepEqual(byId['nll-plausible'], base.likelihood.nllRatio);
  assert.deepEqual(byId['llr-sign'], {
    value: base.likelihood.llrSuccessBase.value,
    ci95: base.likelihood.llrSuccessBase.ci95,
  });
  assert.deepEqual(byId['lead-shrinks'], base.exactPassKT.slice.shrink);
  assert.deepEqual(budgetFindings(base), base.findings, 'the summary holds exactly these findings');
});

test('rl-beats-base flips with the lowest interval at the training budget', () => {
  const j = TINY.eval.T.indexOf(TINY.rl.budget);
  const ahead = (s: Summary) => {
    for (const row of s.exactPassKT.diff.ci95) row[j] = [0.01, 0.03];
  };
  assert.equal(held(edited(ahead), 'rl-beats-base'), true);
  const oneBehind = edited((s) => {
    ahead(s);
    s.exactPassKT.diff.ci95[1][j] = [-0.001, 0.03];
    s.exactPassKT.diff.passKT[1][j] = 0.0145;
  });
  assert.equal(held(oneBehind, 'rl-beats-base'), false);
  assert.deepEqual(verdictOf(oneBehind, 'rl-beats-base').ours, { value: 0.0145, ci95: [-0.001, 0.03] });
});

test('lead-shrinks flips with the shrink interval at K*, and needs a lead at the training budget', () => {
  const at = (s: Summary, T: number) => s.exactPassKT.slice.byT.find((x) => x.T === T)!;
  const setup = (shrinkHi: number, leadLo: number) =>
    edited((s) => {
      at(s, TINY.rl.budget).lead.ci95 = [leadLo, 0.05];
      s.exactPassKT.slice.shrink = { value: -0.03, ci95: [-0.05, shrinkHi] };
    });
  assert.equal(held(setup(-0.001, 0.01), 'lead-shrinks'), true);
  assert.equal(held(setup(0.001, 0.01), 'lead-shrinks'), false);
  assert.equal(held(setup(-0.001, -0.01), 'lead-shrinks'), false, 'no lead to shrink');
  // K* is the paper's K = 8 when the grid has it, else the largest K ≤ 8 (TINY's K tops at 4).
  assert.equal(base.exactPassKT.slice.K, 4);
  assert.equal(sliceK([1, 2, 4, 8, 16, 32]), PAPER_K);
  assert.equal(sliceK([1, 3, 5, 16]), 5);
  assert.equal(sliceK([16, 32]), 16);
});

test("Holm's step-down adjustment against hand-computed values", () => {
  // Sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 = 0.03, 0.06, 0.04 → running max 0.03, 0.06, 0.06.
  assert.deepEqual(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06]);
  // NaN does not count towards m = 3: 0.01·3, 0.02·2, 0.5·1.
  const h = holm([0.5, 0.01, Number.NaN, 0.02]);
  assert.ok(Number.isNaN(h[2]));
  assert.deepEqual([h[0], h[1], h[3]], [0.5, 0.03, 0.04]);
  assert.deepEqual(holm([0.6, 0.9]), [1, 1], 'capped at 1');
});

test('lead-reverses: Holm over the tighter budgets decides — a raw p under α that does not survive is not held', () => {
  // TINY: T = 10, 20, 50 and T_train = 50, so two tighter budgets are searched (m = 2).
  const setup = (p10: number, p20: number) =>
    edited((s) => {
      for (const x of s.exactPassKT.slice.byT) {
        if (x.T === TINY.rl.budget) x.lead = { value: 0.03, ci95: [0.01, 0.05], pNonNeg: 1 };
        if (x.T === 10) x.lead = { value: -0.02, ci95: [-0.04, -0.001], pNonNeg: p10 };
        if (x.T === 20) x.lead = { value: 0.01, ci95: [-0.01, 0.03], pNonNeg: p20 };
      }
    });
  assert.equal(held(setup(0.012, 0.5), 'lead-reverses'), true, 'adjusted 0.024 ≤ 0.025');
  const notSurviving = setup(0.02, 0.5);
  assert.equal(held(notSurviving, 'lead-reverses'), false, 'raw 0.02 ≤ 0.025 but adjusted 0.04');
  assert.match(verdictOf(notSurviving, 'lead-reverses').note, /T=10: 0\.040/);
  assert.deepEqual(verdictOf(notSurviving, 'lead-reverses').ours, { value: -0.02, ci95: [-0.04, -0.001] });
  assert.equal(THRESHOLDS.holmAlpha, 0.025);
});

test('normal-states, error-contrast, recovery-did, llr-sign flip with their intervals', () => {
  const flips: [FindingId, (s: Summary, c: [number, number]) => void, [number, number], [number, number]][] =
    [
      [
        'normal-states',
        (s, c) => {
          s.stepQuality.normal.ci95 = c;
        },
        [0.4, 0.49],
        [0.45, 0.51],
      ],
      [
        'error-contrast',
        (s, c) => {
          s.stepQuality.contrast.delta.ci95 = c;
        },
        [0.01, 0.05],
        [-0.01, 0.05],
      ],
      [
        'recovery-did',
        (s, c) => {
          s.recovery.did.did.ci95 = c;
        },
        [0.001, 0.02],
        [-0.001, 0.02],
      ],
      [
        'llr-sign',
        (s, c) => {
          s.likelihood.llrSuccessBase.ci95 = c;
        },
        [0.1, 0.5],
        [-0.1, 0.5],
      ],
    ];
  for (const [id, set, yes, no] of flips) {
    assert.equal(
      held(
        edited((s) => set(s, yes)),
        id,
      ),
      true,
      `${id} ${yes}`,
    );
    assert.equal(
      held(
        edited((s) => set(s, no)),
        id,
      ),
      false,
      `${id} ${no}`,
    );
  }
  // win(error) > 0.5 is shown beside the contrast, and does not decide it.
  const winOnly = edited((s) => {
    s.stepQuality.contrast.winError = { value: 0.6, ci95: [0.55, 0.65] };
    s.stepQuality.contrast.delta.ci95 = [-0.02, 0.03];
  });
  assert.equal(held(winOnly, 'error-contrast'), false);
  assert.match(
    verdictOf(winOnly, 'error-contrast').note,
    /win\(error\) 0\.600 \[0\.550, 0\.650\] \(above 0\.5\)/,
  );
});

test('nll-plausible flips at the stated ratio threshold', () => {
  const set = (hi: number) =>
    edited((s) => {
      s.likelihood.nllRatio = { value: 1.15, ci95: [1.05, hi] };
    });
  assert.equal(held(set(THRESHOLDS.nllRatio - 0.01), 'nll-plausible'), true);
  assert.equal(held(set(THRESHOLDS.nllRatio + 0.01), 'nll-plausible'), false);
  assert.equal(THRESHOLDS.nllRatio, 1.25);
});

test('training-curves needs the trajectory reward to rise and the regret of actions taken to rise', () => {
  const set = (traj: [number, number], regret: [number, number]) =>
    edited((s) => {
      const tr = s.curves.trend.rl;
      tr.trajectoryReward = { ...tr.trajectoryReward, value: 0.05, ci95: traj };
      tr.stepRegret = { ...tr.stepRegret, value: 0.002, ci95: regret };
    });
  assert.equal(held(set([0.01, 0.1], [0.001, 0.003]), 'training-curves'), true);
  assert.equal(held(set([0.01, 0.1], [-0.001, 0.003]), 'training-curves'), false);
  assert.equal(held(set([-0.01, 0.1], [0.001, 0.003]), 'training-curves'), false);
});

test('budgetmix-robust: above RL at tight T, never below the base, within δ of RL at the training budget', () => {
  const j = TINY.eval.T.indexOf(TINY.rl.budget);
  const set = (tight: [number, number], train: [number, number], vsBase: [number, number]) =>
    edited((s) => {
      s.exactPassKT.budgetmixVsRl.ci95[0][0] = tight;
      s.exactPassKT.budgetmixVsRl.ci95[0][j] = train;
      s.exactPassKT.budgetmixDiff.ci95[0] = s.exactPassKT.budgetmixDiff.ci95[0].map(() => vsBase);
    });
  const d = THRESHOLDS.budgetmixDelta;
  assert.equal(held(set([0.001, 0.02], [-d + 0.001, 0.01], [0, 0.1]), 'budgetmix-robust'), true);
  assert.equal(held(set([-0.001, 0.02], [-d + 0.001, 0.01], [0, 0.1]), 'budgetmix-robust'), false);
  assert.equal(held(set([0.001, 0.02], [-d - 0.001, 0.01], [0, 0.1]), 'budgetmix-robust'), false);
  assert.equal(held(set([0.001, 0.02], [-d + 0.001, 0.01], [-0.02, -0.001]), 'budgetmix-robust'), false);
});

test('pairedContrast on a constructed case: Δ and the win rates by hand, the interval resamples maps', () => {
  const [A, B] = [{ seed: 1 }, { seed: 2 }] as unknown as Task[];
  const states = [A, A, A, B, B].map((task) => ({ task }));
  // Map A: x − y = 0.2, 0.1, 0.3; map B: −0.2, and one pair without a figure (left out of both sides).
  const x = Float64Array.from([0.7, 0.6, 0.8, 0.4, Number.NaN]);
  const y = Float64Array.from([0.5, 0.5, 0.5, 0.6, 0.5]);
  const c = pairedContrast(x, y, states, { resamples: 400, seed: 0 });
  assert.equal(c.pairs, 4);
  assert.equal(c.maps, 2);
  assert.ok(Math.abs(c.diff! - 0.1) < 1e-12, `Δ = 0.4 / 4, got ${c.diff}`);
  assert.ok(Math.abs(c.value[0] - 0.625) < 1e-12);
  assert.ok(Math.abs(c.value[1] - 0.525) < 1e-12);
  // Two maps: the resamples are {A,A} (Δ = 0.6/3 = 0.2), {A,B} (0.1) and {B,B} (−0.2), the extremes with
  // probability ¼ each, so the 95% interval is exactly [−0.2, 0.2]: the contrast is not shown.
  assert.ok(Math.abs(c.diffCi![0] + 0.2) < 1e-12 && Math.abs(c.diffCi![1] - 0.2) < 1e-12, `${c.diffCi}`);
});

test('preErrorState undoes the forced turn: same map and budget, one more turn left', () => {
  const turn = (t: number, forced?: boolean) => ({
    t,
    observation: 10 + t,
    action: 1,
    reward: 0,
    logp: 0,
    info: {},
    ...(forced ? { forced: true } : {}),
  });
  const task = { seed: 5 } as unknown as Task;
  const error: State = { task, observation: 99, history: [turn(0), turn(1, true)], budget: 20, from: 1 };
  const pre = preErrorState(error);
  assert.equal(pre.observation, 11, 'the observation the bad action was taken at');
  assert.deepEqual(pre.history, [turn(0)]);
  assert.equal(turnsLeft(pre), turnsLeft(error) + 1);
  assert.equal(pre.task, task);
  assert.throws(() => preErrorState({ ...error, history: [turn(0)] }), /forced turn/);
});

/** Runs as a whole study of one world (summary.json). */
const studyOf = (runs: Summary[]): StudySummary =>
  studySummary(
    { config: base.config, seeds: runs.map((r) => r.config.seed), worlds: ['slippery'] },
    runs,
    1,
    1,
  );
/** A copy of the base run at another seed with the base successes' LLR set (llr-sign's quantity). */
const runWithLlr = (seed: number, value: number, ci95: [number, number]) =>
  edited((s) => {
    s.config.seed = seed;
    s.likelihood.llrSuccessBase = { ...s.likelihood.llrSuccessBase, value, ci95 };
  });

test('across seeds: heldFraction is the share of seeds held, held the majority, ours the mean with a t-interval', () => {
  const runs = [
    runWithLlr(3, 0.7, [0.5, 0.9]),
    runWithLlr(4, 0.5, [0.1, 0.9]),
    runWithLlr(5, -0.3, [-0.6, 0.1]),
  ];
  const llr = (st: StudySummary) => st.findings.find((f) => f.id === 'llr-sign')!;
  const st = studyOf(runs);
  const x = llr(st);
  assert.deepEqual(x.perSeed, [true, true, false]);
  assert.deepEqual(x.seeds, [3, 4, 5]);
  assert.equal(x.heldFraction, 2 / 3);
  assert.equal(x.held, true);
  // mean 0.3, sd √0.28, t(0.975, 2) = 4.303: half-width 4.303 · √0.28 / √3 = 1.314588…
  assert.ok(Math.abs(x.ours.value! - 0.3) < 1e-12);
  assert.ok(Math.abs(x.ours.ci95[0]! - (0.3 - 1.314588)) < 1e-5, String(x.ours.ci95[0]));
  assert.ok(Math.abs(x.ours.ci95[1]! - (0.3 + 1.314588)) < 1e-5, String(x.ours.ci95[1]));
  assert.match(x.test, /more than half of the seeds/);
  // One more seed below its threshold: 1 of 3, not held.
  const y = llr(studyOf([runs[0], runWithLlr(4, -0.2, [-0.5, 0.1]), runs[2]]));
  assert.equal(y.heldFraction, 1 / 3);
  assert.equal(y.held, false);
  // A tie (1 of 2) is not a majority.
  assert.equal(llr(studyOf([runs[0], runs[2]])).held, false);
  // The study's findings are recomputed from the runs' quantities, per world, the ten ids each.
  assert.deepEqual(studyFindings(st), st.findings);
  assert.deepEqual(
    st.findings.map((f) => f.id),
    [...FINDING_IDS],
  );
  assert.deepEqual(meanAcross([1, null, 3]), {
    value: 2,
    ci95: [2 - 12.706, 2 + 12.706],
    perSeed: [1, null, 3],
  });
});

test('study verdicts --in (the real CLI): the summary’s findings; an edited quantity flips its verdict; bad input is one line, exit 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-verdicts-'));
  const file = join(dir, 'summary.json');
  const study = studyOf([base]);
  writeFileSync(file, `${JSON.stringify(study, null, 2)}\n`);
  const flippedFile = join(dir, 'flipped.json');
  const flipped = structuredClone(study);
  flipped.runs[0].likelihood.llrSuccessBase = {
    ...flipped.runs[0].likelihood.llrSuccessBase,
    value: 0.7,
    ci95: [0.5, 0.9],
  };
  writeFileSync(flippedFile, JSON.stringify(flipped));
  const [asJson, text, after, missing, broken] = await Promise.all([
    turnwise(['study', 'verdicts', '--in', file, '--json']),
    turnwise(['study', 'verdicts', '--in', file]),
    turnwise(['study', 'verdicts', '--in', flippedFile]),
    turnwise(['study', 'verdicts', '--in', join(dir, 'nowhere.json')]),
    inProcess(['study', 'verdicts', '--in', join(dir, 'bad.json')]).then(async () => {
      writeFileSync(join(dir, 'bad.json'), '{"study": "budget", "version": 3}');
      return inProcess(['study', 'verdicts', '--in', join(dir, 'bad.json')]);
    }),
  ]);
  assert.equal(asJson.code, 0, asJson.stderr);
  assert.deepEqual(JSON.parse(asJson.stdout), study.findings);
  for (const f of JSON.parse(asJson.stdout))
    for (const k of ['id', 'world', 'paper', 'ours', 'held', 'heldFraction', 'test']) assert.ok(k in f, k);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^ {2}not held {2}llr-sign /m);
  assert.equal(study.findings.find((f) => f.id === 'llr-sign')!.held, false);
  assert.equal(after.code, 0, after.stderr);
  assert.match(after.stdout, /^ {2}held {6}llr-sign .* ours 0\.700 \[0\.500, 0\.900\]/m);
  // The other nine verdicts are unchanged by the edit.
  const count = (out: string) => Number(/: (\d+) of 10 held here/.exec(out)![1]);
  assert.equal(count(after.stdout), count(text.stdout) + 1);
  for (const r of [missing, broken]) {
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(r.stdout, '');
  }
  assert.match(missing.stderr, /--in: got ".*nowhere\.json"; no such file/);
  assert.match(broken.stderr, /bad\.json/);
});

test('temperature control (null control): τ = 1 is the base; the best τ is best at T_train; RL − base(best τ) by hand', () => {
  const t = base.temperature;
  const j = t.T.indexOf(TINY.rl.budget);
  const one = t.temperatures.indexOf(1);
  const best = t.temperatures.indexOf(t.bestTemperature);
  t.T.forEach((_, k) => {
    assert.ok(Math.abs(t.base[one][k]! - base.exactPassKT.base.passKT[0][k]!) < 1e-12);
    const byHand = base.exactPassKT.rl.passKT[0][k]! - t.base[best][k]!;
    assert.ok(Math.abs(t.rlMinusBestBase[k].value! - byHand) < 1e-12, `T=${t.T[k]}`);
  });
  for (const row of t.base) assert.ok(row[j]! <= t.base[best][j]!);
  // The frozen "RL" is the base at τ = 1, so it cannot beat the base at its best τ.
  assert.ok(t.rlMinusBestBase[j].value! <= 1e-12);
});

test('TemperedPolicy: τ = 1 is the policy itself, τ = ½ squares and renormalises', () => {
  const task = makeTasks(envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }), 1, 5)[0];
  const env = makeEnv(task);
  const memo = new MemoPolicy(new NeuralPolicy(mlpPolicyConfig(env.spec, { hidden: [8], seed: 4 })));
  const ctx = { observation: 2, history: [], turn: 0, rng: undefined as never, env };
  const p = memo.probs(ctx);
  const same = new TemperedPolicy(memo, 1).probs(ctx);
  for (const [a, x] of p.entries()) assert.ok(Math.abs(x - same[a]) < 1e-15);
  const half = new TemperedPolicy(memo, 0.5).probs(ctx);
  const z = p.reduce((s, x) => s + x * x, 0);
  for (const [a, x] of p.entries()) assert.ok(Math.abs((x * x) / z - half[a]) < 1e-15);
  assert.ok(Math.max(...half) > Math.max(...p), 'sharper');
});
