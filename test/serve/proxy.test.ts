// The recording proxy over real HTTP on loopback: in front of `turnwise serve` (an in-process policy's
// actions and log-probs come back as the proxy's trajectory), and in front of a fixture upstream for
// streams, merge mismatches, budget refusal, rewards, retries and persistence across a restart.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  envConfig,
  envs,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  rollout,
  startServer,
  type Trajectory,
} from '../../src/index.ts';
import { type RunningProxy, startProxy } from '../../src/serve/proxy.ts';
import { chunks, completion, startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-proxy-'));
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

async function upstream(o = {}): Promise<Upstream> {
  const u = await startUpstream(o);
  closers.push(u.close);
  return u;
}
async function proxy(up: string, o: { budget?: number; store?: string } = {}): Promise<RunningProxy> {
  const p = await startProxy({ upstream: up, store: o.store ?? ':memory:', budget: o.budget });
  closers.push(p.close);
  return p;
}

const post = async (url: string, body: unknown) => {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
const get = async (url: string) => (await (await fetch(url)).json()) as Record<string, unknown>;

test('in front of turnwise serve: the proxy trajectory has the in-process actions and log-probs, one turn per call', async () => {
  const config = envConfig('frozenlake', { map: '4x4', slippery: true });
  const env = envs.make({ ...config, seed: 0 });
  const server = await startServer({ policy: new OraclePolicy({ eps: 0.3 }, 'oracle:eps=0.3'), env });
  closers.push(server.close);
  const p = await proxy(server.url);
  const tasks = makeTasks(config, 4, 3);
  const inProcess = await rollout({
    tasks,
    samples: 1,
    budget: 20,
    revealBudget: true,
    runSeed: 9,
    policy: new OraclePolicy({ eps: 0.3 }, 'oracle:eps=0.3'),
    makeEnv: envs.make,
  });
  let turns = 0;
  for (let i = 0; i < tasks.length; i++) {
    const policy = makeOpenAIPolicy(`openai:${p.sessionUrl(`ep${i}`)}#oracle,retries=0`, env.spec);
    await policy.connect();
    const [served] = await rollout({
      tasks: [tasks[i]],
      samples: 1,
      budget: 20,
      revealBudget: true,
      runSeed: 9,
      policy,
      makeEnv: envs.make,
    });
    const recorded = (await get(`${p.url}/s/ep${i}/trajectory`)) as unknown as Trajectory;
    const expected = inProcess[i];
    assert.equal(served.turns.length, expected.turns.length);
    assert.equal(recorded.turns.length, served.turns.length);
    turns += recorded.turns.length;
    recorded.turns.forEach((u, t) => {
      // The served policy's log π(a) is the one completion token's log-prob.
      assert.equal(u.logp, served.turns[t].logp);
      assert.deepEqual(u.trace?.tokens, [served.turns[t].action]);
      const call = (u.action as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0];
      assert.equal(
        JSON.parse(call.function.arguments).direction,
        env.spec.chat?.names[served.turns[t].action as number],
      );
      assert.equal(u.trace?.modelVersion, 'turnwise:oracle:eps=0.3');
    });
    const summary = await get(`${p.url}/s/ep${i}`);
    assert.equal(summary.mergeMismatches, 0, `session ep${i}: ${JSON.stringify(summary)}`);
  }
  assert.ok(turns > 8);
});

test('non-streaming: logprobs asked of the upstream, removed from the client answer, recorded in the trace', async () => {
  const up = await upstream();
  const p = await proxy(up.url);
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
    ],
  };
  const r = await post(`${p.sessionUrl('a')}/chat/completions`, body);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, completion(body));
  assert.equal(up.received[0].logprobs, true);
  const t = (await get(`${p.url}/s/a/trajectory`)) as unknown as Trajectory;
  assert.equal(t.turns.length, 1);
  assert.deepEqual(t.turns[0].action, { role: 'assistant', content: 'reply 2' });
  assert.deepEqual(t.turns[0].trace?.tokens, [100, 101, 102]);
  assert.deepEqual(t.turns[0].trace?.logprobs, [-0.25, -0.5, -0.75]);
  assert.equal(t.turns[0].logp, -1.5);
  assert.deepEqual(t.turns[0].trace?.usage, { prompt: 20, completion: 3 });
  assert.deepEqual(t.turns[0].observation, body.messages);
  // A client that asks for logprobs gets them.
  const r2 = await post(`${p.sessionUrl('b')}/chat/completions`, { ...body, logprobs: true });
  assert.deepEqual(r2.body, completion({ ...body, logprobs: true }));
});

