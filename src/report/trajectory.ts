// One trajectory, turn by turn, as one self-contained page a person can attach to a bug report
// (`turnwise report RUN --trajectory ID`): what the agent saw at each turn, what it did with which
// log-prob (per token for a text policy), the reward, the env's info, the model call's timing and tokens,
// and a column per credit method. The pieces an observation or an action is drawn with — a grid board,
// a tool call, a tool's result (a SQL table), code, text — are plain functions of plain data; which piece
// shows what of an env is the caller's choice (studies/run-report.ts). Nothing is fetched: the page's
// own CSS is inlined with the report's (report/html.ts).
import { contrastText, diverging, sequential } from './color.ts';
import {
  escapeAttr,
  escapeText,
  formatNumber,
  keyValues,
  page,
  paragraph,
  type SummaryValue,
  section,
} from './html.ts';
import { table } from './table.ts';

const CSS = `
.board{border-collapse:collapse;margin:.25rem 0;font:600 .8rem/1 ui-monospace,monospace}
.board td{width:1.45rem;height:1.45rem;padding:0;text-align:center;vertical-align:middle;border:1px solid var(--rule)}
.board .ice{background:#dcecf7;color:#1b1f24}.board .start{background:#c9e2f2;color:#1b1f24}
.board .hole{background:#1b1f24;color:#ffffff}.board .goal{background:#f3d36b;color:#1b1f24}
.board .path{box-shadow:inset 0 0 0 2px #0a5ea8}.board .agent{outline:3px solid #d55e00;outline-offset:-3px}
.obs-text{white-space:pre-wrap;margin:0 0 .4rem;max-width:36rem}
.tool{font:.85rem ui-monospace,monospace}
.tok{display:inline-block;margin:1px;padding:0 .25rem;border-radius:3px;font:.75rem ui-monospace,monospace;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
.credit{display:inline-block;min-width:4.5rem;padding:.05rem .3rem;border-radius:3px;text-align:right;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
.turn{border-top:1px solid var(--rule);padding:.25rem 0 .75rem}.turn h3{margin:.75rem 0 .5rem}
.turn-body{display:flex;flex-wrap:wrap;gap:.75rem 2rem;align-items:flex-start}
.turn-body>div{min-width:0;max-width:100%}.seen{flex:0 1 auto}.done{flex:1 1 16rem}
.done dl.kv{margin:.5rem 0}.turn pre{max-height:20rem}
`
  .trim()
  .replace(/\n/g, '');

/** A cell of a grid board. */
export interface BoardCell {
  kind: 'start' | 'ice' | 'hole' | 'goal';
  /** The agent is here now. */
  agent?: boolean;
  /** The agent has been here before this turn. */
  path?: boolean;
}

const CELL_TEXT: Record<BoardCell['kind'], string> = { start: 'S', ice: '', hole: 'H', goal: 'G' };

/** A grid board (FrozenLake's): letters for the cells (S, H, G), ● for the agent, · for where it has
 * been — readable without colour. */
export function board(cells: readonly (readonly BoardCell[])[], label: string): string {
  const rows = cells.map(
    (row) =>
      `<tr>${row
        .map((c) => {
          const cls = [c.kind, c.path ? 'path' : '', c.agent ? 'agent' : '']
            .filter((x) => x !== '')
            .join(' ');
          const text = c.agent ? '●' : c.path && c.kind === 'ice' ? '·' : CELL_TEXT[c.kind];
          return `<td class="${cls}">${text}</td>`;
        })
        .join('')}</tr>`,
  );
  return `<table class="board" aria-label="${escapeAttr(label)}">${rows.join('')}</table>`;
}

/** Text as it was shown (line breaks kept). */
export function textBlock(text: string): string {
  return `<div class="obs-text">${escapeText(text)}</div>`;
}

/** Code or a query, in a block of its own. */
export function codeBlock(text: string): string {
  return `<pre><code>${escapeText(text)}</code></pre>`;
}

/** A JSON value, indented. */
export function jsonBlock(value: unknown): string {
  return codeBlock(JSON.stringify(value, null, 2) ?? 'undefined');
}

/** A tool call: its name and arguments on one line, or — with a long or multi-line string argument
 * (code, SQL) — each argument on a line of its own, such a string as a block. */
