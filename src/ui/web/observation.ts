/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// A turn as its env shows it. Drawn by shape, not by env id, so an env added later is shown too:
//   - a board env (the API's view has a `board`: FrozenLake's map) whose observation is a cell: the
//     board, the agent on its cell, the path it walked to get there;
//   - a tool env (the observation an object with the task's text — question, request, task — and
//     `last`, the previous call's result): the conversation, the task as the user's message, each call
//     as the assistant's, each result as the tool's — a SQL result as a table, test results as
//     passed/total and the failing calls, search hits as a list, a file's content as text;
//   - anything else: its JSON.
// Actions: a discrete action by its name (FrozenLake's arrows), a tool call as name(arguments) with code
// and queries in their own block. Text policies' tokens: one chip per token coloured by its probability.
import { contrastText, sequential } from '../../report/color.ts';
import { table } from '../../report/table.ts';
import type { EnvView, Trajectory } from './api.ts';
import { attr, esc, fmt } from './dom.ts';

type Turn = Trajectory['turns'][number];
type Obj = Record<string, unknown>;

const ARROWS: Record<string, string> = { Left: '←', Down: '↓', Right: '→', Up: '↑' };
const isObj = (x: unknown): x is Obj => x !== null && typeof x === 'object' && !Array.isArray(x);
const isToolCall = (a: unknown): a is { name: string; arguments: Obj } =>
  isObj(a) && typeof a.name === 'string' && isObj(a.arguments);
const pre = (s: string, cls = '') =>
  `<pre${cls === '' ? '' : ` class="${cls}"`}><code>${esc(s)}</code></pre>`;
const json = (x: unknown) => JSON.stringify(x, null, 2) ?? 'null';

/** An action in a few characters (tables, lanes): `→`, `describe_table`, `#3`. */
export function actionLabel(action: unknown, view: EnvView | null): string {
  if (typeof action === 'number') {
    const name = view?.names?.[action];
    return name === undefined ? (action < 0 ? '✗' : `#${action}`) : (ARROWS[name] ?? name);
  }
  if (isToolCall(action)) return action.name;
  return typeof action === 'string' ? action : json(action);
}

/** An action in one line of text: `→ Right`, `execute_sql(query: "SELECT …")`. */
export function actionText(action: unknown, view: EnvView | null): string {
  if (typeof action === 'number') {
    const name = view?.names?.[action];
    if (name === undefined) return action < 0 ? 'no action (invalid output)' : `action ${action}`;
    return ARROWS[name] === undefined ? name : `${ARROWS[name]} ${name}`;
  }
  if (isToolCall(action)) {
    const args = Object.entries(action.arguments).map(([k, v]) => {
      if (typeof v !== 'string') return `${k}: ${JSON.stringify(v)}`;
      // One line: code and queries with their whitespace collapsed, long ones cut.
      const line = v.replace(/\s+/g, ' ').trim();
      return `${k}: "${line.length > 60 ? `${line.slice(0, 57)}…` : line}"`;
    });
    return `${action.name}(${args.join(', ')})`;
  }
  return typeof action === 'string' ? action : JSON.stringify(action);
}

/** An action in full: a tool call's code or query in a block of its own. */
export function actionView(action: unknown, view: EnvView | null): string {
  if (!isToolCall(action)) return `<p class="action">${esc(actionText(action, view))}</p>`;
  const blocks = Object.entries(action.arguments).filter(
    ([k, v]) => typeof v === 'string' && (k === 'code' || k === 'query' || v.includes('\n')),
  );
  const inline = Object.fromEntries(
    Object.entries(action.arguments).filter(([k]) => !blocks.some(([b]) => b === k)),
  );
  const head = `<p class="action"><b>${esc(action.name)}</b>(${esc(
    Object.entries(inline)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      .join(', '),
  )}${blocks.length > 0 ? (Object.keys(inline).length > 0 ? ', …' : '…') : ''})</p>`;
  return head + blocks.map(([k, v]) => `<div class="muted">${esc(k)}</div>${pre(v as string)}`).join('');
}

