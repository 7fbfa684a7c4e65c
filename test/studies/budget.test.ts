// The budget study end to end on a tiny setting (issue 7 "done when"): the summary's structure and
// invariants, the null control's exact values, determinism, a trainer that breaks the rules, the
// memoised policy against the network, and the report's self-containedness.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { recovery } from '../../src/eval/recovery.ts';
import { collectStates, makeErrorStates } from '../../src/eval/states.ts';
import { stepQuality } from '../../src/eval/step-quality.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { parseStudyConfig, profileConfig } from '../../src/studies/budget/config.ts';
import type { PassGrid } from '../../src/studies/budget/figures.ts';
import { MemoPolicy } from '../../src/studies/budget/memo.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { renderBudgetReport } from '../../src/studies/budget/report/page.ts';
import { studySummary } from '../../src/studies/budget/study.ts';
import {
  parseSummary,
  RunSummarySchema,
  type StudySummary,
  type Summary,
} from '../../src/studies/budget/summary.ts';
import { terminalSummary } from '../../src/studies/budget/terminal.ts';
import { frozenTrainer, grpoTrainer, type RlTrainer } from '../../src/studies/budget/trainer.ts';
import { findAll, parseXml, rootOf, textOf } from '../report/xml.ts';
import { TINY } from './fixtures.ts';

const EPS = 1e-12;

function checkGrid(g: PassGrid, what: string, probability: boolean): void {
  assert.equal(g.passKT.length, g.K.length, what);
  g.passKT.forEach((row, k) => {
    assert.equal(row.length, g.T.length, what);
    row.forEach((v, j) => {
      const at = `${what} K=${g.K[k]} T=${g.T[j]}`;
      assert.ok(v !== null, at);
      const [lo, hi] = g.ci95[k][j];
      assert.ok(
        lo !== null && hi !== null && lo - EPS <= v && v <= hi + EPS,
        `${at}: ${v} outside [${lo}, ${hi}]`,
      );
      if (probability) {
        assert.ok(lo >= -EPS && hi <= 1 + EPS, `${at}: interval [${lo}, ${hi}]`);
        // Monotone: more tries (K) and more turns (T) never lower Pass@(K,T).
        if (k > 0) assert.ok(v >= g.passKT[k - 1][j]! - EPS, `${at}: not monotone in K`);
        if (j > 0) assert.ok(v >= row[j - 1]! - EPS, `${at}: not monotone in T`);
      } else assert.ok(v >= -1 - EPS && v <= 1 + EPS, at);
    });
  });
}

/** Every {value, ci95} estimate anywhere in the summary has its interval around its value. */
function checkEstimates(x: unknown, path: string, seen: string[]): void {
  if (x === null || typeof x !== 'object') return;
  const o = x as Record<string, unknown>;
  if ('value' in o && 'ci95' in o && !('passKT' in o)) {
    const v = o.value as number | null;
    const [lo, hi] = o.ci95 as [number | null, number | null];
    if (v !== null) {
      assert.ok(
        lo !== null && hi !== null && lo - EPS <= v && v <= hi + EPS,
        `${path}: ${v} outside [${lo}, ${hi}]`,
      );
      seen.push(path);
    }
  }
  for (const [k, v] of Object.entries(o)) checkEstimates(v, `${path}.${k}`, seen);
}

/** One run as a whole study (one world, one seed), as summary.json holds it. */
function asStudy(s: Summary): StudySummary {
  return studySummary(
    { config: s.config, seeds: [s.config.seed], worlds: [s.config.world] },
    [s],
    1,
    s.seconds,
  );
}

function withoutTimings(s: Summary): unknown {
  const { timings: _t, seconds: _s, ...rest } = s;
  return rest;
}

