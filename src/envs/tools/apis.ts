// The simulated APIs: a file system (flat working directory) and a bank. The whole state is plain data;
// `execute` applies one parsed call to a copy and returns the new state and the call's result (or an
// error with its category). Every attribute of the state is public: the state checker compares all.
import type { ToolsToolName } from './tools.ts';

export interface Account {
  owner: string;
  balance: number;
  open: boolean;
}

export interface ApiState {
  /** File name → contents (lines joined by \n). */
  files: Record<string, string>;
  /** Account id → account; a closed account stays, with open = false and balance 0. */
  accounts: Record<string, Account>;
}

export type ApiResult =
  | { ok: true; state: ApiState; output: Record<string, unknown>; mutating: boolean }
  | {
      ok: false;
      code: 'no-such-file' | 'no-such-account' | 'exists' | 'insufficient' | 'same';
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
  return JSON.stringify({ files, accounts });
}

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
    case 'finish':
      return read({});
  }
}
