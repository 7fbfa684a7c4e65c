// BFCL multi-turn checkers (docs/methods.md §7) and the per-turn quality proxy.
// - State checker: every public attribute of the API state (each file's presence and contents, each
//   account's owner, balance and open flag) equals the goal state's.
// - Response checker: the gold execution results are an unordered subsequence of the agent's results so
//   far — every gold result (canonical JSON) appears among the agent's results, with multiplicity.
// - Goal attributes: `file:NAME` (contents or absent), `balance:ID`, `open:ID`. An attribute is
//   destroyed when no sequence of calls can reach its goal value any more: a goal file whose contents
//   no current file can still grow into (append only extends; nothing writes arbitrary contents), or an
//   account closed that the goal keeps open (its open flag and balance). A call that destroys one is
//   `irreversible`.
// - Tickets: `title:ID`, `status:ID`, `assignee:ID`, `priority:ID`, `comments:ID`. Nothing deletes a
//   ticket, renames it, reopens or changes a closed one, or removes a comment; so a ticket attribute is
//   destroyed when the ticket is closed but the goal's differs in it, when its status is past the
//   goal's (open → in_progress → closed) or it is assigned where the goal's is not, when its comments are no longer a
//   prefix of the goal's, or when a ticket exists that the goal does not have (a stray create_ticket:
//   ids are sequential, so it also takes the id a goal ticket needs) — reported as `title:ID`.
import type { ApiState, Ticket } from './apis.ts';
import { canonical } from './apis.ts';

export function stateChecker(state: ApiState, goal: ApiState): { ok: boolean; diffs: string[] } {
  if (canonical(state) === canonical(goal)) return { ok: true, diffs: [] };
  const diffs: string[] = [];
  const a = attributes(state);
  const g = attributes(goal);
  for (const k of new Set([...a.keys(), ...g.keys()])) if (a.get(k) !== g.get(k)) diffs.push(k);
  return { ok: false, diffs: diffs.sort() };
}

/** Whether `gold` is an unordered subsequence (multiset inclusion) of `agent`. */
export function responseChecker(
  gold: readonly string[],
  agent: readonly string[],
): { ok: boolean; missing: string[] } {
  const have = new Map<string, number>();
  for (const r of agent) have.set(r, (have.get(r) ?? 0) + 1);
  const missing: string[] = [];
  for (const r of gold) {
    const n = have.get(r) ?? 0;
    if (n === 0) missing.push(r);
    else have.set(r, n - 1);
  }
  return { ok: missing.length === 0, missing };
}

/** Every public attribute as a key → JSON value (an absent file is "null"). */
export function attributes(s: ApiState): Map<string, string> {
  const m = new Map<string, string>();
  for (const [f, c] of Object.entries(s.files)) m.set(`file:${f}`, JSON.stringify(c));
  for (const [id, a] of Object.entries(s.accounts)) {
    m.set(`owner:${id}`, JSON.stringify(a.owner));
    m.set(`balance:${id}`, JSON.stringify(a.balance));
    m.set(`open:${id}`, JSON.stringify(a.open));
  }
  for (const [id, t] of Object.entries(s.tickets ?? {})) {
    m.set(`title:${id}`, JSON.stringify(t.title));
    m.set(`status:${id}`, JSON.stringify(t.status));
    m.set(`assignee:${id}`, JSON.stringify(t.assignee));
    m.set(`priority:${id}`, JSON.stringify(t.priority));
    m.set(`comments:${id}`, JSON.stringify(t.comments));
  }
  return m;
}

export interface GoalAttribute {
  key: string;
  /** The goal value (JSON); "null" for a file the goal removes. */
  value: string;
  changed: boolean;
}

/** The goal's attributes: every attribute of the initial or the goal state, with the goal's value. */
export function goalAttributes(initial: ApiState, goal: ApiState): GoalAttribute[] {
  const a = attributes(initial);
  const g = attributes(goal);
  const keys = [...new Set([...a.keys(), ...g.keys()])].sort();
  return keys.map((key) => {
    const value = g.get(key) ?? 'null';
    return { key, value, changed: (a.get(key) ?? 'null') !== value };
  });
}

const grows = (from: string, to: string) => from === to || to.startsWith(`${from}\n`);

/** The goal attributes no call can reach from `state` any more. */
export function destroyed(state: ApiState, goal: ApiState, attrs: readonly GoalAttribute[]): string[] {
  const contents = Object.values(state.files);
  const out: string[] = [];
  for (const { key, value } of attrs) {
    const [kind, id] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    if (kind === 'file') {
      if (value === 'null') continue;
      const want = JSON.parse(value) as string;
      if (!contents.some((c) => grows(c, want))) out.push(key);
    } else if (kind === 'open' || kind === 'balance') {
      if (goal.accounts[id]?.open === true && state.accounts[id]?.open !== true) out.push(key);
    } else if (TICKET_KINDS.has(kind)) {
      const now = state.tickets?.[id];
      const want = goal.tickets?.[id];
      if (now === undefined || want === undefined) continue;
      if (ticketDestroyed(kind as keyof Ticket, now, want)) out.push(key);
    }
  }
  const goalTickets = goal.tickets ?? {};
  for (const id of Object.keys(state.tickets ?? {}).sort())
    if (!Object.hasOwn(goalTickets, id)) out.push(`title:${id}`);
  return out;
}

const STATUS_RANK = { open: 0, in_progress: 1, closed: 2 } as const;
const TICKET_KINDS = new Set(['title', 'status', 'assignee', 'priority', 'comments']);

/** Whether a ticket's attribute can no longer reach the goal's value. */
function ticketDestroyed(kind: keyof Ticket, now: Ticket, want: Ticket): boolean {
  const same = JSON.stringify(now[kind]) === JSON.stringify(want[kind]);
  if (kind === 'title') return !same;
  if (now.status === 'closed') return !same;
  // Status only moves forward (assigning makes an open ticket in_progress), and nothing unassigns.
  if (kind === 'status') return STATUS_RANK[now.status] > STATUS_RANK[want.status];
  if (kind === 'assignee') return now.assignee !== null && want.assignee === null;
  if (kind === 'comments') return !now.comments.every((c, i) => want.comments[i] === c);
  return false;
}

/** Share of the changed goal attributes satisfied, minus the share destroyed (of the same count). */
export function quality(state: ApiState, goal: ApiState, attrs: readonly GoalAttribute[]): number {
  const changed = attrs.filter((x) => x.changed);
  if (changed.length === 0) return 0;
  const now = attributes(state);
  const satisfied = changed.filter((x) => (now.get(x.key) ?? 'null') === x.value).length;
  return (satisfied - destroyed(state, goal, attrs).length) / changed.length;
}
