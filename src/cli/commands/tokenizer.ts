// turnwise tokenizer train | stats — the language agent's byte-level BPE vocabulary learned from an env's
// expert transcripts (train/transcripts.ts, nn/bpe.ts), and its tokens per turn against the bytes alone.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envs } from '../../envs/index.ts';
import { MAX_VOCAB, MIN_VOCAB, readTokenizerFile } from '../../nn/tokenizer.ts';
import type { ChatMode } from '../../policies/chat.ts';
import { writeFileAtomic } from '../../store/atomic.ts';
import { checkOutput } from '../../store/paths.ts';
import {
  learnTokenizer,
  measureTokenizer,
  type TokenizerMeasure,
  type TokensPerTurn,
  type TranscriptOptions,
} from '../../train/transcripts.ts';
import { fmt, json, out, table } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, probability, seed } from '../options.ts';
import { ABOUT } from './about.ts';

interface CommonFlags extends EnvFlags {
  env: string;
  episodes: string;
  eps: string;
  seed: string;
  budget?: string;
  mode: string;
  json?: boolean;
}

/** The flags both subcommands share: the env, and the expert episodes that make the transcripts. */
function transcriptOptions(cmd: Command, episodes: string): Command {
  return envOptions(cmd)
    .requiredOption('--env <id>', 'environment id (frozenlake, sql, tools, code, search, web)')
    .option('--episodes <n>', 'expert episodes, one per task (task seeds --seed, --seed+1, …)', episodes)
    .option('--eps <p>', "the expert's exploration: oracle:eps=p (a uniformly drawn other action)", '0.1')
    .option('--seed <n>', 'run seed and first task seed', '0')
    .option('--budget <T>', 'turn budget (default: the registered episode limit)')
    .option(
      '--mode <m>',
      'how actions are written: tools (tool calls) | text (<answer>Name</answer>, FrozenLake)',
      'tools',
    )
    .option('--json', 'machine-readable output');
}

function chatMode(raw: string): ChatMode {
  if (raw === 'tools' || raw === 'text') return raw;
  throw new InputError('--mode', raw, 'expected one of: tools, text');
}

/** The flags read into the transcripts' options, refused in one line before any episode. */
function readOptions(flags: CommonFlags): TranscriptOptions {
  const config = envConfigFromFlags(flags.env, flags);
  return {
    envs,
    config,
    episodes: int('--episodes', flags.episodes, 1, 100_000),
    eps: probability('--eps', flags.eps),
    seed: seed(flags.seed),
    budget: flags.budget === undefined ? undefined : int('--budget', flags.budget, 1, 1_000_000),
    mode: chatMode(flags.mode),
  };
}

const KEYS: [keyof TokensPerTurn, string][] = [
  ['prompt', 'prompt'],
  ['observation', 'observation'],
  ['action', 'action'],
  ['maxPrompt', 'max prompt'],
  ['episode', 'episode'],
];

function printMeasure(o: TranscriptOptions, m: TokenizerMeasure, vocab: number): void {
  const { corpus } = m;
  out(
    `${o.config.env} ${JSON.stringify(o.config.params)}: ${corpus.episodes} expert episodes (oracle:eps=${o.eps}, task seeds ${o.seed}..${o.seed + corpus.episodes - 1}), ${corpus.turns} turns, ${corpus.characters} characters`,
  );
  out('tokens per turn (mean prompt, new observation, action; the longest prompt; a whole episode):');
  const row = (name: string, t: TokensPerTurn) => [
    name,
    ...KEYS.map(([k]) => (k === 'maxPrompt' ? String(t[k]) : fmt(t[k], 1))),
  ];
  out(
    table([
      ['vocabulary', ...KEYS.map(([, label]) => label)],
      row(`bytes (${MIN_VOCAB})`, m.tokensPerTurn.bytes),
      row(`trained (${vocab})`, m.tokensPerTurn.trained),
    ]),
  );
}

export function registerTokenizer(program: Command): void {
  const cmd = program.command('tokenizer').description(ABOUT.tokenizer.description);

  transcriptOptions(
    cmd
      .command('train')
      .description(
        "learn byte-level BPE merges (GPT-2 / llama.cpp's gpt2 family) from the env's expert transcripts",
      ),
    '200',
  )
    .requiredOption('--vocab <n>', `vocabulary size: ${MIN_VOCAB} (the bytes and specials) to ${MAX_VOCAB}`)
    .requiredOption('--out <file.json>', 'where to write the tokenizer')
    .action(async (flags: CommonFlags & { vocab: string; out: string }) => {
      const vocab = int('--vocab', flags.vocab, MIN_VOCAB, MAX_VOCAB);
      const o = readOptions(flags);
      checkOutput(flags.out, '--out', 'file');
      const fit = await learnTokenizer(o, vocab);
      const tokenizer = fit.tokenizer.withTrainedOn({
        env: o.config.env,
        params: JSON.stringify(o.config.params),
        episodes: o.episodes,
        seed: o.seed,
        eps: o.eps,
        vocab,
      });
      writeFileAtomic(flags.out, `${JSON.stringify(tokenizer)}\n`);
      const size = fit.tokenizer.vocabSize;
      const result = {
        env: o.config,
        vocab: { requested: vocab, size, merges: fit.tokenizer.merges.length },
        episodes: o.episodes,
        eps: o.eps,
        seed: o.seed,
        corpus: fit.corpus,
        seconds: fit.seconds,
        tokensPerTurn: fit.tokensPerTurn,
        out: flags.out,
      };
      if (flags.json) return json(result);
      printMeasure(o, fit, size);
      const short = size < vocab ? ` (the transcripts ran out of pairs before ${vocab})` : '';
      out(
        `learned ${fit.tokenizer.merges.length} merges: ${size} tokens${short}, in ${fmt(fit.seconds.merges ?? 0, 2)} s (rollouts ${fmt(fit.seconds.rollout, 2)} s)`,
      );
      out(`wrote ${flags.out}`);
    });

  transcriptOptions(
    cmd
      .command('stats')
      .description("a tokenizer's tokens per turn on the env's expert transcripts, against the bytes alone"),
    '100',
  )
    .requiredOption('--tokenizer <file.json>', 'a tokenizer file (`turnwise tokenizer train --out`)')
    .action(async (flags: CommonFlags & { tokenizer: string }) => {
      const o = readOptions(flags);
      const tokenizer = readTokenizerFile(flags.tokenizer);
      const m = await measureTokenizer(o, tokenizer);
      const result = {
        env: o.config,
        tokenizer: flags.tokenizer,
        vocab: tokenizer.vocabSize,
        trainedOn: tokenizer.trainedOn ?? null,
        episodes: o.episodes,
        eps: o.eps,
        seed: o.seed,
        corpus: m.corpus,
        seconds: m.seconds,
        tokensPerTurn: m.tokensPerTurn,
      };
      if (flags.json) return json(result);
      printMeasure(o, m, tokenizer.vocabSize);
      const from = tokenizer.trainedOn;
      if (from !== undefined)
        out(
          `its merges were learned on ${from.env} ${from.params}: ${from.episodes} episodes from task seed ${from.seed}, eps ${from.eps}`,
        );
    });
}
