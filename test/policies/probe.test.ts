// `turnwise probe` through faults (issue 21 §1.1): against a vLLM-shaped server (test/fixtures/
// shaped-servers.ts, real HTTP on loopback) whose 5th chat request — the one that asks for token ids —
// meets a transient fault (a 429 with Retry-After, a 500, a 503, a timeout, a body cut short), the probe
// retries it as any call and reports what the server supports; only a refusal (400, 404, 422) makes that
// capability false; a fault that outlasts the retries is an InputError, not a false capability.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { envConfig, envs, InputError, makeOpenAIPolicy, OraclePolicy } from '../../src/index.ts';
import { EVERY_CAPABILITY } from '../fixtures/capabilities.ts';
import { type Fault, probeMessages, type ShapedServer, shapedServer } from '../fixtures/shaped-servers.ts';

const env = envs.make({ ...envConfig('frozenlake', { map: '4x4', slippery: true }), seed: 0 });
const messages = probeMessages(env);
const ALL = EVERY_CAPABILITY;
const servers: ShapedServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

/** The probe of a vLLM-shaped server whose POSTs numbered in `at` meet `fault`. */
async function probeThrough(fault: Fault, at: readonly number[], options = '') {
  const s = await shapedServer(
    'vllm',
    new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'),
    env,
    'qwen3-4b',
    (n, method) => (method === 'POST' && at.includes(n) ? fault : undefined),
  );
  servers.push(s);
  const policy = makeOpenAIPolicy(`openai:${s.url}#qwen3-4b,backoff=1ms${options}`, env.spec, 'probe');
  await policy.connect();
  return policy.probe(messages);
}

test('a transient fault on the token-ids request is retried: every capability as without the fault', async () => {
  const transient: [string, Fault, string][] = [
    ['429 with Retry-After', { status: 429, headers: { 'retry-after': '1' } }, ''],
    ['500', { status: 500 }, ''],
    ['503', { status: 503 }, ''],
    ['a timeout', { hang: true }, ',timeout=300ms'],
    ['a truncated body', { truncated: true }, ''],
  ];
  for (const [what, fault, options] of transient) {
    assert.deepEqual({ ...(await probeThrough(fault, [5], options)) }, ALL, what);
  }
});

test('a refusal (400, 404, 422) of the token-ids request says unsupported, and nothing else', async () => {
  for (const status of [400, 404, 422]) {
    assert.deepEqual({ ...(await probeThrough({ status }, [5])) }, { ...ALL, tokenIds: false }, `${status}`);
  }
});

test('a fault that outlasts the retries is an InputError naming the capability, not a false', async () => {
  await assert.rejects(
    probeThrough({ status: 503 }, [5, 6, 7], ',retries=2'),
    (e) =>
      e instanceof InputError &&
      /^probe: got "http:.*"; the request for tokenIds got no answer: qwen3-4b failed after 3 attempts: HTTP 503$/.test(
        e.message,
      ),
  );
});
