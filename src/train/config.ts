// One config object covers a whole training run (CleanRL's Args, as a zod schema: the TS type is
// inferred from it). Each field is declared once — here for the run as a whole, in
// train/config-sections.ts for the sections — with its type and range, its description, its default
// (or its defaults by policy kind) and, where there is one, its command-line flag: `turnwise train`
// derives its flags, their --help and `--set path=value` from these declarations (cli/params.ts).
// `--config run.json` reads a whole config; flags, then --set, override it; the resolved config is
// saved with the run. Combinations that each field allows alone but that make a run meaningless are
// refused here, before any work.

import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { allowed, getPath, paramsOf, setPath } from '../core/params.ts';
import { fromZod } from '../core/validate.ts';
import { CREDIT_PARAM_NAMES, GROUP_BASELINE_METHODS, METHOD_PARAMS } from '../credit/index.ts';
import { readPolicyCheckpoint } from '../policies/checkpoint-file.ts';
import {
  BudgetSchema,
  byPolicy,
  CreditSchema,
  CriticSchema,
  CrossPolicySchema,
  creditMethod,
  DEFAULT_BUDGET,
  DynamicSamplingSchema,
  EsSchema,
  EvalSchema,
  GuidanceSchema,
  int,
  OptimSchema,
  POLICY_KIND,
  PolicySchema,
  PpoSchema,
  seedRange,
} from './config-sections.ts';
import { InfoGainSchema } from './info-gain.ts';
import { DEFAULT_ALPHA, RehearsalSchema, showRehearsal } from './rehearsal.ts';
import { SHAPING_ENVS, ShapingSchema, showShaping } from './shaping.ts';

