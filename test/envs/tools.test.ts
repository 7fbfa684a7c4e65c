// The tools env: generator determinism and difficulty spread, both BFCL checkers on hand-made cases,
// failure kinds (misuse, misperception, irreversible), checkEnv, closes after rollouts, and the CLI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import type { Env, ToolCall } from '../../src/core/types.ts';
import { checkEnv } from '../../src/envs/check.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import {
  type ApiState,
  buildToolsWorld,
  destroyed,
  goalAttributes,
  parseToolCall,
  responseChecker,
  stateChecker,
  TOOLS_TOOLS,
  type ToolsEnv,
  type ToolsObservation,
  toolsParams,
} from '../../src/envs/tools/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { turnwise } from '../cli/run.ts';
import { rolloutContract } from './rollout-contract.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({
  ...envConfig('tools', params),
  seed,
});
const toolsEnv = (seed: number, params: Record<string, unknown> = {}) =>
  makeEnv(task(seed, params)) as unknown as ToolsEnv;
const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });

test('the generator is deterministic and levels set the number of steps', () => {
  const p = toolsParams({});
  assert.deepEqual(buildToolsWorld(p, 7), buildToolsWorld(p, 7));
  assert.notDeepEqual(buildToolsWorld(p, 7).request, buildToolsWorld(p, 8).request);
  const spread: Record<number, Set<number>> = { 1: new Set(), 2: new Set(), 3: new Set() };
  for (const level of [1, 2, 3] as const)
    for (let s = 0; s < 40; s++) {
      const w = buildToolsWorld(toolsParams({ level }), s);
      spread[level].add(w.steps.length);
      assert.ok(w.steps.some((x) => x.mutating));
      assert.equal(w.goldResults.length, w.steps.length);
      assert.ok(w.attrs.some((a) => a.changed));
    }
  assert.deepEqual([...spread[1]].sort(), [1, 2]);
  assert.ok([...spread[2]].every((n) => n >= 3 && n <= 5));
  assert.ok([...spread[3]].every((n) => n >= 5 && n <= 7));
  const levels = new Set<number>();
  for (let s = 0; s < 30; s++) levels.add(buildToolsWorld(p, s).level);
  assert.deepEqual([...levels].sort(), [1, 2, 3]);
  for (const domain of ['files', 'bank'] as const)
    for (let s = 0; s < 10; s++)
      assert.ok(buildToolsWorld(toolsParams({ domain }), s).steps.every((x) => x.api === domain));
});

const S = (files: Record<string, string>, balance = 100, open = true): ApiState => ({
  files,
  accounts: { 'ACC-1': { owner: 'Ann', balance, open } },
});

test('state checker: equal states pass, any differing attribute is named', () => {
  assert.deepEqual(stateChecker(S({ a: 'x', b: 'y' }), S({ b: 'y', a: 'x' })), { ok: true, diffs: [] });
  assert.deepEqual(stateChecker(S({ a: 'x' }), S({ a: 'x', b: 'y' })).diffs, ['file:b']);
  assert.deepEqual(stateChecker(S({ a: 'x' }), S({ a: 'z' })).diffs, ['file:a']);
  assert.deepEqual(stateChecker(S({}, 100), S({}, 90)).diffs, ['balance:ACC-1']);
  assert.deepEqual(stateChecker(S({}, 0, false), S({}, 0, true)).diffs, ['open:ACC-1']);
});

test('response checker: gold results as an unordered subsequence (multiset) of the agent results', () => {
  assert.equal(responseChecker(['a', 'b'], ['b', 'x', 'a']).ok, true);
  assert.equal(responseChecker([], []).ok, true);
  assert.deepEqual(responseChecker(['a', 'b'], ['a', 'x']), { ok: false, missing: ['b'] });
  // Multiplicity counts: two gold 'a' need two agent 'a'.
  assert.deepEqual(responseChecker(['a', 'a'], ['a', 'b']), { ok: false, missing: ['a'] });
  assert.equal(responseChecker(['a', 'a'], ['a', 'b', 'a']).ok, true);
});

