// The HTTP edges under abuse (issue 21 §1.8), from the other side of the wire (fetch, the openai package,
// real HTTP on loopback): a stated body limit (413, with or without content-length) on `serve` and the
// proxy; the proxy's events streamed to its store and not held; sessions created only by the calls that
// mean to; a body that cannot be written back, or an upstream that breaks off mid-answer, leaks no
// in-flight count (no false budget refusal, no truncation with 0 turns); an error no handler expected
// answers a bare 500 (its message to the log, never to the client); and with a key configured, every
// route of both servers asks for it — the proxy's key never reaches the upstream.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import {
  envConfig,
  envs,
  OraclePolicy,
  type Policy,
  type RunningProxy,
  startProxy,
  startServer,
} from '../../src/index.ts';
import { MAX_BODY_BYTES } from '../../src/serve/guard.ts';
import { turnwise } from '../cli/run.ts';
import { startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';

const env = envs.make({ ...envConfig('frozenlake', { map: '4x4' }), seed: 0 });
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

async function upstream(): Promise<Upstream> {
  const u = await startUpstream();
  closers.push(u.close);
  return u;
}
async function proxy(o: Partial<Parameters<typeof startProxy>[0]> & { upstream: string }) {
  const p: RunningProxy = await startProxy({ store: ':memory:', ...o });
  closers.push(p.close);
  return p;
}
async function serve(o: { policy?: Policy<unknown, unknown> } & Record<string, unknown> = {}) {
  const server = await startServer({ policy: new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'), env, ...o });
  closers.push(server.close);
  return server;
}

const send = (url: string, body: unknown, headers: Record<string, string> = {}, method = 'POST') =>
  fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const message = async (r: Response) => ((await r.json()) as { error: { message: string } }).error.message;
/** The body as a stream: no content-length, sent chunked. */
const chunked = (text: string) =>
  ({
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < text.length; i += 1000)
          c.enqueue(new TextEncoder().encode(text.slice(i, i + 1000)));
        c.close();
      },
    }),
    duplex: 'half',
  }) as RequestInit;
const chatBody = (content: string) => ({ model: 'm', messages: [{ role: 'user', content }] });

test('a body over the limit is a 413 on serve and on the proxy, with or without content-length', async () => {
  assert.equal(MAX_BODY_BYTES, 32 * 1024 * 1024, 'the stated default');
  const up = await upstream();
  const p = await proxy({ upstream: up.url, maxBodyBytes: 4096 });
  const server = await serve({ maxBodyBytes: 4096 });
  const big = JSON.stringify(chatBody('x'.repeat(5000)));
  for (const url of [`${p.sessionUrl('a')}/chat/completions`, `${server.url}/chat/completions`]) {
    const r = await send(url, big);
    assert.equal(r.status, 413, url);
    // Answered before the body was read: the connection is not kept for a next request.
    assert.equal(r.headers.get('connection'), 'close', url);
    assert.equal(
      await message(r),
      "the request body is larger than 4096 bytes, this server's limit (--max-body-mb)",
    );
    const s = await fetch(url, { method: 'POST', ...chunked(big) });
    assert.equal(s.status, 413, `${url}, chunked`);
  }
  assert.equal(up.received.length, 0, 'nothing reached the upstream');
  assert.deepEqual(p.store.ids(), [], 'and no session was opened');
  // Under the limit, chunked too: answered.
  const ok = await fetch(`${p.sessionUrl('a')}/chat/completions`, {
    method: 'POST',
    ...chunked(JSON.stringify(chatBody('x'.repeat(3000)))),
  });
  assert.equal(ok.status, 200);
});

test("the proxy's events go to its store and are not held: a session reads them from the file", async () => {
  const up = await upstream();
  const p = await proxy({ upstream: up.url });
  for (let i = 0; i < 5; i++) {
    assert.equal((await send(`${p.sessionUrl('s')}/chat/completions`, chatBody(`turn ${i}`))).status, 200);
  }
  const events = async () => (await (await fetch(`${p.url}/s/s/events`)).json()) as { idx: number }[];
  assert.deepEqual(
    (await events()).map((e) => e.idx),
    [0, 1, 2, 3, 4],
  );
  // What the file no longer has, the proxy no longer answers: nothing was kept beside it.
  p.store.db.prepare('DELETE FROM events WHERE idx < 3').run();
  assert.deepEqual(
    (await events()).map((e) => e.idx),
    [3, 4],
  );
  const session = p.store.find('s');
  assert.ok(session !== undefined);
  assert.equal(
    Object.values(session).some((v) => Array.isArray(v) && v.length >= 5),
    false,
    'no list of the calls in the session object',
  );
  assert.equal(session.turns, 5);
});

