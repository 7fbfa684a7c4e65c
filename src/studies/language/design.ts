// The budget study with language agents (issue 23): Zhu et al. 2026's analysis run in its four worlds —
// FrozenLake, SQL, function calling, multi-turn coding — by the small transformer of docs/language-agent.md,
// reading the env's text and writing its actions and tool calls. This file is the design: the worlds,
// the profiles' sizes, and each world's pre-registration (written before its first full run and reported
// beside the results, as the `narrow` world's is).
//
// Per world, as in the paper (one pretrained model, RL runs from it): ONE base per world — a transformer
// cloned on an imperfect expert's transcripts — and per seed, from that base, RL (token-level GRPO at the
// world's training budget), BudgetMix (the same with budgets drawn from a mix) and the temperature
// control (the base sampled at its best τ). A seed changes RL's and BudgetMix's training and every
// measurement's draws; the base is the world's.
import type { EnvConfig } from '../../core/types.ts';
import type { ChatMode } from '../../policies/chat.ts';
import type { FindingId } from '../budget/summary.ts';

export const LANGUAGE_WORLD_IDS = ['frozenlake-text', 'sql', 'tools', 'code'] as const;
export type LanguageWorldId = (typeof LANGUAGE_WORLD_IDS)[number];

export const LANGUAGE_PROFILES = ['quick', 'default', 'paper'] as const;
export type LanguageProfileName = (typeof LANGUAGE_PROFILES)[number];

/** How one world's sizes scale a run (the profiles below). */
export interface Sizes {
  /** Task seeds [0, train) for the tokenizer, the base and RL; held-out seeds from 1 000 000. */
  train: number;
  test: number;
  /** Expert episodes the tokenizer's merges are learned from. */
  tokenizerEpisodes: number;
  bc: { epochs: number; batchSize: number; lr: number };
  rl: { iters: number; groups: number; groupSize: number };
  /** Episodes per held-out task for Pass@(K,T) (every K ≤ samples). */
  samples: number;
  /** Normal states and error states each; actions each policy draws per state; continuations per state. */
  states: number;
  actions: number;
  continuations: number;
  /** Bootstrap resamples of every interval. */
  resamples: number;
}

export interface LanguageWorld {
  id: LanguageWorldId;
  title: string;
  env: EnvConfig;
  /** How the transformer writes its actions: text (`<answer>…</answer>`) or Hermes tool calls. */
  mode: ChatMode;
  vocab: number;
  model: { layers: number; d: number; heads: number; ctx: number; temperature: number };
  /** The imperfect expert the base is cloned on (a `--policy` spec). */
  expert: string;
  /** max_tokens of every policy of the world, tied to the expert: ⌈replyCap × the longest reply of the
   * base's demonstrations⌉ tokens (<|end|> included; the world's tokenizer), fixed in the base's
   * checkpoint, so RL, BudgetMix, the τ control and every measurement sample under it. Absent: the
   * policy's own default — on FrozenLake the longest action (`<answer>Right</answer>`) and <|end|>. */
  replyCap?: number;
  /** The training budget T_train (the last of T). */
  budget: number;
  /** The evaluation budgets, increasing, ending at T_train. */
  T: number[];
  /** BudgetMix's budgets. */
  mix: number[];
  /** The temperatures the control tries for the base (its best one at T_train on training tasks). */
  temperatures: number[];
  /** The per-turn quality signal of step quality and of the training curves, in words. */
  step: string;
  /** How an error is forced, in words. */
  errors: string;
  /** The paper's figure for this world where it reports one (else the paper's general statement). */
  paper: Partial<Record<FindingId, string>>;
}

