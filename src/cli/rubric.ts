// A rubric as the commands use it (`eval --reward rubric:FILE`, `judge audit --rubric`, `export --format
// preference`): the file read and checked, its judges' endpoints reached (or refused, naming the
// criterion's field) before any work, and what rewards/ may not reach itself assembled here — the
// envs' text views and chat encodings for transcripts, and the side effects of the tools env counted
// by replaying a trajectory's calls on the env and comparing its API state before and after each one
// (the one env that records a state an action can change besides the agent's own position; FrozenLake,
// sql, code and search record none).
import { InputError } from '../core/errors.ts';
import type { Task, ToolCall, Trajectory } from '../core/types.ts';
import { ENV_IDS, envSpec, makeEnv } from '../envs/index.ts';
import { canonical as apiState, type ToolsEnv } from '../envs/tools/index.ts';
import { chatSpec } from '../policies/chat.ts';
import type { RequestTotals } from '../policies/openai.ts';
import { canonical } from '../policies/transport.ts';
import type { SideEffectsOf } from '../rewards/checks.ts';
import { checkOneModel, type JudgeClient, judgeClients } from '../rewards/judge.ts';
import { judgesOf, loadRubric, type Rubric } from '../rewards/rubric.ts';
import {
  groupsOf,
  type RubricRun,
  type RubricSummary,
  scoredLine,
  scoreRubric,
  summarise,
} from '../rewards/score.ts';
import { isRecorded, type TaskView, Transcripts } from '../rewards/transcript.ts';
import { JsonlWriter } from '../store/jsonl.ts';
import { ReplayCache } from '../store/replay-cache.ts';
import { sumTotals } from './cache.ts';
import { fmt, table } from './io.ts';
import { totalsLine } from './openai-flags.ts';

/** `--reward SPEC`: `rubric:FILE.json` (the env's own reward is the default: no flag). */
export function rubricPath(raw: string, field = '--reward'): string {
  if (!raw.startsWith('rubric:') || raw.length === 'rubric:'.length)
    throw new InputError(field, raw, 'expected rubric:FILE.json (a rubric file: turnwise schema rubric)');
  return raw.slice('rubric:'.length);
}

export interface OpenedRubric {
  rubric: Rubric;
  judges: Map<string, JudgeClient>;
  cache?: ReplayCache;
}

/**
 * The rubric of `path` with its judges connected: each endpoint answers and lists its model, or the
 * command is refused naming the criterion's `judge` field (exit 2) before any work. With `cacheFile`,
 * the judges record their requests there and answer from it what it holds.
 */
export async function openRubric(
  path: string,
  o: {
    field?: string;
    keyEnv?: string;
    cacheFile?: string;
    cacheField?: string;
    /** What the command checks of the rubric before any endpoint is reached. */
    check?: (rubric: Rubric) => void;
  } = {},
): Promise<OpenedRubric> {
  const rubric = loadRubric(path, o.field);
  o.check?.(rubric);
  const specs = judgesOf(rubric).map((c) => ({
    judge: c.judge,
    options: c.options,
    field: `${rubric.file} ${c.at}.judge`,
  }));
  const judges = judgeClients(specs, process.env[o.keyEnv ?? 'OPENAI_API_KEY']);
  let cache: ReplayCache | undefined;
  if (o.cacheFile !== undefined) {
    const field = o.cacheField ?? '--cache';
    if (judges.size === 0)
      throw new InputError(
        field,
        o.cacheFile,
        `the rubric ${path} has no judge criterion: nothing to record`,
      );
    checkOneModel(
      [...judges.values()].map((j) => j.options.model),
      field,
      o.cacheFile,
    );
    cache = new ReplayCache(o.cacheFile, field);
    for (const j of judges.values()) j.useCache(cache, field);
  }
  for (const j of judges.values()) await j.connect();
  return { rubric, judges, cache };
}

/** Refuses, before any work, a rubric that cannot score these trajectories' env: side effects are
 * counted on the tools env only; a pairwise judge needs two samples of a task. */
export function checkRubricFor(
  rubric: Rubric,
  envIds: readonly string[],
  samples: number,
  field: string,
): void {
  for (const c of rubric.criteria) {
    const effects = c.kind === 'side-effects' || (c.kind === 'preference' && c.by.includes('side-effects'));
    const other = envIds.find((e) => e !== 'tools');
    if (effects && other !== undefined)
      throw new InputError(
        `${rubric.file} ${c.at}.kind`,
        c.kind,
        `side effects are counted on the tools env only (its API state), and env ${other} records none`,
      );
    if (c.kind === 'judge' && c.mode === 'pairwise' && samples < 2)
      throw new InputError(
        field,
        samples,
        `the rubric's pairwise judge (${c.at}) compares the samples of a task; give at least 2 samples a task`,
      );
  }
}

/** The largest group of a batch (the samples of its most sampled task). */
export const largestGroup = (batch: readonly Trajectory[]): number =>
  Math.max(0, ...groupsOf(batch).map((g) => g.length));

/** Transcripts of a batch: each registered task's env made once for its text view and chat encoding,
 * closed by close(). */