export const TrainConfigSchema = z
  .object({
    env: z
      .object({
        env: z.string().describe('environment id (frozenlake)'),
        params: z
          .record(z.string(), z.unknown())
          .default({})
          .describe("the env's parameters (map, slippery, …)"),
      })
      .strict()
      .describe(
        'env id and params, as in trajectory files: {"env":"frozenlake","params":{"map":"4x4","slippery":true}}',
      ),
    trainSeeds: seedRange.default([0, 1_000_000]).meta({
      flag: '--train-seeds <A:B>',
      description:
        'training task seeds [A, B) — random maps: one map per seed; fixed maps: seeds only vary the dynamics',
    }),
    testSeeds: seedRange.default([1_000_000, 1_002_000]).meta({
      flag: '--test-seeds <A:B>',
      description: 'held-out task seeds [A, B) of the final evaluation (disjoint from the training seeds)',
    }),
    policy: PolicySchema.default({ kind: 'tabular' }).meta({
      flag: '--policy <spec>',
      description:
        'the policy trained: tabular | mlp[:hidden=64x64,activation=relu,budgetAware=1] | a checkpoint path',
    }),
    algo: z.enum(['grpo', 'ppo', 'es', 'rtpo']).default('grpo').meta({
      flag: '--algo <algo>',
      description:
        'the algorithm (ppo: GAE advantages with a critic; rtpo: the latest turns updated first, earlier turns credited with the drift-corrected backward return — docs/methods.md §4)',
    }),
    iters: int(1, 10_000_000).default(300).meta({ flag: '--iters <n>', description: 'iterations' }),
    groupSize: int(1, 100_000)
      .default(8)
      .meta({ flag: '--group-size <k>', description: 'G = K: rollouts per task (a GRPO group)' }),
    groups: int(1, 100_000)
      .optional()
      .meta({ flag: '--groups <n>', description: 'tasks (groups) per iteration', ...byPolicy(16, 64, 8) }),
    budget: BudgetSchema.default(DEFAULT_BUDGET).meta({
      description:
        'turn budget of training episodes: {kind:"fixed",budget}, {kind:"mix",budgets} or {kind:"grow",…}',
      flags: {
        '--budget <T>': `turn budget of training episodes (default ${DEFAULT_BUDGET.budget})`,
        '--budget-mix <list>': 'BudgetMix: each episode draws its budget from this list, e.g. 10,20,50,100',
      },
    }),
    revealBudget: z.boolean().optional().meta({
      flag: '--reveal-budget',
      description: 'tell the policy the turns left (default: only a budget-aware policy is told)',
    }),
    shaping: ShapingSchema.optional().meta({
      flag: '--shaping <kind[:c]>',
      description:
        'the learner sees r + F, F a reward shaping (potential | distance | progress | novelty | step-penalty, c default 0.1; docs/shaping.md); stored trajectories, metrics and the final evaluation stay on the true reward (FrozenLake)',
    }),
    infoGain: InfoGainSchema.optional().meta({
      flag: '--info-gain <W>',
      description:
        "the learner sees r + W·g, g the bits of the hidden map's entropy a step took off, over the hidden cells on some shortest path to the goal (FrozenLake under --fog), or the share of the clue chain a step newly acquired (search); docs/methods-measured.md; stored trajectories, metrics and the final evaluation stay on the true reward",
    }),
    rehearsal: RehearsalSchema.optional().meta({
      flag: '--rehearsal <spec>',
      description:
        'world-model rehearsal: ratio=R[,alpha=A][,prior=pooled|uniform] — a model of the map learned from the real steps (counts per (cell, action) with A pseudo-steps of a prior pooled over maps, default 4), and R imagined episodes in it per real one enter the update (FrozenLake without fog); on search and sql ratio=R[,keep=N]: a table of what the tools answered each call, per question (the N met most recently, default 256), the imagined episodes halting at a call never made; docs/methods-measured.md',
    }),
    reward: z
      .string()
      .regex(/^rubric:./, 'expected rubric:FILE.json')
      .optional()
      .meta({
        flag: '--reward <spec>',
        description:
          "rubric:FILE.json: the learner's reward is the rubric's score of each trajectory (checks, judges; docs/rewards.md); stored trajectories, rollout/ metrics and the final evaluation stay on the env's reward",
      }),
    credit: CreditSchema,
    dynamicSampling: DynamicSamplingSchema,
    optim: OptimSchema,
    ppo: PpoSchema,
    critic: CriticSchema,
    es: EsSchema,
    guidance: GuidanceSchema,
    crossPolicy: CrossPolicySchema,
    eval: EvalSchema,
    asyncPipeline: z.boolean().optional().meta({
      flag: '--async-pipeline',
      description:
        "AgentRL's asynchronous pipeline: iteration k+1's rollouts are generated, by the weights before update k, while update k runs — one iteration off-policy, corrected by the recorded log-probs and the clip (docs/methods-measured.md)",
    }),
    checkpointEvery: int(1, 10_000_000).default(25).meta({
      flag: '--checkpoint-every <n>',
      description: 'checkpoint every N iterations (and at the end)',
    }),
    // A 300-iteration tabular run is ~170 MB with turns, ~8 MB without.
    storeTrajectories: z.boolean().default(false).meta({
      flag: '--store-trajectories',
      description: 'keep every turn of every trajectory in the run store (default: one outcome row each)',
    }),
    logEvery: int(1)
      .default(10)
      .describe('a plain progress line every N iterations when stderr is not a TTY'),
    seed: int(0).default(0).meta({ flag: '--seed <n>', description: 'run seed' }),
  })
  .strict()
  .superRefine((c, ctx) => {
    // The credit parameters given must be ones the method reads, in its range (gae: λ ≤ 1).
    if (c.algo === 'es') return;
    const method = creditMethod(c);
    const declared = METHOD_PARAMS[method].shape as Record<string, z.ZodType>;
    for (const k of CREDIT_PARAM_NAMES) {
      const v = c.credit[k];
      if (v === undefined) continue;
      const path = ['credit', k];
      if (!Object.hasOwn(declared, k)) {
        const takes = Object.keys(declared);
        ctx.addIssue({
          code: 'custom',
          path,
          message: `${method} does not read ${k}; it ${takes.length > 0 ? `takes ${takes.join(', ')}` : 'takes no parameters'}`,
        });
      } else if (!declared[k].safeParse(v).success) {
        ctx.addIssue({ code: 'custom', path, message: `${method}: expected ${allowed(declared[k])}` });
      }
    }
  });

