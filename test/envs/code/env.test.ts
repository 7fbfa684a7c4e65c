// The code env: the reference passes every hidden test in the sandbox (QuickJS agrees with the host),
// wrong programs do not; the checker and quality on hand-made attempts; failure kinds; escapes and bombs
// through the rollout loop; views, stateKey, snapshots; checkEnv; no leaks over repeated episodes; the
// scripted policies; determinism; benchCode; and the CLI contracts (rollout, env describe).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../../src/core/rng.ts';
import type {
  Action,
  Env,
  Policy,
  StepResult,
  ToolCall,
  Turn,
  TurnContext,
} from '../../../src/core/types.ts';
import { checkEnv } from '../../../src/envs/check.ts';
import {
  benchCode,
  CODE_TOOLS,
  type CodeEnv,
  type CodeObservation,
  codeWorld,
  grade,
  hostFunction,
  liveSandboxes,
  MAX_CODE,
  resetSandboxWorkerState,
  resultJson,
  sandboxModule,
  sandboxPool,
  sandboxWorkerState,
  WASM_MEMORY_PAGES,
} from '../../../src/envs/code/index.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../../src/envs/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import { rollout } from '../../../src/rollout/batch.ts';
import { turnwise } from '../../cli/run.ts';
import { rolloutContract } from '../rollout-contract.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({ ...envConfig('code', params), seed });
const codeEnv = (seed: number, params: Record<string, unknown> = {}) =>
  makeEnv(task(seed, params)) as unknown as CodeEnv;
const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });
const step = async (env: CodeEnv, a: ToolCall) => (await env.step(a)) as StepResult<CodeObservation>;

/** The share of hidden tests a program passes, computed on the host (V8). */
function hostQuality(seed: number, src: string, params: Record<string, unknown> = {}): number {
  const w = codeWorld(task(seed, params));
  const f = hostFunction(src, w.problem.name);
  const ok = w.hidden.filter((t) => {
    try {
      return resultJson(f(...(JSON.parse(t.argsJson) as unknown[]))) === t.expected;
    } catch {
      return false;
    }
  });
  return ok.length / w.hidden.length;
}

test('in the sandbox, the reference passes every hidden test and each wrong program fails one (QuickJS = V8)', async () => {
  await sandboxModule();
  for (let s = 0; s < 72; s++) {
    const w = codeWorld(task(s));
    const g = grade(w, w.problem.reference);
    assert.ok(g.pass.every(Boolean), `seed ${s} ${w.problem.family}: ${JSON.stringify(g.run.tests)}`);
    for (const src of w.wrong) {
      const q = grade(w, src).pass.filter(Boolean).length / w.hidden.length;
      assert.ok(q < 1, `seed ${s}: a wrong program passes in the sandbox`);
      assert.equal(q, hostQuality(s, src), `seed ${s}: sandbox and host disagree on\n${src}`);
    }
  }
  assert.equal(liveSandboxes(), 0);
});

test('an episode: run_tests feedback, quality = hidden share, submit ends with the documented reward', async () => {
  const seed = 5;
  const env = codeEnv(seed);
  await env.reset(seed);
  const w = env.world;
  const wrong = w.wrong[0];
  const r1 = await step(env, call('run_tests', { code: wrong }));
  assert.equal(r1.terminated, false);
  assert.equal(r1.info.quality, hostQuality(seed, wrong));
  const last = r1.observation.last!;
  const vis = w.visible.filter((t) => {
    const f = hostFunction(wrong, w.problem.name);
    return resultJson(f(...(JSON.parse(t.argsJson) as unknown[]))) === t.expected;
  }).length;
  assert.deepEqual(
    [last.passed, last.total, last.failures?.length],
    [vis, w.visible.length, w.visible.length - vis],
  );
  for (const f of last.failures ?? [])
    assert.ok(f.call.startsWith(`${w.problem.name}(`) && f.expected.length > 0);
  assert.deepEqual(r1.info.visible, { passed: vis, total: w.visible.length });
  // The gold path.
  const r2 = await step(env, call('run_tests', { code: w.problem.reference }));
  assert.deepEqual([r2.info.quality, r2.observation.last?.passed, r2.observation.last?.failures], [1, 3, []]);
  const r3 = await step(env, call('submit', { code: w.problem.reference }));
  assert.deepEqual([r3.reward, r3.terminated, r3.info.success, r3.info.failure], [1, true, true, undefined]);
  const r4 = await step(env, call('submit', { code: w.problem.reference }));
  assert.deepEqual([r4.info.valid, r4.info.error, r4.terminated, r4.reward], [false, 'over', true, 0]);
  // A wrong submit: wrong-answer, reward 0 (binary) or the hidden share (fraction).
  for (const reward of ['binary', 'fraction'] as const) {
    const e = codeEnv(seed, { reward });
    await e.reset(seed);
    const r = await step(e, call('submit', { code: wrong }));
    const q = hostQuality(seed, wrong);
    assert.deepEqual(
      [r.terminated, r.info.success, r.info.failure, r.reward, r.info.quality],
      [true, false, 'wrong-answer', reward === 'binary' ? 0 : q, q],
    );
    e.close();
  }
  env.close();
});

