// The code env's limits hold whatever the agent's code does (issue 21 §2): the caps on results and error
// messages are the host's, so code that replaces the methods a cut inside the sandbox would call still
// gets a bounded observation; a step that spends its time in long native calls (QuickJS polls its
// interrupt handler only between bytecodes) ends at the deadline because the host terminates the
// worker, and the event loop stays free meanwhile; no worker is left once the envs are closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Action, Policy, ToolCall, TurnContext } from '../../../src/core/types.ts';
import {
  CodeEnv,
  type CodeObservation,
  codeWorld,
  DEFAULT_SANDBOX_LIMITS,
  ERROR_CHARS,
  KILL_GRACE_MS,
  runAttempt,
  sandboxModule,
  sandboxPool,
} from '../../../src/envs/code/index.ts';
import { envConfig, envs } from '../../../src/envs/index.ts';
import { rollout } from '../../../src/rollout/batch.ts';

const tests = [{ args: '[1,2]' }, { args: '[3,4]' }];
const task = (seed: number) => ({ ...envConfig('code', {}), seed });
const call = (name: string, code: string): ToolCall => ({ name, arguments: { code } });

/** Ways to replace the String.prototype.slice a cut inside the sandbox would call. */
const REPLACE_SLICE = [
  'String.prototype.slice = function () { return String(this); };',
  "Object.defineProperty(String.prototype, 'slice', { value: function () { return String(this); } });",
  'String.prototype.slice = new Proxy(String.prototype.slice, { apply: (f, s) => String(s) });',
];

test('results and error messages are cut by the host, whatever the code replaced (three spellings)', async () => {
  const m = await sandboxModule();
  const max = DEFAULT_SANDBOX_LIMITS.maxOutput;
  for (const replace of REPLACE_SLICE) {
    const r = runAttempt(m, `${replace}\nfunction add() { return 'y'.repeat(4e6); }`, 'add', tests, 1);
    assert.deepEqual(
      r.tests.map((t) => [t.status, t.got?.length]),
      [
        ['returned', max],
        ['returned', max],
      ],
      replace,
    );
    assert.equal(r.tests[0].got, 'y'.repeat(max - 1).padStart(max, '"'));
    for (const thrower of [
      "throw new Error('e'.repeat(4e6));",
      "throw 'e'.repeat(4e6);",
      "const e = new Error('x'); Object.defineProperty(e, 'name', { get: () => 'N'.repeat(4e6) }); throw e;",
    ]) {
      const t = runAttempt(m, `${replace}\nfunction add() { ${thrower} }`, 'add', tests, 1);
      assert.equal(t.tests[0].status, 'error', thrower);
      assert.equal(t.tests[0].error?.length, ERROR_CHARS, thrower);
      // At top level, the attempt's own error.
      const top = runAttempt(m, `${replace}\n${thrower}`, 'add', tests, 1);
      assert.ok((top.error?.message.length ?? Infinity) <= ERROR_CHARS, thrower);
    }
  }
});

/** Plays fixed actions, like replay:FILE. */
class FixedActions implements Policy<unknown, ToolCall> {
  readonly id = 'fixed';
  readonly budgetAware = false;
  constructor(private readonly actions: (task: number) => ToolCall[]) {}
  act(ctx: TurnContext<unknown>): Action<ToolCall> {
    const actions = this.actions(ctx.task?.seed ?? 0);
    return { action: actions[Math.min(ctx.turn, actions.length - 1)], logp: 0 };
  }
}

test('through a rollout: a hostile episode gets a bounded observation, the honest ones beside it are kept', async () => {
  const tasks = [task(0), task(1), task(2)];
  const hostile = (fn: string) =>
    `${REPLACE_SLICE[0]}\nfunction ${fn}() { throw new Error('e'.repeat(4e6)); }\nvar ${fn}x = 'x'.repeat(4e6);\nfunction ${fn}y() {}`;
  const trajectories = await rollout({
    tasks,
    samples: 1,
    budget: 3,
    runSeed: 0,
    policy: new FixedActions((seed) => {
      const w = codeWorld(task(seed));
      const fn = w.problem.name;
      const big = `${REPLACE_SLICE[1]}\nfunction ${fn}() { return 'y'.repeat(4e6); }`;
      return seed === 1
        ? [call('run_tests', big), call('run_tests', hostile(fn)), call('submit', big)]
        : [call('run_tests', w.problem.reference), call('submit', w.problem.reference)];
    }),
    makeEnv: (t) => envs.make(t),
  });
  assert.deepEqual(
    trajectories.map((t) => [t.outcome.end, t.outcome.success, t.outcome.failure]),
    [
      ['terminated', true, null],
      ['terminated', false, 'wrong-answer'],
      ['terminated', true, null],
    ],
  );
  const bad = trajectories[1];
  // Three visible examples of at most maxOutput characters each, and a prompt.
  const size = JSON.stringify(bad).length;
  assert.ok(size < 4 * 3 * DEFAULT_SANDBOX_LIMITS.maxOutput + 10_000, String(size));
  const first = bad.turns[1].observation as CodeObservation;
  assert.ok(first.last?.failures?.every((f) => f.got?.length === DEFAULT_SANDBOX_LIMITS.maxOutput));
  await sandboxPool.drained();
  assert.equal(sandboxPool.live, 0, 'a sandbox worker outlived the rollout');
});

/** Single native calls that QuickJS never interrupts (its interrupt handler is polled between bytecodes):
 * naive string searches of a long needle, each taking minutes here. */
const NATIVE = [
  "'a'.repeat(1e6).indexOf('a'.repeat(1e4) + 'b')",
  "'a'.repeat(1e6).includes('a'.repeat(1e4) + 'b')",
  "'a'.repeat(1e6).split('a'.repeat(1e4) + 'b').length",
  "'a'.repeat(1e6).replaceAll('a'.repeat(1e4) + 'b', '').length",
];

test('long native calls end at the deadline: the host terminates the worker; the event loop stays free', async () => {
  const deadlineMs = 300;
  const w = codeWorld(task(3));
  const env = new CodeEnv(w, { ...DEFAULT_SANDBOX_LIMITS, deadlineMs });
  env.reset(3);
  // A worker is running (its start-up is not the step's time).
  await env.step(call('run_tests', w.problem.reference));
  for (const op of NATIVE) {
    let free = false;
    setImmediate(() => {
      free = true;
    });
    const t0 = performance.now();
    const r = await env.step(call('run_tests', `function ${w.problem.name}() { return ${op}; }`));
    const ms = performance.now() - t0;
    assert.ok(free, `${op}: the step blocked the event loop`);
    // The worker's start-up may add to the first wait: the bound is the deadline, the grace and a start.
    assert.ok(ms >= deadlineMs && ms < deadlineMs + KILL_GRACE_MS + 5000, `${op}: ${ms} ms`);
    const last = r.observation.last;
    assert.equal(
      last?.attemptError,
      `timeout: it ran past ${deadlineMs + KILL_GRACE_MS} ms and its sandbox worker was stopped`,
    );
    assert.deepEqual([last?.passed, r.info.quality], [0, 0]);
    // The next attempt runs in a fresh worker.
    const ok = await env.step(call('run_tests', w.problem.reference));
    assert.equal(ok.observation.last?.passed, w.visible.length, op);
  }
  env.close();
  await sandboxPool.drained();
  assert.equal(sandboxPool.live, 0);
});
