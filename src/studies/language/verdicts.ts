// The findings of a language run: each claim of Zhu et al. 2026 tested on the stored measurements
// (measure.ts), a pure function of them, so `turnwise study verdicts --in` recomputes every verdict. The
// rules are the budget study's (studies/budget/findings.ts) read on sampled quantities, with one addition
// the issue asks for: a finding whose premise the data do not give — RL never succeeds, RL has no lead
// to shrink, too few states were scored — is undecided (held: null) with the reason, never held or not
// held by default.
import { THRESHOLDS } from '../budget/findings.ts';
import { FINDING_IDS, type FindingId } from '../budget/summary.ts';
import { LANGUAGE_WORLDS, type LanguageWorldId, PAPER } from './design.ts';
import { type Est, type LanguageMeasurements, reversalP } from './measure.ts';

/** The stated thresholds (the budget study's, plus the language study's minimum evidence). */
export const LANGUAGE_THRESHOLDS = {
  ...THRESHOLDS,
  /** A step-quality or recovery verdict needs at least this many scored states. */
  minStates: 10,
  /** Step quality where (nearly) every pair ties says nothing about who steps better. */
  maxTies: 0.95,
  /** llr-sign needs at least this many successful base trajectories. */
  minSuccesses: 5,
} as const;

export interface LanguageFinding {
  id: FindingId;
  world: LanguageWorldId;
  claim: string;
  paper: string;
  ours: Est;
  held: boolean | null;
  /** Why a finding is undecided (null when it was decided). */
  undecided: string | null;
  test: string;
  note: string;
}

type Verdict = Omit<LanguageFinding, 'id' | 'world' | 'paper'>;
type Rule = (m: LanguageMeasurements) => Verdict;

const NONE: Est = { value: null, ci95: [null, null] };
const above = (e: Est, x: number) => e.ci95[0] !== null && e.ci95[0] > x;
const below = (e: Est, x: number) => e.ci95[1] !== null && e.ci95[1] < x;
const f3 = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3));
const show = (e: Est) => `${f3(e.value)} [${f3(e.ci95[0])}, ${f3(e.ci95[1])}]`;

/** A verdict whose premise failed. */
const undecided = (claim: string, test: string, reason: string, ours: Est = NONE, note = ''): Verdict => ({
  claim,
  ours,
  held: null,
  undecided: reason,
  test,
  note,
});

const decided = (claim: string, test: string, ours: Est, held: boolean, note = ''): Verdict => ({
  claim,
  ours,
  held,
  undecided: null,
  test,
  note,
});

/** Index of T_train (the last budget) and of the paper's K (8, or the largest measured). */
function at(m: LanguageMeasurements) {
  const p = m.pass;
  const j = p.T.length - 1;
  const k = p.K.includes(8) ? p.K.indexOf(8) : p.K.length - 1;
  return { j, k, T: p.T[j], K: p.K[k] };
}

/** Neither RL nor the base succeeded at T_train in any sample: nothing can be compared. */
function noSuccess(m: LanguageMeasurements): boolean {
  const j = m.pass.T.length - 1;
  const last = m.pass.K.length - 1;
  return m.pass.of.rl[last][j] === 0 && m.pass.of.base[last][j] === 0;
}

const rlBeatsBase: Rule = (m) => {
  const { j, T } = at(m);
  const claim = 'RL beats the base model across K (sample counts)';
  const cells = m.pass.diff.rlBase.map((row) => row[j]);
  const test = `Pass@(K,T=${T}) of RL − base, sampled, has its paired 95% interval over tasks above 0 at every K of {${m.pass.K.join(', ')}}.`;
  if (noSuccess(m)) return undecided(claim, test, `neither RL nor the base succeeded within T=${T}`);
  const low = (e: Est) => e.ci95[0] ?? Number.NEGATIVE_INFINITY;
  const worst = cells.reduce((a, e, k) => (low(e) < low(cells[a]) ? k : a), 0);
  const behind = m.pass.K.filter((_, k) => !above(cells[k], 0));
  return decided(
    claim,
    test,
    cells[worst],
    behind.length === 0,
    behind.length > 0 ? `not above 0 at K = ${behind.join(', ')}` : '',
  );
};

/** RL's lead at (K, T_train): the premise of the two findings about tight budgets. */
function lead(m: LanguageMeasurements): { ok: boolean; reason: string } {
  const { j, k, K, T } = at(m);
  const d = m.pass.diff.rlBase[k][j];
  if (noSuccess(m)) return { ok: false, reason: `neither RL nor the base succeeded within T=${T}` };
  return above(d, 0)
    ? { ok: true, reason: '' }
    : { ok: false, reason: `RL has no lead at K=${K}, T=${T} to shrink or reverse (${show(d)})` };
}