type Parsed = z.infer<typeof TrainConfigSchema>;
export type TrainConfigInput = z.input<typeof TrainConfigSchema>;

/** A config with every default filled in: what a run uses and saves. */
export type TrainConfig = Omit<Parsed, 'groups' | 'optim' | 'ppo'> & {
  groups: number;
  optim: Parsed['optim'] & { lr: number; anneal: boolean };
  ppo: Parsed['ppo'] & { epochs: number; minibatches: number; entCoef: number };
};

/**
 * Defaults that depend on the policy kind, declared with their fields (`defaults` in the meta) and
 * chosen on the tasks of the issue:
 *   table  lr 0.1 (each state's logits move on their own), 16 groups, 2 epochs × 2 minibatches, no
 *          entropy bonus, constant lr;
 *   MLP    lr 3e-3 annealed, 64 groups, 4 × 4, entropy bonus 0.05 annealed to 0 — with outcome
 *          credit the gradient is mostly state-independent and Adam turns it into one preferred
 *          action everywhere unless entropy holds the policy open while state-dependent signal accrues
 *          (random 4x4 maps: 84–87% of the optimum on held-out maps over seeds 1–3, ~2¼ min);
 *   transformer (a saved transformer policy, e.g. a behaviour-cloned base)  lr 3e-4 constant, 8
 *          groups, 1 epoch × 2 minibatches, no entropy bonus — it starts from a base that already
 *          writes the actions; the MLP's lr and entropy bonus drive its token distribution towards
 *          uniform within a few iterations (docs/language-agent.md).
 */
export function resolveConfig(c: Parsed): TrainConfig {
  const kind = policyKind(c.policy);
  const out = structuredClone(c) as Record<string, unknown>;
  for (const p of POLICY_DEFAULTS)
    if (getPath(out, p.path) === undefined) setPath(out, p.path, p.defaults[kind]);
  return out as TrainConfig;
}

/** The kind whose defaults a policy gets: a checkpoint is a transformer when its config says llama
 * (a file that cannot be read is reported by the setup, which loads it). */
function policyKind(p: Parsed['policy']): 'tabular' | 'neural' | 'transformer' {
  if (p.kind === 'tabular') return 'tabular';
  if (p.kind !== 'checkpoint') return 'neural';
  try {
    const arch = (readPolicyCheckpoint(p.path)?.checkpoint.config as { arch?: unknown } | undefined)?.arch;
    return arch === 'llama' ? 'transformer' : 'neural';
  } catch {
    return 'neural';
  }
}

/** The fields whose default depends on the policy kind, in declaration order. */
const POLICY_DEFAULTS = paramsOf(TrainConfigSchema).flatMap((p) =>
  p.meta.defaults?.by === POLICY_KIND ? [{ path: p.path, defaults: p.meta.defaults.values }] : [],
);

/**
 * Combinations that each field allows alone but that make a run meaningless — refused naming both
 * fields, before any work: a group method with groups of one (no baseline: nothing is learned, and
 * RLOO divides by G − 1 = 0), ε_high below ε_low (the clip range would shrink the ratio's upside
 * below its downside: DAPO's clip-higher is ε_high ≥ ε_low), more minibatches than trajectories, a
 * shaping on an env whose cells it cannot read (train/shaping.ts: FrozenLake only), clue credit off
 * search (credit/clue.ts reads its clue accounting).
 */