export function toolCall(name: string, args: Record<string, unknown>): string {
  const entries = Object.entries(args);
  const long = (v: unknown) => typeof v === 'string' && (v.includes('\n') || v.length > 40);
  const inline = (k: string, v: unknown) =>
    `${escapeText(k)}: ${escapeText(JSON.stringify(v) ?? 'undefined')}`;
  if (!entries.some(([, v]) => long(v)))
    return `<div class="tool"><strong>${escapeText(name)}</strong>(${entries.map(([k, v]) => inline(k, v)).join(', ')})</div>`;
  const parts = entries.map(([k, v]) =>
    long(v)
      ? `<div class="tool">${escapeText(k)}:</div>${codeBlock(v as string)}`
      : `<div class="tool">${inline(k, v)}</div>`,
  );
  return `<div class="tool"><strong>${escapeText(name)}</strong>(</div>${parts.join('')}<div class="tool">)</div>`;
}

const isRow = (x: unknown): x is unknown[] => Array.isArray(x);
const cellText = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** A tool's result: a result set (`columns` of names, `rows` of arrays) as a table, a table's schema
 * (`columns` of {name, type, …}) as a table, anything else as JSON; an error as its message. */
export function toolResult(result: { tool?: unknown; ok?: unknown; [k: string]: unknown }): string {
  const { tool, ok, ...rest } = result;
  const head = `<div class="tool">${escapeText(String(tool ?? 'tool'))} → ${ok === false ? 'error' : 'ok'}</div>`;
  const output = rest.output as { columns?: unknown; rows?: unknown } | undefined;
  if (
    output !== undefined &&
    Array.isArray(output.columns) &&
    Array.isArray(output.rows) &&
    output.rows.every(isRow)
  ) {
    const columns = output.columns.map(cellText);
    const { columns: _c, rows, ...more } = output as { columns: unknown[]; rows: unknown[][] };
    const extra = Object.keys(more).length > 0 ? jsonBlock(more) : '';
    return (
      head +
      table(
        columns,
        rows.map((r) => r.map(cellText)),
      ) +
      extra
    );
  }
  if (
    output !== undefined &&
    Array.isArray(output.columns) &&
    output.columns.every((c) => typeof c === 'object' && c !== null)
  ) {
    const cols = output.columns as Record<string, unknown>[];
    const keys = [...new Set(cols.flatMap((c) => Object.keys(c)))];
    const { columns: _c, ...more } = output as Record<string, unknown>;
    return (
      head +
      table(
        keys,
        cols.map((c) => keys.map((k) => (c[k] === undefined ? '' : cellText(c[k])))),
      ) +
      jsonBlock(more)
    );
  }
  return head + jsonBlock(rest);
}

/** A text policy's action tokens, each coloured by its probability (viridis: dark = unlikely) and
 * labelled with its text where `labels` has its id (what the tokenizer saved with the policy makes of
 * it: ui/tokens.ts), else with its id; the id and log-prob in its tooltip. */
export function tokenStrip(
  logprobs: readonly number[],
  ids?: readonly number[],
  labels?: Readonly<Record<string, string>>,
): string {
  return `<div>${logprobs
    .map((lp, i) => {
      const p = Math.exp(lp);
      const bg = sequential(Number.isFinite(p) ? p : 0);
      const id = ids?.[i];
      const label = id === undefined ? undefined : labels?.[id];
      return `<span class="tok" style="background:${bg};color:${contrastText(bg)}" title="token ${i}${id === undefined ? '' : ` (id ${id})`}: log-prob ${formatNumber(lp, 4)}, p ${formatNumber(p, 3)}">${label === undefined ? (id ?? i) : escapeText(label)}</span>`;
    })
    .join('')}</div>`;
}

/** One turn as the page shows it. Markup fields are trusted (the pieces above). */
export interface TurnView {
  t: number;
  observation: string;
  action: string;
  /** The action in a few words (the credit table's column): `Left (0)`, `execute_sql(query: …)`. */
  actionText: string;
  logp: number;
  /** A text policy's per-token log-probs (and token ids, and their text where the tokenizer is known),
   * where recorded. */
  tokens?: {
    logprobs: readonly number[];
    ids?: readonly number[];
    labels?: Readonly<Record<string, string>>;
  };
  reward: number;
  info: Record<string, unknown>;
  forced?: boolean;
  /** A model call's timing and tokens, where recorded. */
  call?: {
    model?: string;
    latencyMs?: number;
    usage?: { prompt: number; completion: number; cached?: number };
    retries?: number;
    finishReason?: string;
  };
}

export interface CreditColumn {
  /** The method as `turnwise credit --method` names it. */
  label: string;
  /** One advantage per turn. */
  values: readonly number[];
}

