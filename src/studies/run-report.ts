// `turnwise report RUN` for runs that are not studies, composed: the run found on disk as the dashboard
// finds it (ui/runs.ts), its numbers read (metrics from the run store, outcomes from the store's columns
// or the file's index), and drawn by report/runs.ts; and `--trajectory ID`, one trajectory turn by turn
// (report/trajectory.ts) with each observation drawn for its env — FrozenLake's board with the agent and
// its path, a tool call and its result (a SQL result as a table, code as code), a text policy's output
// with its tokens' log-probs — and credit columns that are `turnwise credit --in`'s row for it (ui/credit.ts).
import { InputError } from '../core/errors.ts';
import { FAILURE_KINDS, type Trajectory, type Turn } from '../core/types.ts';
import { canonicalJson, type MethodSpec, parseMethodSpec } from '../credit/index.ts';
import { ENV_IDS, envSpec, makeEnv } from '../envs/index.ts';
import {
  type BoardCell,
  board,
  type CreditColumn,
  codeBlock,
  escapeText,
  jsonBlock,
  type SummaryValue,
  type TaskRow,
  type TurnView,
  textBlock,
  toolCall,
  toolResult,
  trainingReport,
  trajectoriesReport,
  trajectoryPage,
} from '../report/index.ts';
import { SummaryAccumulator } from '../rollout/summary.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { RunStore } from '../store/sqlite.ts';
import { type CreditOf, creditColumns } from '../ui/credit.ts';
import { type FoundRun, readJson, runAt, storeMetrics } from '../ui/runs.ts';
import { tokenTextOf } from '../ui/tokens.ts';
import { findTrajectory, outcomeRows, trajectoryAt } from '../ui/trajectories.ts';
import { uiVocabularies } from './ui-policies.ts';

/** The credit columns of a trajectory page: GRPO (every env) and the exact advantage (where the env
 * has an oracle and the policy an explicit distribution). */
export const PAGE_CREDIT = ['grpo', 'exact'] as const;

/** A run `report` renders besides studies — a training or harness run directory, or a trajectory
 * file — or undefined (a study, or not a run). */
export function reportableRun(path: string): FoundRun | undefined {
  const found = runAt(path);
  return found !== undefined && ['train', 'harness', 'file'].includes(found.info.kind) ? found : undefined;
}

const facts = (found: FoundRun): [string, SummaryValue][] => [
  ['run', found.info.id],
  ['kind', found.info.kind],
  ['status', found.info.status],
  ['started', found.info.started],
  ['seconds', found.info.seconds],
];

/** A config field as a fact: a string as it is, anything else as JSON. */
const json = (x: unknown) =>
  x === null || x === undefined ? null : typeof x === 'string' ? x : JSON.stringify(x);

function storeConfig(found: FoundRun): unknown {
  const source = found.source;
  if (source === null || !('store' in source)) return undefined;
  const store = new RunStore(source.store, 'run', true);
  try {
    return store.run(source.run)?.config;
  } finally {
    store.close();
  }
}

/** A training run's page: its metrics (the store's rows), config.json and summary.json's `final`. */
function trainingPage(found: FoundRun): string {
  const dir = found.dir!;
  const config = readJson(`${dir}/config.json`) ?? storeConfig(found) ?? null;
  const c = (config ?? {}) as Record<string, unknown>;
  const summary = readJson(`${dir}/summary.json`);
  const source = found.source as { store: string; run: string };
  return trainingReport({
    id: found.info.id,
    facts: [
      ...facts(found),
      ['algo', json(c.algo)],
      ['policy', json(c.policy)],
      ['env', json(c.env)],
      ['iterations', `${found.info.headline.iterations} of ${found.info.headline.of ?? '?'}`],
    ],
    config,
    final: (summary?.final as Record<string, unknown> | undefined) ?? null,
    metrics: storeMetrics(source.store, source.run),
  });
}

