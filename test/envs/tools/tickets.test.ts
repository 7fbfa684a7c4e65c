// The tools env's ticketing system: existing tasks unchanged, the generator of the tickets/all domains,
// the API's semantics (against brute force), both BFCL checkers and destroyed attributes on hand-made
// ticket states, failure kinds, checkEnv, and the CLI contract on the combined domain.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import type { Env, ToolCall } from '../../../src/core/types.ts';
import { checkEnv } from '../../../src/envs/check.ts';
import { envConfig, envSpec, makeEnv } from '../../../src/envs/index.ts';
import {
  type ApiState,
  buildToolsWorld,
  destroyed,
  execute,
  goalAttributes,
  nextTicketId,
  parseToolCall,
  quality,
  stateChecker,
  type Ticket,
  TOOLS_TOOLS,
  TOOLS_TOOLS_TICKETS,
  ToolsEnv,
  type ToolsObservation,
  toolsParams,
  toolsSpec,
} from '../../../src/envs/tools/index.ts';
import { turnwise } from '../../cli/run.ts';

const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });
const toolsEnv = (seed: number, params: Record<string, unknown>) =>
  makeEnv({ ...envConfig('tools', params), seed }) as unknown as ToolsEnv;

function stepAll(env: ToolsEnv, actions: ToolCall[]) {
  env.reset(0);
  return actions.map((a) => env.step(a));
}

test('tasks without tickets are exactly those of before the ticketing system (digest of 300 worlds)', () => {
  // The digest was computed on commit 1743e66 (before tickets) by this same code: worlds, first
  // observations and their text, the first menu, and the spec.
  const h = createHash('sha256');
  for (const raw of [
    {},
    { domain: 'files' },
    { domain: 'bank' },
    { level: 3 },
    { level: 1, domain: 'mixed' },
  ])
    for (let s = 0; s < 60; s++) {
      const w = buildToolsWorld(toolsParams(raw), s);
      const env = new ToolsEnv(w);
      h.update(JSON.stringify(w));
      h.update(env.text(env.reset(0)));
      h.update(JSON.stringify(env.scripted().validActions([])));
      h.update(JSON.stringify(env.reset(0)));
    }
  h.update(JSON.stringify(toolsSpec()));
  assert.equal(h.digest('hex'), 'fe5fcc130f5511347dd70f86f8b64f39f0617189cbf066a332cc505a9ee55ccd');
  assert.deepEqual(envSpec({ ...envConfig('tools', {}), seed: 0 }).tools, TOOLS_TOOLS);
  assert.equal(TOOLS_TOOLS.length, 13);
  assert.deepEqual(envSpec({ ...envConfig('tools', { domain: 'all' }), seed: 0 }).tools, TOOLS_TOOLS_TICKETS);
  assert.equal(TOOLS_TOOLS_TICKETS.length, 20);
});

test('generator: the tickets domain uses tickets only, all mixes the three APIs, levels hold', () => {
  for (let s = 0; s < 30; s++) {
    const w = buildToolsWorld(toolsParams({ domain: 'tickets' }), s);
    assert.ok(w.steps.every((x) => x.api === 'tickets'));
    const ids = Object.keys(w.initial.tickets ?? {});
    assert.ok(ids.length >= 3 && ids.length <= 5);
    assert.deepEqual(
      ids,
      ids.map((_, i) => `T-${101 + i}`),
    );
    for (const t of Object.values(w.initial.tickets ?? {}))
      assert.equal(t.assignee === null, t.status === 'open');
    assert.ok(w.attrs.some((a) => a.changed));
    assert.equal(buildToolsWorld(toolsParams({ domain: 'files' }), s).initial.tickets, undefined);
  }
  const apis = new Set<string>();
  for (let s = 0; s < 20; s++)
    for (const x of buildToolsWorld(toolsParams({ domain: 'all' }), s).steps) apis.add(x.api);
  assert.deepEqual([...apis].sort(), ['bank', 'files', 'tickets']);
  for (const [level, lo, hi] of [
    [1, 1, 2],
    [3, 5, 7],
  ] as const)
    for (let s = 0; s < 20; s++) {
      const n = buildToolsWorld(toolsParams({ domain: 'tickets', level }), s).steps.length;
      assert.ok(n >= lo && n <= hi, `${level}: ${n}`);
    }
  assert.deepEqual(
    buildToolsWorld(toolsParams({ domain: 'all' }), 3),
    buildToolsWorld(toolsParams({ domain: 'all' }), 3),
  );
});

const T = (over: Partial<Ticket> = {}): Ticket => ({
  title: 'VPN drops',
  status: 'open',
  assignee: null,
  priority: 'low',
  comments: [],
  ...over,
});
const S = (tickets: Record<string, Ticket>): ApiState => ({ files: {}, accounts: {}, tickets });

