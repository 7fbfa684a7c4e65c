// Expert transcripts of an env, as the language agent will read and write them: episodes of the env's
// oracle (with eps for variety) rendered as the chat an `openai:` policy sends and receives, so that a
// tokenizer can learn its merges from them (nn/bpe.ts) and be measured on them in tokens per turn.
//
// The conversation of an episode (rendered by policies/transformer-prompt.ts, which the transformer
// policy reads its prompts from too, so that cloning targets are the text the policy writes):
//   system     the task's instructions and the tools, one JSON declaration per line
//   user       the first observation (turn message)
//   assistant  the action as a tool call, `<tool_call>\n{"name":…,"arguments":…}\n</tool_call>` (Hermes)
//   tool       the next observation (the tool's result), then the next assistant turn, …
// - a discrete env with a chat encoding (FrozenLake) is rendered exactly as policies/chat.ts builds the
//   `openai:` policy's prompt in tools mode (its default): system prompt, "Turn t (N turns left).",
//   feedback and the text view, the `move` tool;
// - a tool env (sql, tools, code, search) as an MCP agent sees it (serve/mcp.ts): the text view of the
//   first observation, then each call's result as the text view of the observation it led to.
// In tokens (nn/tokenizer.ts encodeChat) each message is <|role|> text <|end|>; a turn's prompt is every
// message before its action and the opened <|assistant|>; its action is the action's text and <|end|>.
import { InputError } from '../core/errors.ts';
import { makeTasks } from '../core/tasks.ts';
import type { EnvConfig, EnvFactory, EnvSpec, Task, Trajectory } from '../core/types.ts';
import { trainBpe } from '../nn/bpe.ts';
import { type ChatRole, Tokenizer } from '../nn/tokenizer.ts';
import type { ChatMode } from '../policies/chat.ts';
import { makePolicy } from '../policies/spec.ts';
import { hasTextPrompt, promptMessages, systemText } from '../policies/transformer-prompt.ts';
import { rollout } from '../rollout/batch.ts';

export interface TranscriptMessage {
  role: ChatRole;
  text: string;
}

/** One episode's conversation; `actions[k]` is the index in `messages` of turn k's assistant message. */
export interface Transcript {
  messages: TranscriptMessage[];
  actions: number[];
}

export interface TranscriptOptions {
  envs: EnvFactory;
  config: EnvConfig;
  /** Episodes, one per task; task seeds seed, seed+1, … (the run seed is `seed` too). */
  episodes: number;
  seed: number;
  /** The expert's exploration: with probability eps a uniformly drawn other action (a valid detour). */
  eps: number;
  /** Turn budget; absent: the env's registered limit (100 when it has none). */
  budget?: number;
  /** How actions are written (policies/transformer-prompt.ts): tool calls (the default) or, for a
   * discrete env with a chat encoding, `<answer>Name</answer>` with the text-mode system prompt. */
  mode?: ChatMode;
}

/** An episode as its conversation (see the top of the file); `text` is the env's text view. The
 * messages are the prompt of a turn after the last (policies/transformer-prompt.ts, in `mode`, the
 * whole history) without that turn's message. */
export function episodeTranscript(
  t: Trajectory,
  spec: EnvSpec,
  text: (observation: unknown) => string,
  mode: ChatMode = 'tools',
): Transcript {
  if (!hasTextPrompt(spec))
    throw new InputError('--env', spec.id, 'has neither a chat encoding nor tools to render as a chat');
  const n = t.turns.length;
  const messages: TranscriptMessage[] =
    n === 0
      ? [{ role: 'system', text: systemText(spec, mode) }]
      : promptMessages({
          spec,
          mode,
          text,
          observation: t.turns[n - 1].observation,
          history: t.turns,
          turn: n,
          turnsLeft: t.revealBudget ? t.budget - n : undefined,
        }).slice(0, -1);
  const actions = messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  return { messages, actions };
}

/** The env's expert (`oracle`, `oracle:eps=ε`) rolled out on `episodes` tasks, each episode rendered. */
export async function expertTranscripts(o: TranscriptOptions): Promise<Transcript[]> {
  const tasks = makeTasks(o.config, o.episodes, o.seed);
  const spec = o.envs.spec(tasks[0]);
  if (o.mode === 'text' && spec.chat === undefined)
    throw new InputError('--mode', 'text', `needs a discrete env with a chat encoding; ${spec.id} has tools`);
  const policy = makePolicy(o.eps > 0 ? `oracle:eps=${o.eps}` : 'oracle', spec, '--eps');
  // The text view is a function of the observation alone; it is taken from the env the rollout makes.
  const views = new Map<Task, (observation: unknown) => string>();
  const trajectories = await rollout({
    tasks,
    samples: 1,
    budget: o.budget ?? spec.maxTurns ?? 100,
    runSeed: o.seed,
    policy,
    makeEnv: async (task) => {
      const env = await o.envs.make(task);
      const view = env.text?.bind(env);
      if (view === undefined) throw new InputError('--env', spec.id, 'has no text view to render');
      views.set(task, view);
      return env;
    },
  });
  return trajectories.map((t, i) =>
    episodeTranscript(t, o.envs.spec(tasks[i]), views.get(tasks[i]) as (o: unknown) => string, o.mode),
  );
}