test('budget study end to end (tiny, the real GRPO trainer): contract keys, invariants, report', async () => {
  const stages: string[] = [];
  const { summary: s, policies } = await runBudgetStudy(
    { ...TINY, rl: { ...TINY.rl, gigpo: true } },
    { trainer: grpoTrainer, onStage: (stage) => stages.push(stage) },
  );
  assert.deepEqual(stages, ['base', 'rl', 'budgetmix', 'gigpo', 'evaluation', 'diagnostics']);

  // The contract keys (issue 7), and a summary that survives JSON and its own schema unchanged.
  for (const p of ['base', 'rl', 'budgetmix'] as const)
    assert.deepEqual(Object.keys(s.passKT[p]), ['K', 'T', 'passKT', 'ci95']);
  assert.ok(Array.isArray(s.passKT.diff) && Array.isArray(s.passKT.diff[0]));
  for (const k of ['normal', 'error'] as const)
    assert.ok('value' in s.stepQuality[k] && 'ci95' in s.stepQuality[k]);
  for (const p of ['base', 'rl', 'budgetmix'] as const) assert.ok('value' in s.recovery[p]);
  for (const k of ['nllRlUnderBase', 'nllRlUnderRl', 'llrSuccessRl', 'llrSuccessBase'] as const)
    assert.ok('value' in s.likelihood[k] && 'ci95' in s.likelihood[k]);
  for (const c of ['trajectoryReward', 'stepReward'] as const) {
    assert.equal(s.curves[c].rl.length, TINY.rl.iters);
    assert.equal(s.curves[c].budgetmix.length, TINY.rl.iters);
  }
  assert.deepEqual(s.config, { ...TINY, rl: { ...TINY.rl, gigpo: true } });
  assert.ok(s.seconds > 0 && Array.isArray(s.findings));
  const json = JSON.stringify(s);
  assert.deepEqual(JSON.parse(json), s, 'no NaN, Infinity or undefined in memory');
  assert.deepEqual(RunSummarySchema.parse(JSON.parse(json)), s);

  // Pass@(K,T) grids: probabilities, monotone in K and T, intervals around the estimates.
  for (const p of ['base', 'rl', 'budgetmix', 'gigpo'] as const) {
    checkGrid(s.passKT[p]!, `sampled ${p}`, true);
    checkGrid(s.exactPassKT[p]!, `exact ${p}`, true);
  }
  for (const g of ['diff', 'budgetmixDiff', 'budgetmixVsRl'] as const)
    checkGrid(s.exactPassKT[g], `exact ${g}`, false);
  // The sampled difference is the difference of the grids, with the paired interval around it.
  s.passKT.diff.forEach((row, k) => {
    row.forEach((d, j) => {
      assert.ok(Math.abs(d! - (s.passKT.rl.passKT[k][j]! - s.passKT.base.passKT[k][j]!)) < EPS);
      const [lo, hi] = s.passKT.diffCi95[k][j];
      assert.ok(lo! - EPS <= d! && d! <= hi! + EPS);
    });
  });
  // Exact success within T never beats the optimum V*_T.
  s.exactPassKT.base.passKT[0].forEach((v, j) => {
    assert.ok(v! <= s.reference.optimal[j]! + 1e-9);
  });
  const seen: string[] = [];
  checkEstimates(s, 'summary', seen);
  assert.ok(seen.length >= 15, `only ${seen.length} estimates checked`);
  for (const k of ['normal', 'error'] as const) {
    const q = s.stepQuality[k];
    assert.ok(q.states > 0 && q.value! >= 0 && q.value! <= 1);
    assert.ok(Math.abs(q.rlBetter! + q.ties! + q.baseBetter! - 1) < 1e-9);
  }
  for (const p of ['base', 'rl', 'budgetmix', 'gigpo'] as const) {
    const r = s.recovery[p]!;
    assert.ok(r.value! >= 0 && r.value! <= 1 && r.exact! >= 0 && r.exact! <= 1);
    const f = s.failures[p]!;
    assert.equal(f.episodes, TINY.seeds.test.count * TINY.eval.samples);
    assert.equal(f.successes + Object.values(f.byKind).reduce((a, b) => a + b, 0), f.episodes);
  }
  for (const c of s.curves.trajectoryReward.rl) assert.ok(c.value! >= 0 && c.value! <= 1);
  assert.equal(s.likelihood.nllRlUnderBase.infinite, 0, 'softmax networks give no action probability 0');
  assert.equal(s.findings.length, 10);
  assert.deepEqual(
    s.findings.map((f) => f.id),
    [
      'rl-beats-base',
      'lead-shrinks',
      'lead-reverses',
      'normal-states',
      'error-contrast',
      'recovery-did',
      'nll-plausible',
      'llr-sign',
      'training-curves',
      'budgetmix-robust',
    ],
  );
  for (const f of s.findings) {
    assert.ok(typeof f.held === 'boolean' && f.test.length > 20, f.id);
    assert.equal(f.world, 'slippery');
    assert.equal(f.heldFraction, f.held ? 1 : 0);
  }
  // The error contrast is win(error) − win(pre-error), and the DiD gain(error) − gain(pre-error).
  const c = s.stepQuality.contrast;
  assert.ok(Math.abs(c.delta.value! - (c.winError.value! - c.winPreError.value!)) < 1e-12);
  assert.ok(Math.abs(c.winError.value! - s.stepQuality.error.value!) < 1e-12, 'same states, same mean');
  assert.ok(Math.abs(c.winPreError.value! - s.stepQuality.preError.value!) < 1e-12);
  const d = s.recovery.did;
  assert.ok(Math.abs(d.did.value! - (d.gainError.value! - d.gainPreError.value!)) < 1e-12);
  assert.ok(Math.abs(d.gainError.value! - s.recovery.rlMinusBase.exact!) < 1e-12);
  // The split by how the forced move went adds up to the totals: counts, and means weighted by pairs.
  const mv = s.stepQuality.errorStates.moves;
  assert.equal(mv.intended + mv.slipped, s.stepQuality.error.states);
  assert.equal(mv.terminalIntended + mv.terminalSlipped, s.stepQuality.errorStates.terminal);
  assert.ok(mv.intended > 0 && mv.slipped > 0, `1/3-slippery ice gives both kinds: ${JSON.stringify(mv)}`);
  const [ci, cs] = [s.stepQuality.contrastByMove.intended, s.stepQuality.contrastByMove.slipped];
  assert.deepEqual([ci.pairs, cs.pairs, ci.pairs + cs.pairs], [mv.intended, mv.slipped, c.pairs]);
  const mix = (a: number | null, b: number | null, na: number, nb: number) => (na * a! + nb * b!) / (na + nb);
  for (const k of ['winError', 'winPreError', 'delta'] as const)
    assert.ok(Math.abs(mix(ci[k].value, cs[k].value, ci.pairs, cs.pairs) - c[k].value!) < 1e-12, k);
  const [di, ds] = [s.recovery.didByMove.intended, s.recovery.didByMove.slipped];
  assert.deepEqual([di.states, ds.states], [mv.intended, mv.slipped]);
  for (const k of ['gainError', 'gainPreError', 'did'] as const)
    assert.ok(Math.abs(mix(di[k].value, ds[k].value, di.states, ds.states) - d[k].value!) < 1e-12, k);
  // The trained policies come back for saving, the base among them.
  assert.ok(policies.rl !== policies.base && policies.gigpo instanceof NeuralPolicy);
  // The study's recovery figures are eval/recovery's at the same error states (its exact values are
  // recomputed per state for their interval, and must agree to the bit).
  const tasks = makeTasks(
    envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }),
    TINY.seeds.test.count,
    TINY.seeds.test.start,
  );
  const [base, rl] = [new MemoPolicy(policies.base), new MemoPolicy(policies.rl)];
  // The pools: the first diagnosticSamples episodes per map of each policy's sampled run.
  const at = async (p: MemoPolicy) =>
    (
      await runPassCounts({
        envs,
        tasks,
        samples: TINY.eval.samples,
        T: TINY.eval.T,
        policy: p,
        runSeed: TINY.seed,
        keep: true,
      })
    ).atTmax.filter((_, e) => e % TINY.eval.samples < TINY.eval.diagnosticSamples);
  const errors = await makeErrorStates(envs, [await at(base), await at(rl)], TINY.eval.states, TINY.seed, {
    minRelRegret: TINY.eval.minRelRegret,
  });
  const rec = await recovery(envs, errors.states, rl, base, {
    continuations: TINY.eval.continuations,
    seed: TINY.seed,
    resamples: TINY.eval.resamples,
  });
  assert.equal(errors.states.length, s.recovery.states);
  assert.deepEqual(
    [rec.a.exact, rec.b.exact, rec.a.success, rec.b.success],
    [s.recovery.rl.exact, s.recovery.base.exact, s.recovery.rl.value, s.recovery.base.value],
  );

  // The report: one self-contained page that mentions every finding and numbers its figures.
  const study = asStudy(s);
  const html = renderBudgetReport(study);
  assert.equal(
    renderBudgetReport(parseSummary(JSON.stringify(study), 'summary.json')),
    html,
    'a pure function of the summary',
  );
  const urls = html.match(/https?:\/\/[^"\s<]*/g) ?? [];
  assert.deepEqual(new Set(urls), new Set(['http://www.w3.org/2000/svg']));
  assert.ok(!/<script|<link|<img|<iframe|@import|url\(/i.test(html));
  for (const bad of ['NaN', 'Infinity', 'undefined']) assert.ok(!html.includes(bad), bad);
  const root = rootOf(parseXml(html, { html: true }));
  const text = textOf(root);
  for (const f of s.findings) {
    assert.ok(text.includes(f.claim), `report misses finding: ${f.claim}`);
    assert.ok(text.includes(f.test), `report misses the test of ${f.id}`);
  }
  const captions = findAll(root, (n) => n.name === 'figcaption').map(textOf);
  assert.ok(captions.length >= 9);
  captions.forEach((c, i) => {
    assert.ok(c.startsWith(`Figure ${i + 1}.`), c);
  });
  const svgs = findAll(root, (n) => n.name === 'svg');
  assert.ok(svgs.length >= 14, `${svgs.length} charts`);
  // Every chart is labelled: an accessible title, and axis titles on the charts that have axes.
  for (const svg of svgs) assert.ok(findAll(svg, (n) => n.name === 'title').length > 0);

  const terminal = terminalSummary(study, 'runs/x/report.html');
  for (const f of s.findings) assert.ok(terminal.includes(f.claim) && terminal.includes(f.test), f.claim);
  assert.match(terminal, /report: runs\/x\/report\.html$/);
  assert.ok(
    terminal.includes(
      `forced moves, intended vs slipped (per seed): error states ${mv.intended} vs ${mv.slipped} (dropped terminal ${mv.terminalIntended} vs ${mv.terminalSlipped})`,
    ),
  );
  assert.ok(text.includes('injected errors whose forced move went the intended way'));
});

test('null control (frozen trainer): differences exactly 0, win rates ½, RL findings not held; same seed → same summary', async () => {
  const [a, b] = [
    await runBudgetStudy(TINY, { trainer: frozenTrainer }),
    await runBudgetStudy(TINY, { trainer: frozenTrainer }),
  ];
  assert.deepEqual(withoutTimings(a.summary), withoutTimings(b.summary), 'deterministic');
  const s = a.summary;
  for (const row of s.passKT.diff) for (const d of row) assert.equal(d, 0);
  for (const row of s.exactPassKT.diff.passKT) for (const d of row) assert.equal(d, 0);
  for (const row of s.exactPassKT.diff.ci95) for (const c of row) assert.deepEqual(c, [0, 0]);
  assert.deepEqual(s.passKT.rl, s.passKT.base);
  for (const k of ['normal', 'error'] as const) {
    // Identical distributions: P(RL better) = P(base better) (up to the order of additions).
    assert.ok(Math.abs(s.stepQuality[k].value! - 0.5) < 1e-9, `${k}: ${s.stepQuality[k].value}`);
  }
  assert.equal(s.recovery.rlMinusBase.exact, 0);
  assert.equal(s.recovery.rlMinusBase.value, 0);
  assert.equal(s.recovery.rl.exact, s.recovery.base.exact);
  assert.equal(s.likelihood.llrSuccessRl.value, 0);
  assert.equal(s.likelihood.llrSuccessBase.value, 0);
  assert.equal(s.likelihood.nllRlUnderBase.value, s.likelihood.nllRlUnderRl.value);
  const held = Object.fromEntries(s.findings.map((f) => [f.id, f.held]));
  for (const id of [
    'rl-beats-base',
    'lead-shrinks',
    'lead-reverses',
    'normal-states',
    'error-contrast',
    'recovery-did',
    'llr-sign',
    'budgetmix-robust',
  ])
    assert.equal(held[id], false, id);
  // Identical policies: the paired contrasts are exactly 0.
  assert.equal(s.stepQuality.contrast.delta.value, 0);
  assert.equal(s.recovery.did.did.value, 0);
  assert.match(renderBudgetReport(asStudy(s)), /The trainer changed nothing/);
});

test('a trainer that modifies the base it was given is refused', async () => {
  const vandal: RlTrainer = async (req) => {
    const copy = req.base.clone();
    req.base.net.namedParameters()[0][1].data[0] += 1;
    return { policy: copy, curves: [] };
  };
  await assert.rejects(runBudgetStudy(TINY, { trainer: vandal }), /trainer \(rl\) modified the base policy/);
});

test('MemoPolicy: the same trajectories as the network it remembers, byte for byte', () => {
  const config = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(config, 6, 500);
  const net = new NeuralPolicy(mlpPolicyConfig(makeEnv(tasks[0]).spec, { hidden: [8], seed: 2 }));
  const memo = new MemoPolicy(net);
  const run = (policy: NeuralPolicy | MemoPolicy) =>
    rollout({ makeEnv, tasks, samples: 5, budget: 30, runSeed: 9, policy });
  assert.deepEqual(run(memo), run(net));
  const env = makeEnv(tasks[0]);
  const ctx = { observation: 3, history: [], turn: 0, rng: undefined as never, env };
  assert.deepEqual(memo.probs(ctx), net.probs(ctx));
  assert.equal(memo.logProb(ctx, 2), net.logProb(ctx, 2));
});

test('stepQuality onState: the per-state figures the study bootstraps average to the totals', async () => {
  const config = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });
  const tasks = makeTasks(config, 8, 700);
  const spec = makeEnv(tasks[0]).spec;
  const a = new MemoPolicy(new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [8], seed: 1 })));
  const b = new MemoPolicy(new NeuralPolicy(mlpPolicyConfig(spec, { hidden: [8], seed: 2 })));
  const run = await runPassCounts({
    envs,
    tasks,
    samples: 4,
    T: [20, 40],
    policy: a,
    runSeed: 1,
    keep: true,
  });
  const states = collectStates([run.atTmax], 25, 1);
  const drawn: number[] = [];
  const exact: number[] = [];
  const q = await stepQuality(envs, states, a, b, {
    actions: 6,
    seed: 1,
    onState: (i, d, e) => {
      drawn[i] = d.score;
      exact[i] = e!.score;
      assert.ok(Math.abs(e!.aBetter + e!.ties + e!.bBetter - 1) < 1e-12);
    },
  });
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
  assert.equal(drawn.length, states.length);
  assert.ok(Math.abs(mean(drawn) - q.score!) < 1e-12);
  assert.ok(Math.abs(mean(exact) - q.exact!.score) < 1e-12);
});

test('profiles: valid, disjoint seeds, RL budget on the T grid; bad configs are refused naming the field', () => {
  for (const name of ['quick', 'default', 'full']) {
    const c = profileConfig(name, 7);
    assert.equal(c.seed, 7);
    assert.ok(c.eval.T.includes(c.rl.budget));
    assert.ok(c.timePlan.study + c.timePlan.training <= c.timePlan.total);
  }
  assert.throws(() => profileConfig('huge'), /--profile: got "huge"; expected one of: quick, default, full/);
  assert.throws(
    () =>
      parseStudyConfig({
        ...TINY,
        seeds: { train: { start: 0, count: 100 }, test: { start: 50, count: 10 } },
      }),
    /config\.seeds\.test: .*must not overlap/,
  );
  assert.throws(() => parseStudyConfig({ ...TINY, eval: { ...TINY.eval, K: [1, 8] } }), /config\.eval\.K/);
  assert.throws(() => parseStudyConfig({ ...TINY, rl: { ...TINY.rl, budget: 30 } }), /config\.rl\.budget/);
  assert.throws(() => parseStudyConfig({ ...TINY, extra: 1 }), /unknown field/);
});