/** A harness run's or a trajectory file's page: outcomes, failure kinds, each task's success. */
function trajectoriesPage(found: FoundRun, spacesOf: SpacesOf): string {
  const acc = new SummaryAccumulator();
  const tasks = new Map<
    string,
    Omit<TaskRow, 'task' | 'meanTurns'> & { turns: number; seed: number; label: string }
  >();
  const envs = new Set<string>();
  const policies = new Set<string>();
  const budgets = new Set<number>();
  for (const r of outcomeRows(found.source!, spacesOf)) {
    const outcome = {
      success: r.success,
      turns: r.turns,
      failure: r.failure as Trajectory['outcome']['failure'],
    };
    acc.add({ outcome } as Pick<Trajectory, 'outcome'>);
    const config = canonicalJson({ env: r.task.env, params: r.task.params });
    envs.add(config);
    policies.add(r.policy);
    budgets.add(r.budget);
    const key = `${config}|${r.task.seed}`;
    let t = tasks.get(key);
    if (t === undefined) {
      const label = `${r.task.env} ${JSON.stringify(r.task.params)}`;
      t = { label, seed: r.task.seed, samples: 0, successes: 0, turns: 0, failures: {} };
      tasks.set(key, t);
    }
    t.samples++;
    t.turns += r.turns;
    if (r.success) t.successes++;
    else if (r.failure !== null) t.failures[r.failure] = (t.failures[r.failure] ?? 0) + 1;
  }
  const s = acc.result();
  const rows: TaskRow[] = [...tasks.values()].map(({ turns, seed, label, ...t }) => ({
    ...t,
    // One env configuration: a task is its seed (the configuration is in the summary).
    task: envs.size === 1 ? `seed ${seed}` : `${label} seed ${seed}`,
    meanTurns: turns / t.samples,
  }));
  const one = <T>(xs: Set<T>) => (xs.size === 1 ? [...xs][0] : `${xs.size} different`);
  return trajectoriesReport({
    title: `${found.info.kind === 'harness' ? 'Harness run' : 'Trajectories'} ${found.info.id}`,
    facts: [
      ...facts(found),
      ['env', envs.size === 1 ? [...envs][0] : `${envs.size} configurations`],
      ['policy', String(one(policies))],
      ['budget', typeof one(budgets) === 'number' ? (one(budgets) as number) : String(one(budgets))],
    ],
    episodes: s.episodes,
    successes: Math.round(s.success * s.episodes),
    meanTurns: s.meanTurns,
    meanTurnsSuccess: s.meanTurnsSuccess,
    failures: Object.fromEntries(FAILURE_KINDS.map((k) => [k, s.failures[k] ?? 0])),
    tasks: rows,
    config: found.info.kind === 'harness' ? storeConfig(found) : undefined,
  });
}

/** The page of a run that is not a study. */
export function runReportPage(found: FoundRun, spacesOf: SpacesOf): string {
  return found.info.kind === 'train' ? trainingPage(found) : trajectoriesPage(found, spacesOf);
}

/** FrozenLake's board at a turn, from its text view (one character a cell: _ ice, O hole, G goal; P,
 * X, √ the agent on ice, in a hole, on the goal; state s is row ⌊s/ncol⌋, column s mod ncol). */
function frozenLakeBoard(text: string, start: number, visited: ReadonlySet<number>, t: number): string {
  const rows = text.split('\n').map((r) => [...r]);
  const ncol = rows[0].length;
  const KIND: Record<string, BoardCell['kind']> = { O: 'hole', X: 'hole', G: 'goal', '√': 'goal' };
  const cells = rows.map((row, r) =>
    row.map((ch, c): BoardCell => {
      const s = r * ncol + c;
      return {
        kind: KIND[ch] ?? (s === start ? 'start' : 'ice'),
        agent: ch === 'P' || ch === 'X' || ch === '√',
        path: visited.has(s),
      };
    }),
  );
  return board(cells, `the board before turn ${t}`);
}

/** A one-line excerpt of an action (the credit table's column). */
const short = (s: string) => {
  const line = s.replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
};

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** A tool env's observation: its text fields (shown again only when they change), the last tool's
 * result, and any other field as JSON. */
function toolObservation(o: Record<string, unknown>, previous: Record<string, unknown> | undefined): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (k === 'last') {
      if (isObject(v)) parts.push(toolResult(v));
    } else if (typeof v === 'string' && v.length > 40) {
      parts.push(previous?.[k] === v ? `<div class="tool">${escapeText(k)}: as before</div>` : textBlock(v));
    } else
      parts.push(`<div class="tool">${escapeText(k)}: ${escapeText(JSON.stringify(v) ?? 'undefined')}</div>`);
  }
  return parts.join('');
}

/** Each turn drawn for its env: a registered discrete env through its text view (FrozenLake as a
 * board), a tool env's observation and call as such, anything else as text or JSON. */