/** The board at turn t: the agent on the turn's cell, the cells it stood on before marked. */
export function boardView(board: readonly string[], cells: readonly number[], at: number): string {
  const cols = board[0]?.length ?? 0;
  const visits = new Map<number, number[]>();
  cells.forEach((c, t) => {
    visits.set(c, [...(visits.get(c) ?? []), t]);
  });
  const out: string[] = [];
  board.forEach((row, r) => {
    [...row].forEach((letter, c) => {
      const s = r * cols + c;
      const seen = visits.get(s);
      const here = s === at;
      const name = { S: 'start', F: 'frozen', H: 'hole', G: 'goal' }[letter] ?? letter;
      const title = `row ${r}, column ${c}: ${name}${seen ? `; on it at turn ${seen.join(', ')}` : ''}${here ? ' (agent)' : ''}`;
      out.push(
        `<div class="cell ${attr(letter)}${seen && !here ? ' path' : ''}" title="${attr(title)}" data-cell="${s}">${
          here ? '<span class="agent" aria-label="agent">A</span>' : letter === 'F' ? '' : esc(letter)
        }</div>`,
      );
    });
  });
  return `<div class="board" role="img" aria-label="${attr(`board, agent on cell ${at}`)}" style="grid-template-columns:repeat(${cols},2.4rem)">${out.join('')}</div>`;
}

/** The observation is a tool env's (drawn as a conversation). */
export const isConversation = (o: unknown): boolean => taskText(o) !== undefined;

/** The task's text of a tool env's observation, if it is one. */
function taskText(o: unknown): string | undefined {
  if (!isObj(o)) return undefined;
  for (const k of ['question', 'request', 'task']) if (typeof o[k] === 'string') return o[k] as string;
  return undefined;
}

/** A table of values as the report draws one (it stacks into cards where its columns cannot fit). */
function valueTable(head: readonly string[], rows: readonly (readonly unknown[])[]): string {
  return table(
    head.map((label) => ({ label, align: 'left' as const })),
    rows.map((r) => r.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))),
  );
}

/** A tool's result (`last` of the next observation), drawn by its shape. */
export function resultView(last: Obj): string {
  if (last.ok === false) {
    const why = last.error ?? last.message ?? last.reason;
    return typeof why === 'string' ? pre(why) : pre(json(last));
  }
  const out = isObj(last.output) ? last.output : undefined;
  const parts: string[] = [];
  if (typeof last.passed === 'number' && typeof last.total === 'number') {
    parts.push(`<p><b>${last.passed} of ${last.total}</b> tests passed</p>`);
    if (Array.isArray(last.failures) && last.failures.length > 0)
      parts.push(
        valueTable(
          ['call', 'expected', 'got'],
          (last.failures as Obj[]).map((f) => [f.call, f.expected, f.got]),
        ),
      );
  }
  if (out !== undefined) {
    if (
      Array.isArray(out.columns) &&
      Array.isArray(out.rows) &&
      out.columns.every((c) => typeof c === 'string')
    ) {
      parts.push(valueTable(out.columns as string[], out.rows as unknown[][]));
      if (typeof out.total === 'number' && out.total > (out.rows as unknown[]).length)
        parts.push(
          `<p class="muted">${(out.rows as unknown[]).length} of ${out.total} rows shown to the agent</p>`,
        );
    } else if (Array.isArray(out.columns) && out.columns.every(isObj)) {
      parts.push(
        `<p class="muted">table ${esc(String(out.table ?? ''))}${typeof out.rows === 'number' ? `, ${out.rows} rows` : ''}</p>`,
      );
      parts.push(
        valueTable(
          ['column', 'type', 'key'],
          (out.columns as Obj[]).map((c) => [
            c.name,
            c.type,
            c.primaryKey === true
              ? 'primary key'
              : typeof c.references === 'string'
                ? `→ ${c.references}`
                : '',
          ]),
        ),
      );
    } else if (Array.isArray(out.results)) {
      parts.push(
        `<ol>${(out.results as Obj[])
          .map(
            (x) =>
              `<li><b>${esc(String(x.title ?? x.id ?? ''))}</b> <span class="muted">${esc(String(x.id ?? ''))}</span><br>${esc(String(x.snippet ?? ''))}</li>`,
          )
          .join('')}</ol>`,
      );
    } else if (typeof out.text === 'string' || typeof out.content === 'string') {
      const title = out.title ?? out.file ?? out.doc;
      if (title !== undefined) parts.push(`<p class="muted">${esc(String(title))}</p>`);
      parts.push(pre(String(out.text ?? out.content)));
    } else parts.push(pre(json(out)));
  }
  if (parts.length === 0) {
    const { tool: _t, ok: _o, ...rest } = last;
    parts.push(pre(json(rest)));
  }
  return parts.join('');
}

