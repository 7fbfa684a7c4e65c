// summary.json of a budget study: one zod schema, the TypeScript types inferred from it. The pipeline
// builds each run's Summary, the study gathers them (study.ts), the report and the terminal summary
// render one, and `turnwise report RUN` re-renders a run from its file after validating it here.
//
// Conventions. Numbers that are not finite (an empty mean, an interval without data) are stored as
// null, so the object in memory is the object read back from JSON. An estimate with an interval is
// `{value, ci95: [lo, hi]}`: 95% percentile bootstrap intervals (over held-out maps, states or
// iterations, as each field says). Pass@(K,T) grids are `{K, T, passKT, ci95}` with rows K and
// columns T, as `turnwise eval` prints them. The figures these are made of are in figures.ts.
import { z } from 'zod';
import { InputError } from '../../core/errors.ts';
import { fromZod } from '../../core/validate.ts';
import { StudyConfigSchema } from './config.ts';
import {
  AcrossSeedsSchema,
  ByKSchema,
  ContrastSchema,
  DidOfMoveSchema,
  DidSchema,
  EstimateSchema,
  FailuresSchema,
  Int,
  IntervalSchema,
  LikelihoodFigureSchema,
  Num,
  PassGridSchema,
  PointSchema,
  perPolicySchema,
  RecoverySideSchema,
  RegretDistributionSchema,
  StepQualitySideSchema,
  TestedSchema,
  TrendSchema,
} from './figures.ts';

/** The findings, in the order the summary lists them. */
export const FINDING_IDS = [
  'rl-beats-base',
  'lead-shrinks',
  'lead-reverses',
  'normal-states',
  'error-contrast',
  'recovery-did',
  'nll-plausible',
  'llr-sign',
  'training-curves',
  'budgetmix-robust',
] as const;

export const FindingSchema = z
  .object({
    id: z.enum(FINDING_IDS),
    /** The world (env variant) the verdict was measured in. */
    world: z.string(),
    claim: z.string(),
    /** The paper's figure, in words. */
    paper: z.string(),
    /** The quantity the verdict tests, with its 95% interval, as stored elsewhere in the summary. */
    ours: EstimateSchema,
    held: z.boolean().nullable(),
    /** Fraction of seeds in which it held (null when it could not be decided in any). */
    heldFraction: Num,
    /** The rule that decides `held` from the stored quantities, in one sentence. */
    test: z.string(),
    /** What is shown beside the tested quantity (secondary figures; they do not decide the verdict). */
    note: z.string(),
    /** Across seeds (the study's findings): the seeds, and the verdict in each, in that order. */
    seeds: z.array(Int).optional(),
    perSeed: z.array(z.boolean().nullable()).optional(),
  })
  .strict();