const FROZENLAKE: LanguageWorld = {
  id: 'frozenlake-text',
  title: 'FrozenLake random 4x4 maps on 1/3-slippery ice, as text (the board, Left/Down/Right/Up)',
  env: { env: 'frozenlake', params: { random: true, size: 4, p: 0.8, slippery: true } },
  mode: 'text',
  vocab: 512,
  model: { layers: 2, d: 48, heads: 4, ctx: 192, temperature: 1 },
  expert: 'oracle:temp=0.05,horizon=100',
  budget: 100,
  T: [10, 20, 50, 100],
  mix: [10, 20, 50, 100],
  temperatures: [0.5, 0.7, 1],
  step: 'exact: Q*_h(s,a) of the action, from the env’s finite-horizon oracle (h = the turns left)',
  errors:
    'the oracle’s bad actions: one that loses ≥ 10% of V*_h(s), forced at a turn of either policy’s trajectory',
  paper: { 'recovery-did': '51.3% vs 38.6% recovery (FrozenLake)' },
};

// The tool worlds' max_tokens (replyCap; 2026-12-02, before any full run). Until then every reply of a
// tool world could run to 128 tokens: a barely trained model wrote each one to that limit, and the quick
// profile's sql run spent minutes writing tokens no call needed. Tied to the expert instead, the cap is
// sql 54 / 57 tokens (quick / paper tokenizer and tasks), tools 45 / 50, code 117 / 230. Every reply of
// the expert on held-out tasks fits under it in sql and tools, and every reply of its gold path in code;
// code's detours include long wrong programs (a lookup of the visible tests, up to ≈ 360 tokens), of
// which a few in a hundred do not (test/studies/language/run.test.ts). Under the old 128, code cut ≈ 2% of
// its expert's own replies (p99 132–184 tokens). A cut reply is an invalid action, as before; what each
// measurement means is unchanged.
const SQL: LanguageWorld = {
  id: 'sql',
  title: 'InterCode-style SQL, level 1: list_tables, describe_table, execute_sql, submit',
  env: { env: 'sql', params: { level: 1 } },
  mode: 'tools',
  replyCap: 1.25, // 2026-12-02: was the default 128 (see above)
  vocab: 1024,
  model: { layers: 2, d: 64, heads: 4, ctx: 1024, temperature: 1 },
  expert: 'oracle:eps=0.1',
  budget: 10,
  T: [4, 6, 10],
  mix: [4, 6, 10],
  temperatures: [0.3, 0.6, 1],
  step: 'proxy: the multiset IoU of an executed or submitted query’s rows with the gold rows (info.quality)',
  errors: 'a detour: a valid call other than the gold path’s next one (a wrong query, a wrong table)',
  paper: {},
};

const TOOLS: LanguageWorld = {
  id: 'tools',
  title: 'BFCL-style multi-turn function calling, level 1',
  env: { env: 'tools', params: { level: 1 } },
  mode: 'tools',
  replyCap: 1.25, // 2026-12-02: was the default 128 (see above)
  vocab: 1024,
  model: { layers: 2, d: 64, heads: 4, ctx: 1536, temperature: 1 },
  expert: 'oracle:eps=0.1',
  budget: 10,
  T: [4, 6, 10],
  mix: [4, 6, 10],
  temperatures: [0.3, 0.6, 1],
  step: 'proxy: the share of the goal’s attributes satisfied after the call minus those destroyed (info.quality)',
  errors: 'a detour: a valid call other than the gold path’s next one (a wrong function or arguments)',
  paper: {},
};

const CODE: LanguageWorld = {
  id: 'code',
  title: 'DeepCoder-style multi-turn coding, level 1: run_tests, submit',
  env: { env: 'code', params: { level: 1 } },
  mode: 'tools',
  replyCap: 1.25, // 2026-12-02: was the default 128 (see above)
  vocab: 1024,
  model: { layers: 2, d: 64, heads: 4, ctx: 1024, temperature: 1 },
  expert: 'oracle:eps=0.1',
  budget: 6,
  T: [2, 4, 6],
  mix: [2, 4, 6],
  temperatures: [0.3, 0.6, 1],
  step: 'proxy: the share of hidden unit tests the attempt’s program passes (info.quality; the paper’s own proxy for DeepCoder-MT)',
  errors: 'a detour: a valid call other than the gold one (a failing program run or submitted)',
  paper: {
    'training-curves': '+0.331 trajectory reward vs −0.097 step reward (DeepCoder-MT)',
  },
};

