// The simulated APIs: a file system (flat working directory), a bank and a ticketing system (tickets
// with ids, status, assignee, priority and comments; only tasks of the tickets/all domains have one,
// and a state without tickets is written exactly as before they existed). The whole state is plain data;
// `execute` applies one parsed call to a copy and returns the new state and the call's result (or an
// error with its category). Every attribute of the state is public: the state checker compares all.
import type { ToolsToolName } from './tools.ts';

export interface Account {
  owner: string;
  balance: number;
  open: boolean;
}

export type TicketStatus = 'open' | 'in_progress' | 'closed';
export type TicketPriority = 'low' | 'medium' | 'high';

export interface Ticket {
  title: string;
  status: TicketStatus;
  /** A staff name, or null while unassigned. */
  assignee: string | null;
  priority: TicketPriority;
  /** Comments in the order they were added (append only). */
  comments: string[];
}

export interface ApiState {
  /** File name → contents (lines joined by \n). */
  files: Record<string, string>;
  /** Account id → account; a closed account stays, with open = false and balance 0. */
  accounts: Record<string, Account>;
  /** Ticket id (T-101, …) → ticket; absent when the task has no ticketing system. Tickets are never
   * deleted, a closed ticket cannot be reopened or changed, and new ids are the next number. */
  tickets?: Record<string, Ticket>;
}

export type ApiResult =
  | { ok: true; state: ApiState; output: Record<string, unknown>; mutating: boolean }
  | {
      ok: false;
      code:
        | 'no-such-file'
        | 'no-such-account'
        | 'no-such-ticket'
        | 'exists'
        | 'insufficient'
        | 'same'
        | 'closed';
      message: string;
    };

export const cloneState = (s: ApiState): ApiState => JSON.parse(JSON.stringify(s)) as ApiState;

/** The state in a canonical JSON form (keys sorted), for equality and keys. */
export function canonical(s: ApiState): string {
  const files = Object.keys(s.files)
    .sort()
    .map((k) => [k, s.files[k]]);
  const accounts = Object.keys(s.accounts)
    .sort()
    .map((k) => [k, s.accounts[k].owner, s.accounts[k].balance, s.accounts[k].open]);
  if (s.tickets === undefined) return JSON.stringify({ files, accounts });
  const tickets = Object.keys(s.tickets)
    .sort()
    .map((k) => {
      const t = (s.tickets as Record<string, Ticket>)[k];
      return [k, t.title, t.status, t.assignee, t.priority, t.comments];
    });
  return JSON.stringify({ files, accounts, tickets });
}

/** The id the next created ticket gets: one more than the largest number in use (T-101 first). */
export function nextTicketId(tickets: Record<string, Ticket>): string {
  const ns = Object.keys(tickets).map((k) => Number(k.slice(2)));
  return `T-${ns.length === 0 ? 101 : Math.max(...ns) + 1}`;
}

/** A ticket as a function returns it. */
const ticketView = (id: string, t: Ticket) => ({ id, ...t, comments: [...t.comments] });

const noFile = (f: string, s: ApiState): ApiResult => ({
  ok: false,
  code: 'no-such-file',
  message: `no such file: ${f}; files are ${Object.keys(s.files).sort().join(', ') || '(none)'}`,
});
const noAccount = (a: string): ApiResult => ({
  ok: false,
  code: 'no-such-account',
  message: `no such open account: ${a}`,
});