/** One run of the study: one world, one seed (the `runs` of summary.json). */
export const RunSummarySchema = z
  .object({
    study: z.literal('budget'),
    version: z.literal(2),
    /** The world the study ran in ("slippery": 1/3-slippery FrozenLake random maps). */
    world: z.string(),
    config: StudyConfigSchema,
    env: z.object({ env: z.string(), params: z.record(z.string(), z.unknown()) }).strict(),
    policies: z
      .object({
        expert: z.string(),
        base: z.string(),
        rl: z.string(),
        budgetmix: z.string(),
        gigpo: z.string().optional(),
      })
      .strict(),
    base: z
      .object({
        parameters: Int,
        examples: Int,
        expertTurns: Int,
        expertEpisodeSuccess: Num,
        /** Mean cross-entropy per BC epoch. */
        bcLoss: z.array(Num),
      })
      .strict(),
    /** Mean exact success within each T on the held-out maps, for reference policies (no sampling). */
    reference: z
      .object({ T: z.array(Int), optimal: z.array(Num), expert: z.array(Num), random: z.array(Num) })
      .strict(),
    /** Sampled Pass@(K,T) (prefix mode, `eval.samples` episodes per map and policy). `diff` is RL − base
     * with `diffCi95` paired over the same resampled maps (as `turnwise compare`); `budgetmixDiff` the
     * same for BudgetMix − base. */
    passKT: z
      .object({
        base: PassGridSchema,
        rl: PassGridSchema,
        budgetmix: PassGridSchema,
        gigpo: PassGridSchema.optional(),
        diff: z.array(z.array(Num)),
        diffCi95: z.array(z.array(IntervalSchema)),
        budgetmixDiff: z.array(z.array(Num)),
        budgetmixDiffCi95: z.array(z.array(IntervalSchema)),
        mode: z.string(),
        samples: Int,
        tasks: Int,
      })
      .strict(),
    /** Exact Pass@(K,T) = mean over maps of 1 − (1 − p_map(T))^K with p_map(T) the policy's exact success
     * within T (dynamic programming); intervals over maps, differences paired. */
    exactPassKT: z
      .object({
        base: PassGridSchema,
        rl: PassGridSchema,
        budgetmix: PassGridSchema,
        gigpo: PassGridSchema.optional(),
        /** RL − base, BudgetMix − base, BudgetMix − RL. */
        diff: PassGridSchema,
        budgetmixDiff: PassGridSchema,
        budgetmixVsRl: PassGridSchema,
        /** Per K: [RL − base at the tightest T] − [RL − base at the training budget]; < 0 = the lead shrinks. */
        shrink: z.object({ Ttight: Int, Ttrain: Int, byK: ByKSchema }).strict(),
        /** The paper's slice: K = 8 (or the largest K ≤ 8 of the grid). Per T: RL − base with its
         * p-value, and the headroom-normalised lead (RL − base)/(1 − base) (a ratio of means over maps);
         * `shrink` = lead(T_tight) − lead(T_train) at this K, paired over maps. */
        slice: z
          .object({
            K: Int,
            byT: z.array(z.object({ T: Int, lead: TestedSchema, headroom: EstimateSchema }).strict()),
            shrink: EstimateSchema,
          })
          .strict(),
      })
      .strict(),
    /** The temperature control: the base sharpened, π^{1/τ}, exact Pass@(1,T) per τ (rows) and T;
     * the τ best at the training budget; RL − base at that τ, paired over maps. */
    temperature: z
      .object({
        T: z.array(Int),
        temperatures: z.array(z.number()),
        base: z.array(z.array(Num)),
        bestTemperature: z.number(),
        rlMinusBestBase: z.array(EstimateSchema),
      })
      .strict(),
    stepQuality: z
      .object({
        normal: StepQualitySideSchema,
        error: StepQualitySideSchema,
        /** The same at each error state's own pre-error state (the state where the bad action was forced,
         * with its turns left), in the error states' order. */
        preError: StepQualitySideSchema,
        /** The error contrast Δ = win(error) − win(pre-error), paired state by state; win rates and Δ
         * with intervals that resample maps (all states of a map together). */
        contrast: ContrastSchema,
        /** The same contrast over the error states whose forced move went the intended way, and over those
         * where it slipped (world.ts movedAsIntended); the two add up to `contrast` (pairs, and the means
         * weighted by pairs). Reported beside the findings, not a verdict. */
        contrastByMove: z.object({ intended: ContrastSchema, slipped: ContrastSchema }).strict(),
        /** Share of the normal and of the error states whose (map, observation) the base's, and RL's,
         * diagnostic trajectories visited (for error states: 1 − novelty). */
        occupancy: z
          .object({
            normal: z.object({ base: Num, rl: Num }).strict(),
            error: z.object({ base: Num, rl: Num }).strict(),
          })
          .strict(),
        /** Forcing attempts behind the error states; those with no bad action; those whose bad actions all
         * lose less than `minRelRegret` of the value; those the forced action ended (dropped: nothing to
         * recover from). `regret`: the relative regret (V* − Q*)/V* of the kept states' forced actions;
         * `terminalRegret`: of the dropped terminal ones. */
        errorStates: z
          .object({
            attempts: Int,
            noBadAction: Int,
            belowThreshold: Int,
            terminal: Int,
            minRelRegret: z.number(),
            /** How the forced moves went: of the kept error states (intended + slipped = the error states) and
             * of the dropped terminal attempts (terminalIntended + terminalSlipped = terminal). */
            moves: z
              .object({ intended: Int, slipped: Int, terminalIntended: Int, terminalSlipped: Int })
              .strict(),
            regret: RegretDistributionSchema,
            terminalRegret: RegretDistributionSchema,
          })
          .strict(),
        /** The budget the states come from (the largest T). */
        budget: Int,
      })
      .strict(),
    recovery: z
      .object({
        base: RecoverySideSchema,
        rl: RecoverySideSchema,
        budgetmix: RecoverySideSchema,
        gigpo: RecoverySideSchema.optional(),
        rlMinusBase: RecoverySideSchema,
        budgetmixMinusBase: RecoverySideSchema,
        /** Difference in differences: RL's exact gain V^RL − V^base at each error state, at its pre-error
         * state (one more turn left), and gain(error) − gain(pre-error); intervals resample maps. */
        did: DidSchema,
        /** The same over the error states whose forced move went the intended way, and over those where it
         * slipped (`states` of each); weighted by `states` they add up to `did`. Not a verdict. */
        didByMove: z.object({ intended: DidOfMoveSchema, slipped: DidOfMoveSchema }).strict(),
        states: Int,
        continuations: Int,
      })
      .strict(),
    likelihood: z
      .object({
        /** Mean −log π_base over RL's actions, and −log π_RL over the same actions. */
        nllRlUnderBase: LikelihoodFigureSchema,
        nllRlUnderRl: LikelihoodFigureSchema,
        /** Mean Σ_t [log π_RL − log π_base] over RL's successful trajectories, and over the base's. */
        llrSuccessRl: LikelihoodFigureSchema,
        llrSuccessBase: LikelihoodFigureSchema,
        /** llrSuccessRl − llrSuccessBase, paired over maps. */
        llrGap: EstimateSchema,
        /** Mean −log π_base over the base's own actions (the reference for RL's NLL under the base). */
        nllBaseUnderBase: LikelihoodFigureSchema,
        /** nllRlUnderBase / nllBaseUnderBase, paired over maps. */
        nllRatio: EstimateSchema,
        /** Per turn: Σ LLR / Σ turns over the base's successful trajectories; the mean LLR of each
         * policy's failed trajectories, and successes − failures within each policy (paired over maps). */
        llrPerTurnSuccessBase: EstimateSchema,
        llrFailureBase: LikelihoodFigureSchema,
        llrFailureRl: LikelihoodFigureSchema,
        llrSuccessMinusFailureBase: EstimateSchema,
        llrSuccessMinusFailureRl: EstimateSchema,
        /** ln |A|: the NLL of any action under the uniform policy. */
        uniformNll: z.number(),
        note: z.string(),
      })
      .strict(),
    curves: z
      .object({
        trajectoryReward: perPolicySchema(z.array(PointSchema)).partial({ base: true }),
        stepReward: perPolicySchema(z.array(PointSchema)).partial({ base: true }),
        stepRegret: perPolicySchema(z.array(PointSchema)).partial({ base: true }),
        /** Iterations per window of the trend (a quarter of the run). */
        window: Int,
        trend: z.record(
          z.string(),
          z
            .object({ trajectoryReward: TrendSchema, stepReward: TrendSchema, stepRegret: TrendSchema })
            .strict(),
        ),
      })
      .strict(),
    /** How the sampled episodes at the largest T ended. */
    failures: perPolicySchema(FailuresSchema),
    findings: z.array(FindingSchema),
    /** Wall-clock seconds per stage (machine-dependent; the only numbers that differ between reruns). */
    timings: z.record(z.string(), z.number()),
    seconds: z.number(),
  })
  .strict();