test('sessions are created only by PUT and model calls; reading or ending an unknown one is a 404', async () => {
  const up = await upstream();
  const p = await proxy({ upstream: up.url });
  const reads: [string, string][] = [
    ['GET', '/s/ghost'],
    ['GET', '/s/ghost/events'],
    ['GET', '/s/ghost/trajectory'],
    ['POST', '/s/ghost/reward'],
    ['POST', '/s/ghost/end'],
  ];
  for (const [method, path] of reads) {
    const r = await fetch(`${p.url}${path}`, { method, body: method === 'POST' ? '{"value":1}' : undefined });
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.match(
      await message(r),
      /^no session "ghost": a session begins with PUT \/s\/\{session\} or its first model call$/,
    );
  }
  assert.equal((await fetch(`${p.sessionUrl('ghost')}/models`)).status, 200, 'passed through');
  assert.deepEqual(p.store.ids(), []);
  assert.equal((await send(`${p.url}/s/a`, { budget: 0 }, {}, 'PUT')).status, 400);
  assert.deepEqual(p.store.ids(), [], 'a refused PUT creates nothing');
  assert.equal((await send(`${p.url}/s/a`, { budget: 3 }, {}, 'PUT')).status, 200);
  assert.equal((await send(`${p.sessionUrl('b')}/chat/completions`, chatBody('hi'))).status, 200);
  assert.deepEqual(p.store.ids(), ['a', 'b']);
});