export function checkTrainConfig(c: TrainConfig, field = 'config', given?: Parsed): TrainConfig {
  const name = (k: string) => [field, k].filter((x) => x.length > 0).join('.');
  const method = creditMethod(c);
  if (c.algo !== 'es' && c.groupSize < 2 && GROUP_BASELINE_METHODS.includes(method)) {
    throw new InputError(
      name('groupSize'),
      c.groupSize,
      `credit.method ${method} compares the samples of a task: give groupSize ≥ 2, or credit.method outcome, discounted or gae`,
    );
  }
  if (method === 'clue' && c.env.env !== 'search')
    throw new InputError(
      name('credit.method'),
      method,
      `reads the clue accounting the search env records on every turn; env.env is ${c.env.env}`,
    );
  // algo rtpo recomputes its credit between stages of the update (train/rtpo.ts): only rtpo's own.
  if (c.algo === 'rtpo' && method !== 'rtpo') {
    throw new InputError(
      name('credit.method'),
      method,
      'algo rtpo computes its own credit (the drift-corrected backward pass): drop credit.method or give rtpo',
    );
  }
  if (c.ppo.clipHigh < c.ppo.clipLow) {
    throw new InputError(name('ppo.clipHigh'), c.ppo.clipHigh, `must be ≥ ppo.clipLow (${c.ppo.clipLow})`);
  }
  // Only a minibatch count the user chose: the policy-kind default serves small test batches too —
  // also when a saved config (--resume) writes the default out.
  const batch = c.groups * c.groupSize;
  const kindDefault = POLICY_DEFAULTS.find((p) => p.path === 'ppo.minibatches')?.defaults[
    c.policy.kind === 'tabular' ? 'tabular' : 'neural'
  ];
  const chosen =
    given === undefined || (given.ppo.minibatches !== undefined && given.ppo.minibatches !== kindDefault);
  if (c.algo !== 'es' && chosen && c.ppo.minibatches > batch) {
    throw new InputError(
      name('ppo.minibatches'),
      c.ppo.minibatches,
      `must be ≤ the batch, groups × groupSize = ${c.groups} × ${c.groupSize} = ${batch} trajectories`,
    );
  }
  if (c.shaping !== undefined && !(SHAPING_ENVS as readonly string[]).includes(c.env.env)) {
    throw new InputError(
      name('shaping'),
      showShaping(c.shaping),
      `reads the cell before and after each step of ${SHAPING_ENVS.join(', ')}; env.env is ${c.env.env}`,
    );
  }
  if (c.infoGain !== undefined) {
    const fog = (c.env.params as { fog?: number }).fog;
    const refuse = (why: string): never => {
      throw new InputError(name('infoGain'), c.infoGain, why);
    };
    if (c.env.env !== 'search' && (c.env.env !== 'frozenlake' || fog === undefined || fog < 1))
      refuse(
        'pays for what a step reveals: needs FrozenLake under fog (--fog R, R ≥ 1) or search (clues acquired)',
      );
    if (c.shaping !== undefined || c.reward !== undefined)
      refuse("cannot go with shaping or a rubric reward: each rewrites the learner's reward; give one");
    if (c.algo === 'es') refuse("is the policy-gradient learner's reward; algo es ranks by the env's reward");
  }
  if (c.shaping !== undefined && (c.env.params as { fog?: number }).fog !== undefined)
    throw new InputError(
      name('shaping'),
      showShaping(c.shaping),
      'reads cells, and a fogged observation is (cell, revealed cells): drop --fog, or use --info-gain',
    );
  if (c.rehearsal !== undefined) {
    const refuse = (why: string): never => {
      throw new InputError(name('rehearsal'), showRehearsal(c.rehearsal!), why);
    };
    if (c.env.env === 'search' || c.env.env === 'sql') {
      if (c.rehearsal.alpha !== DEFAULT_ALPHA || c.rehearsal.prior !== 'pooled')
        refuse(
          `on ${c.env.env} the model is a table of the tools' answers: alpha and prior are FrozenLake's (give ratio and keep only)`,
        );
    } else if (c.rehearsal.keep !== undefined && c.env.env === 'frozenlake')
      refuse(
        "keep is the tool envs' (search, sql): FrozenLake's model keeps counts per map (give ratio, alpha, prior)",
      );
    else if (c.env.env !== 'frozenlake' || (c.env.params as { fog?: number }).fog !== undefined)
      refuse(
        "learns FrozenLake's transitions between cells, or the answers of tools that keep no state: needs env frozenlake without fog (a fogged observation is not a cell), search or sql",
      );
    if (c.algo === 'es') refuse('adds imagined episodes to the policy-gradient update; algo es has none');
    if (c.algo === 'rtpo')
      refuse(
        "adds imagined groups whose advantages are computed apart; algo rtpo recomputes the whole batch's credit between its stages: choose algo grpo or ppo",
      );
    if (c.shaping !== undefined || c.infoGain !== undefined || c.reward !== undefined)
      refuse(
        "cannot go with shaping, info-gain or a rubric reward: imagined episodes carry the env's reward only",
      );
  }
  if (c.reward !== undefined) checkReward(c, c.reward, name);
  if (c.asyncPipeline === true) checkAsyncPipeline(c, name);
  checkUnread(c, name);
  return c;
}

