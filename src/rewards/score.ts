// A rubric applied to a batch of trajectories: every criterion scored (checks.ts, preference.ts,
// judging.ts), combined as the rubric states, and each trajectory's rewards replaced by its score.
//
// Combination: when a gated criterion scores below its pass mark, the score is that gate's floor (the
// lowest floor of the gates failed); otherwise Σ w_i·s_i over the criteria. A criterion without a score
// (a judge error, side effects an env does not record) leaves the trajectory's score missing — unless a
// gate already decided it — and says why; it never counts as 0.
//
// A scored trajectory (scoredLine) is a trajectory like any other, with the rubric's score as its reward
// (outcome.return, and the last turn's reward; the others 0), so that every later stage — credit's group
// baselines, exports — reads it as any reward; the env's own verdict stays in outcome.success, and its
// return and per-turn rewards beside, in `rubric.envReturn` and `rubric.envRewards`, with every
// criterion's score and every judge call (prompt, answer, what was read). A trajectory whose score is
// missing keeps the env's rewards, and its `rubric.score` is null.
import type { Trajectory } from '../core/types.ts';
import { canonical } from '../policies/transport.ts';
import { check, type SideEffectsOf } from './checks.ts';
import type { JudgeClient } from './judge.ts';
import { type JudgeCall, type PairAnswers, positionBias, runJudge } from './judging.ts';
import { preferenceScores } from './preference.ts';
import type { Criterion, CriterionKind, Rubric } from './rubric.ts';
import type { Transcripts } from './transcript.ts';

export interface CriterionResult {
  id: string;
  kind: CriterionKind;
  weight: number;
  /** In [0, 1]; null when missing (then `error` or `missing` says why). */
  score: number | null;
  /** A judge error: the answer did not parse, was off the scale, a refusal, or the request failed. */
  error?: string;
  /** Why a criterion other than a judge has no score. */
  missing?: string;
  /** The count a check read: turns (max-turns), invalid turns (no-invalid), side effects. */
  value?: number;
}

export interface RubricResult {
  /** The combined score; null when a criterion it needs is missing. */
  score: number | null;
  criteria: CriterionResult[];
  /** The ids of the gates it failed. */
  gates: string[];
  /** Its judge criteria whose score is missing by a judge error. */
  judgeErrors: number;
  /** Every judge call that showed it. */
  calls: JudgeCall[];
}

export interface ScoreOptions {
  transcripts: Transcripts;
  /** The judge clients by their spec (`openai:URL#MODEL…`). */
  judges: ReadonlyMap<string, JudgeClient>;
  /** Side effects counted from the env's state (the composition layer knows which envs record them). */
  sideEffects?: SideEffectsOf;
  /** After each judge call: calls done, of the total. */
  onProgress?: (done: number, total: number) => void;
}

export interface RubricRun {
  results: RubricResult[];
  /** The pairwise criteria's answers, by criterion id. */
  pairs: Map<string, PairAnswers>;
}

/** The batch's groups: indices of trajectories of the same task, in order of first appearance. */
export function groupsOf(batch: readonly Trajectory[]): number[][] {
  const groups = new Map<string, number[]>();
  batch.forEach((t, i) => {
    const key = canonical(t.task);
    const g = groups.get(key);
    if (g === undefined) groups.set(key, [i]);
    else g.push(i);
  });
  return [...groups.values()];
}

/** Judge calls a rubric makes on these groups. */
export function judgeCallCount(rubric: Rubric, groups: readonly (readonly number[])[]): number {
  let n = 0;
  for (const c of rubric.criteria) {
    if (c.kind !== 'judge') continue;
    for (const g of groups)
      n += c.mode === 'pointwise' ? g.length : c.mode === 'group' ? 1 : g.length * (g.length - 1);
  }
  return n;
}

/** A criterion's result on one trajectory, whoever scored it. */
type Scored = { score: number; value?: number } | { error: string } | { missing: string };

const needsEffects = (c: Criterion) =>
  (c.kind === 'side-effects' && c.count === 'changes') ||
  (c.kind === 'preference' && c.by.includes('side-effects'));

/** Scores every trajectory of `batch` with the rubric. */
export async function scoreRubric(
  rubric: Rubric,
  batch: readonly Trajectory[],
  o: ScoreOptions,
): Promise<RubricRun> {
  const groups = groupsOf(batch);
  const r = o.transcripts;
  const effects: (number | string | undefined)[] = batch.map(() => undefined);
  if (rubric.criteria.some(needsEffects))
    for (const [i, t] of batch.entries())
      effects[i] = o.sideEffects === undefined ? 'no side-effect counter was given' : await o.sideEffects(t);

  const total = judgeCallCount(rubric, groups);
  let done = 0;
  const onCall = () => o.onProgress?.(++done, total);
  const perCriterion: Scored[][] = [];
  const calls: JudgeCall[][] = batch.map(() => []);
  const pairs = new Map<string, PairAnswers>();
  for (const c of rubric.criteria) {
    if (c.kind === 'judge') {
      const client = o.judges.get(c.judge);
      if (client === undefined) throw new Error(`no client for judge ${c.judge}`);
      const res = await runJudge(c, client, batch, groups, r, onCall);
      perCriterion.push(res.scores);
      res.calls.forEach((cs, i) => {
        calls[i].push(...cs);
      });
      if (res.pairs !== undefined) pairs.set(c.id, res.pairs);
    } else if (c.kind === 'preference') {
      const scores: Scored[] = batch.map(() => ({ missing: '' }));
      for (const g of groups) {
        const facts = g.map((i) => ({
          success: batch[i].outcome.success,
          turns: batch[i].outcome.turns,
          effects: effects[i],
        }));
        preferenceScores(facts, c.by).forEach((s, k) => {
          scores[g[k]] = s;
        });
      }
      perCriterion.push(scores);
    } else perCriterion.push(batch.map((t, i) => check(c, t, r, effects[i])));
  }

  const results = batch.map((_, i) => {
    const criteria = rubric.criteria.map((c, k): CriterionResult => {
      const s = perCriterion[k][i];
      const base = { id: c.id, kind: c.kind, weight: c.weight };
      if ('score' in s)
        return { ...base, score: s.score, ...(s.value === undefined ? {} : { value: s.value }) };
      return 'error' in s
        ? { ...base, score: null, error: s.error }
        : { ...base, score: null, missing: s.missing };
    });
    return { ...combine(rubric, criteria), criteria, calls: calls[i] };
  });
  return { results, pairs };
}