/** Applies one call (finish excluded) to a copy of the state. */
export function execute(
  state: ApiState,
  name: ToolsToolName,
  args: Record<string, string | number>,
): ApiResult {
  const s = cloneState(state);
  const str = (k: string) => String(args[k]);
  const num = (k: string) => Number(args[k]);
  const read = (output: Record<string, unknown>): ApiResult => ({
    ok: true,
    state: s,
    output,
    mutating: false,
  });
  const wrote = (output: Record<string, unknown>): ApiResult => ({
    ok: true,
    state: s,
    output,
    mutating: true,
  });
  const acct = (id: string) => (Object.hasOwn(s.accounts, id) && s.accounts[id].open ? s.accounts[id] : null);
  const hasFile = (f: string) => Object.hasOwn(s.files, f);
  const tickets = s.tickets ?? {};
  const ticketOp = (write: (t: Ticket, id: string) => Record<string, unknown>): ApiResult => {
    const id = str('ticket');
    if (!Object.hasOwn(tickets, id))
      return {
        ok: false,
        code: 'no-such-ticket',
        message: `no such ticket: ${id}; tickets are ${Object.keys(tickets).sort().join(', ') || '(none)'}`,
      };
    const t = tickets[id];
    if (t.status === 'closed')
      return { ok: false, code: 'closed', message: `ticket ${id} is closed; it cannot be changed` };
    return wrote(write(t, id));
  };
  switch (name) {
    case 'ls':
      return read({ files: Object.keys(s.files).sort() });
    case 'cat': {
      const f = str('file');
      return hasFile(f) ? read({ file: f, content: s.files[f] }) : noFile(f, s);
    }
    case 'cp':
    case 'mv': {
      const src = str('src');
      const dst = str('dst');
      if (!hasFile(src)) return noFile(src, s);
      if (hasFile(dst)) return { ok: false, code: 'exists', message: `${dst} exists; choose a new name` };
      s.files[dst] = s.files[src];
      if (name === 'mv') delete s.files[src];
      return wrote(name === 'mv' ? { moved: src, to: dst } : { copied: src, to: dst });
    }
    case 'append': {
      const f = str('file');
      if (!hasFile(f)) return noFile(f, s);
      s.files[f] = s.files[f] === '' ? str('text') : `${s.files[f]}\n${str('text')}`;
      return wrote({ file: f, lines: s.files[f].split('\n').length });
    }
    case 'rm': {
      const f = str('file');
      if (!hasFile(f)) return noFile(f, s);
      delete s.files[f];
      return wrote({ removed: f });
    }
    case 'list_accounts':
      return read({
        accounts: Object.keys(s.accounts)
          .sort()
          .filter((id) => s.accounts[id].open)
          .map((id) => ({ id, owner: s.accounts[id].owner })),
      });
    case 'get_balance': {
      const a = acct(str('account'));
      return a === null ? noAccount(str('account')) : read({ account: str('account'), balance: a.balance });
    }
    case 'deposit':
    case 'withdraw': {
      const a = acct(str('account'));
      if (a === null) return noAccount(str('account'));
      const x = num('amount');
      if (name === 'withdraw' && x > a.balance)
        return {
          ok: false,
          code: 'insufficient',
          message: `insufficient funds: the balance is ${a.balance}`,
        };
      a.balance += name === 'deposit' ? x : -x;
      return wrote({ account: str('account'), balance: a.balance });
    }
    case 'transfer': {
      const from = acct(str('from'));
      if (from === null) return noAccount(str('from'));
      const to = acct(str('to'));
      if (to === null) return noAccount(str('to'));
      if (str('from') === str('to'))
        return { ok: false, code: 'same', message: 'from and to are the same account' };
      const x = num('amount');
      if (x > from.balance)
        return {
          ok: false,
          code: 'insufficient',
          message: `insufficient funds: the balance is ${from.balance}`,
        };
      from.balance -= x;
      to.balance += x;
      return wrote({ from: str('from'), to: str('to'), amount: x, balance: from.balance });
    }
    case 'close_account': {
      const a = acct(str('account'));
      if (a === null) return noAccount(str('account'));
      const paid = a.balance;
      a.balance = 0;
      a.open = false;
      return wrote({ closed: str('account'), paid_out: paid });
    }
    case 'search_tickets': {
      const q = args.query === undefined ? '' : str('query').toLowerCase();
      const found = Object.keys(tickets)
        .sort()
        .filter((id) => {
          const t = tickets[id];
          if (args.status !== undefined && t.status !== str('status')) return false;
          if (args.assignee !== undefined && t.assignee !== str('assignee')) return false;
          return t.title.toLowerCase().includes(q);
        })
        .map((id) => ({ id, title: tickets[id].title, status: tickets[id].status }));
      return read({ tickets: found });
    }
    case 'get_ticket': {
      const id = str('ticket');
      if (!Object.hasOwn(tickets, id))
        return {
          ok: false,
          code: 'no-such-ticket',
          message: `no such ticket: ${id}; tickets are ${Object.keys(tickets).sort().join(', ') || '(none)'}`,
        };
      return read(ticketView(id, tickets[id]));
    }
    case 'create_ticket': {
      const id = nextTicketId(tickets);
      tickets[id] = {
        title: str('title'),
        status: 'open',
        assignee: null,
        priority: str('priority') as TicketPriority,
        comments: [],
      };
      s.tickets = tickets;
      return wrote({ created: id });
    }
    case 'assign_ticket':
      return ticketOp((t, id) => {
        t.assignee = str('assignee');
        if (t.status === 'open') t.status = 'in_progress';
        return { ticket: id, assignee: t.assignee, status: t.status };
      });
    case 'set_priority':
      return ticketOp((t, id) => {
        t.priority = str('priority') as TicketPriority;
        return { ticket: id, priority: t.priority };
      });
    case 'comment_ticket':
      return ticketOp((t, id) => {
        t.comments.push(str('text'));
        return { ticket: id, comments: t.comments.length };
      });
    case 'close_ticket':
      return ticketOp((t, id) => {
        t.status = 'closed';
        return { closed: id };
      });
    case 'finish':
      return read({});
  }
}
