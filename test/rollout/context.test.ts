// contextAt rebuilds exactly what act() received: compared, turn by turn, with copies a spy policy took
// of its contexts during real rollouts (FrozenLake with the budget revealed and not; the async text env
// with a text policy, whose history is what a chat prompt is built from).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Policy, Trajectory, TurnContext } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { contextAt, contextsOf, decisionContext } from '../../src/rollout/context.ts';
import { newLifecycle, sayFactory } from '../fixtures/say-env.ts';
import { BigramPolicy } from '../fixtures/text-policy.ts';

type Seen = { observation: unknown; history: unknown[]; turn: number; turnsLeft?: number };
const copy = (ctx: TurnContext<unknown>): Seen =>
  JSON.parse(
    JSON.stringify({
      observation: ctx.observation,
      history: ctx.history,
      turn: ctx.turn,
      turnsLeft: ctx.turnsLeft,
    }),
  );

function spy(inner: Policy<unknown, unknown>, seen: Seen[]): Policy<unknown, unknown> {
  return {
    id: inner.id,
    budgetAware: inner.budgetAware,
    act: (ctx) => {
      seen.push(copy(ctx));
      return inner.act(ctx);
    },
  };
}

function rebuilt(
  trajectories: readonly Trajectory[],
  views: (t: Trajectory) => Parameters<typeof contextAt>[2],
): Seen[] {
  return trajectories.flatMap((tr) => tr.turns.map((_, t) => copy(contextAt(tr, t, views(tr)))));
}

for (const [policySpec, reveal] of [
  ['oracle:eps=0.3', true],
  ['random', false],
  ['oracle:temp=0.5,horizon=40', false],
] as const) {
  test(`contextAt equals what act() received: ${policySpec}, budget ${reveal ? 'revealed' : 'hidden'}`, () => {
    const tasks = makeTasks(
      envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }),
      5,
      30,
    );
    const seen: Seen[] = [];
    const policy = spy(makePolicy(policySpec, makeEnv(tasks[0]).spec), seen);
    const trajectories = rollout({
      makeEnv,
      tasks,
      samples: 3,
      budget: 25,
      runSeed: 2,
      policy,
    }) as Trajectory[];
    const turns = trajectories.reduce((n, t) => n + t.turns.length, 0);
    assert.ok(turns > 40, `${turns} turns`);
    assert.equal(seen.length, turns);
    assert.equal(trajectories[0].revealBudget, reveal);
    assert.deepEqual(
      rebuilt(trajectories, (t) => makeEnv(t.task)),
      seen,
    );
    // The turns left appear exactly when the budget was revealed.
    assert.equal(
      seen.some((s) => s.turnsLeft !== undefined),
      reveal,
    );
    // contextsOf is contextAt at every turn; a forced reveal tells a budget-aware scorer T − t.
    const tr = trajectories.find((t) => t.turns.length > 2)!;
    const env = makeEnv(tr.task);
    assert.deepEqual(
      contextsOf(tr, env).map(copy),
      tr.turns.map((_, t) => copy(contextAt(tr, t, env))),
    );
    assert.deepEqual(
      contextsOf(tr, env, { revealBudget: true }).map((c) => c.turnsLeft),
      tr.turns.map((turn) => tr.budget - turn.t),
    );
  });
}

test('contextAt on the async text env: the history a chat prompt is built from, turn by turn', async () => {
  const life = newLifecycle();
  const envs = sayFactory(life);
  const policy = new BigramPolicy();
  const tasks = makeTasks({ env: 'say', params: {} }, 4, 0);
  const trajectories = await rollout({
    makeEnv: envs.make,
    tasks,
    samples: 3,
    budget: 4,
    runSeed: 1,
    policy,
    concurrency: 1,
  });
  assert.ok(
    trajectories.some((t) => t.turns.length > 1),
    'some episodes take several turns',
  );
  const env = await envs.make(tasks[0]);
  assert.deepEqual(
    rebuilt(trajectories, () => env),
    policy.seen,
  );
  // Turn t's history is the t turns before it, actions (texts) and traces included.
  const long = trajectories.find((t) => t.turns.length > 1)!;
  const ctx = contextAt(long, 1, env);
  assert.deepEqual(ctx.history, [long.turns[0]]);
  assert.equal(typeof (ctx.history[0].action as string), 'string');
  assert.deepEqual(ctx.history[0].trace?.tokens?.length, 2);
});

test('decisionContext is the context of a state: turn = history length, turns left when told', () => {
  const env = makeEnv({ env: 'frozenlake', params: { map: '4x4' }, seed: 0 });
  const history = [{ t: 0, observation: 0, action: 1, reward: 0, logp: -1, info: {} }];
  const told = decisionContext({ observation: 4, history, budget: 10 }, env, true);
  assert.deepEqual([told.turn, told.turnsLeft, told.observation, told.history], [1, 9, 4, history]);
  assert.equal(decisionContext({ observation: 4, history, budget: 10 }, env, false).turnsLeft, undefined);
  assert.throws(
    () => contextAt({ turns: [] } as unknown as Trajectory, 0, env),
    /turn 0 of a trajectory with 0 turns/,
  );
});