test('tool misuse is a tool error the episode survives: unknown tool, missing or oversized code', async () => {
  const env = codeEnv(2);
  await env.reset(2);
  for (const a of [
    call('exec', { code: 'x' }),
    call('run_tests', {}),
    call('submit', { code: '' }),
    call('submit', { code: 'x'.repeat(MAX_CODE + 1) }),
    call('run_tests', { code: 'function f() {}', extra: 1 }),
    null as unknown as ToolCall,
  ]) {
    const r = await step(env, a);
    assert.deepEqual(
      [r.info.valid, r.info.error, r.terminated, r.reward],
      [false, 'schema', false, 0],
      JSON.stringify(a),
    );
    assert.equal(r.observation.last?.ok, false);
  }
  env.close();
});

/** Plays fixed actions, like replay:FILE — how an outside trajectory's escapes reach the env. */
class FixedActions implements Policy<unknown, ToolCall> {
  readonly id = 'fixed';
  readonly budgetAware = false;
  constructor(private readonly actions: ToolCall[]) {}
  act(ctx: TurnContext<unknown>): Action<ToolCall> {
    return { action: this.actions[Math.min(ctx.turn, this.actions.length - 1)], logp: 0 };
  }
}

test('escapes, loops, bombs and recursion submitted through the rollout are contained, logged, wrong-answer', async () => {
  const fn = codeWorld(task(0)).problem.name;
  const cases: [string, string, string][] = [
    [
      `function ${fn}() { return this.constructor.constructor('return process')(); }`,
      'error',
      "'process' is not defined",
    ],
    [`function ${fn}() { return require('fs'); }`, 'error', "'require' is not defined"],
    [`function ${fn}() { return import('fs'); }`, 'fail', ''],
    [`function ${fn}() { return fetch('http://127.0.0.1:1/'); }`, 'error', "'fetch' is not defined"],
    [`function ${fn}() { while (true) {} }`, 'timeout', 'interrupted'],
    [`function ${fn}() { let a = []; for (;;) a.push(new Array(1e6)); }`, 'timeout', ''],
    [`function ${fn}() { let a = []; for (;;) a.push(new Uint8Array(1e6)); }`, 'memory', 'out of memory'],
    [`function ${fn}(x) { return ${fn}(x) + 1; }`, 'error', 'stack overflow'],
    [`this.constructor.constructor('return process')().exit(1)`, 'compile', "'process' is not defined"],
  ];
  // The env runs attempts in sandbox workers: what is checked is their modules' state.
  for (const [code, status, message] of cases) {
    const [traj] = await rollout({
      tasks: [task(0)],
      samples: 1,
      budget: 5,
      runSeed: 0,
      policy: new FixedActions([call('run_tests', { code }), call('submit', { code })]),
      makeEnv: (t) => envs.make(t),
    });
    assert.deepEqual(
      [traj.outcome.failure, traj.outcome.turns, traj.outcome.end],
      ['wrong-answer', 2, 'terminated'],
    );
    for (const turn of traj.turns) {
      const sb = turn.info.sandbox as {
        tests: Record<string, number>;
        error?: string;
        message?: string;
        firstTestError?: string;
      };
      assert.equal(turn.info.quality, 0);
      if (status === 'compile')
        assert.deepEqual([sb.error, sb.message?.includes(message)], ['compile', true]);
      else assert.ok((sb.tests[status] ?? 0) >= 1, `${code}: ${JSON.stringify(sb)}`);
      if (message !== '' && status !== 'compile')
        assert.ok(sb.firstTestError?.includes(message), JSON.stringify(sb));
    }
    assert.equal(sandboxWorkerState().live, 0);
  }
  assert.equal(sandboxWorkerState().loads, 1, 'no worker reloaded its module');
  assert.ok(sandboxWorkerState().memoryBytes <= WASM_MEMORY_PAGES.maximum * 65536);
});