test('destroyed attributes: the last source of needed contents, a needed account closed', () => {
  const initial = S({ a: 'x', b: 'y' });
  const goal = S({ a: 'x\nmore', c: 'y' });
  const attrs = goalAttributes(initial, goal);
  assert.deepEqual(destroyed(initial, goal, attrs), []);
  // b's contents are needed in c: removing b (no copy) destroys file:c; a copy first keeps it reachable.
  assert.deepEqual(destroyed(S({ a: 'x' }), goal, attrs), ['file:c']);
  assert.deepEqual(destroyed(S({ a: 'x', d: 'y' }), goal, attrs), []);
  // a can still grow into "x\nmore" by append; a different line cannot shrink back.
  assert.deepEqual(destroyed(S({ a: 'x\nother', b: 'y' }), goal, attrs), ['file:a']);
  assert.deepEqual(destroyed(S({ a: 'x', b: 'y' }, 0, false), goal, attrs).sort(), [
    'balance:ACC-1',
    'open:ACC-1',
  ]);
});

function stepAll(env: ToolsEnv, actions: ToolCall[]) {
  env.reset(0);
  return actions.map((a) => env.step(a));
}

test('failure kinds: misuse, misperception, irreversible, wrong-answer, success', () => {
  const env = toolsEnv(3, { misuse: 2 });
  const w = env.world;
  const gold = w.steps.map((s) => s.call);
  // Malformed calls are tool errors until the misuse-th, which ends the episode as invalid-action.
  const m = stepAll(env, [call('format_disk'), call('cat', { file: 7 })]);
  assert.deepEqual(
    m.map((r) => [r.terminated, r.info.valid, r.info.failure]),
    [
      [false, false, undefined],
      [true, false, 'invalid-action'],
    ],
  );
  assert.match(m[0].observation.last?.error ?? '', /unknown function "format_disk"/);
  // Acting on what is not there.
  for (const a of [call('cat', { file: 'nope.txt' }), call('deposit', { account: 'ACC-0', amount: 5 })]) {
    const [r] = stepAll(env, [a]);
    assert.deepEqual([r.terminated, r.info.valid, r.info.failure], [true, false, 'misperception']);
  }
  // Recoverable errors do not end it.
  const f = Object.keys(w.initial.files)[0];
  const [dup] = stepAll(env, [call('cp', { src: f, dst: f })]);
  assert.deepEqual([dup.terminated, dup.info.error], [false, 'exists']);
  // Closing an account the goal keeps open is irreversible.
  const keep = Object.keys(w.goal.accounts).find((id) => w.goal.accounts[id].open) as string;
  const [c] = stepAll(env, [call('close_account', { account: keep })]);
  assert.deepEqual([c.terminated, c.info.failure], [true, 'irreversible']);
  assert.ok((c.info.quality as number) < 0);
  // finish at once: wrong-answer; the gold path then finish: success with quality 1.
  const [early] = stepAll(env, [call('finish')]);
  assert.deepEqual([early.terminated, early.info.failure, early.info.stateOk], [true, 'wrong-answer', false]);
  const done = stepAll(env, [...gold, call('finish')]);
  const last = done[done.length - 1];
  assert.deepEqual([last.reward, last.info.success, last.info.quality], [1, true, 1]);
  assert.equal(env.step(call('ls')).info.valid, false); // after the end
  // The right state without the gold reads fails the response checker.
  const noReads = stepAll(env, [...w.steps.filter((s) => s.mutating).map((s) => s.call), call('finish')]);
  const end = noReads[noReads.length - 1];
  if (w.steps.some((s) => !s.mutating))
    assert.deepEqual([end.info.stateOk, end.info.responseOk], [true, false]);
  env.close();
  assert.throws(() => env.reset(0), /after close/);
});

test('removing the only source of a needed file is irreversible; with a copy it is not', () => {
  const env = toolsEnv(1, { domain: 'files', level: 1 });
  const w = env.world;
  const needed = Object.keys(w.initial.files).find(
    (f) =>
      w.goal.files[f] === w.initial.files[f] &&
      Object.values(w.initial.files).filter((c) => c === w.initial.files[f]).length === 1,
  ) as string;
  assert.ok(needed !== undefined);
  const [r] = stepAll(env, [call('rm', { file: needed })]);
  assert.deepEqual(
    [r.terminated, r.info.failure, r.info.destroyed],
    [true, 'irreversible', [`file:${needed}`]],
  );
  const [c1, c2] = stepAll(env, [call('cp', { src: needed, dst: 'keep.txt' }), call('rm', { file: needed })]);
  assert.equal(c1.terminated || c2.terminated, false);
  env.close();
});