function turnViews(t: Trajectory, labels?: Readonly<Record<string, string>>): TurnView[] {
  const registered = ENV_IDS.includes(t.task.env);
  const spec = registered ? envSpec(t.task) : undefined;
  const discrete = spec !== undefined && typeof spec.actions === 'number';
  const env = discrete ? makeEnv(t.task) : undefined;
  try {
    const names = spec?.chat?.names;
    const visited = new Set<number>();
    return t.turns.map((turn: Turn, i) => {
      let observation: string;
      if (env?.text !== undefined && t.task.env === 'frozenlake' && typeof turn.observation === 'number') {
        observation = frozenLakeBoard(
          env.text(turn.observation),
          t.turns[0].observation as number,
          visited,
          i,
        );
        visited.add(turn.observation);
      } else if (env?.text !== undefined) observation = textBlock(env.text(turn.observation));
      else if (typeof turn.observation === 'string') observation = textBlock(turn.observation);
      else if (isObject(turn.observation)) {
        const previous = t.turns[i - 1]?.observation;
        observation = toolObservation(turn.observation, isObject(previous) ? previous : undefined);
      } else observation = jsonBlock(turn.observation);
      const a = turn.action;
      let action: string;
      if (typeof a === 'number' && names?.[a] !== undefined)
        action = `<strong>${escapeText(names[a])}</strong> (${a})`;
      else if (isObject(a) && typeof a.name === 'string' && isObject(a.arguments))
        action = toolCall(a.name, a.arguments);
      else if (typeof a === 'string') action = codeBlock(a);
      else action = jsonBlock(a);
      const actionText =
        typeof a === 'number' && names?.[a] !== undefined
          ? `${names[a]} (${a})`
          : isObject(a) && typeof a.name === 'string'
            ? short(
                `${a.name}(${Object.entries(isObject(a.arguments) ? a.arguments : {})
                  .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
                  .join(', ')})`,
              )
            : short(typeof a === 'string' ? a : (JSON.stringify(a) ?? ''));
      const trace = turn.trace;
      if (trace?.text !== undefined && trace.text !== a)
        action += `<div class="tool">model output:</div>${codeBlock(trace.text)}`;
      if (trace?.invalid !== undefined)
        action += `<div class="tool">invalid: ${escapeText(trace.invalid)}</div>`;
      return {
        t: i,
        observation,
        action,
        actionText,
        logp: turn.logp,
        tokens:
          trace?.logprobs === undefined
            ? undefined
            : { logprobs: trace.logprobs, ids: trace.tokens, ...(labels === undefined ? {} : { labels }) },
        reward: turn.reward,
        info: turn.info as Record<string, unknown>,
        forced: turn.forced,
        call:
          trace === undefined
            ? undefined
            : {
                model: trace.model,
                latencyMs: trace.latencyMs,
                usage: trace.usage,
                retries: trace.retries,
                finishReason: trace.finishReason,
              },
      };
    });
  } finally {
    void env?.close?.();
  }
}

/** The page of one trajectory of a run, found by its id; a run without it is refused (one line). */
export function trajectoryReportPage(
  found: FoundRun,
  id: string,
  o: { spacesOf: SpacesOf; credit: CreditOf },
): string {
  const source = found.source;
  if (source === null) throw new InputError('--trajectory', id, `run ${found.info.id} keeps no trajectories`);
  const index = findTrajectory(source, id, o.spacesOf);
  if (index === undefined)
    throw new InputError(
      '--trajectory',
      id,
      `no trajectory with this id in ${found.info.id} (its ids are listed by \`turnwise ui\`: GET /api/runs/:id/trajectories)`,
    );
  const t = trajectoryAt(source, index, o.spacesOf);
  if (t === undefined) throw new InputError('--trajectory', id, `no trajectory ${index} in ${found.info.id}`);
  const credit: CreditColumn[] = [];
  const notes = [
    `Credit: each column is \`turnwise credit --in FILE --method M\`’s row for this trajectory, computed over the run (a group’s baseline is its task’s other samples). GRPO: (R_i − mean)/(std + ε) of the task’s group; exact: A^π = Q^π − V^π of the policy that played, from the env’s oracle.`,
  ];
  for (const m of PAGE_CREDIT) {
    const spec: MethodSpec = parseMethodSpec(m, 'credit', ['exact']);
    try {
      credit.push({ label: m, values: creditColumns(source, index, [spec], o.credit, o.spacesOf)[m] });
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      notes.push(`No ${m} column: ${e.message.replace(/^credit: (got "[^"]*"; )?/, '')}`);
    }
  }
  // Token chips as text where the run saved its transformer's tokenizer (ui/tokens.ts, as the dashboard).
  const text = tokenTextOf(found, t, uiVocabularies());
  if (text !== null)
    notes.push(
      text.from === null
        ? `Token chips show ids: ${text.reason}.`
        : `Token chips show each token's text (whitespace as · ↵ ⇥, bytes of a partial character as \\xNN), from the tokenizer in ${text.from}; the id is in each chip's tooltip.`,
    );
  const out = t.outcome;
  return trajectoryPage({
    title: `Trajectory ${t.id}`,
    subtitle: `${found.info.id}, trajectory ${index}: ${t.task.env}, ${out.success ? 'succeeded' : `failed (${out.failure ?? out.end})`} in ${out.turns} turns`,
    facts: [
      ['run', found.info.id],
      ['trajectory', t.id],
      ['index', index],
      ['env', t.task.env],
      ['params', JSON.stringify(t.task.params)],
      ['task seed', t.task.seed],
      ['policy', t.policy],
      ['budget', t.budget],
      ['budget revealed', t.revealBudget],
      ['success', out.success],
      ['return', out.return],
      ['turns', out.turns],
      ['first success turn', out.firstSuccessTurn],
      ['end', out.end],
      ['failure', out.failure],
      ...(out.error === undefined ? [] : [['error', out.error] as [string, SummaryValue]]),
    ],
    turns: turnViews(t, text?.from === null ? undefined : text?.labels),
    credit,
    notes,
  });
}