/** A rubric reward replaces the learner's reward after collection: what reads the env's reward to
 * decide what is collected, or rewrites the learner's reward too, cannot go with it. */
function checkReward(c: TrainConfig, reward: string, name: (k: string) => string): void {
  const refuse = (why: string): never => {
    throw new InputError(name('reward'), reward, why);
  };
  if (c.algo === 'es')
    refuse("is the policy-gradient learner's reward; algo es ranks its perturbations by the env's reward");
  if (c.shaping !== undefined)
    refuse(`cannot go with shaping ${showShaping(c.shaping)}: both rewrite the learner's reward; give one`);
  if (c.dynamicSampling.enabled)
    refuse(
      "cannot go with dynamicSampling.enabled: dynamic sampling drops groups by the env's outcomes before the rubric scores them",
    );
  if (c.guidance.mode === 'bread')
    refuse(
      'cannot go with guidance.mode bread: BREAD replays the groups the env failed, before the rubric scores them',
    );
}

/** The asynchronous pipeline (train/pipeline.ts) generates the next batch before this one is learnt
 * from: what needs this batch's learning, or its own snapshot of the policy, to choose how the next one
 * is generated cannot go with it. */
function checkAsyncPipeline(c: TrainConfig, name: (k: string) => string): void {
  const refuse = (why: string): never => {
    throw new InputError(name('asyncPipeline'), true, why);
  };
  if (c.algo === 'es')
    refuse('overlaps rollouts with a gradient update; algo es has none: choose algo grpo or ppo');
  if (c.algo === 'rtpo')
    refuse(
      'yields to rollouts between optimizer steps; algo rtpo runs its backward stages in one go: choose algo grpo or ppo',
    );
  if (c.guidance.mode !== 'none')
    refuse(
      `cannot go with guidance.mode ${c.guidance.mode}: the next batch's expert prefixes are drawn from the success log this batch has not yet written`,
    );
  if (c.crossPolicy.q > 0)
    refuse(
      "cannot go with crossPolicy.q > 0: the stale snapshot would act beside the pipeline's, and a turn would no longer be exactly one iteration off-policy",
    );
}

/** A section's values as declared when nothing is given (what a value left alone holds). */
const SECTION_DEFAULTS = {
  es: TrainConfigSchema.shape.es.parse(undefined),
  critic: TrainConfigSchema.shape.critic.parse(undefined),
  guidance: TrainConfigSchema.shape.guidance.parse(undefined),
  ppo: TrainConfigSchema.shape.ppo.parse(undefined),
  crossPolicy: TrainConfigSchema.shape.crossPolicy.parse(undefined),
  dynamicSampling: TrainConfigSchema.shape.dynamicSampling.parse(undefined),
};

/** The first field of `section` set to something other than its declared default (undefined: none).
 * Comparing with the default, not asking whether it was given, keeps a saved config (every default
 * written out) as acceptable on resume as the flags it came from. */
function changed<K extends keyof typeof SECTION_DEFAULTS>(
  c: TrainConfig,
  section: K,
  ignore: readonly string[] = [],
): string | undefined {
  const value = c[section] as Record<string, unknown>;
  const defaults = SECTION_DEFAULTS[section] as Record<string, unknown>;
  return Object.keys({ ...defaults, ...value }).find(
    (k) => !ignore.includes(k) && JSON.stringify(value[k]) !== JSON.stringify(defaults[k]),
  );
}

