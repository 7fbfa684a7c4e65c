// The string-settable parameters of the credit methods, declared once: each parameter's type, range and
// meaning (CREDIT_PARAMS), and per method the parameters it reads with that method's default
// (METHOD_PARAMS; the defaults are the estimators' own *_DEFAULTS constants, so the formula's file stays
// the one place a default is written). Method specs (`gigpo:std=false`), the credit command's flags and
// the training config's `credit` fields are all checked against these.
import { z } from 'zod';
import { defaultOf } from '../core/params.ts';
import { CLUE_DEFAULTS } from './clue.ts';
import { DISCOUNTED_DEFAULTS } from './discounted.ts';
import { GAE_DEFAULTS } from './gae.ts';
import { GIGPO_DEFAULTS } from './gigpo.ts';
import { GRPO_DEFAULTS } from './grpo.ts';
import { REVERSE_TURN_DEFAULTS } from './reverse-turn.ts';
import { RTPO_DEFAULTS } from './rtpo.ts';
import { TURN_LEVEL_DEFAULTS } from './turn-level.ts';

/** Every numeric/boolean parameter a method may read, with the widest range any method accepts. */
export const CREDIT_PARAMS = {
  gamma: z.number().min(0).max(1).describe('discount γ of the returns'),
  lambda: z
    .number()
    .min(0)
    .describe(
      'gae: λ in [0, 1] (0 = one-step TD, 1 = Monte Carlo); turn-level: weight of the turn reward; clue: weight of the clue term',
    ),
  omega: z.number().min(0).describe('gigpo: weight ω of the step-level advantage'),
  std: z.boolean().describe('divide by the group std (+ε); false: mean-centred only'),
  eps: z.number().min(0).describe('ε added to the std before dividing'),
  crest: z
    .boolean()
    .describe('turn-level (CrEST): the outcome sets the sign, the turn reward only the magnitude'),
  penalty: z.number().min(0).describe('clue: the cost of a turn that acquired no new clue, in clues'),
  cbar: z
    .number()
    .gt(0)
    .describe("rtpo: c̄, the truncation of each later turn's ratio π_θ/μ in the backward pass"),
} as const;

export type CreditParam = keyof typeof CREDIT_PARAMS;
export const CREDIT_PARAM_NAMES = Object.keys(CREDIT_PARAMS) as CreditParam[];

const p = CREDIT_PARAMS;

/** Per method: the parameters it reads, each with its default (and a narrower range where it has one). */
export const METHOD_PARAMS = {
  outcome: z.object({}).strict(),
  discounted: z.object({ gamma: p.gamma.default(DISCOUNTED_DEFAULTS.gamma) }).strict(),
  gae: z
    .object({
      gamma: p.gamma.default(GAE_DEFAULTS.gamma),
      lambda: p.lambda.max(1).default(GAE_DEFAULTS.lambda),
    })
    .strict(),
  grpo: z.object({ eps: p.eps.default(GRPO_DEFAULTS.eps), std: p.std.default(GRPO_DEFAULTS.std) }).strict(),
  drgrpo: z.object({}).strict(),
  rloo: z.object({}).strict(),
  gigpo: z
    .object({
      gamma: p.gamma.default(GIGPO_DEFAULTS.gamma),
      omega: p.omega.default(GIGPO_DEFAULTS.omega),
      std: p.std.default(GIGPO_DEFAULTS.std),
      eps: p.eps.default(GIGPO_DEFAULTS.eps),
    })
    .strict(),
  'turn-level': z
    .object({
      lambda: p.lambda.default(TURN_LEVEL_DEFAULTS.lambda),
      std: p.std.default(TURN_LEVEL_DEFAULTS.std),
      eps: p.eps.default(TURN_LEVEL_DEFAULTS.eps),
      crest: p.crest.default(TURN_LEVEL_DEFAULTS.crest),
    })
    .strict(),
  'reverse-turn': z
    .object({
      gamma: p.gamma.default(REVERSE_TURN_DEFAULTS.gamma),
      std: p.std.default(REVERSE_TURN_DEFAULTS.std),
      eps: p.eps.default(REVERSE_TURN_DEFAULTS.eps),
    })
    .strict(),
  clue: z
    .object({
      lambda: p.lambda.default(CLUE_DEFAULTS.lambda),
      penalty: p.penalty.default(CLUE_DEFAULTS.penalty),
      std: p.std.default(CLUE_DEFAULTS.std),
      eps: p.eps.default(CLUE_DEFAULTS.eps),
    })
    .strict(),
  rtpo: z
    .object({
      gamma: p.gamma.default(RTPO_DEFAULTS.gamma),
      cbar: p.cbar.default(RTPO_DEFAULTS.cbar),
      std: p.std.default(RTPO_DEFAULTS.std),
      eps: p.eps.default(RTPO_DEFAULTS.eps),
    })
    .strict(),
} as const;

/** A parameter's default in each method that reads it: `{ gae: 0.99, gigpo: 0.95, … }`. */
export function methodDefaults(param: CreditParam): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [m, schema] of Object.entries(METHOD_PARAMS)) {
    const field = (schema.shape as Record<string, z.ZodType>)[param];
    const d = field === undefined ? undefined : defaultOf(field);
    if (d !== undefined) out[m] = d.value;
  }
  return out;
}

/** Where GAE's V(s_t) comes from: `exact` = V^π_{T−t}(s_t) of the acting policy from the env's oracle;
 * `zero` = V ≡ 0 (GAE then reduces to the discounted λ-return). */
export type ValueSource = 'zero' | 'exact';
export const VALUE_SOURCES: readonly ValueSource[] = ['zero', 'exact'];

/** Parameters of a spec that are not estimator options: GAE's value source (resolved by the caller,
 * it may need an oracle) and the per-task re-standardisation every method accepts afterwards. */
export const SPEC_PARAMS = {
  values: z.enum(VALUE_SOURCES as [ValueSource, ...ValueSource[]]).describe('gae: where V(s_t) comes from'),
  'task-norm': z.enum(['env', 'task']).describe('re-standardise the advantages per task afterwards'),
} as const;
