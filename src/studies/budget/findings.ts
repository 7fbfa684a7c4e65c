// The findings: each claim of Zhu et al. 2026, "What Does Multi-Turn Reinforcement Learning Really
// Improve in LLM Agents?", tested on our own policies, with the paper's meaning (issue 11):
//   rl-beats-base     RL − base at the training budget, every K;
//   lead-shrinks      at the paper's K = 8: the lead at the tightest T minus the lead at T_train < 0;
//   lead-reverses     at K = 8: the base ahead at some tighter T, Holm-corrected over the T searched;
//   normal-states     RL's win rate at ordinary states < ½;
//   error-contrast    Δ = win(error) − win(pre-error) > 0, paired on each error state's own pre-error state;
//   recovery-did      RL's exact gain at error states minus its gain at their pre-error states > 0;
//   nll-plausible     NLL under the base of RL's actions / the base's NLL of its own actions < 1.25;
//   llr-sign          the base successes' mean LLR log π_RL − log π_base > 0 (METHODS §7: the RL
//                     successes' LLR is ≥ 0 for any two policies, so it cannot test anything);
//   training-curves   trajectory reward rose while the regret of the actions taken rose;
//   budgetmix-robust  BudgetMix > RL at tight T, never below the base, ≥ RL − δ at T_train.
//
// Every verdict is a pure function of quantities stored in summary.json (each with its 95% interval),
// so `turnwise study verdicts --in summary.json` recomputes them and anyone can audit one. A verdict is
// decided by directions, intervals and stated thresholds, never by a magnitude read off the paper: its
// agents are LLMs (an NLL is per response, an LLR sums over tokens), ours choose one of four moves.
import type { Estimate, Interval, PassGrid } from './figures.ts';
import { decisiveDigits, interval, num, signed, withInterval } from './format.ts';
import { holm } from './stats.ts';
import type { FindingId, StudyFinding, Summary } from './summary.ts';

export type Measurements = Omit<Summary, 'findings' | 'timings' | 'seconds'>;

/** The stated thresholds of the verdicts. */
export const THRESHOLDS = {
  /** nll-plausible: RL's actions may cost the base at most 25% more nats per action than its own. */
  nllRatio: 1.25,
  /** budgetmix-robust: BudgetMix may trail RL by at most this much success at the training budget. */
  budgetmixDelta: 0.02,
  /** lead-reverses: family-wise level of the one-sided tests "base ahead" (= a two-sided 95% interval
   * for a single test). */
  holmAlpha: 0.025,
  /** normal-states, error-contrast: a win rate of ½, no difference between RL and the base. */
  evenWin: 0.5,
} as const;

/** The number each finding's tested quantity (`ours`) is read against: on which side of it its interval
 * lies decides the verdict (oursText prints the figure so that the side shows). */
export const OURS_THRESHOLD: Record<FindingId, number> = {
  'rl-beats-base': 0,
  'lead-shrinks': 0,
  'lead-reverses': 0,
  'normal-states': THRESHOLDS.evenWin,
  'error-contrast': 0,
  'recovery-did': 0,
  'nll-plausible': THRESHOLDS.nllRatio,
  'llr-sign': 0,
  'training-curves': 0,
  'budgetmix-robust': 0,
};

const est = (e: Estimate, digits = 3, sign = true): string => withInterval(e.value, e.ci95, digits, sign);

/** The interval lies strictly above / below x (a missing end never decides anything). */
export const above = (c: Interval, x: number): boolean => c[0] !== null && c[0] > x;
export const below = (c: Interval, x: number): boolean => c[1] !== null && c[1] < x;

const cell = (g: PassGrid, k: number, j: number): Estimate => ({ value: g.passKT[k][j], ci95: g.ci95[k][j] });
const NONE: Estimate = { value: null, ci95: [null, null] };

interface Verdict {
  claim: string;
  paper: string;
  ours: Estimate;
  held: boolean | null;
  test: string;
  note: string;
}

type Rule = (s: Measurements) => Verdict;

