// turnwise serve over real HTTP on loopback (random ports): served equals in-process, through every fault
// kind; the official openai SDK against the server; n, top_logprobs and the protocol's refusals.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import {
  chat,
  envConfig,
  envs,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  parseFaults,
  Rng,
  type RunningServer,
  rollout,
  startServer,
  type Trajectory,
} from '../../src/index.ts';

const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const env = envs.make({ ...config, seed: 0 });
const spec = env.spec;
const tasks = makeTasks(config, 3, 11);

const servers: RunningServer[] = [];
async function serveOracle(faults?: string): Promise<RunningServer> {
  const server = await startServer({
    policy: new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'),
    env,
    faults: faults === undefined ? undefined : parseFaults(faults),
  });
  servers.push(server);
  return server;
}
after(async () => {
  for (const s of servers) await s.close();
});

/** What must be equal, byte for byte: per turn observation, action, reward, logp, validity; the outcome. */
const essence = (ts: readonly Trajectory[]) =>
  ts.map((t) =>
    JSON.stringify({
      id: t.id,
      turns: t.turns.map((u) => [u.observation, u.action, u.reward, u.logp, u.info]),
      outcome: t.outcome,
    }),
  );

async function roll(policySpec: string | OraclePolicy): Promise<Trajectory[]> {
  const policy = typeof policySpec === 'string' ? makeOpenAIPolicy(policySpec, spec) : policySpec;
  if ('connect' in policy) await policy.connect();
  return rollout({
    tasks,
    samples: 4,
    budget: 30,
    revealBudget: true,
    runSeed: 5,
    policy,
    concurrency: 6,
    makeEnv: envs.make,
  });
}