const leadShrinks: Rule = (m) => {
  const { j, k, K, T } = at(m);
  const claim = 'The lead shrinks when the turn budget T is tight';
  const tight = m.pass.diff.rlBase[k][0];
  const train = m.pass.diff.rlBase[k][j];
  const test = `At K=${K}: RL − base at T=${T} has its interval above 0 (the premise), and [RL − base at T=${m.pass.T[0]}] − [RL − base at T=${T}] has its paired 95% interval over tasks below 0.`;
  const premise = lead(m);
  if (!premise.ok) return undecided(claim, test, premise.reason, m.pass.shrink);
  return decided(
    claim,
    test,
    m.pass.shrink,
    below(m.pass.shrink, 0),
    `lead ${show(tight)} at T=${m.pass.T[0]} vs ${show(train)} at T=${T}`,
  );
};

const leadReverses: Rule = (m) => {
  const { k, K, T } = at(m);
  const claim = 'At tight T the lead can reverse (the base ahead)';
  const tighter = m.pass.T.slice(0, -1);
  const test = `At K=${K}: RL − base at T=${T} has its interval above 0 (the premise), and at some tighter T of {${tighter.join(', ')}} the one-sided bootstrap p-value of RL − base ≥ 0, Holm-adjusted over those budgets, is ≤ ${LANGUAGE_THRESHOLDS.holmAlpha}.`;
  if (tighter.length === 0) return undecided(claim, test, 'no budget below the training budget');
  const premise = lead(m);
  const p = reversalP(m.pass);
  const best = p.reduce((a, x, i) => (x < (p[a] ?? Number.POSITIVE_INFINITY) ? i : a), 0);
  const ours = m.pass.diff.rlBase[k][best];
  if (!premise.ok) return undecided(claim, test, premise.reason, ours);
  const reversed = tighter.filter((_, i) => p[i] <= LANGUAGE_THRESHOLDS.holmAlpha);
  return decided(
    claim,
    test,
    ours,
    reversed.length > 0,
    `Holm-adjusted p ${tighter.map((t, i) => `T=${t}: ${f3(p[i])}`).join(', ')}`,
  );
};

const normalStates: Rule = (m) => {
  const n = m.stepQuality.normal;
  const claim = 'At ordinary states RL picks the better action less than half the time';
  const signal = m.stepQuality.signal === 'exact' ? 'exact Q*' : 'the env’s per-turn proxy';
  const test = `RL’s win rate over the base by ${signal}, P(RL’s action better) + ½P(tie), at states drawn from both policies’ trajectories, has its 95% interval over states below ${LANGUAGE_THRESHOLDS.evenWin}.`;
  if (n.states < LANGUAGE_THRESHOLDS.minStates)
    return undecided(
      claim,
      test,
      `${n.states} states scored (fewer than ${LANGUAGE_THRESHOLDS.minStates})`,
      n,
    );
  if (n.ties !== null && n.ties > LANGUAGE_THRESHOLDS.maxTies)
    return undecided(
      claim,
      test,
      `${(n.ties * 100).toFixed(1)}% of the pairs tie: the signal cannot tell the policies apart`,
      n,
    );
  return decided(
    claim,
    test,
    n,
    below(n, LANGUAGE_THRESHOLDS.evenWin),
    `${n.states} states; ties ${f3(n.ties)}`,
  );
};

const errorContrast: Rule = (m) => {
  const s = m.stepQuality;
  const claim = 'RL’s step advantage is at error states, not at ordinary ones';
  const test =
    'Δ = win(error) − win(pre-error): RL’s win rate over the base at each error state minus at its own pre-error state, paired, has its 95% interval over states above 0.';
  if (s.errors.made === 0) return undecided(claim, test, 'no error state could be made in this world');
  if (s.contrast.pairs < LANGUAGE_THRESHOLDS.minStates)
    return undecided(
      claim,
      test,
      `${s.contrast.pairs} error/pre-error pairs scored (fewer than ${LANGUAGE_THRESHOLDS.minStates})`,
      s.contrast,
    );
  // As normal-states' ties: where Δ and its whole interval are exactly 0, the per-turn signal scored
  // RL and the base alike at (nearly) every error and pre-error state — it cannot tell them apart.
  if (s.contrast.value === 0 && s.contrast.ci95[0] === 0 && s.contrast.ci95[1] === 0)
    return undecided(
      claim,
      test,
      `Δ is 0 with an interval of [0, 0] over ${s.contrast.pairs} pairs (win ${show(s.error)} at error states, ${show(s.preError)} before them): the signal cannot tell the policies apart`,
      s.contrast,
    );
  return decided(
    claim,
    test,
    s.contrast,
    above(s.contrast, 0),
    `win(error) ${show(s.error)}, win(pre-error) ${show(s.preError)}; ${s.errors.made} error states of ${s.errors.attempts} attempts`,
  );
};