/** Every message's text: the corpus merges are learned from (the specials are not text). */
export function transcriptTexts(transcripts: readonly Transcript[]): string[] {
  return transcripts.flatMap((t) => t.messages.map((m) => m.text));
}

/** Tokens per turn, means over every turn of every transcript: `prompt` the whole prompt the model reads
 * (system, earlier turns, this observation, the opened assistant turn), `observation` the messages new
 * at this turn (its observation or tool result), `action` the action and its <|end|>; `maxPrompt` the
 * longest prompt, `episode` the mean tokens of a whole conversation. */
export interface TokensPerTurn {
  turns: number;
  prompt: number;
  observation: number;
  action: number;
  maxPrompt: number;
  episode: number;
}

export function tokensPerTurn(tokenizer: Tokenizer, transcripts: readonly Transcript[]): TokensPerTurn {
  let turns = 0;
  let prompt = 0;
  let observation = 0;
  let action = 0;
  let maxPrompt = 0;
  let all = 0;
  for (const t of transcripts) {
    // role token + text + <|end|>
    const sizes = t.messages.map((m) => tokenizer.encode(m.text).length + 2);
    let before = 0;
    let since = 0;
    let next = 0;
    for (const [i, size] of sizes.entries()) {
      if (i === t.actions[next]) {
        const p = before + 1;
        prompt += p;
        maxPrompt = Math.max(maxPrompt, p);
        observation += since;
        action += size - 1;
        turns++;
        next++;
        since = 0;
      } else if (t.messages[i].role !== 'system') since += size;
      before += size;
    }
    all += before;
  }
  const mean = (x: number) => (turns === 0 ? 0 : x / turns);
  return {
    turns,
    prompt: mean(prompt),
    observation: mean(observation),
    action: mean(action),
    maxPrompt,
    episode: transcripts.length === 0 ? 0 : all / transcripts.length,
  };
}

/** What a set of transcripts holds. */
export interface CorpusSummary {
  episodes: number;
  turns: number;
  messages: number;
  /** UTF-16 code units of all message texts. */
  characters: number;
}

function summary(transcripts: readonly Transcript[]): CorpusSummary {
  const texts = transcriptTexts(transcripts);
  return {
    episodes: transcripts.length,
    turns: transcripts.reduce((n, t) => n + t.actions.length, 0),
    messages: texts.length,
    characters: texts.reduce((n, s) => n + s.length, 0),
  };
}

export interface TokenizerMeasure {
  corpus: CorpusSummary;
  /** Tokens per turn with the bytes alone and with the tokenizer measured. */
  tokensPerTurn: { bytes: TokensPerTurn; trained: TokensPerTurn };
  seconds: { rollout: number; merges?: number };
}

/** Tokens per turn of `tokenizer` against the bytes alone, on the expert transcripts of `o`. */
export async function measureTokenizer(
  o: TranscriptOptions,
  tokenizer: Tokenizer,
): Promise<TokenizerMeasure> {
  const t0 = performance.now();
  const transcripts = await expertTranscripts(o);
  return measured(transcripts, tokenizer, (performance.now() - t0) / 1000);
}

function measured(transcripts: Transcript[], tokenizer: Tokenizer, rollout: number): TokenizerMeasure {
  return {
    corpus: summary(transcripts),
    tokensPerTurn: {
      bytes: tokensPerTurn(Tokenizer.bytesOnly(), transcripts),
      trained: tokensPerTurn(tokenizer, transcripts),
    },
    seconds: { rollout },
  };
}

/** Merges for a vocabulary of `vocab` tokens learned from the expert transcripts of `o`, measured on
 * the same transcripts; `seconds` times the rollouts and the merge learning apart. */
export async function learnTokenizer(
  o: TranscriptOptions,
  vocab: number,
): Promise<TokenizerMeasure & { tokenizer: Tokenizer }> {
  const t0 = performance.now();
  const transcripts = await expertTranscripts(o);
  const t1 = performance.now();
  const tokenizer = trainBpe(transcriptTexts(transcripts), vocab);
  const merges = (performance.now() - t1) / 1000;
  const m = measured(transcripts, tokenizer, (t1 - t0) / 1000);
  return { ...m, tokenizer, seconds: { ...m.seconds, merges } };
}