export interface TrajectoryPageOptions {
  title: string;
  subtitle?: string;
  /** The trajectory's facts: run, id, task, policy, budget, outcome. */
  facts: readonly (readonly [string, SummaryValue])[];
  turns: readonly TurnView[];
  credit: readonly CreditColumn[];
  /** Sentences above the credit table (how the columns were computed, why one is missing). */
  notes?: readonly string[];
  footer?: string;
}

/** An advantage, coloured on the diverging scale of its column (blue above 0, red below). */
function creditCell(a: number, limit: number): string {
  const bg = diverging(a, limit);
  return `<span class="credit" style="background:${bg};color:${contrastText(bg)}">${formatNumber(a, 4, { signed: true })}</span>`;
}

function callText(c: NonNullable<TurnView['call']>): string {
  const parts: string[] = [];
  if (c.model !== undefined) parts.push(c.model);
  if (c.latencyMs !== undefined) parts.push(`${formatNumber(c.latencyMs, 0)} ms`);
  if (c.usage !== undefined)
    parts.push(
      `${c.usage.prompt} + ${c.usage.completion} tokens${c.usage.cached === undefined ? '' : ` (${c.usage.cached} cached)`}`,
    );
  if (c.retries !== undefined && c.retries > 0) parts.push(`${c.retries} retries`);
  if (c.finishReason !== undefined) parts.push(c.finishReason);
  return parts.join(' · ');
}

/** Facts with whole numbers (indexes, seeds, counts) as they are, not with decimals. */
export function wholeNumbers(facts: readonly (readonly [string, SummaryValue])[]): [string, SummaryValue][] {
  return facts.map(([k, v]) => [k, typeof v === 'number' && Number.isInteger(v) ? String(v) : v]);
}

/** A pair of the key–value list of a turn, its value trusted markup. */
const pair = (k: string, html: string) => `<div><dt>${escapeText(k)}</dt><dd>${html}</dd></div>`;

/** One turn: what was seen beside what was done, with its reward, info, call and credit. */
function turnCard(t: TurnView, credit: readonly CreditColumn[], limits: readonly number[]): string {
  const pairs = [
    pair('log-prob', `${escapeText(formatNumber(t.logp, 4))}${t.forced ? ' (forced)' : ''}`),
    pair('reward', escapeText(formatNumber(t.reward, 3))),
    ...(Object.keys(t.info).length === 0 ? [] : [pair('info', escapeText(JSON.stringify(t.info)))]),
    ...(t.call === undefined ? [] : [pair('model call', escapeText(callText(t.call)))]),
    ...credit.map((c, j) => pair(`credit: ${c.label}`, creditCell(c.values[t.t], limits[j]))),
  ];
  return [
    `<div class="turn" id="turn-${t.t}">`,
    `<h3>Turn ${t.t}</h3>`,
    '<div class="turn-body">',
    `<div class="seen">${t.observation}</div>`,
    `<div class="done">${t.action}${t.tokens === undefined ? '' : tokenStrip(t.tokens.logprobs, t.tokens.ids, t.tokens.labels)}<dl class="kv">${pairs.join('')}</dl></div>`,
    '</div>',
    '</div>',
  ].join('');
}

/** The whole page: the trajectory's facts, a table of each turn's action, reward and credit, then
 * each turn in full. */
export function trajectoryPage(o: TrajectoryPageOptions): string {
  const limits = o.credit.map((c) =>
    Math.max(0, ...c.values.map((a) => (Number.isFinite(a) ? Math.abs(a) : 0))),
  );
  const rows = o.turns.map((t) => [
    { value: t.t, digits: 0 },
    t.actionText,
    { value: t.reward, digits: 3 },
    ...o.credit.map((c, j) => ({ html: creditCell(c.values[t.t], limits[j]) })),
  ]);
  return page({
    title: o.title,
    subtitle: o.subtitle,
    body: [
      `<style>${CSS}</style>`,
      section('Trajectory', keyValues(wholeNumbers(o.facts), { digits: 4 })),
      section('Credit per turn', [
        ...(o.notes ?? []).map((n) => paragraph(n)),
        table(
          [
            { label: 'turn', align: 'right' },
            'action',
            { label: 'reward', align: 'right' },
            ...o.credit.map((c) => ({ label: `credit: ${c.label}`, align: 'right' as const })),
          ],
          rows,
          { caption: 'Credit per turn' },
        ),
      ]),
      section(
        'Turns',
        o.turns.map((t) => turnCard(t, o.credit, limits)),
      ),
    ],
    footer: o.footer,
  });
}
