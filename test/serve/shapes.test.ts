// The openai: policy and `turnwise probe` against servers answering in the shapes of vLLM, llama.cpp
// and Ollama (test/fixtures/shaped-servers.ts, real HTTP on loopback, oracle:eps=0.2 behind them):
// the same actions and log-probs as in-process everywhere; token ids where the server gives them;
// scoring (NLL/LLR) through vLLM's echo, and reported unavailable — not wrong — elsewhere.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  envConfig,
  envs,
  likelihood,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  type Policy,
  RandomPolicy,
  rollout,
  type Trajectory,
} from '../../src/index.ts';
import { turnwise } from '../cli/run.ts';
import { probeMessages, type Shape, type ShapedServer, shapedServer } from '../fixtures/shaped-servers.ts';

const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const env = envs.make({ ...config, seed: 0 });
const tasks = makeTasks(config, 2, 21);
const oracle = () => new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2');
const servers: ShapedServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});
const start = async (shape: Shape, policy: Policy<unknown, unknown> = oracle()) => {
  const s = await shapedServer(shape, policy, env);
  servers.push(s);
  return s;
};

const roll = (policy: Parameters<typeof rollout>[0]['policy']) =>
  rollout({
    tasks,
    samples: 3,
    budget: 20,
    revealBudget: true,
    runSeed: 8,
    policy,
    concurrency: 4,
    makeEnv: envs.make,
  });
const essence = (ts: readonly Trajectory[]) =>
  ts.map((t) => JSON.stringify([t.turns.map((u) => [u.observation, u.action, u.logp]), t.outcome]));

test('rollouts through vLLM, llama.cpp and Ollama shapes equal in-process; token ids where the server has them', async () => {
  const local = await roll(oracle());
  for (const shape of ['vllm', 'llamacpp', 'ollama'] as const) {
    const s = await start(shape);
    const policy = makeOpenAIPolicy(
      `openai:${s.url}#qwen3-4b,budgetAware=1${shape === 'vllm' ? ',token_ids=1' : ''}`,
      env.spec,
    );
    await policy.connect();
    const served = await roll(policy);
    assert.deepEqual(essence(served), essence(local), shape);
    const turn = served[0].turns[0];
    assert.deepEqual(turn.trace?.logprobs, [turn.logp], shape);
    if (shape === 'ollama') assert.equal(turn.trace?.tokens, undefined);
    else assert.deepEqual(turn.trace?.tokens, [turn.action], shape);
    assert.equal(turn.trace?.model, 'qwen3-4b');
    assert.equal(s.seen[0].return_token_ids, shape === 'vllm' ? true : undefined);
  }
});

test('probe reports each shape as it is', async () => {
  const messages = probeMessages(env);
  const all = { chat: true, tools: true, logprobs: true, topLogprobs: true, seed: true };
  const expected: Record<Shape, Record<string, boolean>> = {
    vllm: { ...all, tokenIds: true, promptLogprobs: true, n: true },
    llamacpp: { ...all, tokenIds: true, promptLogprobs: false, n: false },
    ollama: { ...all, tokenIds: false, promptLogprobs: false, n: false },
  };
  for (const shape of ['vllm', 'llamacpp', 'ollama'] as const) {
    const s = await start(shape);
    const policy = makeOpenAIPolicy(`openai:${s.url}#qwen3-4b`, env.spec);
    await policy.connect();
    const caps = await policy.probe(messages);
    assert.deepEqual({ ...caps }, { ...caps, ...expected[shape] }, shape);
    assert.equal(Object.keys(caps).length, 8);
  }
  // The CLI on one of them: --json booleans.
  const s = await start('ollama');
  const r = await turnwise(['probe', `${s.url}#qwen3-4b`, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    chat: true,
    tools: true,
    logprobs: true,
    topLogprobs: true,
    tokenIds: false,
    promptLogprobs: false,
    seed: true,
    n: false,
  });
});

test('scoring: through vLLM echo the NLL/LLR equal in-process; llama.cpp and Ollama say it is unavailable', async () => {
  const a = oracle();
  const b = new RandomPolicy();
  const trA = await roll(a);
  const trB = await roll(b);
  const local = await likelihood(envs, trA, trB, a, b);
  const va = await start('vllm', oracle());
  const vb = await start('vllm', new RandomPolicy());
  const sa = makeOpenAIPolicy(`openai:${va.url}#qwen3-4b,budgetAware=1`, env.spec);
  const sb = makeOpenAIPolicy(`openai:${vb.url}#qwen3-4b`, env.spec);
  const first = { observation: 0, history: [], turn: 0, turnsLeft: 20, rng: undefined as never, env };
  assert.equal(await sa.checkScoring(first), undefined);
  assert.equal(await sb.checkScoring(first), undefined);
  const served = await likelihood(envs, trA, trB, sa, sb);
  assert.ok(local !== null && served !== null);
  assert.deepEqual(served, local);
  assert.equal(local.nllBunderB, Math.log(4));
  for (const shape of ['llamacpp', 'ollama'] as const) {
    const s = await start(shape);
    const p = makeOpenAIPolicy(`openai:${s.url}#qwen3-4b`, env.spec);
    const reason = await p.checkScoring(first);
    assert.match(
      reason ?? '',
      /scoring unavailable \(.*did not echo the prompt's log-probs\); NLL, LLR and PPO ratios need prompt log-probs/,
    );
    assert.equal(p.logProb, undefined);
    assert.equal(await likelihood(envs, trA, trB, p, b), null, 'skipped, not wrong');
  }
});

test('compare against a llama.cpp-shaped server prints that the likelihood is unavailable and why', async () => {
  const s = await start('llamacpp');
  const args = ['compare', '--slippery', '--tasks', '2', '--samples', '2', '--K', '1', '--T', '10'];
  const rest = ['--states', '2', '--actions', '2', '--continuations', '1', '--resamples', '50'];
  const r = await turnwise([
    ...args,
    '--a',
    `openai:${s.url}#qwen3-4b,budgetAware=1`,
    '--b',
    'random',
    ...rest,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /\nLikelihood: unavailable — openai:http:\/\/127\.0\.0\.1:\d+\/v1#qwen3-4b,budgetAware=1: scoring unavailable \(qwen3-4b: the server did not echo the prompt's log-probs\)/,
  );
});
