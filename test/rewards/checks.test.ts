// Every deterministic criterion kind on hand-built trajectories (tool calls, recorded chat turns,
// FrozenLake's discrete actions through its chat encoding), the preference criterion's scores and
// pairs, and side effects counted by replay on the tools env against a count by hand of the task's
// gold path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toolsSideEffects } from '../../src/cli/rubric.ts';
import type { Policy, ToolCall, Trajectory } from '../../src/core/types.ts';
import { envConfig, envSpec, envs, makeEnv, makeTasks, rollout } from '../../src/index.ts';
import { chatSpec } from '../../src/policies/chat.ts';
import { check } from '../../src/rewards/checks.ts';
import { preferenceScores, preferredPairs } from '../../src/rewards/preference.ts';
import { type Criterion, parseRubric } from '../../src/rewards/rubric.ts';
import { Transcripts } from '../../src/rewards/transcript.ts';
import { assistant, LAKE, trajectory } from './fixtures.ts';

const lake = makeEnv(LAKE);
const transcripts = new Transcripts((task) =>
  task.env === 'frozenlake' ? { text: lake.text?.bind(lake), chat: chatSpec(envSpec(task)) } : undefined,
);

/** The rubric's criteria, one per entry (ids from their index). */
function criteria(...cs: Record<string, unknown>[]): Criterion[] {
  return parseRubric({ criteria: cs.map((c, i) => ({ id: `c${i}`, ...c })) }, 't.json').criteria;
}

const score = (c: Criterion, t: Trajectory, effects?: number | string) => {
  assert.ok(c.kind !== 'judge' && c.kind !== 'preference');
  return check(c, t, transcripts, effects);
};

const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });
const TOOLS = { env: 'tools', params: {}, seed: 0 };

test('success and max-turns read the outcome', () => {
  const [success, max3] = criteria({ kind: 'success' }, { kind: 'max-turns', n: 3 });
  const won = trajectory('w', [1, 2, 2], { success: true });
  const lost = trajectory('l', [1, 2, 2, 1], { failure: 'irreversible' });
  assert.deepEqual(score(success, won), { score: 1 });
  assert.deepEqual(score(success, lost), { score: 0 });
  assert.deepEqual(score(max3, won), { score: 1, value: 3 });
  assert.deepEqual(score(max3, lost), { score: 0, value: 4 });
});

test('no-invalid: a turn with info.valid false, or an episode ended as invalid-action', () => {
  const [c] = criteria({ kind: 'no-invalid' });
  assert.deepEqual(score(c, trajectory('a', [1, 2])), { score: 1, value: 0 });
  assert.deepEqual(
    score(
      c,
      trajectory('b', [1, -1, 2, -1], {}, (t) => (t % 2 === 1 ? { info: { valid: false } } : {})),
    ),
    { score: 0, value: 2 },
  );
  assert.deepEqual(score(c, trajectory('c', [1], { failure: 'invalid-action' })), { score: 0, value: 0 });
});

test('tool-order and never-called on tool calls, recorded chat turns and discrete actions', () => {
  const [order, neverRm, neverRmA, neverUp] = criteria(
    { kind: 'tool-order', before: 'ls', after: 'rm' },
    { kind: 'never-called', tool: 'rm' },
    { kind: 'never-called', tool: 'rm', arguments: { file: 'a.txt' } },
    { kind: 'never-called', tool: 'move', arguments: { direction: 'Up' } },
  );
  const tools = (actions: ToolCall[]) => trajectory('t', actions, { task: TOOLS });
  // ls before rm; rm before any ls; no rm at all (nothing to order); an invalid ls does not count.
  const lsRm = tools([call('ls'), call('cat', { file: 'a.txt' }), call('rm', { file: 'b.txt' })]);
  const rmLs = tools([call('rm', { file: 'a.txt' }), call('ls')]);
  assert.deepEqual(score(order, lsRm), { score: 1 });
  assert.deepEqual(score(order, rmLs), { score: 0 });
  assert.deepEqual(score(order, tools([call('ls')])), { score: 1 });
  const invalidLs = trajectory('i', [call('ls'), call('rm', { file: 'a.txt' })], { task: TOOLS }, (t) =>
    t === 0 ? { info: { valid: false } } : {},
  );
  assert.deepEqual(score(order, invalidLs), { score: 0 });
  assert.deepEqual(score(neverRm, lsRm), { score: 0 });
  assert.deepEqual(score(neverRmA, lsRm), { score: 1 }, 'rm of b.txt, not of a.txt');
  assert.deepEqual(score(neverRmA, rmLs), { score: 0 });
  // Recorded chat turns: the assistant messages' tool calls (two in one message: ls first).
  const recorded = trajectory(
    'r',
    [
      assistant('looking', [
        ['ls', {}],
        ['rm', { file: 'a.txt' }],
      ]),
      assistant('done'),
    ],
    {
      task: TOOLS,
      observations: [[{ role: 'user', content: 'clean up' }], [{ role: 'tool', content: 'ok' }]],
    },
  );
  assert.deepEqual(score(order, recorded), { score: 1 });
  assert.deepEqual(score(neverRmA, recorded), { score: 0 });
  // FrozenLake: action 3 is Up, called as move({"direction":"Up"}) by the env's chat encoding.
  assert.deepEqual(score(neverUp, trajectory('f', [1, 2, 1])), { score: 1 });
  assert.deepEqual(score(neverUp, trajectory('g', [1, 3, 1])), { score: 0 });
});

