// The sections of the training config (train/config.ts composes them): the policy, the budget, credit
// and each part of training that has parameters of its own. Each field is declared once, here: its type
// and range, its description, its default (or its defaults by policy kind or by algo) and, where there is
// one, its command-line flag. A section's own default is the parse of nothing (`.prefault({})`), so its
// fields' defaults are written only on the fields.
import { z } from 'zod';
import {
  CREDIT_PARAM_NAMES,
  CREDIT_PARAMS,
  type CreditParam,
  METHOD_NAMES,
  type MethodName,
  methodDefaults,
  SPEC_PARAMS,
} from '../credit/index.ts';
import { ACTIVATIONS } from '../nn/layers.ts';

export const int = (min: number, max?: number) =>
  max === undefined ? z.number().int().min(min) : z.number().int().min(min).max(max);
const unit = z.number().min(0).max(1);
export const seedRange = z
  .tuple([int(0), int(0)])
  .refine(([a, b]) => b > a, 'expected [first, end) with end > first');

/** The turn budget of training episodes when none is given. */
export const DEFAULT_BUDGET = { kind: 'fixed', budget: 100 } as const;

export const BudgetSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed'), budget: int(1) }).strict(),
  z
    .object({
      kind: z.literal('mix'),
      budgets: z.array(int(1)).min(1),
      weights: z.array(z.number().min(0)).optional(),
    })
    .strict(),
  z.object({ kind: z.literal('grow'), start: int(1), step: int(0), every: int(1), max: int(1) }).strict(),
]);

export const PolicySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('tabular') }).strict(),
  z
    .object({
      kind: z.literal('mlp'),
      hidden: z.array(int(1, 4096)).default([64, 64]).describe('widths of the hidden layers'),
      activation: z.enum(ACTIVATIONS).default('relu'),
      budgetAware: z
        .boolean()
        .default(false)
        .describe('the network also sees the turns left (then the budget is revealed to it)'),
    })
    .strict(),
  z
    .object({ kind: z.literal('checkpoint'), path: z.string().min(1) })
    .strict()
    .describe('continue from a saved policy (a behaviour-cloned base, an earlier run)'),
]);

export const POLICY_KIND = 'policy kind';
/** Defaults that depend on the policy kind (see resolveConfig): `tabular`, `transformer` (a saved
 * transformer policy), and `neural` for the rest. */
export const byPolicy = (tabular: unknown, neural: unknown, transformer: unknown) => ({
  defaults: { by: POLICY_KIND, values: { tabular, neural, transformer } },
});

/** The credit method of each gradient algo when the config names none (algo es has no credit). */
const CREDIT_BY_ALGO = { grpo: 'grpo', ppo: 'gae', rtpo: 'rtpo' } as const satisfies Record<
  string,
  MethodName
>;

/** The credit method a config uses: its own, or grpo (algo grpo) / gae with the critic (algo ppo) /
 * rtpo (algo rtpo). */
export function creditMethod(c: { algo: string; credit: { method?: MethodName } }): MethodName {
  if (c.credit.method !== undefined) return c.credit.method;
  return c.algo === 'ppo'
    ? CREDIT_BY_ALGO.ppo
    : c.algo === 'rtpo'
      ? CREDIT_BY_ALGO.rtpo
      : CREDIT_BY_ALGO.grpo;
}

/** The credit parameters as declared by the methods (credit/params.ts), each optional here: unset, a
 * method uses its own default. */
function creditFields<const F extends Partial<Record<CreditParam, string>>>(flags: F) {
  const out = {} as { [K in CreditParam]: z.ZodOptional<(typeof CREDIT_PARAMS)[K]> };
  for (const k of CREDIT_PARAM_NAMES) {
    // The defaults are the methods' own, shown in help; unset, each method applies its own.
    const defaults = { by: 'method', values: methodDefaults(k) };
    const meta = { defaults, ...(flags[k] === undefined ? {} : { flag: flags[k] }) };
    (out as Record<string, z.ZodType>)[k] = CREDIT_PARAMS[k].optional().meta(meta);
  }
  return out;
}

export const CreditSchema = z
  .object({
    method: z
      .enum(METHOD_NAMES as [MethodName, ...MethodName[]])
      .optional()
      .meta({
        flag: '--credit <method>',
        description: 'credit method (gae: advantages from the critic)',
        defaults: { by: 'algo', values: CREDIT_BY_ALGO },
      }),
    ...creditFields({ gamma: '--gamma <γ>', lambda: '--lambda <λ>' }),
    taskNorm: SPEC_PARAMS['task-norm'].optional(),
  })
  .strict()
  .describe("credit assignment: the method and its parameters (unset: the method's own defaults)")
  .prefault({});

export const DynamicSamplingSchema = z
  .object({
    enabled: z.boolean().default(false).meta({
      flag: '--dynamic-sampling',
      description:
        'DAPO dynamic sampling: drop groups whose outcomes are all equal and refill with fresh tasks',
    }),
    maxRounds: int(0).default(3).describe('refill rounds per iteration at most'),
  })
  .strict()
  .describe('DAPO dynamic sampling (Yu et al. 2025, §3.2)')
  .prefault({});

export const OptimSchema = z
  .object({
    lr: z
      .number()
      .gt(0)
      .optional()
      .meta({ flag: '--lr <lr>', description: "Adam's step size", ...byPolicy(0.1, 3e-3, 3e-4) }),
    anneal: z
      .boolean()
      .optional()
      .meta({
        description: "decay lr linearly to 0 over the run (CleanRL's anneal_lr)",
        ...byPolicy(false, true, false),
      }),
    maxGradNorm: z.number().gt(0).default(1).describe('clip the global gradient norm to this'),
    weightDecay: z.number().min(0).default(0).describe("Adam's decoupled weight decay"),
  })
  .strict()
  .describe('the optimizer of the policy (Adam)')
  .prefault({});