const recoveryDid: Rule = (m) => {
  const r = m.recovery;
  const claim = 'RL recovers from error states beyond its overall gain';
  const test =
    'Difference in differences: RL’s continuation-success gain over the base at each error state minus its gain at the paired pre-error state has its 95% interval over states above 0.';
  if (r === null) return undecided(claim, test, 'no error state could be made in this world');
  if (r.states < LANGUAGE_THRESHOLDS.minStates)
    return undecided(
      claim,
      test,
      `${r.states} error states (fewer than ${LANGUAGE_THRESHOLDS.minStates})`,
      r.did,
    );
  const any = [r.rl.error, r.rl.preError, r.base.error, r.base.preError].some((e) => (e.value ?? 0) > 0);
  if (!any)
    return undecided(claim, test, 'no continuation succeeded, from any state, for either policy', r.did);
  return decided(
    claim,
    test,
    r.did,
    above(r.did, 0),
    `recovery RL ${show(r.rl.error)} vs base ${show(r.base.error)}; pre-error RL ${show(r.rl.preError)} vs base ${show(r.base.preError)}`,
  );
};

/** RL's own actions are exactly as likely under the base as under RL: RL never left the base (every
 * update of its run had a zero gradient — e.g. no group with a success), so a comparison of the two says
 * nothing about what RL does. */
const didNotMove = (m: LanguageMeasurements): boolean =>
  m.likelihood.nllRlUnderRl !== null && m.likelihood.nllRlUnderBase === m.likelihood.nllRlUnderRl;
const NOT_MOVED =
  'RL’s actions are exactly as likely under the base as under RL (the same NLL to the last bit): RL never moved from the base';

const nllPlausible: Rule = (m) => {
  const l = m.likelihood;
  const claim = 'RL’s actions stay plausible to the base model (per-action NLL)';
  const test = `The base’s mean NLL of RL’s actions ÷ the base’s mean NLL of its own actions has its 95% interval over tasks below ${LANGUAGE_THRESHOLDS.nllRatio}.`;
  if (l.nllRatio.value === null) return undecided(claim, test, 'no finite NLL to compare');
  if (didNotMove(m)) return undecided(claim, test, NOT_MOVED, l.nllRatio);
  const tok = l.perToken;
  return decided(
    claim,
    test,
    l.nllRatio,
    below(l.nllRatio, LANGUAGE_THRESHOLDS.nllRatio),
    `per action: RL’s actions under the base ${f3(l.nllRlUnderBase)}, the base’s own ${f3(l.nllBaseUnderBase)}; per token ${f3(tok?.nllRlUnderBase ?? null)} vs ${f3(tok?.nllBaseUnderBase ?? null)}`,
  );
};

const llrSign: Rule = (m) => {
  const l = m.likelihood;
  const claim = 'RL up-weights what the base did when it succeeded (sign of the base successes’ LLR)';
  const test =
    'The mean cumulative LLR Σ_t [log π_RL − log π_base] over the base’s successful trajectories has its 95% interval over tasks above 0.';
  if (l.successes.base < LANGUAGE_THRESHOLDS.minSuccesses)
    return undecided(
      claim,
      test,
      `${l.successes.base} successful base trajectories (fewer than ${LANGUAGE_THRESHOLDS.minSuccesses})`,
      l.llrSuccessBase,
    );
  if (didNotMove(m)) return undecided(claim, test, NOT_MOVED, l.llrSuccessBase);
  return decided(
    claim,
    test,
    l.llrSuccessBase,
    above(l.llrSuccessBase, 0),
    `per token ${f3(l.perToken?.llrSuccessBase ?? null)}; RL’s successes ${f3(l.llrSuccessRl)} per trajectory (≥ 0 for any two policies)`,
  );
};

