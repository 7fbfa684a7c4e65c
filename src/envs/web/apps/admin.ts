// The admin table: 18 user accounts (name, email, city, plan, status) listed 8 a page, with a search box;
// each can be edited (email, plan, status) or deleted. Goals edit one field of a named user (level 1),
// edit two fields of a user picked out by city and plan or delete a user picked out by city and status
// (level 2), or both on two users (level 3).
//
// Sub-goals: each field to change (as the state holds it, or as the user's edit page shows it), each
// user to delete gone. Collateral: fields of any user that differ from the start without the goal
// asking. Deleting a user the goal does not name is irreversible; a wrong edit is not (it can be put
// back, and the oracle does).
//
// Flows (variants): delete through a confirmation page reached from the edit page, through a checkbox
// and a button on the edit page, or from a link in the list's row; after saving, the list or the edit
// page again.
import type { Rng } from '../../../core/rng.ts';
import type { ToolCall } from '../../../core/types.ts';
import {
  button,
  call,
  cap,
  choiceField,
  clickKey,
  fillAll,
  flagField,
  formValue,
  href,
  link,
  message,
  norm,
  notFoundPage,
  type PageView,
  type Progress,
  pick,
  Routes,
  shell,
  shuffled,
  table,
  textField,
  type WebApp,
  type WebRequest,
} from '../app.ts';
import { h, type Page, type VNode } from '../dom.ts';
import type { Skin } from '../skin.ts';

const FIRST = [
  'Mina',
  'Joon',
  'Ana',
  'Tom',
  'Lea',
  'Sam',
  'Ivy',
  'Omar',
  'Nora',
  'Raj',
  'Elif',
  'Hugo',
  'Yuki',
  'Ben',
  'Zara',
  'Luis',
  'Maja',
  'Theo',
  'Iris',
  'Kofi',
];
const LAST = [
  'Park',
  'Lee',
  'Silva',
  'Berg',
  'Martin',
  'Okafor',
  'Chen',
  'Haddad',
  'Novak',
  'Patel',
  'Demir',
  'Laurent',
  'Sato',
  'Walsh',
  'Khan',
  'Ortiz',
];
const CITIES = ['Busan', 'Lyon', 'Porto', 'Oslo', 'Kyoto', 'Leeds'];
const DOMAINS = ['mail.com', 'post.net', 'inbox.org'];
const PLANS = ['free', 'pro', 'team'] as const;
const STATUSES = ['active', 'suspended'] as const;
const PAGE_SIZE = 8;

export interface User {
  id: string;
  name: string;
  email: string;
  city: string;
  plan: string;
  status: string;
}
type Field = 'email' | 'plan' | 'status';
const FIELDS: readonly Field[] = ['email', 'plan', 'status'];

interface AdminState {
  users: User[];
}

export interface AdminGoal {
  edits: { id: string; set: Partial<Record<Field, string>> }[];
  deletes: string[];
  /** What the oracle types into the search box to find each target (the goal's own words). */
  terms: Record<string, string>;
}

function usersOf(rng: Rng): User[] {
  const names = new Set<string>();
  while (names.size < 18) names.add(`${pick(rng, FIRST)} ${pick(rng, LAST)}`);
  const cities = shuffled(
    rng,
    CITIES.flatMap((c) => [c, c, c]),
  );
  return shuffled(rng, [...names]).map((name, i) => ({
    id: `U${201 + i}`,
    name,
    email: `${name.toLowerCase().replace(' ', '.')}@${pick(rng, DOMAINS)}`,
    city: cities[i],
    plan: pick(rng, PLANS),
    status: rng.int(5) === 0 ? 'suspended' : 'active',
  }));
}

/** Makes `u` the only user of its city with `plan` (others of that city move to another plan). */
function onlyOne(
  users: User[],
  u: User,
  key: 'plan' | 'status',
  value: string,
  values: readonly string[],
): void {
  u[key] = value;
  for (const x of users)
    if (x !== u && x.city === u.city && x[key] === value)
      x[key] = values[(values.indexOf(value) + 1) % values.length];
}