export const LANGUAGE_WORLDS: Record<LanguageWorldId, LanguageWorld> = {
  'frozenlake-text': FROZENLAKE,
  sql: SQL,
  tools: TOOLS,
  code: CODE,
};

/** The paper's general statement of each finding (findings.ts of the budget study says the same). */
export const PAPER: Record<FindingId, string> = {
  'rl-beats-base': 'RL > base at every K',
  'lead-shrinks': 'smaller lead at tight T (K=8)',
  'lead-reverses': 'reversed in some settings',
  'normal-states': '43–47%',
  'error-contrast': '66–67% at error states vs 43–47% at normal ones',
  'recovery-did': 'RL recovers more from errors',
  'nll-plausible': 'NLL 12.20 under base vs 10.25 under RL (ratio 1.19)',
  'llr-sign': 'LLR ≈ +26 on the base’s successes (≈ 228 on RL’s)',
  'training-curves': 'trajectory reward rose while step reward fell',
  'budgetmix-robust': 'robust across budgets',
};

const QUICK: Sizes = {
  train: 20,
  test: 6,
  tokenizerEpisodes: 30,
  bc: { epochs: 4, batchSize: 16, lr: 3e-3 },
  rl: { iters: 2, groups: 2, groupSize: 4 },
  samples: 4,
  states: 6,
  actions: 4,
  continuations: 2,
  resamples: 200,
};

/** The default profile's one world (what `npm start` could afford): a 1-layer model on 24 maps. */
const DEFAULT_LAKE: Sizes = {
  train: 24,
  test: 40,
  tokenizerEpisodes: 100,
  bc: { epochs: 6, batchSize: 16, lr: 3e-3 },
  rl: { iters: 6, groups: 4, groupSize: 8 },
  samples: 8,
  states: 40,
  actions: 8,
  continuations: 4,
  resamples: 1000,
};

export interface LanguageProfile {
  name: LanguageProfileName;
  worlds: LanguageWorldId[];
  seeds: number[];
  /** A world's model and sizes in this profile (the quick profile shrinks the model too). */
  sizes: Record<LanguageWorldId, Sizes>;
  model?: Partial<LanguageWorld['model']>;
  /** Budgets other than the world's, per world (the quick profile's short FrozenLake episodes: an
   * untrained model writes to the end of its budget). */
  budgets?: Partial<Record<LanguageWorldId, Pick<LanguageWorld, 'T' | 'mix'>>>;
  /** The timing model: each world's predicted CPU-seconds on one quiet core (its own stages, one seed's);
   * the study's threads take the most expensive jobs first. */
  timing?: Partial<Record<LanguageWorldId, Timing>>;
}

/** Predicted CPU-seconds of a world's own stages (tokenizer, base) and of one seed's (RL, BudgetMix, τ,
 * measurements). */
export interface Timing {
  world: number;
  seed: number;
}

/** A world as a profile runs it: its model and budgets with the profile's overrides. */
export function worldIn(profile: LanguageProfile, id: LanguageWorldId): LanguageWorld {
  const w = LANGUAGE_WORLDS[id];
  const budgets = profile.budgets?.[id];
  return {
    ...w,
    model: { ...w.model, ...profile.model },
    ...(budgets === undefined
      ? {}
      : { T: budgets.T, mix: budgets.mix, budget: budgets.T[budgets.T.length - 1] }),
  };
}