async function readStream(r: Response, onFirst?: () => void): Promise<string> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += dec.decode(value, { stream: true });
    if (onFirst !== undefined && text.includes('"content":"reply"')) {
      onFirst();
      onFirst = undefined;
    }
  }
}
const events = (text: string) =>
  text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));

test('streaming: chunks pass through one by one, the client sees what a direct call sees, the event holds the assembled answer', async () => {
  const up = await upstream();
  const p = await proxy(up.url);
  const body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'u' }] };
  const hold = up.holdNextStream();
  const r = await fetch(`${p.sessionUrl('s')}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  assert.equal(r.headers.get('content-type'), 'text/event-stream');
  // The upstream is held mid-stream: the first chunk reaches the client before the stream ends.
  let sawFirstBeforeEnd = false;
  const reading = readStream(r, () => {
    sawFirstBeforeEnd = true;
    hold.release();
  });
  await hold.reached;
  const text = await reading;
  assert.ok(sawFirstBeforeEnd);
  // What the upstream sent a client that asked for nothing extra: no logprobs, no usage chunk.
  assert.deepEqual(events(text), [...chunks(body).map((c) => JSON.stringify(c)), '[DONE]']);
  const forwarded = up.received[0];
  assert.equal(forwarded.logprobs, true);
  assert.deepEqual(forwarded.stream_options, { include_usage: true });
  const t = (await get(`${p.url}/s/s/trajectory`)) as unknown as Trajectory;
  assert.deepEqual(t.turns[0].action, { role: 'assistant', content: 'reply 1' });
  assert.deepEqual(t.turns[0].trace?.logprobs, [-0.25, -0.5, -0.75]);
  assert.deepEqual(t.turns[0].trace?.usage, { prompt: 10, completion: 3 });
  assert.equal(t.turns[0].trace?.finishReason, 'stop');
  // Tool calls stream in pieces and are assembled into one call.
  const tools = [{ type: 'function', function: { name: 'run', parameters: { type: 'object' } } }];
  const r2 = await fetch(`${p.sessionUrl('s')}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({
      ...body,
      tools,
      messages: [...body.messages, { role: 'assistant', content: 'reply 1' }, { role: 'user', content: 'v' }],
      stream_options: { include_usage: true },
    }),
  });
  const text2 = await readStream(r2);
  assert.ok(text2.includes('"usage":{"prompt_tokens":30'), 'asked for usage: kept');
  const t2 = (await get(`${p.url}/s/s/trajectory`)) as unknown as Trajectory;
  assert.equal(t2.turns.length, 2);
  assert.deepEqual(t2.turns[1].observation, [{ role: 'user', content: 'v' }]);
  assert.deepEqual(t2.turns[1].action, {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'run', arguments: '{"n":3}' } }],
  });
});

test('merge mismatches: a rewritten history is counted with its turn index and its prompt kept whole', async () => {
  const up = await upstream();
  const p = await proxy(up.url);
  const url = `${p.sessionUrl('m')}/chat/completions`;
  const sys = { role: 'system', content: 's' };
  const u1 = { role: 'user', content: 'one' };
  await post(url, { model: 'm', messages: [sys, u1] });
  // Extends: the SDK's echo of the answer (with refusal: null) still matches.
  const u2 = { role: 'user', content: 'two' };
  const m2 = [sys, u1, { role: 'assistant', content: 'reply 2', refusal: null }, u2];
  await post(url, { model: 'm', messages: m2 });
  // Rewritten: the history was summarised.
  const m3 = [sys, { role: 'user', content: 'summary of one and two' }];
  await post(url, { model: 'm', messages: m3 });
  // Extends the rewritten one again.
  const m4 = [
    ...m3,
    { role: 'assistant', content: 'reply 2' },
    { role: 'tool', tool_call_id: 'x', content: 'r' },
  ];
  await post(url, { model: 'm', messages: m4 });
  const s = await get(`${p.url}/s/m`);
  assert.equal(s.mergeMismatches, 1);
  assert.deepEqual(s.mergeMismatchTurns, [2]);
  const t = (await get(`${p.url}/s/m/trajectory`)) as unknown as Trajectory;
  assert.deepEqual(
    t.turns.map((u) => u.observation),
    [[sys, u1], [u2], m3, [m4[3]]],
  );
  assert.deepEqual(
    t.turns.map((u) => u.info.mergeMismatch ?? false),
    [false, false, true, false],
  );
});

