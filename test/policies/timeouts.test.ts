// The openai: policy's durations (issue 21 §1.3): `timeout=` and `backoff=` take a unit (30s, 500ms) — a
// bare number is refused, the refusal naming the units — and a timeout says it was one, after how long,
// and which option sets it: at start-up (GET /models) and on a model call (the episode's error).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  envConfig,
  envs,
  InputError,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  rollout,
} from '../../src/index.ts';
import { type ShapedServer, shapedServer } from '../fixtures/shaped-servers.ts';

const config = envConfig('frozenlake', { map: '4x4' });
const env = envs.make({ ...config, seed: 0 });
const servers: ShapedServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

test('timeout= and backoff= take a unit; a bare number is refused naming the units', () => {
  for (const [option, value] of [
    ['timeout', '2000'],
    ['backoff', '250'],
    ['timeout', '0'],
  ]) {
    assert.throws(
      () => makeOpenAIPolicy(`openai:http://x/v1#m,${option}=${value}`, env.spec),
      (e) =>
        e instanceof InputError &&
        e.message ===
          `--policy openai.${option}: got "${value}"; expected a duration with its unit, ms or s (such as 30s or 500ms), over 0 and at most 3600s`,
    );
  }
  const p = makeOpenAIPolicy('openai:http://x/v1#m,timeout=2s,backoff=250ms', env.spec);
  assert.equal(p.options.timeoutMs, 2000);
  assert.equal(p.options.backoffMs, 250);
  assert.equal(makeOpenAIPolicy('openai:http://x/v1#m,timeout=1.5s', env.spec).options.timeoutMs, 1500);
});

/** A server that never answers the requests `hang` picks. */
async function hanging(hang: (n: number, method: string) => boolean) {
  const s = await shapedServer('vllm', new OraclePolicy({}, 'oracle'), env, 'm', (n, method) =>
    hang(n, method) ? { hang: true } : undefined,
  );
  servers.push(s);
  return s.url;
}

test('a timeout at start-up says so: after how long, which option sets it, not "cannot reach"', async () => {
  const url = await hanging((_, method) => method === 'GET');
  await assert.rejects(
    makeOpenAIPolicy(`openai:${url}#m,timeout=200ms,retries=1,backoff=1ms`, env.spec).connect(),
    (e) =>
      e instanceof InputError &&
      e.message ===
        `--policy: got "${url}"; GET /models failed after 2 attempts: timeout after 200 ms (the openai: option timeout= sets it)`,
  );
});

test('a model call that times out ends its episode with an error that says the same', async () => {
  const url = await hanging((_, method) => method === 'POST');
  const policy = makeOpenAIPolicy(`openai:${url}#m,timeout=150ms,retries=1,backoff=1ms`, env.spec);
  await policy.connect();
  const [t] = await rollout({
    tasks: makeTasks(config, 1, 0),
    samples: 1,
    budget: 5,
    runSeed: 1,
    policy,
    makeEnv: envs.make,
  });
  assert.equal(t.outcome.failure, 'error');
  assert.equal(
    t.outcome.error,
    'openai: m failed after 2 attempts: timeout after 150 ms (the openai: option timeout= sets it)',
  );
  assert.deepEqual(policy.totals().byStatus, { timeout: 2 });
});