/**
 * The paper profile's sizes, calibrated to finish in ≤ 90 minutes on 2 quiet cores (the budget)
 * with three seeds in each of the four worlds: the timing model (predictTiming, predictWall) on the unit
 * costs measured below predicts PAPER_PREDICTION's seconds.
 *
 * Until 2026-12-02 (before any run of this profile) they were guesses: RL 8 × 8 × 8 (FrozenLake) and
 * 5–6 × 8 × 8 (tool worlds), 30–60 held-out tasks, 30–60 states, 4 continuations: 7.4 CPU-hours, 3.7
 * hours on 2 cores by the model below (a sql RL episode costs 3.5 CPU-s: every turn's prompt of ≈ 500
 * tokens is read forward and backward). What changed on 2026-12-02, per world (the bases are the
 * guessed ones, kept):
 *   frozenlake-text  RL 8 → 6 iterations of 8 × 8; held-out tasks 60 → 40; states 60 → 40
 *   sql              RL 6 × 8 × 8 → 4 × 2 × 8; held-out tasks 40 → 16; states 40 → 16; continuations 4 → 2
 *   tools            RL 5 × 8 × 8 → 4 × 2 × 8; held-out tasks 30 → 16; states 30 → 16; actions 8 → 4; continuations 4 → 2
 *   code             RL 5 × 8 × 8 → 4 × 2 × 8; held-out tasks 30 → 20; states 30 → 16; continuations 4 → 2
 * Those sizes ran to the end on 2026-12-03 in 106 minutes (the 2026-12-02 unit costs had predicted 78).
 * With the unit costs re-measured from that run, what changed on 2026-12-03 (the bases and the τ
 * control kept: they are 30% of the work, and what every finding stands on):
 *   frozenlake-text  RL 6 → 5 iterations; held-out tasks 40 → 28; states 40 → 28; continuations 4 → 3
 *   sql              RL 4 → 3 iterations; held-out tasks 16 → 10; states 16 → 12; actions 8 → 6
 *   tools            RL 4 → 3 iterations; held-out tasks 16 → 10; states 16 → 12
 *   code             RL 4 → 3 iterations; held-out tasks 20 → 8; states 16 → 8; actions 8 → 6
 * Those sizes ran to the end on 2026-12-03 in 70 minutes (the model: 80.9). Then, as the protocol
 * has it, each policy draws 16 actions at a state in every world (they drew 8, 6, 4 and 6: step quality
 * is the cheapest measurement, 2–5% of a seed): the model predicts 84.8 minutes; they ran on 2026-12-03 in 74.
 */
const PAPER_SIZES: Record<LanguageWorldId, Sizes> = {
  'frozenlake-text': {
    train: 200,
    test: 28,
    tokenizerEpisodes: 200,
    bc: { epochs: 2, batchSize: 16, lr: 3e-3 },
    rl: { iters: 5, groups: 8, groupSize: 8 },
    samples: 8,
    states: 28,
    actions: 16,
    continuations: 3,
    resamples: 1000,
  },
  sql: {
    train: 300,
    test: 10,
    tokenizerEpisodes: 200,
    bc: { epochs: 6, batchSize: 8, lr: 2e-3 },
    rl: { iters: 3, groups: 2, groupSize: 8 },
    samples: 8,
    states: 12,
    actions: 16,
    continuations: 2,
    resamples: 1000,
  },
  tools: {
    train: 200,
    test: 10,
    tokenizerEpisodes: 200,
    bc: { epochs: 4, batchSize: 8, lr: 2e-3 },
    rl: { iters: 3, groups: 2, groupSize: 8 },
    samples: 8,
    states: 12,
    actions: 16,
    continuations: 2,
    resamples: 1000,
  },
  code: {
    train: 200,
    test: 8,
    tokenizerEpisodes: 200,
    bc: { epochs: 4, batchSize: 8, lr: 2e-3 },
    rl: { iters: 3, groups: 2, groupSize: 8 },
    samples: 8,
    states: 8,
    actions: 16,
    continuations: 2,
    resamples: 1000,
  },
};

/** CPU-seconds per unit of work of a world's stages, on one core of the project's machine. */
export interface UnitCosts {
  /** Per tokenizer episode (the expert's transcripts and the merges). */
  tokenizer: number;
  /** Per training task: its demonstration rolled out and rendered, before the epochs. */
  demo: number;
  /** Per training task and BC epoch. */
  epoch: number;
  /** Per RL episode: its rollout at T_train and its share of the update. */
  rlEpisode: number;
  /** Per episode played without an update at T_max (RL's final evaluation, Pass@(K,T)). */
  episode: number;
  /** Per BudgetMix episode (its budgets drawn from the mix). */
  mixEpisode: number;
  /** Per episode of the τ control (the base at each τ of its grid, on training tasks). */
  tauEpisode: number;
  /** Per action drawn at a state and stepped (step quality at normal, error and pre-error states). */
  draw: number;
  /** Per continuation from an error or a pre-error state. */
  continuation: number;
  /** Per trajectory the likelihood scores (its turns under both policies). */
  scored: number;
}

