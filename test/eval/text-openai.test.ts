// An `openai:` policy is a text policy like the transformer: eval reports its invalid rate and its own
// NLL from its traces, compare its per-token figures in the tokens its trace carries. Served by
// `turnwise serve` on loopback, the oracle writes each action as one token whose log-prob is log π(a):
// per token equals per action, and nothing is invalid.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { evaluate } from '../../src/eval/evaluate.ts';
import {
  envConfig,
  envs,
  likelihood,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  type RunningServer,
  rollout,
  startServer,
} from '../../src/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';

const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const env = envs.make({ ...config, seed: 0 });
const spec = env.spec;
const tasks = makeTasks(config, 3, 11);
let server: RunningServer | undefined;
after(async () => server?.close());

test('a served oracle through openai: invalid rate 0; NLL per token = per action (one token each)', async () => {
  server = await startServer({ policy: new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'), env });
  const policy = makeOpenAIPolicy(`openai:${server.url}#oracle,retries=0`, spec);
  await policy.connect();
  const o = { envs, tasks, samples: 3, K: [1], T: [20], runSeed: 5, resamples: 20 };
  const r = await evaluate({ ...o, policy });
  const tr = await rollout({ tasks, samples: 3, budget: 20, runSeed: 5, policy, makeEnv: envs.make });
  const turns = tr.flatMap((t) => t.turns);
  assert.equal(r.invalidRate, 0);
  assert.deepEqual(r.invalid, { count: 0, turns: turns.length });
  assert.equal(r.likelihood!.perToken.tokens, turns.length);
  const nll = -turns.reduce((s, u) => s + u.logp, 0);
  assert.ok(Math.abs(r.likelihood!.perToken.nll! - nll / turns.length) < 1e-12);
  assert.ok(Math.abs(r.likelihood!.perTrajectory.nll! - nll / tr.length) < 1e-12);

  // compare: A's trajectories carry one token per action; B (in process) writes no text, and neither
  // policy can write B's actions in tokens, so B's per-token figures are null.
  const b = makePolicy('oracle:eps=0.2', spec);
  const tb = await rollout({ tasks, samples: 3, budget: 20, runSeed: 6, policy: b, makeEnv: envs.make });
  const l = (await likelihood(envs, tr, tb, policy, b))!;
  assert.equal(l.perToken!.tokens.a, l.actions.a);
  assert.ok(Math.abs(l.perToken!.nllAunderB! - l.nllAunderB!) < 1e-12);
  assert.ok(Math.abs(l.perToken!.nllAunderA! - l.nllAunderA!) < 1e-12);
  assert.equal(l.perToken!.tokens.b, null);
  assert.equal(l.perToken!.nllBunderB, null);
});