/** RL beats the base at every K, at the budget it was trained with. */
export const rlBeatsBase: Rule = (s) => {
  const d = s.exactPassKT.diff;
  const j = d.T.indexOf(s.config.rl.budget);
  const cells = d.K.map((_, k) => cell(d, k, j));
  // ours: the K whose interval's lower end is lowest (the one that decides).
  const low = (e: Estimate) => e.ci95[0] ?? Number.NEGATIVE_INFINITY;
  const worst = cells.reduce((a, e, k) => (low(e) < low(cells[a]) ? k : a), 0);
  const behind = d.K.filter((_, k) => !above(cells[k].ci95, 0));
  return {
    claim: 'RL beats the base model across K (sample counts)',
    paper: 'RL > base at every K',
    ours: cells[worst] ?? NONE,
    held: cells.length > 0 && behind.length === 0,
    test: `Exact Pass@(K,T=${d.T[j]}) of RL − base has its paired 95% interval over maps above 0 at every K of {${d.K.join(', ')}} (ours: the K with the lowest lower end, K=${d.K[worst]}).`,
    note: behind.length === 0 ? '' : `not above 0 at K = ${behind.join(', ')}`,
  };
};

function sliceAt(s: Measurements, T: number) {
  return s.exactPassKT.slice.byT.find((x) => x.T === T);
}

/** At the paper's K: RL leads at T_train, and the lead at the tightest T is smaller. */
export const leadShrinks: Rule = (s) => {
  const sl = s.exactPassKT.slice;
  const Ttrain = s.config.rl.budget;
  const Ttight = sl.byT[0]?.T;
  const train = sliceAt(s, Ttrain);
  const tight = sl.byT[0];
  const lead = train !== undefined && above(train.lead.ci95, 0);
  return {
    claim: 'The lead shrinks when the turn budget T is tight',
    paper: 'smaller lead at tight T (K=8)',
    ours: sl.shrink,
    held: lead && below(sl.shrink.ci95, 0),
    test: `At K=${sl.K}: RL − base at T=${Ttrain} has its interval above 0, and [RL − base at T=${Ttight}] − [RL − base at T=${Ttrain}] has its paired 95% interval over maps below 0.`,
    note:
      train === undefined || tight === undefined
        ? ''
        : `lead ${est(tight.lead)} at T=${Ttight} vs ${est(train.lead)} at T=${Ttrain}; headroom-normalised (RL − base)/(1 − base) ${est(tight.headroom)} vs ${est(train.headroom)}`,
  };
};

/** At the paper's K: RL leads at T_train while the base leads at some tighter T (Holm over those T). */
export const leadReverses: Rule = (s) => {
  const sl = s.exactPassKT.slice;
  const Ttrain = s.config.rl.budget;
  const train = sliceAt(s, Ttrain);
  const tighter = sl.byT.filter((x) => x.T < Ttrain);
  const adjusted = holm(tighter.map((x) => x.lead.pNonNeg ?? Number.NaN));
  const best = adjusted.reduce((a, p, i) => (p < (adjusted[a] ?? Number.POSITIVE_INFINITY) ? i : a), 0);
  const lead = train !== undefined && above(train.lead.ci95, 0);
  const reversed = tighter.filter((_, i) => adjusted[i] <= THRESHOLDS.holmAlpha).map((x) => x.T);
  return {
    claim: 'At tight T the lead can reverse (the base ahead)',
    paper: 'reversed in some settings',
    ours: tighter.length > 0 ? { value: tighter[best].lead.value, ci95: tighter[best].lead.ci95 } : NONE,
    held: tighter.length === 0 ? null : lead && reversed.length > 0,
    test: `At K=${sl.K}: RL − base at T=${Ttrain} has its interval above 0, and at some tighter T of {${tighter.map((x) => x.T).join(', ')}} the base leads: the one-sided bootstrap p-value of RL − base ≥ 0, Holm-adjusted over those ${tighter.length} budgets, is ≤ ${THRESHOLDS.holmAlpha} (ours: the T with the smallest adjusted p).`,
    note:
      tighter.length === 0
        ? 'no budget below the training budget'
        : `Holm-adjusted p ${tighter.map((x, i) => `T=${x.T}: ${num(adjusted[i])}`).join(', ')}${reversed.length > 0 ? `; base ahead at T = ${reversed.join(', ')}` : ''}`,
  };
};

