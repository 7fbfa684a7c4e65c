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

const SQL: LanguageWorld = {
  id: 'sql',
  title: 'InterCode-style SQL, level 1: list_tables, describe_table, execute_sql, submit',
  env: { env: 'sql', params: { level: 1 } },
  mode: 'tools',
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
  /** Budgets other than the world's (the quick profile's short episodes: an untrained model writes to
   * the end of its budget). */
  budgets?: Pick<LanguageWorld, 'T' | 'mix'>;
}

/** A world as a profile runs it: its model and budgets with the profile's overrides. */
export function worldIn(profile: LanguageProfile, id: LanguageWorldId): LanguageWorld {
  const w = LANGUAGE_WORLDS[id];
  const budgets = profile.budgets;
  return {
    ...w,
    model: { ...w.model, ...profile.model },
    ...(budgets === undefined
      ? {}
      : { T: budgets.T, mix: budgets.mix, budget: budgets.T[budgets.T.length - 1] }),
  };
}

const PAPER_SIZES: Record<LanguageWorldId, Sizes> = {
  'frozenlake-text': {
    train: 200,
    test: 60,
    tokenizerEpisodes: 200,
    bc: { epochs: 2, batchSize: 16, lr: 3e-3 },
    rl: { iters: 8, groups: 8, groupSize: 8 },
    samples: 8,
    states: 60,
    actions: 8,
    continuations: 4,
    resamples: 1000,
  },
  sql: {
    train: 300,
    test: 40,
    tokenizerEpisodes: 200,
    bc: { epochs: 6, batchSize: 8, lr: 2e-3 },
    rl: { iters: 6, groups: 8, groupSize: 8 },
    samples: 8,
    states: 40,
    actions: 8,
    continuations: 4,
    resamples: 1000,
  },
  tools: {
    train: 200,
    test: 30,
    tokenizerEpisodes: 200,
    bc: { epochs: 4, batchSize: 8, lr: 2e-3 },
    rl: { iters: 5, groups: 8, groupSize: 8 },
    samples: 8,
    states: 30,
    actions: 8,
    continuations: 4,
    resamples: 1000,
  },
  code: {
    train: 200,
    test: 30,
    tokenizerEpisodes: 200,
    bc: { epochs: 4, batchSize: 8, lr: 2e-3 },
    rl: { iters: 5, groups: 8, groupSize: 8 },
    samples: 8,
    states: 30,
    actions: 8,
    continuations: 4,
    resamples: 1000,
  },
};

export const LANGUAGE_PROFILE: Record<LanguageProfileName, LanguageProfile> = {
  quick: {
    name: 'quick',
    worlds: ['frozenlake-text'],
    seeds: [0],
    sizes: { 'frozenlake-text': QUICK, sql: QUICK, tools: QUICK, code: QUICK },
    model: { layers: 1, d: 32, heads: 2 },
    budgets: { T: [5, 10, 20], mix: [5, 10, 20] },
  },
  default: {
    name: 'default',
    worlds: ['frozenlake-text'],
    seeds: [0],
    sizes: { ...PAPER_SIZES, 'frozenlake-text': DEFAULT_LAKE },
    model: { layers: 1, d: 32, heads: 2 },
  },
  paper: { name: 'paper', worlds: [...LANGUAGE_WORLD_IDS], seeds: [0, 1, 2], sizes: PAPER_SIZES },
};

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
