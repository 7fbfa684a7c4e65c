// /v1/completions of `turnwise serve`, the scoring endpoint, over real HTTP: a ChatML prompt with an
// action's text echoes log π(a) on exactly that text (by text_offset), the alternatives sum to one, an
// opened assistant turn without text is answered with the policy's own action; the openai: policy's
// request (the reply closed by <|im_end|>) echoes the end marker as a token of log-prob 0, so its score
// is log π(a) still; refusals are 400s.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  chat,
  envConfig,
  envs,
  OraclePolicy,
  Rng,
  type RunningServer,
  startServer,
} from '../../src/index.ts';
import { echoedLogProb, echoRequest } from '../../src/policies/scoring.ts';

const env = envs.make({ ...envConfig('frozenlake', { map: '4x4', slippery: true }), seed: 0 });
const chatSpec = env.spec.chat!;
const oracle = new OraclePolicy({ eps: 0.3 }, 'oracle:eps=0.3');
let server: RunningServer;
after(async () => server?.close());

const messages = (mode: chat.ChatMode, observation: number, turnsLeft: number) =>
  chat.buildMessages({
    chat: chatSpec,
    mode,
    text: (o) => env.text!(o),
    observation,
    history: [],
    turn: 0,
    turnsLeft,
  });
const post = (body: Record<string, unknown>) =>
  fetch(`${server.url}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'oracle', ...body }),
  });
interface Cmpl {
  choices: {
    text: string;
    finish_reason: string;
    logprobs: {
      tokens: string[];
      token_logprobs: (number | null)[];
      text_offset: number[];
      top_logprobs: (Record<string, number> | null)[];
    } | null;
  }[];
}

test('echo scores every action of every mode at log π(a) in-process; the alternatives sum to one', async () => {
  server = await startServer({ policy: oracle, env });
  for (const mode of ['tools', 'text'] as const) {
    for (const [s, left] of [
      [0, 5],
      [6, 2],
      [14, 9],
    ] as const) {
      const head = chat.renderChatML(messages(mode, s, left));
      const ctx = { observation: s, history: [], turn: 0, turnsLeft: left, rng: Rng.fromSeed(0), env };
      for (let a = 0; a < 4; a++) {
        const prompt = head + chat.actionText(chatSpec, mode, a);
        const r = (await (await post({ prompt, echo: true, logprobs: 4, max_tokens: 1 })).json()) as Cmpl;
        const lp = r.choices[0].logprobs!;
        assert.equal(r.choices[0].text, prompt);
        assert.deepEqual(lp.text_offset, [0, head.length]);
        assert.equal(lp.token_logprobs[0], null);
        const expected = oracle.logProb(ctx, a);
        assert.equal(
          echoedLogProb(lp, head.length, prompt.length),
          expected === -Infinity ? -Infinity : expected,
        );
        const top = lp.top_logprobs[1]!;
        assert.equal(Object.keys(top).length, 4);
        const z = Object.values(top).reduce((x, y) => x + Math.exp(y), 0);
        assert.ok(Math.abs(z - 1) < 1e-12, `${z}`);
      }
    }
  }
});

test("the openai: policy's echo request closes the reply with <|im_end|>: a token of log-prob 0 after the action", async () => {
  server ??= await startServer({ policy: oracle, env });
  const m = messages('tools', 6, 4);
  const head = chat.renderChatML(m);
  const ctx = { observation: 6, history: [], turn: 0, turnsLeft: 4, rng: Rng.fromSeed(0), env };
  for (let a = 0; a < 4; a++) {
    const action = chat.actionText(chatSpec, 'tools', a);
    const req = echoRequest('oracle', m, action);
    // The request: the reply being exactly the action's text, its end-of-turn marker included.
    assert.deepEqual(req, {
      body: {
        model: 'oracle',
        prompt: `${head}${action}<|im_end|>`,
        echo: true,
        logprobs: 1,
        max_tokens: 1,
        temperature: 0,
      },
      from: head.length,
      to: head.length + action.length + '<|im_end|>'.length,
    });
    const r = (await (await post(req.body)).json()) as Cmpl;
    const lp = r.choices[0].logprobs!;
    assert.deepEqual(lp.tokens, [head, action, '<|im_end|>']);
    assert.deepEqual(lp.text_offset, [0, head.length, head.length + action.length]);
    const expected = oracle.logProb(ctx, a);
    assert.deepEqual(lp.token_logprobs, [null, expected === -Infinity ? -9999 : expected, 0]);
    assert.deepEqual(lp.top_logprobs[2], { '<|im_end|>': 0 });
    assert.equal(echoedLogProb(lp, req.from, req.to), expected);
  }
  const after = await post({
    prompt: `${head}${chat.actionText(chatSpec, 'tools', 0)}<|im_end|>\nmore`,
    echo: true,
    logprobs: 1,
  });
  assert.equal(after.status, 400);
  assert.match(
    ((await after.json()) as { error: { message: string } }).error.message,
    /the completion goes on after <\|im_end\|>/,
  );
});

test('without an action text the policy acts; no echo, no prompt; refusals are 400 naming the parameter', async () => {
  server ??= await startServer({ policy: oracle, env });
  const head = chat.renderChatML(messages('text', 4, 7));
  const seed = 3 * 2 ** 50;
  const r = (await (await post({ prompt: head, logprobs: 0, max_tokens: 8, seed })).json()) as Cmpl;
  const ctx = { observation: 4, history: [], turn: 0, turnsLeft: 7, rng: Rng.replay(seed), env };
  const { action, logp } = oracle.act(ctx);
  assert.equal(r.choices[0].text, chat.actionText(chatSpec, 'text', action));
  assert.deepEqual(r.choices[0].logprobs?.token_logprobs, [logp]);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const bad = await post({ prompt: 'Hello', echo: true, logprobs: 1 });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'prompt');
  const stream = await post({ prompt: head, stream: true });
  assert.equal(stream.status, 400);
  assert.equal((await post({ prompt: head, model: 'gpt-4' })).status, 400);
});

test('ChatML rendering round-trips through parseChatML, tool calls and tool results included', () => {
  const history = [
    { t: 0, observation: 0, action: 2, reward: 0, logp: 0, info: {} },
    {
      t: 1,
      observation: 1,
      action: -1,
      reward: 0,
      logp: 0,
      info: { valid: false },
      trace: { text: 'hm', invalid: 'no tool call' },
    },
  ];
  for (const mode of ['tools', 'text'] as const) {
    const m = chat.buildMessages({
      chat: chatSpec,
      mode,
      text: (o) => env.text!(o),
      observation: 1,
      history,
      turn: 2,
      turnsLeft: 3,
    });
    const text = chat.renderChatML(m) + chat.actionText(chatSpec, mode, 1);
    const parsed = chat.parseChatML(text);
    assert.ok(parsed !== undefined);
    assert.equal(parsed.completion, chat.actionText(chatSpec, mode, 1));
    assert.equal(chat.renderChatML(parsed.messages), chat.renderChatML(m));
    assert.deepEqual(
      parsed.messages.map((x) => x.role),
      m.map((x) => x.role),
    );
  }
});
