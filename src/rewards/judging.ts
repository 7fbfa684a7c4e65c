// The three ways a judge criterion scores trajectories, each giving every trajectory a score in
// [0, 1] or a judge error:
//
//   pointwise  one call per trajectory; its answer, on the criterion's scale, mapped to [0, 1].
//   pairwise   within each group (the samples of one task), every pair asked in both orders; with
//              v = 1 when the judge prefers the first shown, the pair's preference for i over j is
//              p_ij = (v(i, j) + 1 − v(j, i)) / 2 and i's score the mean of p_ij over its group-mates.
//              Position bias: the share of answers that prefer the first shown, minus ½ — each pair
//              is shown both ways, so a judge that follows its preference alone prefers the first
//              exactly half the time, and what is beyond ½ is the position's (METHODS.md §8).
//   group      the K trajectories of a group ranked together in one prompt, as OpenPipe's RULER does
//              (its answer `{"scores": [{"trajectory_id": "1", "explanation": …, "score": 0.8}, …]}`);
//              the scores feed the group baselines like any reward.
//
// A judge error touching a trajectory (its own call; in pairwise mode any call of a pair it is in; in
// group mode its group's call) leaves its score missing: an average over the answers that remain
// would be a silent reweighting.
import type { Trajectory } from '../core/types.ts';
import { fillPrompt, type JudgeClient, readChoice, readGroup, readPoint } from './judge.ts';
import { type JudgeCriterion, type JudgeMode, type Message, normalise } from './rubric.ts';
import type { Transcripts } from './transcript.ts';

/** One call of a judge, as recorded with every trajectory it showed. */
export interface JudgeCall {
  criterion: string;
  mode: JudgeMode;
  /** The ids of the trajectories shown, in the order shown. */
  shown: string[];
  prompt: Message[];
  /** The judge's answer (null when the request failed or it wrote nothing). */
  response: string | null;
  /** What the parser read: a value on the scale (pairwise: 1 = the first shown is better; group: one
   * per trajectory shown). */
  parsed?: number | number[];
  error?: string;
}

export type JudgeScore = { score: number } | { error: string } | { missing: string };

/** Pairwise mode's answers, for position bias and the audit. */
export interface PairAnswers {
  /** Per pair (batch indices i < j): v with i shown first, and v with j shown first (1 = first better). */
  pairs: { i: number; j: number; first: number; second: number }[];
  /** Answers read, and those that preferred the trajectory shown first. */
  answers: number;
  firstWins: number;
  /** Pairs whose two answers preferred the same position (the verdict flipped with the order). */
  flipped: number;
}

export interface JudgeResult {
  /** Per trajectory of the batch. */
  scores: JudgeScore[];
  /** Per trajectory of the batch, the calls that showed it. */
  calls: JudgeCall[][];
  pairs?: PairAnswers;
}

/** Runs `f` over items with at most `n` in flight (the transport limits HTTP; this bounds memory). */
async function inChunks<T>(items: readonly T[], n: number, f: (x: T) => Promise<void>): Promise<void> {
  for (let k = 0; k < items.length; k += n) await Promise.all(items.slice(k, k + n).map(f));
}
const CHUNK = 256;