test('text view, stateKey and snapshot/restore', async () => {
  const env = codeEnv(9);
  const o0 = (await env.reset(9)) as CodeObservation;
  const w = env.world;
  assert.equal(env.text(o0), w.prompt);
  assert.ok(w.prompt.includes(`${w.problem.name}(`) && w.prompt.includes('run_tests(code)'));
  const snap = env.snapshot();
  const r = await step(env, call('run_tests', { code: w.wrong[0] }));
  const text = env.text(r.observation);
  assert.ok(text.includes(`run_tests: ${r.observation.last?.passed}/3 examples passed`), text);
  // stateKey ignores which tool produced a result, not the result.
  const k = env.stateKey(r.observation);
  assert.equal(k, env.stateKey(JSON.parse(JSON.stringify(r.observation))));
  assert.notEqual(k, env.stateKey(o0));
  env.restore(snap);
  const again = await step(env, call('run_tests', { code: w.wrong[0] }));
  assert.deepEqual(again, r);
  const done = await step(env, call('submit', { code: w.problem.reference }));
  assert.ok(
    env
      .text(done.observation)
      .includes(`submit: ${w.hidden.length}/${w.hidden.length} hidden tests passed, reward 1`),
  );
  env.restore(snap);
  assert.equal((await step(env, call('submit', { code: w.problem.reference }))).reward, 1);
  env.close();
  assert.throws(() => env.reset(9), /after close/);
});

test('checkEnv passes on the code env (menu actions, misuse, snapshots) and closes every env', async () => {
  for (const seed of [0, 1]) {
    let made = 0;
    let closed = 0;
    const make = () => {
      const env = codeEnv(seed);
      made++;
      const close = env.close.bind(env);
      env.close = () => {
        closed++;
        close();
      };
      return env as unknown as Env<CodeObservation, ToolCall>;
    };
    const menu = codeEnv(seed).scripted().validActions([]);
    const extra = [call('run_tests', {}), call('submit', { code: 'function (' })];
    const problems = await checkEnv(make, {
      episodes: 4,
      maxTurns: 8,
      seed,
      action: (rng) => (rng.int(4) === 0 ? extra[rng.int(2)] : menu[rng.int(menu.length)]),
      malformed: { name: 'no_such_tool', arguments: {} },
    });
    assert.deepEqual(problems, []);
    assert.equal(closed, made);
  }
});

test('repeated episodes leak nothing: no live runtime, one module, bounded wasm memory', async () => {
  // In the sandbox workers the env runs its attempts in, and no worker once the envs are closed.
  await sandboxPool.drained();
  resetSandboxWorkerState();
  let memory = -1;
  for (let s = 0; s < 150; s++) {
    const env = codeEnv(s);
    await env.reset(s);
    const w = env.world;
    await env.step(call('run_tests', { code: w.wrong[s % w.wrong.length] }));
    await env.step(call('submit', { code: w.problem.reference }));
    env.close();
    assert.equal(sandboxWorkerState().live, 0);
    if (memory < 0) memory = sandboxWorkerState().memoryBytes;
  }
  assert.equal(sandboxWorkerState().loads, 1);
  // Ordinary attempts reuse the memory the module already has (it only grows for bombs, up to its max).
  assert.equal(sandboxWorkerState().memoryBytes, memory);
  await sandboxPool.drained();
  assert.equal(sandboxPool.live, 0);
});

function ctxFor(env: CodeEnv, history: Turn[], seed = 0): TurnContext<unknown> {
  return { observation: null, history, turn: history.length, rng: Rng.derive(seed), env } as never;
}

test('scripted policies: the oracle runs then submits the reference; eps and random have honest logp', () => {
  const env = codeEnv(4);
  const spec = env.spec;
  const ref = env.world.problem.reference;
  const menu = env.scripted().validActions([]);
  assert.equal(menu.length, 2 * env.world.wrong.length);
  assert.ok(menu.every((a) => a.arguments.code !== ref));
  const oracle = makePolicy('oracle', spec);
  const history: Turn[] = [];
  const seen: ToolCall[] = [];
  for (let t = 0; t < 2; t++) {
    const a = (oracle.act(ctxFor(env, history)) as { action: ToolCall }).action;
    seen.push(a);
    history.push({ t, observation: null, action: a, reward: 0, logp: 0, info: {} });
  }
  assert.deepEqual(seen, [call('run_tests', { code: ref }), call('submit', { code: ref })]);
  const eps = makePolicy('oracle:eps=0.3', spec);
  const logps = new Set<number>();
  for (let s = 0; s < 100; s++) {
    const a = eps.act(ctxFor(env, [], s)) as { action: ToolCall; logp: number };
    assert.equal(eps.logProb!(ctxFor(env, []), a.action), a.logp);
    logps.add(a.logp);
  }
  assert.deepEqual([...logps].sort(), [Math.log(0.3 / menu.length), Math.log(0.7)].sort());
  const random = makePolicy('random', spec);
  assert.equal((random.act(ctxFor(env, [], 1)) as { logp: number }).logp, -Math.log(menu.length));
  assert.equal(random.logProb!(ctxFor(env, []), call('submit', { code: ref })), -Infinity);
  env.close();
});