test('ticket API: sequential ids, assign starts work, closed tickets are frozen, search filters', () => {
  const s0 = S({ 'T-101': T(), 'T-102': T({ title: 'Printer jams', status: 'closed', assignee: 'Jun' }) });
  assert.equal(nextTicketId(s0.tickets ?? {}), 'T-103');
  assert.equal(nextTicketId({}), 'T-101');
  const c = execute(s0, 'create_ticket', { title: 'Order toner', priority: 'high' });
  assert.ok(c.ok && c.mutating);
  assert.deepEqual(c.ok && c.output, { created: 'T-103' });
  assert.deepEqual(c.ok && c.state.tickets?.['T-103'], T({ title: 'Order toner', priority: 'high' }));
  assert.equal(s0.tickets?.['T-103'], undefined); // execute works on a copy
  const a = execute(s0, 'assign_ticket', { ticket: 'T-101', assignee: 'Kemi' });
  assert.deepEqual(a.ok && a.output, { ticket: 'T-101', assignee: 'Kemi', status: 'in_progress' });
  for (const [name, args] of [
    ['assign_ticket', { ticket: 'T-102', assignee: 'Kemi' }],
    ['comment_ticket', { ticket: 'T-102', text: 'x' }],
    ['set_priority', { ticket: 'T-102', priority: 'high' }],
    ['close_ticket', { ticket: 'T-102' }],
  ] as const) {
    const r = execute(s0, name, args);
    assert.deepEqual(r.ok ? 'ok' : r.code, 'closed', name);
  }
  const g = execute(s0, 'get_ticket', { ticket: 'T-102' });
  assert.equal(g.ok && (g.output as { status: string }).status, 'closed');
  const missing = execute(s0, 'get_ticket', { ticket: 'T-999' });
  assert.equal(missing.ok ? 'ok' : missing.code, 'no-such-ticket');
  // search_tickets against a brute-force filter on a generated state.
  const w = buildToolsWorld(toolsParams({ domain: 'tickets' }), 5);
  const all = w.initial.tickets ?? {};
  for (const q of [
    {},
    { status: 'open' },
    { status: 'closed' },
    { query: 'THE' },
    { assignee: 'Mina', status: 'in_progress' },
  ] as Record<string, string>[]) {
    const r = execute(w.initial, 'search_tickets', q);
    const want = Object.keys(all)
      .sort()
      .filter(
        (id) =>
          (q.status === undefined || all[id].status === q.status) &&
          (q.assignee === undefined || all[id].assignee === q.assignee) &&
          all[id].title.toLowerCase().includes((q.query ?? '').toLowerCase()),
      );
    assert.deepEqual(
      r.ok && (r.output as { tickets: { id: string }[] }).tickets.map((t) => t.id),
      want,
      JSON.stringify(q),
    );
  }
});

test('state checker and destroyed attributes on hand-made ticket states', () => {
  const initial = S({ 'T-101': T(), 'T-102': T({ title: 'Printer jams', comments: ['a'] }) });
  const goal = S({
    'T-101': T({ status: 'closed', assignee: 'Ivo' }),
    'T-102': T({ title: 'Printer jams', comments: ['a', 'b'] }),
    'T-103': T({ title: 'Order toner', priority: 'high' }),
  });
  const attrs = goalAttributes(initial, goal);
  assert.deepEqual(stateChecker(goal, JSON.parse(JSON.stringify(goal))), { ok: true, diffs: [] });
  assert.deepEqual(stateChecker(initial, goal).diffs, [
    'assignee:T-101',
    'assignee:T-103',
    'comments:T-102',
    'comments:T-103',
    'priority:T-103',
    'status:T-101',
    'status:T-103',
    'title:T-103',
  ]);
  assert.deepEqual(destroyed(initial, goal, attrs), []);
  // Closing T-101 before assigning it: it can no longer be assigned.
  assert.deepEqual(destroyed(S({ ...initial.tickets, 'T-101': T({ status: 'closed' }) }), goal, attrs), [
    'assignee:T-101',
  ]);
  // Assigning then closing reaches the goal: nothing destroyed.
  assert.deepEqual(
    destroyed(S({ ...initial.tickets, 'T-101': T({ status: 'closed', assignee: 'Ivo' }) }), goal, attrs),
    [],
  );
  // A comment the goal lacks, a stray ticket (it takes T-103 with another title), assigning T-102.
  assert.deepEqual(
    destroyed(
      S({ ...initial.tickets, 'T-102': T({ title: 'Printer jams', comments: ['a', 'c'] }) }),
      goal,
      attrs,
    ),
    ['comments:T-102'],
  );
  assert.deepEqual(destroyed(S({ ...initial.tickets, 'T-103': T({ title: 'ok' }) }), goal, attrs), [
    'title:T-103',
  ]);
  assert.deepEqual(destroyed(S({ ...initial.tickets, 'T-104': T({ title: 'ok' }) }), goal, attrs), [
    'title:T-104',
  ]);
  assert.deepEqual(
    destroyed(
      S({
        ...initial.tickets,
        'T-102': T({ title: 'Printer jams', comments: ['a'], assignee: 'Jun', status: 'in_progress' }),
      }),
      goal,
      attrs,
    ).sort(),
    ['assignee:T-102', 'status:T-102'],
  );
  // Quality: 8 changed attributes; the goal state scores 1, one destroyed one costs 1/8.
  assert.equal(quality(goal, goal, attrs), 1);
  assert.equal(
    quality(S({ ...initial.tickets, 'T-101': T({ status: 'closed' }) }), goal, attrs),
    (1 - 1) / 8,
  );
});