export function transcriptsFor(batch: readonly Trajectory[]): {
  transcripts: Transcripts;
  close(): Promise<void>;
} {
  const views = new Map<string, TaskView | undefined>();
  const made: { close?(): unknown }[] = [];
  const viewOf = (task: Task): TaskView | undefined => {
    const key = canonical(task);
    if (views.has(key)) return views.get(key);
    let view: TaskView | undefined;
    if (ENV_IDS.includes(task.env)) {
      const env = makeEnv(task);
      made.push(env);
      view = { text: env.text?.bind(env), chat: chatSpec(envSpec(task)) };
    }
    views.set(key, view);
    return view;
  };
  for (const t of batch) if (!t.turns.every(isRecorded)) viewOf(t.task);
  return {
    transcripts: new Transcripts(viewOf),
    close: async () => {
      for (const env of made) await env.close?.();
    },
  };
}

/** Side effects of a tools-env trajectory: its calls replayed on the env from the start, counting those
 * after which the API state differs from before. A replay whose validity or failure differs from the
 * recorded one is no replay: the count is refused with the reason. */
export const toolsSideEffects: SideEffectsOf = async (t) => {
  if (t.task.env !== 'tools') return `env ${t.task.env} records no side effects`;
  if (t.turns.some(isRecorded)) return 'recorded chat turns are not replayed';
  if (t.task.params.mode === 'choose')
    return "the slot variant's turns are not replayed (count: 'unrequested' reads the env's own count)";
  const env = makeEnv(t.task) as unknown as ToolsEnv;
  try {
    env.reset(t.task.seed);
    let count = 0;
    for (const turn of t.turns) {
      const before = apiState(env.state);
      const step = env.step(turn.action as ToolCall);
      if (step.info.valid !== turn.info.valid || step.info.failure !== turn.info.failure)
        return `turn ${turn.t} does not replay as recorded`;
      if (apiState(env.state) !== before) count++;
    }
    return count;
  } finally {
    env.close();
  }
};

/** The judges' request totals summed, with their cost where the rubric gives a judge's price. */
export function judgeTotals(opened: OpenedRubric): (RequestTotals & { cost?: number }) | undefined {
  if (opened.judges.size === 0) return undefined;
  const sum: RequestTotals & { cost?: number } = sumTotals(
    [...opened.judges.values()].map((j) => j.totals()),
  );
  for (const [spec, client] of opened.judges) {
    const price = judgesOf(opened.rubric).find((c) => c.judge === spec && c.price !== undefined)?.price;
    if (price === undefined) continue;
    const t = client.totals();
    sum.cost = (sum.cost ?? 0) + (t.promptTokens * price.in + t.completionTokens * price.out) / 1e6;
  }
  return sum;
}

const signed = (x: number | null) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${fmt(x)}`);

/** The text `eval --reward` prints of a rubric's run. */
export function rubricText(
  s: RubricSummary,
  totals: (RequestTotals & { cost?: number }) | undefined,
): string {
  const lines = [
    `rubric ${s.rubric}: mean score ${fmt(s.mean)} over ${s.scored} of ${s.trajectories} trajectories (env success ${fmt(s.envSuccess)} beside); judge errors ${s.judgeErrors}${s.withJudgeErrors > 0 ? ` (in ${s.withJudgeErrors} trajector${s.withJudgeErrors === 1 ? 'y' : 'ies'})` : ''}; scores set by a gate ${s.gated}`,
    table([
      ['criterion', 'kind', 'weight', 'mean', 'scored', 'judge errors', 'missing'],
      ...s.criteria.map((c) => [c.id, c.kind, c.weight, fmt(c.mean), c.scored, c.errors, c.missing]),
    ]),
  ];
  for (const p of s.positionBias)
    lines.push(
      `position bias of ${p.criterion}: ${signed(p.bias)} (${p.firstWins} of ${p.answers} answers preferred the first shown; ${p.flipped} of ${p.pairs} pairs flipped with the order)`,
    );
  if (totals !== undefined) lines.push(`judge ${totalsLine(totals)}`);
  return lines.join('\n');
}

/**
 * Scores a batch with an opened rubric (the judges' calls shown on `progress`), writes each scored
 * trajectory to `scoresFile` when given, and returns the run with its summary and the judges' totals.
 */
export async function scoreBatch(
  opened: OpenedRubric,
  batch: readonly Trajectory[],
  o: { scoresFile?: string; onProgress?: (done: number, total: number) => void } = {},
): Promise<{ run: RubricRun; summary: RubricSummary; totals: ReturnType<typeof judgeTotals> }> {
  const views = transcriptsFor(batch);
  let run: RubricRun;
  try {
    run = await scoreRubric(opened.rubric, batch, {
      transcripts: views.transcripts,
      judges: opened.judges,
      sideEffects: toolsSideEffects,
      onProgress: o.onProgress,
    });
  } finally {
    await views.close();
  }
  if (o.scoresFile !== undefined) {
    const w = new JsonlWriter(o.scoresFile);
    const source = `rubric:${opened.rubric.file}`;
    for (const [i, t] of batch.entries()) w.write(scoredLine(t, run.results[i], source));
    w.close();
  }
  return { run, summary: summarise(opened.rubric, batch, run), totals: judgeTotals(opened) };
}