const trainingCurves: Rule = (m) => {
  const c = m.curves;
  const claim = 'During training, trajectory reward rose while step reward fell';
  const test = `RL run, mean of the last ${c.window} iterations minus the first ${c.window}: the trajectory reward has its interval above 0 and the per-turn quality signal (${c.signal ?? 'none'}) has its interval below 0.`;
  if (c.signal === null)
    return undecided(claim, test, 'no per-turn quality signal in this world’s training metrics');
  if (c.iterations < 2) return undecided(claim, test, `${c.iterations} iteration: no curve`);
  if (c.step.value === null)
    return undecided(claim, test, 'the quality signal was not measured in both windows');
  if (c.reward.first === 0 && c.reward.last === 0)
    return undecided(
      claim,
      test,
      'RL never succeeded in the first or the last iterations: no reward to rise',
      c.step,
    );
  return decided(
    claim,
    test,
    c.step,
    above(c.reward, 0) && below(c.step, 0),
    `trajectory reward ${f3(c.reward.first)} → ${f3(c.reward.last)} ${show(c.reward)}; step signal ${f3(c.step.first)} → ${f3(c.step.last)}`,
  );
};

const budgetmixRobust: Rule = (m) => {
  const p = m.pass;
  const j = p.T.length - 1;
  const claim = 'BudgetMix is robust across budgets';
  const test = `Pass@(1,T): BudgetMix − RL at the tightest T=${p.T[0]} has its paired interval above 0, BudgetMix − base is below 0 at no T, and BudgetMix − RL at T=${p.T[j]} has its interval above −δ = −${LANGUAGE_THRESHOLDS.budgetmixDelta}.`;
  const tight = p.diff.mixRl[0][0];
  if (p.of.budgetmix[0][0] === 0 && p.of.rl[0][0] === 0)
    return undecided(claim, test, `neither BudgetMix nor RL succeeded within T=${p.T[0]}`, tight);
  const behind = p.T.filter((_, jj) => below(p.diff.mixBase[0][jj], 0));
  const atTrain = p.diff.mixRl[0][j];
  const held = above(tight, 0) && behind.length === 0 && above(atTrain, -LANGUAGE_THRESHOLDS.budgetmixDelta);
  return decided(
    claim,
    test,
    tight,
    held,
    `vs RL at T=${p.T[j]} ${show(atTrain)}; vs base ${behind.length > 0 ? `behind at T = ${behind.join(', ')}` : 'never behind'}`,
  );
};

const RULES: Record<FindingId, Rule> = {
  'rl-beats-base': rlBeatsBase,
  'lead-shrinks': leadShrinks,
  'lead-reverses': leadReverses,
  'normal-states': normalStates,
  'error-contrast': errorContrast,
  'recovery-did': recoveryDid,
  'nll-plausible': nllPlausible,
  'llr-sign': llrSign,
  'training-curves': trainingCurves,
  'budgetmix-robust': budgetmixRobust,
};

/** The findings of one run (one world, one seed). */
export function languageFindings(world: LanguageWorldId, m: LanguageMeasurements): LanguageFinding[] {
  return FINDING_IDS.map((id) => ({
    id,
    world,
    paper: LANGUAGE_WORLDS[world].paper[id] ?? PAPER[id],
    ...RULES[id](m),
  }));
}

export interface AcrossSeeds {
  id: FindingId;
  world: LanguageWorldId;
  claim: string;
  paper: string;
  /** Mean over the seeds where the quantity was measured. */
  ours: number | null;
  /** Per seed: true, false, or null (undecided). */
  perSeed: (boolean | null)[];
  /** Held in more than half of the decided seeds; null when no seed decided it. */
  held: boolean | null;
  heldFraction: number | null;
  /** The undecided seeds' reasons (distinct). */
  reasons: string[];
}

/** A world's findings across its seeds (each seed's findings in seed order). */
export function acrossSeeds(world: LanguageWorldId, perSeed: readonly LanguageFinding[][]): AcrossSeeds[] {
  return FINDING_IDS.map((id, i) => {
    const fs = perSeed.map((s) => s[i]);
    const decidedSeeds = fs.filter((f) => f.held !== null);
    const held = decidedSeeds.filter((f) => f.held === true).length;
    const values = fs.map((f) => f.ours.value).filter((v): v is number => v !== null);
    return {
      id,
      world,
      claim: fs[0]?.claim ?? '',
      paper: fs[0]?.paper ?? PAPER[id],
      ours: values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null,
      perSeed: fs.map((f) => f.held),
      held: decidedSeeds.length === 0 ? null : held > decidedSeeds.length / 2,
      heldFraction: decidedSeeds.length === 0 ? null : held / decidedSeeds.length,
      reasons: [...new Set(fs.map((f) => f.undecided).filter((r): r is string => r !== null))],
    };
  });
}