test('budget: the (T+1)-th call is refused with turn_budget_exhausted and the session ends truncated as budget', async () => {
  const up = await upstream();
  const p = await proxy(up.url, { budget: 2 });
  const url = `${p.sessionUrl('b')}/chat/completions`;
  const msgs = [{ role: 'user', content: 'x' }];
  assert.equal((await post(url, { model: 'm', messages: msgs })).status, 200);
  assert.equal((await post(url, { model: 'm', messages: msgs })).status, 200);
  const refused = await post(url, { model: 'm', messages: msgs });
  assert.equal(refused.status, 400);
  assert.equal((refused.body.error as { type: string }).type, 'turn_budget_exhausted');
  assert.equal(up.received.length, 2, 'the refused call never reached the upstream');
  const t = (await get(`${p.url}/s/b/trajectory`)) as unknown as Trajectory;
  assert.equal(t.budget, 2);
  assert.equal(t.turns.length, 2);
  assert.deepEqual(t.outcome, {
    success: false,
    return: 0,
    turns: 2,
    firstSuccessTurn: null,
    end: 'truncated',
    failure: 'budget',
  });
  // A per-session budget overrides the proxy's.
  await fetch(`${p.url}/s/c`, { method: 'PUT', body: JSON.stringify({ budget: 1 }) });
  assert.equal(
    (await post(`${p.sessionUrl('c')}/chat/completions`, { model: 'm', messages: msgs })).status,
    200,
  );
  assert.equal(
    (await post(`${p.sessionUrl('c')}/chat/completions`, { model: 'm', messages: msgs })).status,
    400,
  );
  const bad = await fetch(`${p.url}/s/c`, { method: 'PUT', body: JSON.stringify({ budget: 0 }) });
  assert.equal(bad.status, 400);
});

test('reward and end: the posted reward lands on the last turn and decides success; calls after end are refused', async () => {
  const up = await upstream();
  const p = await proxy(up.url);
  const url = `${p.sessionUrl('r')}/chat/completions`;
  await post(url, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
  await post(url, {
    model: 'm',
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'reply 1' },
      { role: 'user', content: 'y' },
    ],
  });
  assert.equal((await post(`${p.url}/s/r/reward`, { value: 'high' })).status, 400);
  assert.equal((await post(`${p.url}/s/r/reward`, { value: 1, reason: 'tests pass' })).status, 200);
  assert.equal((await post(`${p.url}/s/r/end`, {})).status, 200);
  assert.equal((await post(url, { model: 'm', messages: [] })).status, 409);
  const t = (await get(`${p.url}/s/r/trajectory`)) as unknown as Trajectory;
  assert.deepEqual(
    t.turns.map((u) => u.reward),
    [0, 1],
  );
  assert.deepEqual(t.outcome, {
    success: true,
    return: 1,
    turns: 2,
    firstSuccessTurn: 2,
    end: 'terminated',
    failure: null,
  });
  const s = await get(`${p.url}/s/r`);
  assert.deepEqual(s.reward, { value: 1, reason: 'tests pass' });
});

test('retries, an upstream without logprobs, and a restart from the store file lose nothing', async () => {
  const up = await upstream({ refuseLogprobs: true });
  const store = join(dir, 'proxy.sqlite');
  const p = await startProxy({ upstream: up.url, store });
  const url = `${p.sessionUrl('k')}/chat/completions`;
  const body = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
  up.failNext(2);
  assert.equal((await post(url, body)).status, 500);
  assert.equal((await post(url, body)).status, 500);
  const ok = await post(url, body);
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body, completion(body));
  const before = await get(`${p.url}/s/k/trajectory`);
  const t = before as unknown as Trajectory;
  assert.equal(t.turns.length, 1);
  assert.equal(t.turns[0].trace?.retries, 2);
  assert.equal(t.turns[0].trace?.logprobs, undefined, 'the upstream has none');
  assert.equal(t.turns[0].logp, 0);
  const evs = (await (await fetch(`${p.url}/s/k/events`)).json()) as { status: number }[];
  assert.deepEqual(
    evs.map((e) => e.status),
    [500, 500, 200],
  );
  await p.close();
  const q = await proxy(up.url, { store });
  assert.deepEqual(await get(`${q.url}/s/k/trajectory`), before);
});