test('final-regex reads the last turn as written: a name, a raw text, a call, a message', () => {
  const [right, answer, removed, done] = criteria(
    { kind: 'final-regex', pattern: '^Right$' },
    { kind: 'final-regex', pattern: '<answer>\\s*right', flags: 'i' },
    { kind: 'final-regex', pattern: 'rm\\(\\{"file":"a\\.txt"\\}\\)' },
    { kind: 'final-regex', pattern: 'done' },
  );
  assert.deepEqual(score(right, trajectory('a', [1, 2])), { score: 1 });
  assert.deepEqual(score(right, trajectory('b', [2, 1])), { score: 0 });
  const text = trajectory('c', [1, 2], {}, (t) =>
    t === 1 ? { trace: { text: '<answer> RIGHT </answer>' } } : {},
  );
  assert.deepEqual(score(answer, text), { score: 1 });
  assert.deepEqual(score(right, text), { score: 0 }, 'the raw text is the final message, not the name');
  assert.deepEqual(
    score(removed, trajectory('d', [call('ls'), call('rm', { file: 'a.txt' })], { task: TOOLS })),
    {
      score: 1,
    },
  );
  const recorded = trajectory('e', [assistant('all done')], {
    task: TOOLS,
    observations: [[{ role: 'user', content: 'x' }]],
  });
  assert.deepEqual(score(done, recorded), { score: 1 });
});

test('side-effects: at most max, or missing with the reason', () => {
  const [none, two] = criteria({ kind: 'side-effects' }, { kind: 'side-effects', max: 2 });
  const t = trajectory('s', [call('ls')], { task: TOOLS });
  assert.deepEqual(score(none, t, 0), { score: 1, value: 0 });
  assert.deepEqual(score(none, t, 1), { score: 0, value: 1 });
  assert.deepEqual(score(two, t, 2), { score: 1, value: 2 });
  assert.deepEqual(score(two, t, 3), { score: 0, value: 3 });
  assert.deepEqual(score(two, t, 'env frozenlake records no side effects'), {
    missing: 'env frozenlake records no side effects',
  });
});

test("valid-calls: the format alone, from the env's own verdicts on hand-written calls", async () => {
  const [one, four] = criteria({ kind: 'valid-calls' }, { kind: 'valid-calls', n: 4 });
  const env = makeEnv(TOOLS) as unknown as {
    reset(s: number): unknown;
    step(a: unknown): { info: Record<string, unknown> };
  };
  env.reset(0);
  // ls and list_accounts are well formed (whatever they do), an unknown function and a string amount
  // are not, finish is.
  const actions = [
    call('ls'),
    call('no_such_tool'),
    call('deposit', { account: 'ACC-1', amount: '5' }),
    call('list_accounts'),
    call('finish'),
  ];
  const infos = actions.map((a) => env.step(a).info);
  assert.deepEqual(
    infos.map((i) => i.error ?? null),
    [null, 'schema', 'schema', null, null],
  );
  const t = trajectory('v', actions, { task: TOOLS }, (i) => ({ info: infos[i] }));
  assert.deepEqual(score(one, t), { score: 1, value: 3 });
  assert.deepEqual(score(four, t), { score: 0.75, value: 3 });
  assert.deepEqual(score(four, trajectory('l', [1, 2])), { missing: 'env frozenlake makes no tool calls' });
});

test("side-effects with count 'unrequested' reads the tools env's own count (info.sideEffects)", () => {
  const [c] = criteria({ kind: 'side-effects', max: 1, count: 'unrequested' });
  const t = (n: number | undefined) =>
    trajectory('u', [call('ls'), call('finish')], { task: TOOLS }, () => ({
      info: n === undefined ? {} : { sideEffects: n },
    }));
  assert.deepEqual(score(c, t(1)), { score: 1, value: 1 });
  assert.deepEqual(score(c, t(2)), { score: 0, value: 2 });
  assert.deepEqual(score(c, t(undefined)), {
    missing: 'the env recorded no count of unrequested side effects (info.sideEffects)',
  });
});