function goalOf(rng: Rng, users: User[], level: 1 | 2 | 3): { goal: AdminGoal; text: string } {
  const [a, b] = shuffled(rng, users);
  const goal: AdminGoal = { edits: [], deletes: [], terms: {} };
  const newEmail = (u: User) => `${u.name.toLowerCase().replace(' ', '.')}@work.example`;
  const otherPlan = (u: User) =>
    PLANS[(PLANS.indexOf(u.plan as (typeof PLANS)[number]) + 1 + rng.int(2)) % 3];
  if (level === 1) {
    goal.terms[a.id] = a.name;
    if (rng.int(5) < 3) {
      const plan = otherPlan(a);
      goal.edits.push({ id: a.id, set: { plan } });
      return { goal, text: `Change the plan of ${a.name} to ${cap(plan)}.` };
    }
    const status = a.status === 'active' ? 'suspended' : 'active';
    goal.edits.push({ id: a.id, set: { status } });
    return {
      goal,
      text:
        status === 'suspended'
          ? `Suspend the account of ${a.name}.`
          : `Reactivate the suspended account of ${a.name}.`,
    };
  }
  const parts: string[] = [];
  const edit = level === 3 || rng.int(2) === 0;
  if (edit) {
    onlyOne(users, a, 'plan', a.plan, PLANS);
    goal.terms[a.id] = a.city;
    const second: Partial<Record<Field, string>> =
      a.status === 'active' ? { status: 'suspended' } : { plan: otherPlan(a) };
    goal.edits.push({ id: a.id, set: { email: newEmail(a), ...second } });
    const how =
      second.status !== undefined
        ? 'suspend the account'
        : `move them to the ${cap(second.plan as string)} plan`;
    parts.push(
      `The ${cap(a.plan)}-plan user in ${a.city} has a new email address, ${newEmail(a)}: update it and ${how}.`,
    );
  }
  if (!edit || level === 3) {
    const d = edit ? b : a;
    if (level === 3) {
      goal.terms[d.id] = d.name;
      parts.push(`Delete the account of ${d.name}.`);
    } else {
      onlyOne(users, d, 'status', 'suspended', STATUSES);
      goal.terms[d.id] = d.city;
      parts.push(`Delete the account of the suspended user in ${d.city}.`);
    }
    goal.deletes.push(d.id);
  }
  return { goal, text: parts.join(' ') };
}