test('a body that cannot be written back, or an upstream that breaks off, leaks no in-flight count', async () => {
  const up = await upstream();
  const p = await proxy({ upstream: up.url, budget: 1 });
  const depth = 200_000;
  const deep = `{"model":"m","messages":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  const r = await send(`${p.sessionUrl('d')}/chat/completions`, deep);
  assert.equal(r.status, 400);
  assert.equal(await message(r), 'the request body nests too deeply to be forwarded and recorded');
  // The session's one turn is still there to take.
  assert.equal((await send(`${p.sessionUrl('d')}/chat/completions`, chatBody('hi'))).status, 200);
  const s = (await (await fetch(`${p.url}/s/d`)).json()) as Record<string, unknown>;
  assert.deepEqual([s.calls, s.turns, s.truncated], [1, 1, false]);
  // The upstream answers half a body and resets: a 502, recorded, and the turn is not spent.
  up.breakNext();
  const broken = await send(`${p.sessionUrl('e')}/chat/completions`, chatBody('hi'));
  assert.equal(broken.status, 502);
  assert.equal((await send(`${p.sessionUrl('e')}/chat/completions`, chatBody('hi'))).status, 200);
  const e = (await (await fetch(`${p.url}/s/e/events`)).json()) as { status: number; retries: number }[];
  assert.deepEqual(
    e.map((x) => [x.status, x.retries]),
    [
      [502, 0],
      [200, 1],
    ],
  );
  assert.equal(p.store.find('e')?.inflight, 0);
});

test('an error no handler expected is a bare 500: its message goes to the log, not to the client', async () => {
  const logged: Error[] = [];
  const broken: Policy<unknown, unknown> = {
    id: 'oracle',
    budgetAware: false,
    act: () => {
      throw new RangeError('Maximum call stack size exceeded');
    },
  };
  const server = await serve({ policy: broken, onInternalError: (e: Error) => logged.push(e) });
  const r = await send(`${server.url}/chat/completions`, {
    model: 'oracle',
    messages: [{ role: 'user', content: env.text?.(0) }],
  });
  assert.equal(r.status, 500);
  assert.deepEqual(await r.json(), {
    error: { message: 'internal server error', type: 'server_error', param: null, code: null },
  });
  assert.deepEqual(
    logged.map((e) => e.message),
    ['Maximum call stack size exceeded'],
  );
  // The proxy alike: its store gone, a PUT fails inside; the client sees no internals.
  const up = await upstream();
  const p = await proxy({ upstream: up.url, onInternalError: (e) => logged.push(e) });
  p.store.db.close();
  const q = await send(`${p.url}/s/x`, {}, {}, 'PUT');
  assert.equal(q.status, 500);
  assert.equal(await message(q), 'internal server error');
  assert.match(logged[1].message, /database connection is not open/);
});

test('with a key, every route of serve and of the proxy asks for it; the proxy sends the upstream its own', async () => {
  const server = await serve({ apiKey: 'serve-key' });
  const root = server.url.replace(/\/v1$/, '');
  for (const [method, path] of [
    ['GET', '/health'],
    ['GET', '/v1/models'],
    ['POST', '/v1/chat/completions'],
    ['POST', '/v1/completions'],
    ['GET', '/nowhere'],
  ]) {
    const r = await fetch(`${root}${path}`, { method, body: method === 'POST' ? '{}' : undefined });
    assert.equal(r.status, 401, `serve ${method} ${path}`);
  }
  assert.equal(
    (await fetch(`${root}/health`, { headers: { authorization: 'Bearer serve-key' } })).status,
    200,
  );
  assert.equal(
    (await fetch(`${root}/health`, { headers: { authorization: 'Bearer serve-kez' } })).status,
    401,
  );

  const up = await upstream();
  const p = await proxy({ upstream: up.url, apiKey: 'proxy-key', upstreamApiKey: 'upstream-key' });
  const routes: [string, string][] = [
    ['GET', '/health'],
    ['PUT', '/s/a'],
    ['GET', '/s/a'],
    ['GET', '/s/a/events'],
    ['GET', '/s/a/trajectory'],
    ['POST', '/s/a/reward'],
    ['POST', '/s/a/end'],
    ['GET', '/s/a/v1/models'],
    ['POST', '/s/a/v1/chat/completions'],
    ['GET', '/nowhere'],
  ];
  for (const [method, path] of routes) {
    const body = method === 'GET' ? undefined : JSON.stringify({ ...chatBody('hi'), value: 1 });
    assert.equal((await fetch(`${p.url}${path}`, { method, body })).status, 401, `proxy ${method} ${path}`);
  }
  assert.deepEqual(p.store.ids(), []);
  assert.equal(up.received.length, 0);
  // The openai package with the proxy's key: answered; with another key: refused as the SDK expects.
  const client = new OpenAI({ baseURL: p.sessionUrl('a'), apiKey: 'proxy-key', maxRetries: 0 });
  const answer = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(answer.choices[0].message.content, 'reply 1');
  const wrong = new OpenAI({ baseURL: p.sessionUrl('a'), apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(
    wrong.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    OpenAI.AuthenticationError,
  );
  assert.deepEqual(up.authorizations, ['Bearer upstream-key'], 'the proxy key never reaches the upstream');
  const authed = { authorization: 'Bearer proxy-key' };
  for (const [method, path] of routes.slice(0, 7)) {
    const body = method === 'GET' ? undefined : JSON.stringify({ value: 1 });
    const r = await fetch(`${p.url}${path}`, { method, body, headers: authed });
    assert.equal(r.status, 200, `proxy ${method} ${path} with the key`);
  }
});

test('turnwise proxy: --api-key-env and --max-body-mb; an unset variable is one line, exit 2', async () => {
  const bad = await turnwise([
    'proxy',
    '--upstream',
    'http://127.0.0.1:9/v1',
    '--store',
    ':memory:',
    '--api-key-env',
    'NO_SUCH_PROXY_KEY_VAR',
  ]);
  assert.equal(bad.code, 2);
  assert.equal(
    bad.stderr,
    'turnwise: --api-key-env: got "NO_SUCH_PROXY_KEY_VAR"; this environment variable is not set\n',
  );
  const big = await turnwise([
    'proxy',
    '--upstream',
    'http://127.0.0.1:9/v1',
    '--store',
    ':memory:',
    '--max-body-mb',
    '0',
  ]);
  assert.equal(big.code, 2);
  assert.match(big.stderr, /^turnwise: --max-body-mb: got "0"; expected an integer/);
});
