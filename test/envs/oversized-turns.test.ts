// One episode never takes the batch with it (issue 21 §2): in an env with text actions, an observation,
// an action or a step's info past MAX_TURN_CHARS, or a trajectory past MAX_TRAJECTORY_CHARS, ends that
// episode as `error` with the sizes in its message (the oversized turn not recorded); the episodes beside
// it are kept, and every trajectory can be written as JSON.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Action, Env, EnvSpec, Policy, StepResult, Task, TurnContext } from '../../src/core/types.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { jsonChars, MAX_TRAJECTORY_CHARS, MAX_TURN_CHARS } from '../../src/rollout/episode.ts';

const SPEC: EnvSpec = { id: 'echo', actions: 'text', oracle: false, snapshots: false };

/** A text env whose task seed says what goes wrong: 1 a huge observation at turn 2, 2 a huge info at
 * turn 1, 4 observations just under the per-turn limit every turn; others are honest. */
class EchoEnv implements Env<string, string> {
  readonly spec = SPEC;
  private t = 0;
  constructor(private readonly seed: number) {}
  reset(): string {
    this.t = 0;
    return 'start';
  }
  step(action: string): StepResult<string> {
    this.t++;
    const huge = 'o'.repeat(MAX_TURN_CHARS + 10);
    const observation =
      this.seed === 1 && this.t === 2
        ? huge
        : this.seed === 4
          ? 'p'.repeat(MAX_TURN_CHARS - 100)
          : `echo ${action}`;
    const info = this.seed === 2 && this.t === 1 ? { note: huge } : {};
    return { observation, reward: 0, terminated: this.t === 3 && this.seed !== 4, info };
  }
}

/** Says "hi", or (task 3) a huge action at turn 1. */
class Talker implements Policy<string, string> {
  readonly id = 'talker';
  readonly budgetAware = false;
  act(ctx: TurnContext<string>): Action<string> {
    return { action: ctx.task?.seed === 3 && ctx.turn === 1 ? 'a'.repeat(MAX_TURN_CHARS) : 'hi', logp: 0 };
  }
}

test('jsonChars is the length of JSON.stringify on plain data, and stops past its limit', () => {
  for (const v of [
    0,
    -1.5e-7,
    'x y',
    null,
    true,
    [],
    {},
    [1, 'a', null, [2, {}]],
    { a: 1, bc: 'de', f: [true, false], g: { h: null } },
    { skipped: undefined, kept: 1 },
  ]) {
    assert.equal(jsonChars(v), JSON.stringify(v).length, JSON.stringify(v));
  }
  // Escapes are not expanded: a string counts its characters.
  assert.equal(jsonChars('x"y'), 5);
  const big = { rows: Array.from({ length: 1e5 }, (_, i) => [i, `name ${i}`]) };
  assert.equal(jsonChars(big), JSON.stringify(big).length);
  assert.ok(jsonChars(big, 1000) > 1000 && jsonChars(big, 1000) < 1100);
});

test('an oversized observation, info or action ends its episode as error; the others are kept', async () => {
  const tasks: Task[] = [0, 1, 2, 3, 5].map((seed) => ({ env: 'echo', params: {}, seed }));
  const trajectories = await rollout({
    tasks,
    samples: 1,
    budget: 5,
    runSeed: 0,
    policy: new Talker() as Policy<unknown, unknown>,
    makeEnv: (t) => new EchoEnv(t.seed) as Env<unknown, unknown>,
  });
  const limit = `(limit ${MAX_TURN_CHARS} per observation, action or step info)`;
  assert.deepEqual(
    trajectories.map((t) => [
      t.task.seed,
      t.outcome.end,
      t.outcome.failure,
      t.outcome.turns,
      t.outcome.error,
    ]),
    [
      [0, 'terminated', 'wrong-answer', 3, undefined],
      [
        1,
        'error',
        'error',
        1,
        `turn 1: the observation is ${MAX_TURN_CHARS + 12} characters of JSON ${limit}`,
      ],
      [2, 'error', 'error', 0, `turn 0: the step info is ${MAX_TURN_CHARS + 21} characters of JSON ${limit}`],
      [3, 'error', 'error', 1, `turn 1: the action is ${MAX_TURN_CHARS + 2} characters of JSON ${limit}`],
      [5, 'terminated', 'wrong-answer', 3, undefined],
    ],
  );
  // Every trajectory can be written out.
  for (const t of trajectories) assert.ok(JSON.stringify(t).length < 1000);
});

test('a trajectory past MAX_TRAJECTORY_CHARS ends as error at the turn that passes it', async () => {
  const [t] = await rollout({
    tasks: [{ env: 'echo', params: {}, seed: 4 }],
    samples: 1,
    budget: 100,
    runSeed: 0,
    policy: new Talker() as Policy<unknown, unknown>,
    makeEnv: (task) => new EchoEnv(task.seed) as Env<unknown, unknown>,
  });
  const perTurn = MAX_TURN_CHARS - 98 + 4 + 2; // observation, the action "hi", the info {}
  const turns = Math.floor((MAX_TRAJECTORY_CHARS - 7) / perTurn); // 7: the reset observation "start"
  assert.deepEqual([t.outcome.end, t.outcome.turns], ['error', turns]);
  assert.match(
    t.outcome.error ?? '',
    new RegExp(
      `^turn ${turns}: the trajectory reached \\d+ characters of JSON \\(limit ${MAX_TRAJECTORY_CHARS}\\)$`,
    ),
  );
  assert.ok(JSON.stringify(t).length <= MAX_TRAJECTORY_CHARS);
});