/**
 * Fields set for a part of training that this config never runs — silently ignored, they would make
 * the user believe a run did what it did not: ES has no credit, shaping, guidance, cross-policy sampling,
 * dynamic sampling or clipped loss; es.* is read by ES only, critic.* by GAE only, guidance.* by a
 * guidance mode, the aggregation constant by constant-sum, crossPolicy.refreshEvery by q > 0,
 * dynamicSampling.maxRounds when it is enabled; and dynamic sampling drops every group of one (its
 * outcomes are always all equal), so it needs groupSize ≥ 2 whatever the credit method.
 */
function checkUnread(c: TrainConfig, name: (k: string) => string): void {
  const unread = (path: string, value: unknown, because: string): never => {
    throw new InputError(name(path), value, because);
  };
  const method = creditMethod(c);
  if (c.algo === 'es') {
    const es = 'is not read by algo es (no gradient, no groups): drop it, or choose algo grpo or ppo';
    const credit = Object.entries(c.credit).find(([, v]) => v !== undefined);
    if (credit !== undefined) unread(`credit.${credit[0]}`, credit[1], es);
    if (c.guidance.mode !== 'none') unread('guidance.mode', c.guidance.mode, es);
    if (c.crossPolicy.q > 0) unread('crossPolicy.q', c.crossPolicy.q, es);
    if (c.dynamicSampling.enabled) unread('dynamicSampling.enabled', true, es);
    if (c.shaping !== undefined) unread('shaping', showShaping(c.shaping), es);
    const ppo = changed(c, 'ppo', ['epochs', 'minibatches', 'entCoef']);
    if (ppo !== undefined) unread(`ppo.${ppo}`, (c.ppo as Record<string, unknown>)[ppo], es);
  } else {
    const es = changed(c, 'es');
    if (es !== undefined)
      unread(`es.${es}`, (c.es as Record<string, unknown>)[es], `is read by algo es only; algo is ${c.algo}`);
  }
  const critic = changed(c, 'critic');
  if (critic !== undefined && (method !== 'gae' || c.algo === 'es')) {
    unread(
      `critic.${critic}`,
      (c.critic as Record<string, unknown>)[critic],
      `is read by the critic of credit.method gae only; ${c.algo === 'es' ? 'algo is es' : `credit.method is ${method}`}`,
    );
  }
  if (c.guidance.mode === 'none') {
    const g = changed(c, 'guidance', ['mode']);
    if (g !== undefined)
      unread(
        `guidance.${g}`,
        (c.guidance as Record<string, unknown>)[g],
        'is read by guidance.mode gaussian or bread only; guidance.mode is none',
      );
  }
  if (c.ppo.aggregationConstant !== undefined && c.ppo.aggregation !== 'constant-sum') {
    unread(
      'ppo.aggregationConstant',
      c.ppo.aggregationConstant,
      `is read by ppo.aggregation constant-sum only; ppo.aggregation is ${c.ppo.aggregation}`,
    );
  }
  if (c.crossPolicy.q === 0 && changed(c, 'crossPolicy', ['q']) !== undefined) {
    unread(
      'crossPolicy.refreshEvery',
      c.crossPolicy.refreshEvery,
      'is read only when crossPolicy.q > 0 (a stale snapshot acts); crossPolicy.q is 0',
    );
  }
  if (!c.dynamicSampling.enabled && changed(c, 'dynamicSampling', ['enabled']) !== undefined) {
    unread(
      'dynamicSampling.maxRounds',
      c.dynamicSampling.maxRounds,
      'is read only when dynamicSampling.enabled is true',
    );
  }
  if (c.dynamicSampling.enabled && c.groupSize < 2) {
    unread(
      'dynamicSampling.enabled',
      true,
      `drops every group whose outcomes are all equal, and a group of groupSize ${c.groupSize} always is: give groupSize ≥ 2`,
    );
  }
}

export function parseTrainConfig(raw: unknown, field = 'config'): TrainConfig {
  const parsed = fromZod(TrainConfigSchema, raw, field);
  return checkTrainConfig(resolveConfig(parsed), field, parsed);
}