test('rollouts are deterministic at any concurrency, and the tools are the declared JSON schemas', async () => {
  const tasks = makeTasks(envConfig('code', {}), 10, 50);
  const spec = envs.spec(tasks[0]);
  assert.deepEqual(
    spec.tools?.map((t) => [t.name, (t.parameters as { required: string[] }).required]),
    [
      ['run_tests', ['code']],
      ['submit', ['code']],
    ],
  );
  assert.equal(spec.tools, CODE_TOOLS);
  const run = async (concurrency: number) =>
    JSON.stringify(
      await rollout({
        tasks,
        samples: 3,
        budget: 20,
        runSeed: 3,
        policy: makePolicy('oracle:eps=0.3', spec),
        makeEnv: (t) => envs.make(t),
        concurrency,
      }),
    );
  const a = await run(1);
  assert.equal(a, await run(4));
  const trajs = JSON.parse(a) as { outcome: { success: boolean }; turns: { info: { quality: number } }[] }[];
  const rate = trajs.filter((t) => t.outcome.success).length / trajs.length;
  assert.ok(rate > 0.2 && rate < 0.95, String(rate));
  // Step quality is exactly 1 on the gold path's turns of a successful episode.
  for (const t of trajs) if (t.outcome.success) assert.equal(t.turns.at(-1)?.info.quality, 1);
});

test('benchCode: steps, episodes and sandbox test runs through the public API', async () => {
  const r = await benchCode({ steps: 60, seed: 1 });
  assert.equal(r.steps, 60);
  assert.ok(r.episodes >= 2 && r.episodes <= 61);
  assert.ok(r.testRuns >= 60 * 10 && r.testRuns <= 60 * 18, String(r.testRuns));
  assert.ok(r.stepsPerSecond > 0 && r.testRunsPerSecond > r.stepsPerSecond);
  assert.equal(r.liveSandboxes, 0);
});

test('CLI: rollout --env code succeeds on every task with the oracle, on fewer with eps, on none at random', async () => {
  const run = (policy: string) => rolloutContract('code', policy);
  const oracle = await run('oracle');
  assert.deepEqual([oracle.episodes, oracle.success], [50, 1]);
  const eps = await run('oracle:eps=0.3');
  assert.ok(eps.success > 0.2 && eps.success < 0.9, String(eps.success));
  const random = await run('random');
  // The menu holds no correct program (every wrong one fails a hidden test: tested), so exactly 0.
  assert.deepEqual([random.success, random.failures['wrong-answer'] + random.failures.budget], [0, 50]);
});

test('CLI: env describe code --task-seed N [--gold] [--json]', async () => {
  const d = await turnwise(['env', 'describe', 'code', '--task-seed', '11', '--gold', '--json']);
  assert.equal(d.code, 0, d.stderr);
  const j = JSON.parse(d.stdout) as {
    family: string;
    level: number;
    prompt: string;
    examples: unknown[];
    hiddenTests: number;
    gold: { reference: string; hidden: { call: string; expected: string }[] };
  };
  const w = codeWorld(task(11));
  assert.deepEqual(
    [j.family, j.level, j.prompt, j.examples.length, j.hiddenTests, j.gold.reference, j.gold.hidden.length],
    [w.problem.family, w.problem.level, w.prompt, 3, w.hidden.length, w.problem.reference, w.hidden.length],
  );
  const text = await turnwise([
    'env',
    'describe',
    'code',
    '--task-seed',
    '11',
    '--level',
    '3',
    '--domain',
    'parsing',
  ]);
  assert.equal(text.code, 0, text.stderr);
  assert.ok(text.stdout.includes('parsing level 3 (eval-expr)'), text.stdout);
  assert.ok(!text.stdout.includes('gold reference'));
  const bad = await turnwise(['env', 'describe', 'code', '--task-seed', '1', '--domain', 'graphs']);
  assert.equal(bad.code, 2);
  assert.ok(/domain/.test(bad.stderr) && bad.stderr.trim().split('\n').length === 1, bad.stderr);
});