/** The timing model: a world's CPU-seconds from its sizes and unit costs, stage by stage as run.ts runs
 * them (RL and BudgetMix with their final evaluations, three temperatures of the τ control on at most 32 training tasks × 2, four
 * policies' Pass@(K,T), draws at three sets of states by two policies, continuations by two policies
 * from two sets of states, likelihood over two pools). */
export function predictTiming(sizes: Sizes, c: UnitCosts, temperatures = 3): Timing {
  const episodes = sizes.rl.iters * sizes.rl.groups * sizes.rl.groupSize;
  const rl = episodes * (c.rlEpisode + c.mixEpisode) + 2 * sizes.test * c.episode;
  const tau = temperatures * Math.min(32, sizes.train) * 2 * c.tauEpisode;
  const pass = 4 * sizes.test * sizes.samples * c.episode;
  const draws = 3 * 2 * sizes.states * sizes.actions * c.draw;
  const continuations = 2 * 2 * sizes.states * sizes.continuations * c.continuation;
  const scored = 2 * sizes.test * sizes.samples * c.scored;
  return {
    world: sizes.tokenizerEpisodes * c.tokenizer + sizes.train * (c.demo + sizes.bc.epochs * c.epoch),
    seed: rl + tau + pass + draws + continuations + scored,
  };
}

/**
 * Wall seconds of a plan on `threads` cores, as study.ts schedules it: every world's own stages first
 * (the most expensive first), then the seeds of ready worlds (the most expensive first), each job on the
 * first free thread; one job per core, so a job takes its CPU-seconds.
 */
export function predictWall(
  timing: Partial<Record<LanguageWorldId, Timing>>,
  worlds: readonly LanguageWorldId[],
  seeds: readonly number[],
  threads: number,
): number {
  const cost = (w: LanguageWorldId) => timing[w] ?? { world: 0, seed: 0 };
  const worldJobs = [...worlds].sort((a, b) => cost(b).world - cost(a).world);
  const seedJobs = worlds.flatMap((w) => seeds.map(() => w)).sort((a, b) => cost(b).seed - cost(a).seed);
  const free = new Array<number>(Math.max(1, threads)).fill(0);
  const readyAt = new Map<LanguageWorldId, number>();
  const take = () => free.indexOf(Math.min(...free));
  for (const w of worldJobs) {
    const t = take();
    free[t] += cost(w).world;
    readyAt.set(w, free[t]);
  }
  while (seedJobs.length > 0) {
    const t = take();
    // The next seed whose world is ready when this thread frees; else the thread waits for the first.
    let i = seedJobs.findIndex((w) => (readyAt.get(w) ?? 0) <= free[t]);
    if (i < 0) {
      const first = Math.min(...seedJobs.map((w) => readyAt.get(w) ?? 0));
      free[t] = first;
      i = seedJobs.findIndex((w) => (readyAt.get(w) ?? 0) <= first);
    }
    const [w] = seedJobs.splice(i, 1);
    free[t] += cost(w).seed;
  }
  return Math.max(...free);
}

/**
 * Each world's unit costs, CPU-seconds on one core of the project's 2-core machine, re-measured on
 * 2026-12-03 from the paper profile's first full run (106 minutes, at the sizes before those above):
 * each stage's seconds as its progress lines on stderr timed them, one job a thread and two at once,
 * the mean over the world's three seeds, divided by the stage's units (a Pass@(K,T) episode's cost is
 * also the cost of RL's and BudgetMix's final evaluations; `demo` kept from 2026-12-02, the base's time
 * charged to its epochs). On 2026-12-02 they had been measured on a short run beside other jobs; the
 * full run took 1.0-1.8 times those: FrozenLake's and code's episodes are longer at the paper's sizes
 * than the short run's, and a trained-longer policy scores more turns (docs/budget-study.md lists each
 * stage).
 */