/** The combined score of one trajectory's criteria, the gates it failed and its judge errors. */
export function combine(
  rubric: Rubric,
  criteria: readonly CriterionResult[],
): { score: number | null; gates: string[]; judgeErrors: number } {
  const judgeErrors = criteria.filter((c) => c.error !== undefined).length;
  const failed = rubric.criteria.filter((c, k) => {
    const s = criteria[k].score;
    return c.gate !== undefined && s !== null && s < c.gate.pass;
  });
  if (failed.length > 0)
    return {
      score: Math.min(...failed.map((c) => (c.gate as { floor: number }).floor)),
      gates: failed.map((c) => c.id),
      judgeErrors,
    };
  const needed = rubric.criteria
    .map((c, k) => ({ c, s: criteria[k].score }))
    .filter(({ c }) => c.weight > 0 || c.gate !== undefined);
  if (needed.some(({ s }) => s === null)) return { score: null, gates: [], judgeErrors };
  let score = 0;
  for (const { c, s } of needed) score += c.weight * (s as number);
  return { score, gates: [], judgeErrors };
}

/** The trajectory with `score` as its reward: outcome.return, the last turn's reward, the others 0 (the
 * env's verdict, outcome.success, unchanged); as it was when the score is missing. What a training
 * loop's reward stage would hand to credit. */
export function rewarded(t: Trajectory, score: number | null): Trajectory {
  if (score === null) return t;
  const last = t.turns.length - 1;
  return {
    ...t,
    turns: t.turns.map((u, i) => ({ ...u, reward: i === last ? score : 0 })),
    outcome: { ...t.outcome, return: score },
  };
}

/** A scored trajectory, as a trajectory file holds it (see the head of this file). */
export function scoredLine(t: Trajectory, r: RubricResult, source: string): Record<string, unknown> {
  return {
    ...rewarded(t, r.score),
    rubric: {
      source,
      score: r.score,
      envReturn: t.outcome.return,
      envRewards: t.turns.map((u) => u.reward),
      criteria: r.criteria,
      gates: r.gates,
      judgeErrors: r.judgeErrors,
      calls: r.calls,
    },
  };
}

/** What `eval --reward` and `judge audit` print of a run: the mean score, the criteria's means, the
 * judge errors, and each pairwise criterion's position bias. */
export interface RubricSummary {
  rubric: string;
  trajectories: number;
  /** Trajectories with a score, and the mean of their scores (null when none has one). */
  scored: number;
  mean: number | null;
  /** Judge criterion scores missing by a judge error, over all trajectories, and the trajectories
   * that have at least one. */
  judgeErrors: number;
  withJudgeErrors: number;
  /** Trajectories whose score a gate set. */
  gated: number;
  /** The env's own success rate over the same trajectories, beside. */
  envSuccess: number;
  criteria: {
    id: string;
    kind: CriterionKind;
    weight: number;
    mean: number | null;
    scored: number;
    errors: number;
    missing: number;
  }[];
  positionBias: {
    criterion: string;
    bias: number | null;
    answers: number;
    firstWins: number;
    flipped: number;
    pairs: number;
  }[];
}

const meanOf = (xs: readonly number[]) =>
  xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length;

export function summarise(rubric: Rubric, batch: readonly Trajectory[], run: RubricRun): RubricSummary {
  const scores = run.results.map((r) => r.score).filter((s): s is number => s !== null);
  return {
    rubric: rubric.file,
    trajectories: batch.length,
    scored: scores.length,
    mean: meanOf(scores),
    judgeErrors: run.results.reduce((s, r) => s + r.judgeErrors, 0),
    withJudgeErrors: run.results.filter((r) => r.judgeErrors > 0).length,
    gated: run.results.filter((r) => r.gates.length > 0).length,
    envSuccess: batch.length === 0 ? 0 : batch.filter((t) => t.outcome.success).length / batch.length,
    criteria: rubric.criteria.map((c, k) => {
      const xs = run.results.map((r) => r.criteria[k]);
      const got = xs.map((x) => x.score).filter((s): s is number => s !== null);
      return {
        id: c.id,
        kind: c.kind,
        weight: c.weight,
        mean: meanOf(got),
        scored: got.length,
        errors: xs.filter((x) => x.error !== undefined).length,
        missing: xs.filter((x) => x.missing !== undefined).length,
      };
    }),
    positionBias: [...run.pairs].map(([criterion, p]) => ({
      criterion,
      bias: positionBias(p),
      answers: p.answers,
      firstWins: p.firstWins,
      flipped: p.flipped,
      pairs: p.pairs.length,
    })),
  };
}
