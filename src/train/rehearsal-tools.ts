// World-model rehearsal on a tool env (`train --rehearsal ratio=R` on search and sql; issue 29 item 1,
// EnvACE's spirit; docs/methods-measured.md). FrozenLake's model (rehearsal.ts) learns transition
// probabilities; a tool env's is a model of what its tools answer. On search and sql the tools answer a
// call the same way in every state of an episode — search: a query's hits, a document's text, an answer's
// verdict (the corpus is fixed); sql: the tables, a table's description, a query's rows or error, a
// submission's reward (the database is read-only) — and keep nothing between calls, so the model is a
// table per question, call → answer, filed from the real turns of the batch (the env reads a turn's call
// and answer: `toolAnswers()`), and exact where it has an entry. It grows over the run: a question met
// again finds what earlier iterations learned; the table is saved in the checkpoint.
//
// Rehearsal: R imagined episodes per real one (round(R·K) per task of the batch), played by the learner
// in an env whose tools answer from the table (`imagine`): the env's own logic — the offers of search's
// choice variant, its clue accounting, parsing — stays; only the tools' answers are the model's (an
// imagined sql env runs no query). A call the table has no entry for halts the episode with reward 0
// (MOReL's pessimistic halt: the model claims nothing it has not seen). Imagined groups get their
// advantages apart from the real ones, as on FrozenLake. What the imagined episodes can teach is what
// the real ones showed, recombined: a search made in one episode and an opening in another make one
// imagined path.
import { InputError } from '../core/errors.ts';
import type { EnvView, Task, ToolAnswers, Trajectory } from '../core/types.ts';
import { rollout } from '../rollout/batch.ts';
import type { RehearsalConfig, RehearsalState, RehearseOptions, ToolTableState } from './rehearsal.ts';
import { DEFAULT_KEEP, imaginedPerTask } from './rehearsal.ts';
import { budgetAt } from './schedule.ts';

const taskKey = (task: Task): string => JSON.stringify([task.env, task.params, task.seed]);

function answersOf(view: EnvView<unknown>, task: Task): ToolAnswers {
  const a = view.toolAnswers?.();
  if (a === undefined)
    throw new InputError('rehearsal', task.env, "learns a tool env's answers: this env does not record them");
  return a;
}

export class ToolModel {
  readonly config: RehearsalConfig;
  private readonly tables = new Map<string, Map<string, unknown>>();

  constructor(config: RehearsalConfig, state?: ToolTableState) {
    this.config = config;
    for (const [key, rows] of state ?? []) this.tables.set(key, new Map(rows));
  }

  /** Files every answer of the batch's real turns; returns how many were new, and how many contradicted
   * the answer on file for their call (0 for tools that keep no state). The tables of the `keep` questions
   * met most recently stay (the batch's always): a run over a large pool of questions, where one rarely
   * comes back, does not grow without bound. */
  learn(
    batch: readonly Trajectory[],
    viewOf: (task: Task) => EnvView<unknown>,
  ): { added: number; conflicts: number } {
    let added = 0;
    let conflicts = 0;
    const met = new Set<string>();
    for (const t of batch) {
      if (t.turns.length === 0) continue;
      const answers = answersOf(viewOf(t.task), t.task);
      const key = taskKey(t.task);
      let table = this.tables.get(key);
      if (table === undefined) table = new Map();
      // Most recently met last (a Map keeps insertion order, and the checkpoint keeps it).
      if (!met.has(key)) {
        this.tables.delete(key);
        this.tables.set(key, table);
        met.add(key);
      }
      t.turns.forEach((turn, i) => {
        const r = answers.answerOf(turn, t.turns[i + 1]?.observation);
        if (r === undefined) return;
        const had = table!.get(r.key);
        if (had === undefined) {
          table!.set(r.key, r.answer);
          added++;
        } else if (JSON.stringify(had) !== JSON.stringify(r.answer)) conflicts++;
      });
    }
    const keep = this.config.keep ?? DEFAULT_KEEP;
    for (const key of this.tables.keys()) {
      if (this.tables.size <= keep) break;
      if (!met.has(key)) this.tables.delete(key);
    }
    return { added, conflicts };
  }

  /** How many questions' tables are kept. */
  get questions(): number {
    return this.tables.size;
  }

  /** The answer on file for a task's call (undefined: never seen). */
  lookup(task: Task, call: string): unknown {
    return this.tables.get(taskKey(task))?.get(call);
  }

  /** Calls on file for a task. */
  known(task: Task): number {
    return this.tables.get(taskKey(task))?.size ?? 0;
  }

  /** Calls on file over every task. */
  get size(): number {
    let n = 0;
    for (const t of this.tables.values()) n += t.size;
    return n;
  }

  state(): RehearsalState {
    return { pooled: [], maps: [], tools: [...this.tables].map(([key, t]) => [key, [...t]]) };
  }
}

/** The stage of train/loop.ts on a tool env: the batch's answers filed, then round(R·K) imagined episodes
 * of each of its distinct tasks in envs answering from the table, with the iteration's budgets (samples
 * K, K+1, … of the task, as on FrozenLake). Randomness from (seed, iteration): a resumed run rehearses
 * the same episodes. */
export async function rehearseTools(
  model: ToolModel,
  batch: readonly Trajectory[],
  viewOf: (task: Task) => EnvView<unknown>,
  o: RehearseOptions,
): Promise<{ imagined: Trajectory[]; values: Record<string, number> }> {
  const { added, conflicts } = model.learn(batch, viewOf);
  const tasks: Task[] = [];
  const seen = new Set<string>();
  for (const t of batch) {
    const id = JSON.stringify(t.task);
    if (t.turns.length === 0 || seen.has(id)) continue;
    seen.add(id);
    tasks.push(t.task);
  }
  const K = o.groupSize;
  const imagined = await rollout({
    tasks,
    samples: imaginedPerTask(model.config, K),
    budget: (task, sample) => budgetAt(o.budget, o.seed, o.iter, task.seed, K + sample),
    revealBudget: o.revealBudget,
    runSeed: o.runSeed,
    policy: o.policy,
    makeEnv: (task) => answersOf(viewOf(task), task).imagine((call) => model.lookup(task, call)),
    idPrefix: `i${o.iter}-imagined-`,
  });
  const n = Math.max(1, imagined.length);
  const steps = imagined.reduce((a, t) => a + t.turns.length, 0);
  return {
    imagined,
    values: {
      'rehearsal/imagined_episodes': imagined.length,
      'rehearsal/imagined_steps': steps,
      'rehearsal/imagined_success': imagined.filter((t) => t.outcome.success).length / n,
      'rehearsal/halted': imagined.filter((t) => t.turns.at(-1)?.info.halted === true).length / n,
      'rehearsal/real_steps': batch.reduce((a, t) => a + t.turns.length, 0),
      'rehearsal/known_calls': model.size,
      'rehearsal/questions': model.questions,
      'rehearsal/new_calls': added,
      'rehearsal/conflicts': conflicts,
    },
  };
}