export const normalStates: Rule = (s) => {
  const n = s.stepQuality.normal;
  return {
    claim: 'At ordinary states RL picks the better action less than half the time',
    paper: '43–47%',
    ours: { value: n.value, ci95: n.ci95 },
    held: below(n.ci95, THRESHOLDS.evenWin),
    test: `RL’s exact win rate over the base, P(RL’s action has the higher Q*) + ½P(tie), at states drawn from both policies’ trajectories has its 95% interval over states below ${THRESHOLDS.evenWin}.`,
    note: `${n.states} states; ties ${num(n.ties)}; sampled ${est(n.sampled, 3, false)}`,
  };
};

export const errorContrast: Rule = (s) => {
  const c = s.stepQuality.contrast;
  const winAbove = above(c.winError.ci95, THRESHOLDS.evenWin);
  return {
    claim: 'RL’s step advantage is at error states, not at ordinary ones',
    paper: '66–67% at error states vs 43–47% at normal ones',
    ours: c.delta,
    held: above(c.delta.ci95, 0),
    test: `Δ = win(error) − win(pre-error): RL’s exact win rate over the base at each error state minus at its own pre-error state (where the bad action was forced), averaged over the ${c.pairs} pairs, has its 95% interval (resampling the ${c.maps} maps) above 0.`,
    note: `win(error) ${est(c.winError, 3, false)} (${winAbove ? 'above' : 'not above'} ${THRESHOLDS.evenWin}), win(pre-error) ${est(c.winPreError, 3, false)}`,
  };
};

export const recoveryDid: Rule = (s) => {
  const d = s.recovery.did;
  return {
    claim: 'RL recovers from error states beyond its overall gain',
    paper: '51.3% vs 38.6% recovery (FrozenLake)',
    ours: d.did,
    held: above(d.did.ci95, 0),
    test: 'Difference in differences: RL’s exact continuation gain V^RL − V^base at each error state minus its gain at the paired pre-error state has its 95% interval (resampling maps) above 0.',
    note: `gain at error states ${est(d.gainError)}, at pre-error states ${est(d.gainPreError)}; exact recovery RL ${num(s.recovery.rl.exact)} vs base ${num(s.recovery.base.exact)}`,
  };
};

export const nllPlausible: Rule = (s) => {
  const l = s.likelihood;
  return {
    claim: 'RL’s actions stay plausible to the base model (per-action NLL)',
    paper: 'NLL 12.20 under base vs 10.25 under RL (ratio 1.19)',
    ours: l.nllRatio,
    held: below(l.nllRatio.ci95, THRESHOLDS.nllRatio),
    test: `The base’s mean NLL of RL’s actions divided by the base’s mean NLL of its own actions has its 95% interval (paired over maps) below ${THRESHOLDS.nllRatio}.`,
    note: `NLL under the base: of RL’s actions ${num(l.nllRlUnderBase.value)}, of its own ${num(l.nllBaseUnderBase.value)}; of RL’s actions under RL ${num(l.nllRlUnderRl.value)}`,
  };
};

export const llrSign: Rule = (s) => {
  const l = s.likelihood;
  return {
    claim: 'RL up-weights what the base did when it succeeded (sign of the base successes’ LLR)',
    paper: 'LLR ≈ +26 on the base’s successes',
    ours: { value: l.llrSuccessBase.value, ci95: l.llrSuccessBase.ci95 },
    held: above(l.llrSuccessBase.ci95, 0),
    test: 'The mean cumulative LLR Σ_t [log π_RL − log π_base] over the base’s successful trajectories has its 95% interval (resampling maps) above 0.',
    note: `per turn ${est(l.llrPerTurnSuccessBase, 4)}; successes − failures: base ${est(l.llrSuccessMinusFailureBase, 2)}, RL ${est(l.llrSuccessMinusFailureRl, 2)}; RL successes ${signed(l.llrSuccessRl.value, 2)} (≥ 0 for any two policies)`,
  };
};