test('checkEnv passes (menu actions, errors, snapshots), text view, stateKey, schemas agree with ajv', async () => {
  for (const seed of [0, 1, 2]) {
    let made = 0;
    let closed = 0;
    const make = () => {
      const env = toolsEnv(seed);
      made++;
      const close = env.close.bind(env);
      env.close = () => {
        closed++;
        close();
      };
      return env as unknown as Env<ToolsObservation, ToolCall>;
    };
    const menu = toolsEnv(seed).scripted().validActions([]);
    const extra = [call('cat', { file: 'nope' }), call('withdraw', { account: 'x', amount: -1 })];
    const problems = await checkEnv(make, {
      episodes: 6,
      maxTurns: 12,
      seed,
      action: (rng) => (rng.int(6) === 0 ? extra[rng.int(2)] : menu[rng.int(menu.length)]),
      malformed: { name: 'no_such_tool', arguments: {} },
    });
    assert.deepEqual(problems, []);
    assert.equal(closed, made);
  }
  const env = toolsEnv(5);
  const menu = env.scripted().validActions([]);
  for (const a of menu) {
    const [r] = stepAll(env, [a]);
    assert.notEqual(r.info.valid, false, JSON.stringify(a));
  }
  const [a, b] = stepAll(env, [call('ls'), call('list_accounts')]);
  assert.equal(env.stateKey(a.observation), env.stateKey(b.observation)); // reads do not move the state
  assert.match(env.text(a.observation), /^Please do the following[\s\S]*ls returned: \{"files"/);
  env.close();
  const ajv = new Ajv();
  const byName = new Map(TOOLS_TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
  for (const c of [
    call('ls'),
    call('ls', { x: 1 }),
    call('cat', { file: 'a.txt' }),
    call('cat', { file: '../etc/passwd' }),
    call('deposit', { account: 'A', amount: 5 }),
    call('deposit', { account: 'A', amount: 0.5 }),
    call('transfer', { from: 'A', to: 'B' }),
  ])
    assert.equal(byName.get(c.name)!(c.arguments), parseToolCall(c).ok, JSON.stringify(c));
});

test('every env a rollout makes is closed once', async () => {
  let made = 0;
  let closed = 0;
  const makeCounted = (t: Parameters<typeof envs.make>[0]) => {
    const env = envs.make(t) as unknown as ToolsEnv;
    made++;
    const close = env.close.bind(env);
    env.close = () => {
      closed++;
      close();
    };
    return env as unknown as Env<unknown, unknown>;
  };
  const tasks = makeTasks(envConfig('tools', {}), 10, 100);
  const spec = envs.spec(tasks[0]);
  for (const p of ['oracle', 'oracle:eps=0.3', 'random']) {
    const r = await rollout({
      tasks,
      samples: 2,
      budget: 20,
      runSeed: 1,
      policy: makePolicy(p, spec),
      makeEnv: makeCounted,
      concurrency: 3,
    });
    assert.equal(r.length, 20);
    if (p === 'oracle') assert.ok(r.every((t) => t.outcome.success));
  }
  assert.deepEqual([made, closed], [30, 30]);
});

test('CLI: rollout --env tools: oracle 50/50, eps fewer, random almost none; env describe', async () => {
  const run = (policy: string) => rolloutContract('tools', policy);
  const oracle = await run('oracle');
  assert.deepEqual([oracle.episodes, oracle.success], [50, 1]);
  const eps = await run('oracle:eps=0.3');
  assert.ok(eps.success > 0.05 && eps.success < 0.9, String(eps.success));
  const random = await run('random');
  assert.ok(random.success <= 0.06, String(random.success));
  const d = await turnwise(['env', 'describe', 'tools', '--task-seed', '3', '--gold']);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /^tools \{.*\} task seed 3\nlevel \d \(\d steps\)\nrequest:/);
  assert.match(d.stdout, /gold:\n/);
  const j = await turnwise(['env', 'describe', 'tools', '--task-seed', '3', '--json']);
  const desc = JSON.parse(j.stdout) as { request: string; gold?: unknown };
  assert.equal(desc.request, buildToolsWorld(toolsParams({}), 3).request);
  assert.equal(desc.gold, undefined);
  const bad = await turnwise([
    'rollout',
    '--env',
    'tools',
    '--domain',
    'shop',
    '--policy',
    'oracle',
    '--tasks',
    '1',
  ]);
  assert.equal(bad.code, 2);
});