const WorldSchema = z
  .object({
    id: z.string(),
    successRate: z.number(),
    demos: z.enum(['rollouts', 'intended']),
    memory: z.boolean(),
    description: z.string(),
    /** The pre-registered design (the second world): premise, world, a prediction per finding. */
    design: z
      .object({ premise: z.string(), world: z.string(), predictions: z.record(z.string(), z.string()) })
      .strict()
      .optional(),
  })
  .strict();

/** summary.json: every run (world × seed), and the findings across seeds per world. */
export const SummarySchema = z
  .object({
    study: z.literal('budget'),
    version: z.literal(3),
    profile: z.string(),
    seeds: z.array(Int).min(1),
    worlds: z.array(WorldSchema).min(1),
    /** Per world, the ten findings across seeds (each run's own findings are in `runs`). */
    findings: z.array(FindingSchema),
    /** Per world, means over seeds with intervals across seeds. `exact`: Pass@(1,T) per policy; `lead`:
     * exact RL − base at Pass@(1,T). */
    acrossSeeds: z.array(
      z
        .object({
          world: z.string(),
          T: z.array(Int),
          exact: z.record(z.string(), z.array(AcrossSeedsSchema)),
          lead: z.array(AcrossSeedsSchema),
        })
        .strict(),
    ),
    /** world-major, seeds in `seeds` order. */
    runs: z.array(RunSummarySchema).min(1),
    /** Runs at once (worker threads), and wall-clock seconds of the whole study. */
    parallel: Int,
    seconds: z.number(),
  })
  .strict();

export type Summary = z.infer<typeof RunSummarySchema>;
export type StudySummary = z.infer<typeof SummarySchema>;
export type WorldInfo = z.infer<typeof WorldSchema>;
export type StudyFinding = z.infer<typeof FindingSchema>;
export type FindingId = (typeof FINDING_IDS)[number];

/** A summary read from disk: JSON, then the schema; one-line InputError naming the file otherwise. */
export function parseSummary(text: string, file: string): StudySummary {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw InputError.raw(file, `not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (raw !== null && typeof raw === 'object' && (raw as { study?: unknown }).study !== 'budget') {
    const study = (raw as { study?: unknown }).study;
    throw new InputError(
      `${file} study`,
      study,
      'expected "budget" (the only study that writes summary.json)',
    );
  }
  return fromZod(SummarySchema, raw, file);
}