let inProcess: Trajectory[];
before(async () => {
  inProcess = await roll(new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'));
});

test('served equals in-process: oracle:eps=0.2 over HTTP (tools mode) gives the same actions, logps and outcomes', async () => {
  const server = await serveOracle();
  const served = await roll(`openai:${server.url}#oracle,retries=0`);
  assert.deepEqual(essence(served), essence(inProcess));
  // Not vacuous: the policy explored (eps) and the episodes differ in length.
  const actions = new Set(inProcess.flatMap((t) => t.turns.map((u) => u.action)));
  assert.equal(actions.size, 4);
  assert.ok(new Set(inProcess.map((t) => t.outcome.turns)).size > 5);
  const turn = served[0].turns[0];
  assert.equal(turn.trace?.finishReason, 'tool_calls');
  assert.deepEqual(turn.trace?.tokens, [turn.action]);
  assert.deepEqual(turn.trace?.logprobs, [turn.logp]);
  assert.equal(turn.trace?.retries, 0);
  assert.equal(turn.trace?.model, 'oracle');
});

test('served equals in-process in text mode (<answer>…</answer>) and with history=1', async () => {
  const server = await serveOracle();
  const served = await roll(`openai:${server.url}#oracle:eps=0.2,mode=text,history=1`);
  assert.deepEqual(essence(served), essence(inProcess));
  assert.match(served[0].turns[0].trace?.text ?? '', /^<answer>(Left|Down|Right|Up)<\/answer>$/);
});

test('served equals in-process through 429, 500, hang and malformed faults: only the retry counts differ', async () => {
  const server = await serveOracle('429=0.1,500=0.1,hang=0.03,malformed=0.1,seed=7');
  const served = await roll(`openai:${server.url}#oracle,timeout=300ms,backoff=1ms,retries=12`);
  assert.deepEqual(essence(served), essence(inProcess));
  const retries = served.flatMap((t) => t.turns.map((u) => u.trace?.retries ?? 0));
  const total = retries.reduce((s, x) => s + x, 0);
  const turns = retries.length;
  // About 33% of the attempts fail: the retries per turn are ≈ 0.33/0.67 ≈ 0.5 in expectation.
  assert.ok(total > 0.2 * turns && total < 1.2 * turns, `${total} retries over ${turns} turns`);
});

test('each fault kind alone is recovered from; Retry-After replaces the backoff', async (t) => {
  for (const kind of ['429', '500', 'hang', 'malformed']) {
    await t.test(kind, async () => {
      const server = await serveOracle(`${kind}=${kind === 'hang' ? 0.1 : 0.3},seed=3`);
      // backoff=20s (≥ 10 s jittered): a 429 must wait its Retry-After (10 ms) instead, or this takes minutes.
      const backoff = kind === '429' ? '20s' : '1ms';
      const timeout = kind === 'hang' ? '250ms' : '10s';
      const served = await roll(
        `openai:${server.url}#oracle,timeout=${timeout},backoff=${backoff},retries=20`,
      );
      assert.deepEqual(essence(served), essence(inProcess));
      const retried = served.flatMap((u) => u.turns).filter((u) => (u.trace?.retries ?? 0) > 0);
      assert.ok(retried.length > 0, 'some requests were retried');
      if (kind === '429') for (const u of retried) assert.ok((u.trace?.latencyMs ?? 0) < 8000);
      if (kind === 'hang') for (const u of retried) assert.ok((u.trace?.latencyMs ?? 0) >= 250);
    });
  }
});

test('a request that still fails after its retries ends that episode as error with the reason', async () => {
  const server = await serveOracle('500=1,seed=1');
  const served = await roll(`openai:${server.url}#oracle,backoff=1ms,retries=2`);
  assert.equal(served.length, 12);
  for (const t of served) {
    assert.equal(t.outcome.end, 'error');
    assert.equal(t.outcome.failure, 'error');
    assert.equal(t.turns.length, 0);
    assert.match(t.outcome.error ?? '', /failed after 3 attempts: HTTP 500/);
  }
});

test('the openai SDK completes a chat request with tools, logprobs and top_logprobs', async () => {
  const server = await serveOracle();
  const client = new OpenAI({ baseURL: server.url, apiKey: 'not-needed', maxRetries: 0 });
  const chatSpec = spec.chat!;
  const s = 4; // row 1, column 0
  const messages = chat.buildMessages({
    chat: chatSpec,
    mode: 'tools',
    text: (o) => env.text!(o),
    observation: s,
    history: [],
    turn: 0,
    turnsLeft: 7,
  });
  const res = await client.chat.completions.create({
    model: 'oracle:eps=0.2',
    messages: messages as OpenAI.Chat.ChatCompletionMessageParam[],
    tools: [chat.chatTool(chatSpec)],
    seed: 12345,
    logprobs: true,
    top_logprobs: 4,
  });
  const choice = res.choices[0];
  const call = choice.message.tool_calls?.[0];
  assert.ok(call !== undefined && call.type === 'function');
  assert.equal(call.function.name, 'move');
  const direction = (JSON.parse(call.function.arguments) as { direction: string }).direction;
  // The same draw in-process: the oracle with 7 turns left, its uniform Rng.replay(12345).
  const oracle = new OraclePolicy({ eps: 0.2 });
  const ctx = { observation: s, history: [], turn: 0, turnsLeft: 7, rng: Rng.replay(12345), env };
  const probs = oracle.probs(ctx);
  const expected = oracle.act(ctx);
  assert.equal(direction, chatSpec.names[expected.action]);
  const lp = choice.logprobs?.content?.[0];
  assert.equal(lp?.logprob, Math.log(probs[expected.action]));
  const top = lp?.top_logprobs ?? [];
  assert.equal(top.length, 4);
  assert.ok(Math.abs(top.reduce((z, x) => z + Math.exp(x.logprob), 0) - 1) < 1e-12);
  for (let i = 1; i < 4; i++) assert.ok(top[i - 1].logprob >= top[i].logprob);
  assert.equal(choice.finish_reason, 'tool_calls');
});

test('n choices: the first is the single answer, the others independent draws; bad requests get 400', async () => {
  const server = await serveOracle();
  const messages = chat.buildMessages({
    chat: spec.chat!,
    mode: 'text',
    text: (o) => env.text!(o),
    observation: 0,
    history: [],
    turn: 0,
    turnsLeft: 10,
  });
  const post = (body: Record<string, unknown>) =>
    fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'oracle', messages, ...body }),
    });
  const one = (await (await post({ seed: 99 })).json()) as { choices: { message: { content: string } }[] };
  const many = (await (await post({ seed: 99, n: 16 })).json()) as typeof one;
  assert.equal(many.choices.length, 16);
  assert.equal(many.choices[0].message.content, one.choices[0].message.content);
  assert.ok(new Set(many.choices.map((c) => c.message.content)).size > 1, 'eps=0.2 over 16 draws varies');
  const unknown = await post({ model: 'gpt-4' });
  assert.equal(unknown.status, 400);
  assert.match(
    ((await unknown.json()) as { error: { message: string } }).error.message,
    /not served; models: oracle:eps=0.2, oracle/,
  );
  const blind = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({
      model: 'oracle',
      messages: [{ role: 'user', content: chat.turnMessage(0, undefined, undefined, env.text!(0)) }],
    }),
  });
  assert.equal(blind.status, 400, 'a budget-aware policy needs the turns left');
  assert.equal((await fetch(`${server.url.replace('/v1', '')}/health`)).status, 200);
});

