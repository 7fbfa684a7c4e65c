// What `turnwise --help` lists for each command: its term and its one-line description, declared once.
// Each command module reads its description from here, and main.ts lists the commands from here without
// loading their modules (a command's module, and what it imports, is loaded only when it runs).
export const ABOUT = {
  env: { term: 'env', description: 'describe, solve exactly, or play an environment' },
  rollout: {
    term: 'rollout [options]',
    description:
      'roll a policy out: --episodes N (N tasks × 1 sample) or --tasks N --samples K, under --budget T',
  },
  summary: {
    term: 'summary [options]',
    description: 'success rate, turns and failure kinds of a trajectory JSONL file',
  },
  eval: {
    term: 'eval [options]',
    description:
      'Pass@(K,T) of a policy: unbiased pass@K within each budget T, bootstrap 95% intervals over tasks',
  },
  compare: {
    term: 'compare [options]',
    description:
      'two policies side by side: Pass@(K,T) difference, step quality, recovery from errors, likelihood, failures',
  },
  credit: {
    term: 'credit [options]',
    description: 'per-turn advantages of a trajectory file (grouped by identical task), or `credit fidelity`',
  },
  judge: {
    term: 'judge',
    description:
      "LLM judges against the env's verifier: `judge audit` — agreement, Cohen's κ, confusion, length and position bias",
  },
  calc: {
    term: 'calc',
    description: 'closed-form calculators: compound, dead-groups, tokens; shaping measured by exact DP',
  },
  bc: {
    term: 'bc [options]',
    description:
      'behaviour cloning: train a neural policy on an expert over tasks, score it on held-out tasks',
  },
  train: {
    term: 'train [options]',
    description: 'train a policy (GRPO, PPO, ES) with checkpoints and resume',
  },
  'train-pair': {
    term: 'train-pair [options]',
    description:
      'two agents, one outcome: a planner picks a waypoint and an executor walks (FrozenLake), or a planner decomposes a question and an executor calls the search tools (search); credit shared, per-agent or counterfactual',
  },
  adapt: {
    term: 'adapt [options]',
    description:
      'test-time adaptation: a trained policy on a new task distribution, adapted from its own rollouts and rewards; held-out success before and after',
  },
  bench: { term: 'bench', description: 'throughput benchmarks (JSON with --json)' },
  demo: {
    term: 'demo [options]',
    description:
      'random vs oracle policies on slippery FrozenLake: success within T turns, measured and exact',
  },
  study: { term: 'study', description: 'whole experiments composed from the library' },
  report: {
    term: 'report [options] <run>',
    description:
      "a run's report as one self-contained HTML file: a study's (from its summary.json), a training run's, a harness run's or a trajectory file's; --trajectory ID: one trajectory turn by turn",
  },
  schema: {
    term: 'schema [options] [name]',
    description:
      'the JSON Schema of a file turnwise reads or writes (trajectory, train-config, study-config, study-summary, rubric); no name: the list',
  },
  serve: {
    term: 'serve [options]',
    description:
      'serve an in-process policy as an OpenAI-compatible endpoint (/v1/models, /v1/chat/completions with streaming, /v1/completions for scoring, /health)',
  },
  'serve-env': {
    term: 'serve-env [options]',
    description:
      "serve an env over OpenEnv's protocol (HTTP /reset /step /state /schema /health, WebSocket /ws sessions)",
  },
  ui: {
    term: 'ui [options]',
    description:
      'a dashboard of the runs under a directory, read-only: pages (live training curves, trajectories turn by turn with credit per method, groups, compare) and their JSON API',
  },
  probe: {
    term: 'probe [options] <target>',
    description:
      'what an OpenAI-compatible server supports (URL#MODEL): chat, tools, logprobs, topLogprobs, tokenIds, promptLogprobs, seed, n',
  },
  mcp: {
    term: 'mcp [options]',
    description: 'serve one episode of an env as an MCP server over stdio (tools: the env’s, and observe)',
  },
  proxy: {
    term: 'proxy [options]',
    description: "record any agent's model calls: an OpenAI-compatible proxy with session URLs /s/{id}/v1",
  },
  harness: { term: 'harness', description: 'run outside agents (any language) as recorded episodes' },
  export: {
    term: 'export [options]',
    description:
      "hand a trajectory file to a trainer: verl's RL dataset (a row per task's prompt, with its ground truth) and multi-turn SFT dataset (verl-sft), OpenAI fine-tuning JSONL (weight 1 on the turns credit says helped), a transformer policy's token rows in verl's agent-loop shape (tokens), turnwise's own credited Parquet (turnwise-parquet); or the transformer itself as a GGUF file of the Llama architecture for llama.cpp (gguf)",
  },
  worker: {
    term: 'worker [options]',
    description:
      'play the episodes that rollout, eval, compare and train send to a Redis queue (--queue redis://HOST:PORT)',
  },
  queue: {
    term: 'queue',
    description: "the Redis rollout queue's workers, counts and stalled jobs (`queue status`)",
  },
  tokenizer: {
    term: 'tokenizer',
    description:
      "the language agent's byte-level BPE tokenizer: learn merges from an env's expert transcripts (train), tokens per turn (stats)",
  },
} as const;

export type CommandName = keyof typeof ABOUT;
