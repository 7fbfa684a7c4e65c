// Expert transcripts: FrozenLake's are the prompts the openai: policy sends, turn by turn; a tool env's
// are its observations' text and its calls in Hermes form, which parse back to the actions taken; the
// token counts per turn are those of the chat template's encoding.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ToolCall, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { Tokenizer } from '../../src/nn/tokenizer.ts';
import { buildMessages, completionMessage, toolCallText } from '../../src/policies/chat.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import {
  episodeTranscript,
  expertTranscripts,
  learnTokenizer,
  measureTokenizer,
  tokensPerTurn,
  transcriptTexts,
} from '../../src/train/transcripts.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: true });
const sql = envConfig('sql', { level: 1 });

async function expert(config: typeof lake, n: number, eps: number): Promise<Trajectory[]> {
  const tasks = makeTasks(config, n, 7);
  const policy = makePolicy(`oracle:eps=${eps}`, envs.spec(tasks[0]));
  return rollout({ tasks, samples: 1, budget: 100, runSeed: 7, policy, makeEnv: envs.make });
}

test("FrozenLake: each turn's messages are the prompt the openai: policy sends (tools mode), then the call", async () => {
  const [t] = await expert(lake, 1, 0.2);
  const spec = envs.spec(t.task);
  const env = envs.make(t.task) as { text(o: unknown): string };
  const tr = episodeTranscript(t, spec, (o) => env.text(o));
  assert.equal(tr.actions.length, t.turns.length);
  assert.ok(t.turns.length > 1);
  assert.match(tr.messages[0].text, /^You are playing FrozenLake[\s\S]*\nTools:\n\{"name":"move"/);
  for (const [k, turn] of t.turns.entries()) {
    const prompt = buildMessages({
      chat: spec.chat as NonNullable<typeof spec.chat>,
      mode: 'tools',
      text: (o) => env.text(o),
      observation: turn.observation,
      history: t.turns.slice(0, k),
      turn: k,
      turnsLeft: t.budget - k,
    });
    const rendered = prompt.slice(1).map((m) => ({
      role: m.role,
      text:
        m.tool_calls === undefined
          ? m.content
          : toolCallText(m.tool_calls[0].function.name, m.tool_calls[0].function.arguments),
    }));
    assert.deepEqual(tr.messages.slice(1, tr.actions[k]), rendered, `turn ${k}`);
    const call = completionMessage(tr.messages[tr.actions[k]].text).tool_calls?.[0]?.function;
    const names = ['Left', 'Down', 'Right', 'Up'];
    assert.deepEqual(call, {
      name: 'move',
      arguments: JSON.stringify({ direction: names[turn.action as number] }),
    });
  }
});

test('FrozenLake in text mode: the text-mode system prompt, each action as <answer>Name</answer>', async () => {
  const [t] = await expert(lake, 1, 0.2);
  const env = envs.make(t.task) as { text(o: unknown): string };
  const tr = episodeTranscript(t, envs.spec(t.task), (o) => env.text(o), 'text');
  assert.doesNotMatch(tr.messages[0].text, /Tools:/);
  assert.match(tr.messages[0].text, /<answer>Left<\/answer>/);
  const names = ['Left', 'Down', 'Right', 'Up'];
  assert.deepEqual(
    tr.actions.map((i) => tr.messages[i].text),
    t.turns.map((turn) => `<answer>${names[turn.action as number]}</answer>`),
  );
  const o = { envs, config: lake, episodes: 2, seed: 3, eps: 0.1 };
  const [text] = await expertTranscripts({ ...o, mode: 'text' });
  const [tools] = await expertTranscripts(o);
  assert.notDeepEqual(text.messages[0], tools.messages[0]);
  assert.equal(text.actions.length, tools.actions.length);
});

test("a tool env (sql): the observations' text view, the calls in Hermes form parsing back to the actions", async () => {
  const trajectories = await expert(sql, 3, 0.3);
  for (const t of trajectories) {
    const env = envs.make(t.task) as { text(o: unknown): string; close(): void };
    const tr = episodeTranscript(t, envs.spec(t.task), (o) => env.text(o));
    assert.deepEqual(
      tr.messages.map((m) => m.role),
      ['system', ...t.turns.flatMap((turn) => [turn.t === 0 ? 'user' : 'tool', 'assistant'])],
    );
    for (const [k, turn] of t.turns.entries()) {
      assert.equal(tr.messages[tr.actions[k] - 1].text, env.text(turn.observation));
      const call = completionMessage(tr.messages[tr.actions[k]].text).tool_calls?.[0]?.function;
      const action = turn.action as ToolCall;
      assert.deepEqual(call, { name: action.name, arguments: JSON.stringify(action.arguments) });
    }
    env.close();
  }
  assert.ok(trajectories.some((t) => t.turns.length > 2));
});

test('tokens per turn are the lengths of the chat template encoding (encodeChat)', async () => {
  const transcripts = await expertTranscripts({ envs, config: lake, episodes: 4, seed: 3, eps: 0.1 });
  const tok = trainBpe(transcriptTexts(transcripts), 400);
  for (const tokenizer of [tok, Tokenizer.bytesOnly()]) {
    let prompt = 0;
    let observation = 0;
    let action = 0;
    let maxPrompt = 0;
    let turns = 0;
    let episode = 0;
    for (const tr of transcripts) {
      for (const [k, at] of tr.actions.entries()) {
        const p = tokenizer.encodeChat(tr.messages.slice(0, at), 'assistant').length;
        prompt += p;
        maxPrompt = Math.max(maxPrompt, p);
        const from = k === 0 ? 1 : tr.actions[k - 1] + 1;
        observation += tokenizer.encodeChat(tr.messages.slice(from, at)).length;
        action += tokenizer.encodeChat([tr.messages[at]]).length - 1;
        turns++;
      }
      episode += tokenizer.encodeChat(tr.messages).length;
    }
    const got = tokensPerTurn(tokenizer, transcripts);
    assert.equal(got.turns, turns);
    assert.equal(got.prompt, prompt / turns);
    assert.equal(got.observation, observation / turns);
    assert.equal(got.action, action / turns);
    assert.equal(got.maxPrompt, maxPrompt);
    assert.equal(got.episode, episode / transcripts.length);
  }
});

test('the same options give the same transcripts and merges; measuring a learned tokenizer repeats its numbers', async () => {
  const o = { envs, config: sql, episodes: 6, seed: 11, eps: 0.2 };
  const [a, b] = [await expertTranscripts(o), await expertTranscripts(o)];
  assert.deepEqual(a, b);
  const fit = await learnTokenizer(o, 330);
  assert.equal(fit.tokenizer.vocabSize, 330);
  assert.deepEqual(fit.tokenizer.merges, trainBpe(transcriptTexts(a), 330).merges);
  const m = await measureTokenizer(o, fit.tokenizer);
  assert.deepEqual(m.tokensPerTurn, fit.tokensPerTurn);
  assert.deepEqual(m.corpus, fit.corpus);
  assert.ok(fit.tokensPerTurn.trained.prompt < fit.tokensPerTurn.bytes.prompt);
});
