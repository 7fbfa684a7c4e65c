// `bench serve`'s measurement itself, in a short run: the bare loops post the served episodes' own
// requests (so their mean size is that of a real episode's turns, longer than a first turn's), the three
// figures come from the same alternating rounds, and the ratios are the quotients they claim to be.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envConfig, envs, makeOpenAIPolicy, OraclePolicy, Rng } from '../../src/index.ts';
import { serveBench } from '../../src/serve/bench.ts';

test('bench serve: real episode requests for the bare loops, consistent ratios', async () => {
  const task = { ...envConfig('frozenlake', { map: '4x4' }), seed: 0 };
  const env = envs.make(task);
  const policy = new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2');
  const client = (url: string) => makeOpenAIPolicy(`openai:${url}#${policy.id},retries=0`, env.spec);
  const r = await serveBench({
    policy,
    env,
    task,
    makeEnv: envs.make,
    client,
    concurrency: 4,
    seconds: 0.3,
    budget: 100,
    rounds: 3,
  });
  assert.equal(r.rounds, 3);
  assert.ok(r.served.turns > 0 && r.bare.roundTrips > 0 && r.bareNodeHttp.roundTrips > 0);
  const first = JSON.stringify(
    client('http://127.0.0.1:9/v1').requestBody({
      observation: 0,
      history: [],
      turn: 0,
      turnsLeft: 100,
      rng: Rng.fromSeed(0),
      env,
    }),
  ).length;
  assert.ok(r.requestBytes > first, `mean request ${r.requestBytes} B > a first turn's ${first} B`);
  const faster = Math.max(r.bare.roundTripsPerSecond, r.bareNodeHttp.roundTripsPerSecond);
  assert.ok(Math.abs(r.ratio - r.served.turnsPerSecond / faster) < 1e-12);
  assert.ok(Math.abs(r.ratioFetch - r.served.turnsPerSecond / r.bare.roundTripsPerSecond) < 1e-12);
  const cheaper = Math.min(r.bare.cpuMicrosPerRoundTrip, r.bareNodeHttp.cpuMicrosPerRoundTrip);
  assert.ok(Math.abs(r.ratioCpu - cheaper / r.served.cpuMicrosPerTurn) < 1e-12);
});
