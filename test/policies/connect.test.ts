// The openai: policy's start-up check (issue 21 §1.2): GET /models is retried as any call is — a 503 or
// a 429 with Retry-After at start-up does not end the run — while what retrying cannot change is refused
// at once, as one line: a refused key (401), an unlisted model, a port nobody listens on.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { envConfig, envs, InputError, makeOpenAIPolicy, OraclePolicy } from '../../src/index.ts';
import { turnwise } from '../cli/run.ts';
import { type Fault, type ShapedServer, shapedServer } from '../fixtures/shaped-servers.ts';

const env = envs.make({ ...envConfig('frozenlake', { map: '4x4' }), seed: 0 });
const servers: ShapedServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

/** A vLLM-shaped server whose GET /models numbered in `at` meet `fault`; `gets()` counts the GETs. */
async function serverWith(fault: Fault, at: readonly number[]) {
  let gets = 0;
  const s = await shapedServer('vllm', new OraclePolicy({}, 'oracle'), env, 'm', (n, method) => {
    if (method !== 'GET') return undefined;
    gets = n;
    return at.includes(n) ? fault : undefined;
  });
  servers.push(s);
  return { url: s.url, gets: () => gets };
}

test('a 503 or a 429 with Retry-After at GET /models is retried: connect succeeds, the run exits 0', async () => {
  for (const fault of [{ status: 503 }, { status: 429, headers: { 'retry-after': '1' } }]) {
    const s = await serverWith(fault, [1]);
    await makeOpenAIPolicy(`openai:${s.url}#m,backoff=1ms`, env.spec).connect();
    assert.equal(s.gets(), 2, `${fault.status}: one retry`);
  }
  const s = await serverWith({ status: 503 }, [1, 2]);
  const r = await turnwise([
    'rollout',
    '--tasks',
    '2',
    '--budget',
    '5',
    '--policy',
    `openai:${s.url}#m,backoff=1ms`,
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(s.gets(), 3);
  assert.equal(JSON.parse(r.stdout).episodes, 2);
});

test('retries spent at GET /models: one line naming the attempts and the last fault', async () => {
  const s = await serverWith({ status: 503 }, [1, 2, 3]);
  await assert.rejects(
    makeOpenAIPolicy(`openai:${s.url}#m,backoff=1ms,retries=2`, env.spec).connect(),
    (e) =>
      e instanceof InputError &&
      /^--policy: got "http:.*"; GET \/models failed after 3 attempts: HTTP 503$/.test(e.message),
  );
  assert.equal(s.gets(), 3);
});

test('what a retry cannot change is refused at once: a refused key, a port nobody listens on', async () => {
  const s = await serverWith({ status: 401 }, [1, 2, 3]);
  await assert.rejects(
    makeOpenAIPolicy(`openai:${s.url}#m,backoff=1ms`, env.spec).connect(),
    /the server refused the key \(HTTP 401\)/,
  );
  assert.equal(s.gets(), 1);
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await assert.rejects(
    makeOpenAIPolicy(`openai:http://127.0.0.1:${port}/v1#m`, env.spec).connect(),
    (e) => e instanceof InputError && /; cannot reach the server \(ECONNREFUSED\)$/.test(e.message),
  );
});