/** The admin table for a task. */
export function buildAdmin(rng: Rng, level: 1 | 2 | 3, skin: Skin): WebApp {
  const users = usersOf(rng);
  const { goal, text } = goalOf(rng, users, level);
  const initial = users.map((u) => ({ ...u }));
  const initialOf = new Map(initial.map((u) => [u.id, u]));

  const L = (key: string, synonyms: readonly string[]) => skin.label(`admin.${key}`, synonyms);
  const words = {
    home: L('home', ['All users', 'Users', 'User list']),
    q: L('q', ['Search users', 'Search', 'Filter']),
    go: L('go', ['Search', 'Filter', 'Go']),
    edit: L('edit', ['Edit', 'Manage', 'Open']),
    email: L('email', ['Email', 'Email address', 'E-mail']),
    plan: L('plan', ['Plan', 'Subscription', 'Tier']),
    status: L('status', ['Status', 'Account status', 'State']),
    save: L('save', ['Save', 'Save changes', 'Update user']),
    del: L('delete', ['Delete user', 'Delete account', 'Remove user']),
    confirm: L('confirm', ['Delete', 'Yes, delete', 'Delete permanently']),
    cancel: L('cancel', ['Cancel', 'Keep user', 'Go back']),
    next: L('next', ['Next page', 'Next', 'More']),
    prev: L('prev', ['Previous page', 'Previous', 'Back']),
  };
  const deleteFlow = skin.flow('admin.delete', 3);
  const afterSave = skin.flow('admin.after-save', 2);
  const planOptions = PLANS.map((p) => ({ value: p, label: cap(p) }));
  const statusKind = skin.kind('admin.status', ['select', 'radio', 'checkbox'] as const);
  const statusField = (status: string) =>
    statusKind === 'checkbox'
      ? h('input', {
          type: 'checkbox',
          name: 'status',
          value: 'suspended',
          'aria-label': L('suspended', ['Suspended', 'Account suspended', 'Suspend']),
          checked: status === 'suspended',
        })
      : choiceField(
          statusKind,
          'status',
          words.status,
          STATUSES.map((s) => ({ value: s, label: cap(s) })),
          status,
        );

  const page = (title: string, kind: string, main: VNode[]): Page =>
    shell(skin, 'admin', `${title} — Admin`, kind, [link('nav:home', '/users', words.home)], main);
  const find = (s: AdminState, id: string) => s.users.find((u) => u.id === id);
  const notFound = (req: WebRequest) => notFoundPage(skin, 'admin', words.home, req);

  const routes = new Routes<AdminState>(
    [
      { method: 'GET', path: '/', handle: () => ({ redirect: '/users' }) },
      {
        method: 'GET',
        path: '/users',
        handle: (s, req) => {
          const q = norm(req.query.get('q') ?? '');
          const hits = s.users.filter((u) => q === '' || norm(`${u.name} ${u.email} ${u.city}`).includes(q));
          const pages = Math.max(1, Math.ceil(hits.length / PAGE_SIZE));
          const n = Math.min(pages, Math.max(1, Number(req.query.get('page')) || 1));
          const shown = hits.slice((n - 1) * PAGE_SIZE, n * PAGE_SIZE);
          const cols = skin.order('admin.columns', ['name', 'email', 'city', 'plan', 'status'] as const);
          const heads = {
            name: 'Name',
            email: words.email,
            city: 'City',
            plan: words.plan,
            status: words.status,
          };
          const main: VNode[] = [h('h1', {}, words.home)];
          const saved = find(s, req.query.get('saved') ?? '');
          if (saved !== undefined) main.push(message('status', `Saved changes to ${saved.name}.`));
          if (req.query.get('deleted') !== null)
            main.push(message('status', `Deleted ${req.query.get('deleted')}.`));
          const form = h(
            'form',
            { method: 'get', action: '/users' },
            textField('q', words.q, req.query.get('q') ?? ''),
            button('search', words.go),
          );
          const list: VNode[] =
            shown.length === 0
              ? [h('p', {}, 'No users match.')]
              : [
                  h(
                    'p',
                    {},
                    `Showing ${(n - 1) * PAGE_SIZE + 1}–${(n - 1) * PAGE_SIZE + shown.length} of ${hits.length}`,
                  ),
                  table(
                    [...cols.map((c) => heads[c]), '', ...(deleteFlow === 2 ? [''] : [])],
                    shown.map((u) => [
                      ...cols.map((c) => (c === 'plan' || c === 'status' ? cap(u[c]) : u[c])),
                      link(`edit:${u.id}`, `/users/${u.id}/edit`, words.edit),
                      ...(deleteFlow === 2
                        ? [link(`delete:${u.id}`, `/users/${u.id}/delete`, words.del)]
                        : []),
                    ]),
                  ),
                ];
          const pager: VNode[] = [];
          if (n > 1)
            pager.push(
              link('page:prev', href('/users', { q: req.query.get('q') ?? '', page: n - 1 }), words.prev),
            );
          if (n < pages)
            pager.push(
              link('page:next', href('/users', { q: req.query.get('q') ?? '', page: n + 1 }), words.next),
            );
          main.push(...skin.order('admin.list-layout', [[form], list]).flat());
          if (pager.length > 0) main.push(h('p', {}, ...pager));
          return { status: 200, page: page(words.home, 'list', main) };
        },
      },
      {
        method: 'GET',
        path: '/users/:id/edit',
        handle: (s, req, params) => {
          const u = find(s, params.id);
          if (u === undefined) return { status: 404, page: notFound(req) };
          const title = `${words.edit} ${u.name}`;
          const notes: VNode[] = [];
          if (req.query.get('saved') === '1') notes.push(message('status', 'Saved.'));
          if (req.query.get('error') === 'email')
            notes.push(message('alert', 'Enter a valid email address.'));
          if (req.query.get('error') === 'confirm')
            notes.push(message('alert', 'Tick the box to confirm the deletion.'));
          const fields = skin.order('admin.fields', [
            textField('email', words.email, u.email),
            choiceField(
              skin.kind('admin.plan', ['select', 'radio'] as const),
              'plan',
              words.plan,
              planOptions,
              u.plan,
            ),
            statusField(u.status),
          ]);
          const main: VNode[] = [
            h('h1', {}, title),
            ...notes,
            h('p', {}, `City: ${u.city}`),
            h('form', { method: 'post', action: `/users/${u.id}` }, ...fields, button('save', words.save)),
          ];
          if (deleteFlow === 0) main.push(h('p', {}, link('delete', `/users/${u.id}/delete`, words.del)));
          if (deleteFlow === 1)
            main.push(
              h(
                'form',
                { method: 'post', action: `/users/${u.id}/delete` },
                flagField(
                  'checkbox',
                  'confirm',
                  L('understand', [
                    'I understand this cannot be undone',
                    'Yes, delete this user permanently',
                    'Confirm deletion',
                  ]),
                  false,
                ),
                button('delete', words.del),
              ),
            );
          return { status: 200, page: page(title, 'edit', main) };
        },
      },
      {
        method: 'POST',
        path: '/users/:id',
        handle: (s, req, params) => {
          const u = find(s, params.id);
          if (u === undefined) return { redirect: '/users' };
          const email = (req.form.get('email') ?? '').trim();
          if (!/^[^\s@]+@[^\s@]+$/.test(email))
            return { redirect: href(`/users/${u.id}/edit`, { error: 'email' }) };
          const plan = req.form.get('plan') ?? '';
          u.email = email;
          if ((PLANS as readonly string[]).includes(plan)) u.plan = plan;
          u.status = req.form.get('status') === 'suspended' ? 'suspended' : 'active';
          return {
            redirect:
              afterSave === 0 ? href('/users', { saved: u.id }) : href(`/users/${u.id}/edit`, { saved: 1 }),
          };
        },
      },
      {
        method: 'GET',
        path: '/users/:id/delete',
        handle: (s, req, params) => {
          const u = find(s, params.id);
          if (u === undefined || deleteFlow === 1) return { status: 404, page: notFound(req) };
          const title = `${words.del}?`;
          return {
            status: 200,
            page: page(title, 'confirm', [
              h('h1', {}, title),
              h('p', {}, `Delete ${u.name} (${u.email})? This cannot be undone.`),
              h(
                'form',
                { method: 'post', action: `/users/${u.id}/delete` },
                button('confirm-delete', words.confirm),
              ),
              h('p', {}, link('cancel', deleteFlow === 2 ? '/users' : `/users/${u.id}/edit`, words.cancel)),
            ]),
          };
        },
      },
      {
        method: 'POST',
        path: '/users/:id/delete',
        handle: (s, req, params) => {
          const u = find(s, params.id);
          if (u === undefined) return { redirect: '/users' };
          if (deleteFlow === 1 && req.form.get('confirm') !== 'yes')
            return { redirect: href(`/users/${u.id}/edit`, { error: 'confirm' }) };
          s.users = s.users.filter((x) => x !== u);
          return { redirect: href('/users', { deleted: u.name }) };
        },
      },
    ],
    notFound,
  );

  const edits = new Map(goal.edits.map((e) => [e.id, e.set]));
  /** The value each field of `u` should end with. */
  const desired = (u: User): Record<Field, string> => ({
    ...(initialOf.get(u.id) as User),
    ...edits.get(u.id),
  });
  /** The value of a field as the user's edit page shows it (its status control's unchecked box is active). */
  const shown = (view: PageView, id: string, f: Field): string | undefined => {
    if (view.path !== `/users/${id}/edit`) return undefined;
    const v = formValue(view, f);
    return f === 'status' && v !== undefined ? (v === 'suspended' ? 'suspended' : 'active') : v;
  };

  const progress = (state: unknown, view: PageView): Progress => {
    const s = state as AdminState;
    const subgoals = [];
    for (const e of goal.edits)
      for (const [f, v] of Object.entries(e.set) as [Field, string][]) {
        const u = find(s, e.id);
        const now = shown(view, e.id, f) ?? u?.[f];
        subgoals.push({ name: `${e.id}.${f}`, done: now !== undefined && norm(now) === norm(v) });
      }
    for (const id of goal.deletes) subgoals.push({ name: `delete:${id}`, done: find(s, id) === undefined });
    let collateral = initial.filter(
      (u) => !goal.deletes.includes(u.id) && find(s, u.id) === undefined,
    ).length;
    for (const u of s.users)
      for (const f of FIELDS)
        if (edits.get(u.id)?.[f] === undefined && norm(u[f]) !== norm(desired(u)[f])) collateral++;
    return { subgoals, collateral };
  };

  const oracle = (state: unknown, view: PageView): ToolCall => {
    const s = state as AdminState;
    const kind = view.doc.kind;
    const homeLink = clickKey(view, 'nav:home') as ToolCall;
    const wrong = (u: User) => FIELDS.some((f) => norm(u[f]) !== norm(desired(u)[f]));
    const toEdit = [...s.users]
      .sort((x, y) => Number(!edits.has(x.id)) - Number(!edits.has(y.id)))
      .find(wrong);
    const toDelete = goal.deletes.find((id) => find(s, id) !== undefined);
    const target = toEdit ?? (toDelete === undefined ? undefined : find(s, toDelete));
    if (target === undefined) return call('answer', { text: 'Done.' });
    const id = target.id;
    const onEdit = view.path === `/users/${id}/edit`;
    if (toEdit !== undefined && onEdit) {
      const want = desired(target);
      return (
        fillAll(
          view,
          FIELDS.map((f) => [f, want[f]] as const),
        ) ?? (clickKey(view, 'save') as ToolCall)
      );
    }
    if (toEdit === undefined) {
      if (kind === 'confirm')
        return view.path === `/users/${id}/delete`
          ? (clickKey(view, 'confirm-delete') as ToolCall)
          : (clickKey(view, 'cancel') as ToolCall);
      if (onEdit && deleteFlow === 0) return clickKey(view, 'delete') as ToolCall;
      if (onEdit && deleteFlow === 1)
        return fillAll(view, [['confirm', 'yes']]) ?? (clickKey(view, 'delete') as ToolCall);
    }
    if (kind === 'list') {
      const row =
        toEdit === undefined && deleteFlow === 2
          ? clickKey(view, `delete:${id}`)
          : clickKey(view, `edit:${id}`);
      if (row !== undefined) return row;
      const term = goal.terms[id] ?? target.name;
      if (view.query.get('q') !== term)
        return fillAll(view, [['q', term]]) ?? (clickKey(view, 'search') as ToolCall);
    }
    return homeLink;
  };

  return {
    id: 'admin',
    goal: text,
    initial: (): AdminState => ({ users: initial.map((u) => ({ ...u })) }),
    respond: (state, method, url, form) => routes.respond(state as AdminState, method, url, form),
    progress,
    irreversible(before, after) {
      const gone = (before as AdminState).users.filter((u) => !find(after as AdminState, u.id));
      const wrong = gone.find((u) => !goal.deletes.includes(u.id));
      return wrong === undefined ? undefined : `${wrong.name} (${wrong.id}) was deleted`;
    },
    oracle,
    answers: () => ['Done.'],
    texts: [
      ...new Set([
        ...Object.values(goal.terms),
        ...goal.edits.flatMap((e) => (e.set.email === undefined ? [] : [e.set.email])),
        'test',
      ]),
    ],
    describe: () => ({
      users: initial,
      goal,
      variant: {
        delete: ['confirmation page', 'checkbox on the edit page', 'link in the list'][deleteFlow],
        afterSave: ['list', 'edit page'][afterSave],
        status: statusKind,
      },
    }),
  };
}
