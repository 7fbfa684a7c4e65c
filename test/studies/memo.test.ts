// MemoPolicy's exact-evaluation path (probsBatch) computes the rows it lacks in one batch and does not
// remember them; rows it computes must be the bits the single-row path (act, probs) remembers, since
// the study's exact figures read either.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import type { TurnContext } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { MemoPolicy } from '../../src/studies/budget/memo.ts';
import { worldEnvs } from '../../src/studies/budget/world.ts';

test('MemoPolicy.probsBatch: every state of a map, batched, equals the single-row path bit for bit, and is not remembered', () => {
  const lake = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true, successRate: 0.9 });
  const narrow = worldEnvs(true);
  for (const task of makeTasks(lake, 3, 77)) {
    for (const env of [makeEnv(task), narrow.make(task)]) {
      const net = new NeuralPolicy(mlpPolicyConfig(env.spec, { hidden: [16, 16], seed: 5 }));
      const nS = env.spec.observations!;
      const ctx = (s: number): TurnContext<unknown> => ({
        observation: s,
        history: [],
        turn: 0,
        rng: Rng.derive(1),
        env,
      });
      const ctxs = Array.from({ length: nS }, (_, s) => ctx(s));
      const batched = new MemoPolicy(net);
      let forwards = 0;
      const inner = net.logProbsBatch.bind(net);
      net.logProbsBatch = (c) => {
        forwards++;
        return inner(c);
      };
      const a = batched.probsBatch(ctxs);
      const b = batched.probsBatch(ctxs);
      assert.equal(forwards, 2, 'one batch per call: the rows were not remembered');
      const single = new MemoPolicy(net);
      ctxs.forEach((c, s) => {
        const p = single.probs(c);
        for (let k = 0; k < 4; k++) {
          assert.ok(Object.is(a[s][k], p[k]) && Object.is(b[s][k], p[k]), `state ${s} action ${k}`);
        }
      });
      // Rows the single-row path remembered are read, not recomputed.
      forwards = 0;
      single.probsBatch(ctxs);
      assert.equal(forwards, 0);
    }
  }
});
