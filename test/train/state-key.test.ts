// GiGPO's anchor states in training are the env's state keys (Env.stateKey), never whole observations:
// on the text env the observation also carries what was said last (history), the key only the prompt.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stateKeyOf } from '../../src/core/policy.ts';
import type { Env, EnvFactory, Task } from '../../src/core/types.ts';
import { anchorGroups } from '../../src/credit/gigpo.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { newLifecycle, SayEnv, sayFactory } from '../fixtures/say-env.ts';
import { BigramLearner } from '../fixtures/text-policy.ts';

/** The say env with its stateKey replaced (or removed: then the observation's JSON is the key). */
function keyed(stateKey: ((o: never) => string | number) | undefined): EnvFactory {
  const base = sayFactory(newLifecycle());
  return {
    ...base,
    async make(task: Task) {
      const env = (await base.make(task)) as Env<unknown, unknown> & { stateKey?: unknown };
      Object.defineProperty(env, 'stateKey', { value: stateKey, configurable: true });
      return env;
    },
  };
}

async function train(envs: EnvFactory): Promise<number[]> {
  const config = parseTrainConfig({
    env: { env: 'say', params: {} },
    iters: 3,
    groups: 4,
    groupSize: 6,
    budget: { kind: 'fixed', budget: 4 },
    credit: { method: 'gigpo' },
    eval: { episodes: 8 },
    seed: 2,
  });
  const learner = new BigramLearner();
  await trainPolicyGradient({ config, envs, learner });
  return Array.from(learner.policy.table.data);
}

test('stateKeyOf: the env’s key, else a number or string observation itself, else its JSON', () => {
  const env = new SayEnv(newLifecycle(), 0);
  assert.equal(stateKeyOf(env, { prompt: 'say a', last: 'zz' }), 'say a');
  const plain = { spec: env.spec };
  assert.equal(stateKeyOf(plain, 7), 7);
  assert.equal(stateKeyOf(plain, { prompt: 'say a', last: null }), '{"prompt":"say a","last":null}');
});

test('GiGPO in training anchors on stateKey: the prompt groups turns that whole observations keep apart', async () => {
  const byPrompt = await train(keyed((o: { prompt: string }) => o.prompt));
  const own = await train(sayFactory(newLifecycle())); // SayEnv's own stateKey is the prompt
  const byObservation = await train(keyed(undefined));
  const byJson = await train(keyed((o) => JSON.stringify(o)));
  assert.deepEqual(own, byPrompt);
  assert.deepEqual(byJson, byObservation);
  assert.notDeepEqual(byPrompt, byObservation);
  // Why: with the prompt as key, every turn of a group is in one anchor group; by observation, turns
  // after different last words are apart.
  const turns = [null, 'zz', 'qq'].map((last, t) => ({
    t,
    observation: { prompt: 'say a', last },
    action: 'xx',
    reward: 0,
    logp: 0,
    info: {},
  }));
  const tr = {
    id: 'g',
    task: { env: 'say', params: {}, seed: 0 },
    policy: 'p',
    budget: 4,
    revealBudget: false,
    turns,
    outcome: {
      success: false,
      return: 0,
      turns: 3,
      firstSuccessTurn: null,
      end: 'truncated' as const,
      failure: 'budget' as const,
    },
  };
  const env = new SayEnv(newLifecycle(), 0);
  assert.equal(anchorGroups([tr], (turn) => String(stateKeyOf(env, turn.observation as never))).size, 1);
  assert.equal(anchorGroups([tr]).size, 3);
});