export const PpoSchema = z
  .object({
    epochs: int(1, 1000)
      .optional()
      .meta({
        flag: '--epochs <n>',
        description: 'passes over each batch (PPO epochs)',
        ...byPolicy(2, 4, 1),
      }),
    minibatches: int(1, 100_000)
      .optional()
      .meta({ flag: '--minibatches <n>', description: 'minibatches per epoch', ...byPolicy(2, 4, 2) }),
    clipLow: unit.default(0.2).meta({
      flag: '--clip-low <ε>',
      description: 'ε_low of the ratio clip (0.2/0.28 with clipHigh is DAPO clip-higher; 0.2/0.2 is PPO)',
    }),
    clipHigh: z
      .number()
      .min(0)
      .default(0.28)
      .meta({ flag: '--clip-high <ε>', description: 'ε_high of the ratio clip (DAPO clip-higher)' }),
    klCoef: z.number().min(0).default(0).meta({
      flag: '--kl <β>',
      description: 'β of the k3 KL to the initial policy (0: none, the DAPO/Dr. GRPO default)',
    }),
    dualClip: z
      .number()
      .min(0)
      .default(3)
      .describe("dual-clip c for negative advantages (verl's clip_ratio_c); 0 turns it off"),
    // An MLP collapses to one action everywhere without it: the map features are shared by all states.
    entCoef: z
      .number()
      .min(0)
      .optional()
      .meta({
        flag: '--entropy <c>',
        description: 'entropy bonus, decayed linearly to 0 over the run',
        ...byPolicy(0, 0.05, 0),
      }),
    aggregation: z
      .enum(['turn-mean', 'sequence-mean', 'constant-sum'])
      .default('turn-mean')
      .meta({ flag: '--aggregation <mode>', description: 'how per-turn losses are averaged' }),
    aggregationConstant: z
      .number()
      .gt(0)
      .optional()
      .describe(
        'the constant of constant-sum aggregation (Dr. GRPO); default: groups × groupSize × max budget',
      ),
  })
  .strict()
  .describe('the clipped policy-gradient loss and its passes over each batch')
  .prefault({});

export const CriticSchema = z
  .object({
    hidden: z.array(int(1)).default([64]).describe('hidden widths of the value network (algo ppo)'),
    lr: z.number().gt(0).default(3e-3).describe("the critic's Adam step size"),
    epochs: int(1).default(4).describe('critic passes over each batch'),
    minibatches: int(1).default(2).describe('critic minibatches per pass'),
  })
  .strict()
  .describe('the value network of algo ppo (GAE)')
  .prefault({});

export const EsSchema = z
  .object({
    pairs: int(1, 100_000).default(16).meta({
      flag: '--es-pairs <n>',
      description: 'ES: antithetic pairs per iteration (2N evaluations)',
    }),
    sigma: z.number().gt(0).default(0.5).meta({ flag: '--es-sigma <σ>', description: 'ES noise scale σ' }),
    lr: z.number().gt(0).default(0.5).meta({ flag: '--es-lr <α>', description: 'ES step size α' }),
    shaping: z.enum(['zscore', 'rank']).default('rank').describe('ES fitness shaping'),
    episodes: int(1)
      .optional()
      .describe('ES: episodes per fitness evaluation (groups × groupSize when absent)'),
    workers: int(1, 256)
      .optional()
      .meta({ flag: '--workers <n>', description: "ES worker threads (default: the machine's cores)" }),
  })
  .strict()
  .describe('evolution strategies (algo es)')
  .prefault({});

export const GuidanceSchema = z
  .object({
    mode: z.enum(['none', 'gaussian', 'bread']).default('none').meta({
      flag: '--guidance <mode>',
      description:
        'expert-prefix guidance: gaussian = every task gets a prefix L ~ N(μ_task, σ²); bread = only all-failure groups are replayed with one',
    }),
    expert: z.string().optional().meta({
      flag: '--expert <spec>',
      description:
        'guidance expert: a policy spec or a demonstrations .jsonl (default: the oracle, budget-blind at the largest budget)',
    }),
    maxPrefix: int(0, 1_000_000)
      .default(10)
      .meta({ flag: '--max-prefix <n>', description: 'longest expert prefix in turns' }),
    sigma: z.number().min(0).default(2).describe('σ of the gaussian prefix length'),
    prior: unit.default(0.5).describe("prior success rate of a task's prefix-length estimate"),
    strength: z.number().gt(0).default(4).describe('weight (pseudo-counts) of that prior'),
  })
  .strict()
  .describe('expert-prefix guidance')
  .prefault({});

export const CrossPolicySchema = z
  .object({
    q: unit.default(0).meta({
      flag: '--cross-policy <q>',
      description: 'cross-policy sampling: probability that a stale snapshot acts',
    }),
    refreshEvery: int(1).default(10).describe('refresh the stale snapshot every N iterations'),
  })
  .strict()
  .describe('cross-policy sampling: a stale snapshot acts with probability q')
  .prefault({});

export const EvalSchema = z
  .object({
    episodes: int(1, 100_000_000).default(2000).meta({
      flag: '--eval-episodes <n>',
      description: 'fresh evaluation episodes at the end (over the held-out tasks)',
    }),
    budget: int(1, 1_000_000).optional().meta({
      flag: '--eval-budget <T>',
      description: 'final evaluation budget (default: the largest training budget)',
    }),
  })
  .strict()
  .describe('the final evaluation on the held-out tasks')
  .prefault({});