test('failure kinds with tickets: misperception, irreversible, recoverable closed, unknown without tickets', () => {
  const env = toolsEnv(2, { domain: 'tickets' });
  const w = env.world;
  const [mis] = stepAll(env, [call('get_ticket', { ticket: 'T-999' })]);
  assert.deepEqual([mis.terminated, mis.info.valid, mis.info.failure], [true, false, 'misperception']);
  const closed = Object.keys(w.initial.tickets ?? {}).find(
    (id) => w.initial.tickets?.[id].status === 'closed',
  );
  if (closed !== undefined) {
    const [r] = stepAll(env, [call('comment_ticket', { ticket: closed, text: 'x' })]);
    assert.deepEqual([r.terminated, r.info.valid, r.info.error], [false, false, 'closed']);
  }
  const keep = Object.keys(w.goal.tickets ?? {}).find(
    (id) => w.goal.tickets?.[id].status !== 'closed',
  ) as string;
  const [c] = stepAll(env, [call('close_ticket', { ticket: keep })]);
  assert.deepEqual([c.terminated, c.info.failure], [true, 'irreversible']);
  const [stray] = stepAll(env, [call('create_ticket', { title: 'not asked for', priority: 'low' })]);
  assert.deepEqual([stray.terminated, stray.info.failure], [true, 'irreversible']);
  const done = stepAll(env, [...w.steps.map((s) => s.call), call('finish')]);
  assert.deepEqual([done.at(-1)?.reward, done.at(-1)?.info.success], [1, true]);
  assert.match(env.text(done[0].observation), /Functions: .*search_tickets.*close_ticket, finish/);
  env.close();
  const files = toolsEnv(2, { domain: 'files' });
  const [u] = stepAll(files, [call('get_ticket', { ticket: 'T-101' })]);
  assert.deepEqual([u.terminated, u.info.valid, u.info.error], [false, false, 'schema']);
  assert.match(u.observation.last?.error ?? '', /unknown function "get_ticket"/);
  files.close();
  assert.equal(parseToolCall(call('get_ticket', { ticket: 'T-1' }), true).ok, true);
});

test('checkEnv passes on the all domain; every menu action is valid; schemas agree with ajv', async () => {
  for (const seed of [0, 1]) {
    const menu = toolsEnv(seed, { domain: 'all' }).scripted().validActions([]);
    const extra = [call('get_ticket', { ticket: 'T-0' }), call('assign_ticket', { ticket: 'T-101' })];
    const problems = await checkEnv(
      () => toolsEnv(seed, { domain: 'all' }) as unknown as Env<ToolsObservation, ToolCall>,
      {
        episodes: 5,
        maxTurns: 10,
        seed,
        action: (rng) => (rng.int(6) === 0 ? extra[rng.int(2)] : menu[rng.int(menu.length)]),
        malformed: { name: 'no_such_tool', arguments: {} },
      },
    );
    assert.deepEqual(problems, []);
    const env = toolsEnv(seed, { domain: 'tickets' });
    for (const a of env.scripted().validActions([])) {
      const [r] = stepAll(env, [a]);
      assert.notEqual(r.info.valid, false, JSON.stringify(a));
    }
    env.close();
  }
  const ajv = new Ajv();
  const byName = new Map(TOOLS_TOOLS_TICKETS.map((t) => [t.name, ajv.compile(t.parameters)]));
  for (const c of [
    call('search_tickets'),
    call('search_tickets', { status: 'done' }),
    call('search_tickets', { status: 'open', assignee: 'Jun', query: 'vpn' }),
    call('create_ticket', { title: 'x', priority: 'urgent' }),
    call('create_ticket', { title: 'x', priority: 'high' }),
    call('assign_ticket', { ticket: 'T-101' }),
    call('comment_ticket', { ticket: 'T-101', text: '' }),
    call('close_ticket', { ticket: 'T-101', force: true }),
  ])
    assert.equal(byName.get(c.name)!(c.arguments), parseToolCall(c, true).ok, JSON.stringify(c));
});

test('CLI: rollout --env tools --domain all: oracle 50/50, eps fewer, random almost none; describe', async () => {
  const run = async (policy: string) => {
    const r = await turnwise([
      'rollout',
      '--env',
      'tools',
      '--domain',
      'all',
      '--policy',
      policy,
      '--tasks',
      '50',
      '--budget',
      '20',
      '--json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { success: number; episodes: number };
  };
  assert.deepEqual(Object.values(await run('oracle')).slice(0, 2), [50, 1]);
  const eps = await run('oracle:eps=0.3');
  assert.ok(eps.success > 0.05 && eps.success < 0.9, String(eps.success));
  assert.ok((await run('random')).success <= 0.06);
  const d = await turnwise(['env', 'describe', 'tools', '--domain', 'tickets', '--task-seed', '4', '--gold']);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /\ntickets:\n {2}T-101 "/);
  assert.match(d.stdout, /tools: .*create_ticket/);
});