/** Scores `batch` (its groups: index lists of the same task) with one judge criterion. */
export async function runJudge(
  c: JudgeCriterion,
  client: JudgeClient,
  batch: readonly Trajectory[],
  groups: readonly (readonly number[])[],
  r: Transcripts,
  onCall?: () => void,
): Promise<JudgeResult> {
  const scores: JudgeScore[] = batch.map(() => ({ missing: 'not judged' }));
  const calls: JudgeCall[][] = batch.map(() => []);
  // A call is recorded with its trajectories when it is made (in the batch's order, whatever order
  // the answers come back in), and completed when its answer arrives.
  const ask = async (shown: number[], values: Record<string, string>): Promise<JudgeCall> => {
    const prompt = fillPrompt(c.prompt, values);
    const call: JudgeCall = {
      criterion: c.id,
      mode: c.mode,
      shown: shown.map((i) => batch[i].id),
      prompt,
      response: null,
    };
    for (const i of shown) calls[i].push(call);
    const reply = await client.ask(prompt);
    onCall?.();
    if ('error' in reply) call.error = reply.error;
    else call.response = reply.text;
    return call;
  };

  if (c.mode === 'pointwise') {
    await inChunks(
      batch.map((_, i) => i),
      CHUNK,
      async (i) => {
        const t = batch[i];
        const values = {
          task: r.task(t),
          transcript: r.transcript(t),
          final: r.final(t),
          last_observation: r.lastObservation(t),
          turns: String(t.outcome.turns),
        };
        const call = await ask([i], values);
        const v =
          call.response === null
            ? { error: call.error as string }
            : readPoint(call.response, c.parser, c.scale, values);
        if ('error' in v) {
          call.error = v.error;
          scores[i] = { error: v.error };
        } else {
          call.parsed = v.value;
          scores[i] = { score: normalise(v.value, c.scale) };
        }
      },
    );
    return { scores, calls };
  }

  if (c.mode === 'group') {
    await inChunks(groups, CHUNK, async (g) => {
      const t0 = batch[g[0]];
      const transcripts = g
        .map((i, k) => {
          const t = batch[i];
          return `Trajectory ${k + 1} (${t.outcome.turns} turns):\n${r.transcript(t)}\nFinal action: ${r.final(t)}`;
        })
        .join('\n\n');
      const call = await ask([...g], { task: r.task(t0), transcripts, k: String(g.length) });
      const v =
        call.response === null
          ? { error: call.error as string }
          : readGroup(
              call.response,
              c.parser as Extract<typeof c.parser, { kind: 'json' }>,
              c.scale,
              g.length,
            );
      if ('error' in v) {
        call.error = v.error;
        for (const i of g) scores[i] = { error: v.error };
      } else {
        call.parsed = v.value;
        g.forEach((i, k) => {
          scores[i] = { score: normalise(v.value[k], c.scale) };
        });
      }
    });
    return { scores, calls };
  }

  // Pairwise: every pair of a group, in both orders.
  const parser = c.parser as Extract<typeof c.parser, { kind: 'choice' }>;
  const pairs: { i: number; j: number }[] = [];
  for (const g of groups) {
    if (g.length === 1) scores[g[0]] = { missing: 'alone in its group: no pair to compare' };
    for (let a = 0; a < g.length; a++)
      for (let b = a + 1; b < g.length; b++) pairs.push({ i: g[a], j: g[b] });
  }
  const answers: PairAnswers = { pairs: [], answers: 0, firstWins: 0, flipped: 0 };
  const errors = new Map<number, string>();
  const shownAs = (x: number, y: number) => {
    const [a, b] = [batch[x], batch[y]];
    return {
      task: r.task(a),
      transcript_a: r.transcript(a),
      transcript_b: r.transcript(b),
      final_a: r.final(a),
      final_b: r.final(b),
      turns_a: String(a.outcome.turns),
      turns_b: String(b.outcome.turns),
    };
  };
  const read = (call: JudgeCall): number | undefined => {
    if (call.response === null) return undefined;
    const v = readChoice(call.response, parser);
    if ('error' in v) {
      call.error = v.error;
      return undefined;
    }
    call.parsed = v.value;
    answers.answers++;
    answers.firstWins += v.value;
    return v.value;
  };
  const wins = new Map<number, number[]>();
  await inChunks(pairs, CHUNK, async ({ i, j }) => {
    const [one, two] = await Promise.all([ask([i, j], shownAs(i, j)), ask([j, i], shownAs(j, i))]);
    const first = read(one);
    const second = read(two);
    if (first === undefined || second === undefined) {
      const error = (first === undefined ? one.error : two.error) as string;
      if (!errors.has(i)) errors.set(i, error);
      if (!errors.has(j)) errors.set(j, error);
      return;
    }
    answers.pairs.push({ i, j, first, second });
    if (first === second) answers.flipped++;
    const p = (first + 1 - second) / 2;
    wins.set(i, [...(wins.get(i) ?? []), p]);
    wins.set(j, [...(wins.get(j) ?? []), 1 - p]);
  });
  for (const g of groups) {
    if (g.length === 1) continue;
    for (const i of g) {
      const e = errors.get(i);
      const ps = wins.get(i) ?? [];
      scores[i] = e !== undefined ? { error: e } : { score: ps.reduce((s, x) => s + x, 0) / ps.length };
    }
  }
  answers.pairs.sort((a, b) => a.i - b.i || a.j - b.j);
  return { scores, calls, pairs: answers };
}

/** Position bias of pairwise answers: P(the first shown is preferred) − ½ (null with no answer). */
export const positionBias = (p: PairAnswers): number | null =>
  p.answers === 0 ? null : p.firstWins / p.answers - 0.5;