export const trainingCurves: Rule = (s) => {
  const tr = s.curves.trend.rl;
  const w = s.curves.window;
  const test = `RL run, mean of the last ${w} iterations minus the first ${w}: the trajectory reward (success rate) has its interval above 0 and the mean regret V*−Q* of the actions taken has its interval above 0.`;
  const claim = 'During training, trajectory reward rose while step reward fell';
  const paper = 'rose / fell';
  if (tr === undefined) return { claim, paper, ours: NONE, held: null, test, note: 'no training curves' };
  const rose = above(tr.trajectoryReward.ci95, 0);
  const worse = above(tr.stepRegret.ci95, 0);
  return {
    claim,
    paper,
    ours: { value: tr.stepRegret.value, ci95: tr.stepRegret.ci95 },
    held: tr.stepRegret.value === null ? null : rose && worse,
    test,
    note: `trajectory reward ${num(tr.trajectoryReward.first)} → ${num(tr.trajectoryReward.last)} ${est(tr.trajectoryReward)}; regret ${num(tr.stepRegret.first, 4)} → ${num(tr.stepRegret.last, 4)}; Q*/V* ${num(tr.stepReward.first)} → ${num(tr.stepReward.last)}`,
  };
};

export const budgetmixRobust: Rule = (s) => {
  const vsRl = s.exactPassKT.budgetmixVsRl;
  const vsBase = s.exactPassKT.budgetmixDiff;
  const Ttrain = s.config.rl.budget;
  const jTrain = vsRl.T.indexOf(Ttrain);
  const tight = cell(vsRl, 0, 0);
  const atTrain = cell(vsRl, 0, jTrain);
  const reversed = vsBase.T.filter((_, j) => below(vsBase.ci95[0][j], 0));
  const okTight = above(tight.ci95, 0);
  const okTrain = above(atTrain.ci95, -THRESHOLDS.budgetmixDelta);
  return {
    claim: 'BudgetMix is robust across budgets',
    paper: 'robust across budgets',
    ours: tight,
    held: okTight && reversed.length === 0 && okTrain,
    test: `Exact Pass@(${vsRl.K[0]},T): BudgetMix − RL at the tightest T=${vsRl.T[0]} has its paired interval above 0, BudgetMix − base has its interval below 0 at no T, and BudgetMix − RL at T=${Ttrain} has its interval above −δ = −${THRESHOLDS.budgetmixDelta}.`,
    note: `vs RL at T=${Ttrain} ${est(atTrain)}${okTrain ? '' : ' (below −δ)'}; vs base ${reversed.length > 0 ? `behind at T = ${reversed.join(', ')}` : 'never behind'}`,
  };
};

/** The rules in the summary's order (FINDING_IDS). */
export const RULES: Record<FindingId, Rule> = {
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

/** The findings of one run (one world, one seed: heldFraction is 1 or 0; several seeds average it). */
export function budgetFindings(s: Measurements): StudyFinding[] {
  return (Object.keys(RULES) as FindingId[]).map((id) => {
    const v = RULES[id](s);
    return {
      id,
      world: s.world,
      claim: v.claim,
      paper: v.paper,
      ours: v.ours,
      held: v.held,
      heldFraction: v.held === null ? null : v.held ? 1 : 0,
      test: v.test,
      note: v.note,
    };
  });
}

/** A finding's tested quantity as text: value and 95% interval, with the decimals that show on which
 * side of its threshold each lies (decisiveDigits; at least 3). */
export function oursText(f: Pick<StudyFinding, 'id' | 'ours'>): string {
  const e = f.ours;
  if (e.value === null) return 'n/a';
  const digits = decisiveDigits([e.value, ...e.ci95], OURS_THRESHOLD[f.id]);
  return `${num(e.value, digits)} ${interval(e.ci95, digits)}`;
}