export const UNIT_COSTS: Record<LanguageWorldId, UnitCosts> = {
  'frozenlake-text': {
    tokenizer: 0.003,
    demo: 0.04,
    epoch: 0.894,
    rlEpisode: 0.754,
    episode: 0.256,
    mixEpisode: 0.574,
    tauEpisode: 0.252,
    draw: 0.0111,
    continuation: 0.104,
    scored: 0.338,
  },
  sql: {
    tokenizer: 0.008,
    demo: 0.003,
    epoch: 0.339,
    rlEpisode: 3.06,
    episode: 0.473,
    mixEpisode: 1.54,
    tauEpisode: 0.318,
    draw: 0.0447,
    continuation: 0.284,
    scored: 0.0387,
  },
  tools: {
    tokenizer: 0.0045,
    demo: 0.005,
    epoch: 0.73,
    rlEpisode: 1.42,
    episode: 0.569,
    mixEpisode: 1.27,
    tauEpisode: 0.47,
    draw: 0.072,
    continuation: 0.244,
    scored: 0.0401,
  },
  code: {
    tokenizer: 0.015,
    demo: 0.025,
    epoch: 0.314,
    rlEpisode: 3.26,
    episode: 0.704,
    mixEpisode: 2.52,
    tauEpisode: 0.634,
    draw: 0.0987,
    continuation: 0.385,
    scored: 0.00927,
  },
};

const PAPER_TIMING = Object.fromEntries(
  LANGUAGE_WORLD_IDS.map((id) => [id, predictTiming(PAPER_SIZES[id], UNIT_COSTS[id])]),
) as Record<LanguageWorldId, Timing>;

export const LANGUAGE_PROFILE: Record<LanguageProfileName, LanguageProfile> = {
  quick: {
    name: 'quick',
    worlds: ['frozenlake-text'],
    seeds: [0],
    sizes: { 'frozenlake-text': QUICK, sql: QUICK, tools: QUICK, code: QUICK },
    model: { layers: 1, d: 32, heads: 2 },
    // FrozenLake's budget 100 cut to 20; the tool worlds keep theirs (10, 10, 6): until 2026-12-02 the
    // quick profile gave every world T = 5, 10, 20 — longer than the tool worlds' own episodes.
    budgets: { 'frozenlake-text': { T: [5, 10, 20], mix: [5, 10, 20] } },
  },
  default: {
    name: 'default',
    worlds: ['frozenlake-text'],
    seeds: [0],
    sizes: { ...PAPER_SIZES, 'frozenlake-text': DEFAULT_LAKE },
    model: { layers: 1, d: 32, heads: 2 },
  },
  paper: {
    name: 'paper',
    worlds: [...LANGUAGE_WORLD_IDS],
    seeds: [0, 1, 2],
    sizes: PAPER_SIZES,
    timing: PAPER_TIMING,
  },
};

/** The paper profile's predicted wall seconds on 2 quiet cores (its four worlds, three seeds). */
export const PAPER_PREDICTION = predictWall(PAPER_TIMING, LANGUAGE_WORLD_IDS, [0, 1, 2], 2);

/** Held-out task seeds start here (training seeds start at 0), as in `turnwise train`. */
export const TEST_SEED = 1_000_000;

/**
 * Each world's design and predictions, written on 2026-12-02 before the first full run of any language
 * world (only the quick profile's plumbing runs had been made), reported verbatim beside the results.
 */
export const PRE_REGISTRATION: Record<
  LanguageWorldId,
  { written: string; design: string; predictions: Record<FindingId, string> }