test('the served policy reads the history back as it was played, only when it reads it', async () => {
  const oracle = new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2');
  const seen: unknown[] = [];
  let readHistory = true;
  // The oracle, recording the history it was given (when told to read it).
  const recorder = {
    id: 'oracle:eps=0.2',
    budgetAware: oracle.budgetAware,
    act: (ctx: Parameters<OraclePolicy['act']>[0]) => {
      if (readHistory) seen.push(ctx.history.map((h) => [h.t, h.observation, h.action, h.reward, h.info]));
      return oracle.act(ctx);
    },
  };
  const server = await startServer({ policy: recorder, env });
  servers.push(server);
  const history = [
    { t: 0, observation: 0, action: 2, reward: 0, logp: 0, info: {} },
    {
      t: 1,
      observation: 1,
      action: -1,
      reward: 0,
      logp: 0,
      info: { valid: false },
      trace: { invalid: 'no tool call', text: 'hm' },
    },
    { t: 2, observation: 1, action: 1, reward: 0, logp: 0, info: {} },
  ];
  const body = (text: (o: unknown) => string) => ({
    model: 'oracle:eps=0.2',
    seed: 3,
    tools: [chat.chatTool(spec.chat!)],
    messages: chat.buildMessages({
      chat: spec.chat!,
      mode: 'tools',
      text,
      observation: 5,
      history,
      turn: 3,
      turnsLeft: 7,
    }),
  });
  const post = (b: unknown) =>
    fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(b),
    });
  const ok = await post(body((o) => env.text!(o)));
  assert.equal(ok.status, 200);
  assert.deepEqual(seen, [history.map((h) => [h.t, h.observation, h.action, h.reward, h.info])]);
  // A history turn whose board is not a view of the env: 400 naming that message when the policy reads
  // the history; a policy that acts on the last observation alone is not held up by it.
  const bad = body((o) => (o === 0 ? 'not a board' : env.text!(o)));
  const refused = await post(bad);
  assert.equal(refused.status, 400);
  assert.match(((await refused.json()) as { error: { message: string } }).error.message, /^messages\[1\]: /);
  readHistory = false;
  assert.equal((await post(bad)).status, 200);
});

test("usage's word count splits where JavaScript's \\s does, for every BMP character", async () => {
  const { wordCount } = await import('../../src/serve/protocol.ts');
  const split = (s: string) => s.split(/\s+/).filter(Boolean).length;
  for (let c = 0; c < 0x10000; c++) {
    const s = `a${String.fromCharCode(c)}b ${String.fromCharCode(c)}`;
    assert.equal(wordCount(s), split(s), `U+${c.toString(16)}`);
  }
  assert.equal(wordCount(''), 0);
  assert.equal(wordCount('Turn 1 (3 turns left).\nObservation:\nSFFF'), 7);
});

test('a body that is JSON but not an object is a 400, not a server error', async () => {
  const server = await serveOracle();
  for (const body of ['[]', 'null', '3', '"x"']) {
    const res = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(res.status, 400, body);
    assert.equal(
      ((await res.json()) as { error: { message: string } }).error.message,
      'the body is not a JSON object',
    );
  }
});
