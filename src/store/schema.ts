// The trajectory JSONL format of docs/architecture.md as a zod schema: what we read back is validated at the edge,
// and `turnwise schema trajectory` publishes it as JSON Schema for harnesses in other languages. The
// schema is the source of truth: the compile-time checks at the end fail the type-check if it and the
// core interfaces (core/types.ts) ever describe different shapes, so no cast joins them.
import { z } from 'zod';
import {
  FAILURE_KINDS,
  type FailureKind,
  type Trajectory,
  type Turn,
  type TurnTrace,
} from '../core/types.ts';

const FailureKindSchema = z.enum(FAILURE_KINDS as [FailureKind, ...FailureKind[]]);

/** A lone UTF-16 surrogate: what a \ud800–\udfff escape with no partner gives (Python's
 * surrogateescape writes invalid UTF-8 bytes so), a string no UTF-8 output can hold. */
export const LONE_SURROGATE = /\p{Cs}/u;

/** A name results are grouped and labelled by (id, env, policy): well-formed Unicode, or two names that
 * print the same would be two rows. */
const Name = z
  .string()
  .refine((s) => !LONE_SURROGATE.test(s), 'not well-formed Unicode: a lone surrogate (\\ud800–\\udfff)');

export const TaskSchema = z.object({
  env: Name.min(1),
  params: z.record(z.string(), z.unknown()),
  seed: z.number().int(),
});

const StepInfoSchema = z
  .object({
    success: z.boolean().optional(),
    failure: FailureKindSchema.optional(),
    valid: z.boolean().optional(),
  })
  .loose();

// JSON has no −∞: a log-prob of an impossible action (token) is written as null.
const LogProb = z
  .number()
  .nullable()
  .transform((x) => x ?? Number.NEGATIVE_INFINITY);

export const TurnTraceSchema = z
  .object({
    text: z.string().optional().describe('the raw text of the action as the model produced it'),
    tokens: z.array(z.number().int().min(0)).optional().describe('token ids of the action (the completion)'),
    logprobs: z.array(LogProb).optional().describe('log-prob of each action token (null for −∞)'),
    topLogprobs: z
      .array(z.array(z.object({ id: z.number().int().min(0), logprob: LogProb }).strict()))
      .optional()
      .describe('per action token, its most probable alternatives (id and log-prob, null for −∞)'),
    model: z.string().optional(),
    modelVersion: z
      .string()
      .optional()
      .describe('a fingerprint or checkpoint hash, where the server gives one'),
    usage: z
      .object({
        prompt: z.number().int().min(0),
        completion: z.number().int().min(0),
        cached: z.number().int().min(0).optional(),
      })
      .strict()
      .optional()
      .describe('token usage of the call'),
    latencyMs: z.number().min(0).optional(),
    finishReason: z.string().optional(),
    retries: z.number().int().min(0).optional(),
    status: z.number().int().min(0).optional(),
    errors: z.array(z.string()).optional(),
    invalid: z.string().optional().describe('why the raw output is not an action (the turn is invalid)'),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.logprobs !== undefined && t.tokens !== undefined && t.logprobs.length !== t.tokens.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['logprobs'],
        message: `has ${t.logprobs.length} entries for ${t.tokens.length} tokens`,
      });
    }
  });

export const TurnSchema = z.object({
  t: z.number().int().min(0),
  observation: z.unknown(),
  action: z.unknown(),
  reward: z.number(),
  logp: LogProb,
  info: StepInfoSchema,
  forced: z.boolean().optional(),
  trace: TurnTraceSchema.optional(),
});

export const OutcomeSchema = z.object({
  success: z.boolean(),
  return: z.number(),
  turns: z.number().int().min(0),
  firstSuccessTurn: z.number().int().min(1).nullable(),
  end: z.enum(['terminated', 'truncated', 'error']),
  failure: FailureKindSchema.nullable(),
  error: z.string().optional(),
});

export const TrajectorySchema = z
  .object({
    id: Name,
    task: TaskSchema,
    policy: Name,
    budget: z.number().int().min(1),
    revealBudget: z.boolean(),
    turns: z.array(TurnSchema),
    outcome: OutcomeSchema,
  })
  .superRefine((t, ctx) => {
    if (t.turns.length !== t.outcome.turns) {
      ctx.addIssue({
        code: 'custom',
        path: ['outcome', 'turns'],
        message: `turns has ${t.turns.length} entries`,
      });
    }
    if (t.turns.length > t.budget) {
      ctx.addIssue({ code: 'custom', path: ['turns'], message: `more turns than the budget ${t.budget}` });
    }
  });

/** One JSONL line as written (logp may be null). */
export type TrajectoryJson = z.input<typeof TrajectorySchema>;

// Compile-time proof that schema and interfaces agree (each direction assignable, and the same keys):
// a field added to one and not the other fails `tsc`.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type SameKeys<A, B> = Same<keyof A, keyof B>;
const agree = <_ extends true>() => {};
agree<Same<z.output<typeof TurnTraceSchema>, TurnTrace>>();
agree<SameKeys<z.output<typeof TurnTraceSchema>, TurnTrace>>();
agree<Same<z.output<typeof TurnSchema>, Turn>>();
agree<SameKeys<z.output<typeof TurnSchema>, Turn>>();
agree<Same<z.output<typeof TrajectorySchema>, Trajectory>>();
agree<SameKeys<z.output<typeof TrajectorySchema>, Trajectory>>();
agree<SameKeys<z.output<typeof OutcomeSchema>, Trajectory['outcome']>>();
agree<SameKeys<z.output<typeof TaskSchema>, Trajectory['task']>>();

/** A parsed line is a core Trajectory (the checks above make this an identity, not a cast). */
export const asTrajectory = (x: z.output<typeof TrajectorySchema>): Trajectory => x;

/** The JSON Schema (draft 2020-12) of one trajectory JSONL line, as written. */
export function trajectoryJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(TrajectorySchema, { io: 'input', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
}