/** The conversation of a tool env up to turn t (the turn's call and its result highlighted). */
function chatView(tr: Trajectory, t: number, view: EnvView | null): string {
  const first = tr.turns[0]?.observation;
  const msgs: string[] = [
    `<div class="msg user"><div class="who">user</div>${pre(taskText(first) ?? '')}</div>`,
  ];
  for (let s = 0; s <= t && s < tr.turns.length; s++) {
    const turn = tr.turns[s];
    const cur = s === t ? ' current' : '';
    msgs.push(
      `<div class="msg assistant${cur}" data-turn="${s}"><div class="who">assistant · turn ${s}${turn.forced ? ' · forced' : ''}</div>${actionView(turn.action, view)}</div>`,
    );
    const next = tr.turns[s + 1]?.observation;
    const last = isObj(next) && isObj(next.last) ? next.last : undefined;
    if (last !== undefined)
      msgs.push(
        `<div class="msg tool${last.ok === false ? ' failed' : ''}${cur}"><div class="who">tool · ${esc(String(last.tool ?? ''))}${last.ok === false ? ' · error' : ''}</div>${resultView(last)}</div>`,
      );
    else if (s === tr.turns.length - 1)
      msgs.push(
        `<div class="msg tool${cur}"><div class="who">end</div><p>${tr.outcome.success ? '✓ success' : `✗ ${esc(tr.outcome.failure ?? 'failure')}`}</p></div>`,
      );
  }
  return `<div class="chat">${msgs.join('')}</div>`;
}

/** The observation of turn t as its env shows it. */
export function observationView(tr: Trajectory, t: number, view: EnvView | null): string {
  const turn: Turn | undefined = tr.turns[t];
  if (turn === undefined) return '<p class="muted">no turn</p>';
  const o = turn.observation;
  if (view?.board && typeof o === 'number') {
    const cells = tr.turns.slice(0, t + 1).map((x) => x.observation as number);
    return boardView(view.board, cells, o);
  }
  if (isConversation(o)) return chatView(tr, t, view);
  return pre(json(o));
}

/** One chip per token, coloured by its log-probability (viridis: dark unlikely, yellow likely), labelled
 * with the token's text where the run's tokenizer gives it (`labels` by id; `special` ids marked), else
 * with its id; the id, the text and the log-probability on hover. */
export function tokensView(
  tokens: readonly number[] | undefined,
  logprobs: readonly (number | null)[],
  text: { labels: Record<string, string>; special: readonly number[] } | null = null,
): string {
  const special = new Set(text?.special ?? []);
  const chips = logprobs.map((lp, i) => {
    const p = lp === null ? 0 : Math.exp(lp);
    // On log p (−10 … 0): an untrained model's tokens near 1/vocabulary and a trained one's near 1 both
    // show their spread, which a scale on p would crush into its dark end.
    const bg = sequential(lp === null ? 0 : 1 + Math.max(-10, lp) / 10);
    const id = tokens?.[i];
    const label = id === undefined ? undefined : text?.labels[id];
    const what =
      id === undefined ? '' : ` (id ${id}${label === undefined ? '' : `, ${JSON.stringify(label)}`})`;
    return `<span style="background:${bg};color:${contrastText(bg)}"${id !== undefined && special.has(id) ? ' class="special"' : ''}${
      id === undefined ? '' : ` data-id="${id}"`
    } title="${attr(`token ${i}${what}: log p = ${lp === null ? '−∞' : fmt(lp, 3)}, p = ${fmt(p, 3)}`)}" data-logprob="${lp === null ? '' : lp}">${esc(
      label ?? String(id === undefined ? i : id),
    )}</span>`;
  });
  return `<div class="tokens" aria-label="per-token log-probabilities">${chips.join('')}</div>`;
}