> = {
  'frozenlake-text': {
    written: '2026-12-02',
    design:
      'A 2-layer transformer (d 48) reads the board as text and writes <answer>Move</answer>; the base is cloned on a near-greedy expert (softmax over Q* at τ 0.05) and reads the board imperfectly (issue 22: about a third of the optimum). RL and BudgetMix are short token-level GRPO runs from it. The prompt holds the current board only (ctx 192), so the policy is Markov, as the table and MLP policies of the FrozenLake worlds are; step quality and error states are exact (Q*).',
    predictions: {
      'rl-beats-base': 'held: issue 22’s RL gained +0.08 over its clone at T=100.',
      'lead-shrinks':
        'held: at T=10 every policy’s success is a few percent (the optimum 0.04), so the absolute lead is smaller.',
      'lead-reverses': 'not held: nothing makes the base better at tight budgets.',
      'normal-states':
        'not held: RL’s gain is reading the board better, which shows at ordinary states (win ≥ ½).',
      'error-contrast':
        'not held: on slippery ice ordinary play already visits the states an error leads to (as in the `slippery` world).',
      'recovery-did': 'not held, for the same reason.',
      'nll-plausible': 'held: a few iterations with a KL term keep RL’s actions plausible to the base.',
      'llr-sign': 'held: RL up-weights what the base did when it succeeded.',
      'training-curves': 'not held: with an exact step signal, step quality rises with the reward.',
      'budgetmix-robust':
        'not held: at T=10 success is too rare for BudgetMix’s lead over RL to have an interval above 0.',
    },
  },
  sql: {
    written: '2026-12-02',
    design:
      'A 2-layer transformer (d 64, ctx 1024) writes Hermes tool calls; the base is cloned on the scripted expert with 10% detours and copies values and columns into its queries imperfectly (issue 22: about 0.2 success). Step quality by the env’s per-turn IoU proxy; errors forced as detours from the gold path.',
    predictions: {
      'rl-beats-base': 'not held: issue 22’s RL gained +0.02 with an interval across 0.',
      'lead-shrinks': 'undecided: RL has no lead at T_train to shrink.',
      'lead-reverses': 'undecided, for the same reason.',
      'normal-states': 'not held: most pairs tie (both write the same call).',
      'error-contrast': 'not held: the model was cloned on transcripts with detours, so it has seen errors.',
      'recovery-did': 'not held.',
      'nll-plausible': 'held.',
      'llr-sign': 'held if the base succeeds often enough to measure, else undecided.',
      'training-curves': 'not held: few RL iterations move neither curve beyond noise.',
      'budgetmix-robust': 'not held.',
    },
  },
  tools: {
    written: '2026-12-02',
    design:
      'A 2-layer transformer (d 64, ctx 1536) writes Hermes tool calls over the tools’ JSON declarations; the base is cloned on the scripted expert with 10% detours. The prompts are long (≈ 1 500 tokens a turn with the declarations), so the model sees few transcripts: we expect a weak base.',
    predictions: {
      'rl-beats-base':
        'undecided or not held: a base this weak rarely succeeds, and a few RL iterations cannot lift it.',
      'lead-shrinks': 'undecided: no lead.',
      'lead-reverses': 'undecided: no lead.',
      'normal-states': 'not held: ties dominate.',
      'error-contrast': 'not held.',
      'recovery-did': 'not held or undecided.',
      'nll-plausible': 'held.',
      'llr-sign': 'undecided: too few base successes.',
      'training-curves': 'not held.',
      'budgetmix-robust': 'undecided or not held.',
    },
  },
  code: {
    written: '2026-12-02',
    design:
      'A 2-layer transformer (d 64, ctx 1024) writes run_tests/submit calls with a program in them; the base is cloned on the scripted expert, which submits the reference program (10% detours: wrong programs). A model of this size can copy a program it has seen for a family it recognises, not write a new one: we expect success only where it memorised the family’s reference.',
    predictions: {
      'rl-beats-base': 'not held.',
      'lead-shrinks': 'undecided: no lead.',
      'lead-reverses': 'undecided: no lead.',
      'normal-states': 'not held.',
      'error-contrast': 'not held.',
      'recovery-did': 'not held or undecided.',
      'nll-plausible': 'held.',
      'llr-sign': 'undecided: too few base successes.',
      'training-curves': 'not held: the paper’s divergence needs an RL run long enough to move either curve.',
      'budgetmix-robust': 'undecided or not held.',
    },
  },
};