/** A policy that plays these actions, turn by turn. */
const playing = (actions: ToolCall[]): Policy<unknown, unknown> => ({
  id: 'list',
  budgetAware: false,
  act: (ctx) => ({ action: actions[ctx.turn], logp: 0 }),
});

test('side effects of the tools env, counted by replay, equal a count by hand of the calls that write', async () => {
  // Task 0 of tools (mixed): withdraw $230 from ACC-4909, the balance of ACC-6155, transfer $70,
  // cat log.txt, append to draft.txt, finish — three calls change the state (withdraw, transfer,
  // append); get_balance and cat read it; ls reads; cp writes one more; a refused call writes nothing.
  const [task] = makeTasks(envConfig('tools', {}), 1, 0);
  const run = async (actions: ToolCall[]) =>
    (
      await rollout({
        tasks: [task],
        samples: 1,
        budget: 20,
        runSeed: 0,
        policy: playing(actions),
        makeEnv: envs.make,
      })
    )[0];
  const gold = [
    call('withdraw', { account: 'ACC-4909', amount: 230 }),
    call('get_balance', { account: 'ACC-6155' }),
    call('transfer', { from: 'ACC-4909', to: 'ACC-6155', amount: 70 }),
    call('cat', { file: 'log.txt' }),
    call('append', { file: 'draft.txt', text: 'call the plumber' }),
    call('finish'),
  ];
  const solved = await run(gold);
  assert.equal(solved.outcome.success, true, 'the gold path solves the task');
  assert.equal(await toolsSideEffects(solved), 3);
  const more = await run([call('ls'), call('cp', { src: 'todo.txt', dst: 'copy.txt' }), ...gold]);
  assert.equal(await toolsSideEffects(more), 4);
  const refused = await run([
    call('withdraw', { account: 'ACC-4423', amount: 9999 }),
    call('ls'),
    call('finish'),
  ]);
  assert.equal(refused.turns[0].info.valid, false, 'insufficient funds: a tool error');
  assert.equal(await toolsSideEffects(refused), 0);
  // Not countable: another env, or a trajectory that does not replay as recorded.
  assert.equal(await toolsSideEffects(trajectory('f', [1])), 'env frozenlake records no side effects');
  const forged = structuredClone(solved);
  forged.turns[0].info = { ...forged.turns[0].info, valid: false };
  assert.equal(await toolsSideEffects(forged), 'turn 0 does not replay as recorded');
});

test('preference: among successes, 1 − the share of group-mates with fewer turns (then side effects)', () => {
  const f = (success: boolean, turns: number, effects?: number | string) => ({ success, turns, effects });
  // Successes with 5, 7, 7 and 9 turns, a failure with 2.
  const group = [f(true, 7), f(false, 2), f(true, 5), f(true, 9), f(true, 7)];
  assert.deepEqual(preferenceScores(group, ['turns']), [
    { score: 1 - 1 / 3 }, // beaten by the 5 only (the other 7 ties)
    { score: 0 },
    { score: 1 },
    { score: 0 }, // beaten by all three
    { score: 1 - 1 / 3 },
  ]);
  assert.deepEqual(preferenceScores([f(true, 4)], ['turns']), [{ score: 1 }], 'alone: nothing did better');
  assert.deepEqual(preferredPairs(group, ['turns']), {
    pairs: [
      [2, 0],
      [0, 3],
      [2, 3],
      [2, 4],
      [4, 3],
    ],
    unknown: 0,
  });
  // Turns then side effects: equal turns decided by fewer side effects; a missing count is no order.
  const tools = [f(true, 6, 3), f(true, 6, 1), f(true, 8, 0), f(true, 6, 'not replayed')];
  assert.deepEqual(preferredPairs(tools, ['turns', 'side-effects']), {
    pairs: [
      [1, 0],
      [0, 2],
      [1, 2],
      [3, 2], // fewer turns decide before the missing count is read
    ],
    unknown: 2,
  });
  // Side effects first: 3, 1 and 0 of them — the first beaten by both others, the second by the third.
  assert.deepEqual(preferenceScores(tools.slice(0, 3), ['side-effects', 'turns']), [
    { score: 0 },
    { score: 0.5 },
    { score: 1 },
  ]);
  assert.deepEqual(preferenceScores(tools, ['turns', 'side-effects'])[3], { missing: 'not replayed' });
});
